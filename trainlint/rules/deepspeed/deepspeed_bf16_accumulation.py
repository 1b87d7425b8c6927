"""TL315 deepspeed-bf16-accumulation: bf16 gradient accumulation and reduction without fp32"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import as_int, effective, located, where
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_setup_common import (
    _ds,
    _trainer_script,
)
from trainlint.setup import Setup


class Bf16Accumulation(Rule):
    """
    ## What it does
    Flags bf16 training with DeepSpeed and gradient accumulation over more than one micro-batch
    when the config sets neither `communication_data_type: "fp32"` nor
    `data_types.grad_accum_dtype: "fp32"`. `"auto"` values are taken from the TrainingArguments.

    ## Why is this bad?
    DeepSpeed accumulates and reduces gradients in the model's dtype by default
    (`grad_accum_dtype` defaults to the model dtype): with bf16's 8-bit mantissa, summing many
    micro-batch gradients loses precision (DeepSpeed itself warns "BF16 gradient accumulation is
    not safe numerically with large number of accumulation steps" for pipelines). accelerate
    sets `communication_data_type: fp32` for bf16 on ROCm because of silently corrupted weights.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "gradient_accumulation_steps": 8}
    ```

    ## Use instead
    ```json
    {"bf16": {"enabled": true}, "gradient_accumulation_steps": 8, "communication_data_type": "fp32"}
    ```

    ## Fix safety
    Unsafe: reductions in fp32 change the numerics (for the better) and cost bandwidth.

    ## References
    - DeepSpeed `runtime/engine.py` (`get_data_types`, `_do_optimizer_sanity_check`)
    - https://huggingface.co/docs/transformers/deepspeed (bf16: "lossy accumulation")
    - accelerate `utils/dataclasses.py` (ROCm bf16 `communication_data_type`)
    """

    code = "TL315"
    name = "deepspeed-bf16-accumulation"
    severity = Severity.INFO
    triggers = DEEPSPEED_NAMES
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    fix_safety = "unsafe"
    summary = "bf16 gradient accumulation and reduction without fp32"

    cases = [
        Case(files={"ds.json": '{\n  "bf16": {"enabled": true},\n  "train_micro_batch_size_per_gpu": 4,\n'
                               '  "gradient_accumulation_steps": 8\n}\n'},
             unsafe=True, fixed_path="ds.json",
             fixed='{\n  "bf16": {"enabled": true},\n  "train_micro_batch_size_per_gpu": 4,\n'
                   '  "gradient_accumulation_steps": 8,\n  "communication_data_type": "fp32"\n}\n'),
        Case(files={"train.py": _trainer_script(extra=", bf16=True, gradient_accumulation_steps=4"),
                    "ds.json": '{"bf16": {"enabled": "auto"}, "gradient_accumulation_steps": "auto",'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'}),
        # must not flag
        Case(files={"ds.json": '{"bf16": {"enabled": true}, "train_micro_batch_size_per_gpu": 4,'
                               ' "gradient_accumulation_steps": 8, "communication_data_type": "fp32"}\n'}, flags=False),
        Case(files={"ds.json": '{"bf16": {"enabled": true}, "train_micro_batch_size_per_gpu": 4,'
                               ' "gradient_accumulation_steps": 1}\n'}, flags=False),
        Case(files={"ds.json": '{"bf16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": 4,'
                               ' "gradient_accumulation_steps": 8}\n'}, flags=False, note="bf16 not known"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        from trainlint.sources.jsondoc import JsonNode, insert_key_edit

        cdt = cfg.value("communication_data_type")
        gad = cfg.value("data_types.grad_accum_dtype")
        if (cdt is not None and cdt.value in ("fp32", "float32")) or (gad is not None and gad.value in ("fp32", "float32")):
            return
        bf = cfg.bf16_enabled
        ga = cfg.gradient_accumulation_steps
        if bf is None:
            return
        bf16 = bf.value is True or (isinstance(bf.value, dict) and bf.value.get("enabled") is True)
        gas = as_int(ga.value) if ga is not None else 1
        why_bf16, why_ga = where(bf), where(ga) if ga is not None else "the DeepSpeed default 1"
        if bf.value == "auto" or (ga is not None and ga.value == "auto"):
            for site in setup.sites:
                if bf.value == "auto":
                    b = effective(site, "bf16")
                    if b is None or b.value is not True:
                        continue
                    bf16, why_bf16 = True, located(b)
                if ga is not None and ga.value == "auto":
                    g = effective(site, "gradient_accumulation_steps")
                    if g is None or as_int(g.value) is None:
                        continue
                    gas, why_ga = as_int(g.value), located(g)
                break
        if not bf16 or gas is None or gas <= 1 or bf.span is None:
            return
        edits = [insert_key_edit(cfg.root, "communication_data_type", '"fp32"')] \
            if isinstance(cfg.root, JsonNode) and cfg.root.is_mapping and cdt is None else None
        yield self.diagnostic(bf.span, f"bf16 ({why_bf16}) with {gas} accumulation steps ({why_ga}): DeepSpeed "
                                       f"accumulates and reduces gradients in bf16 unless communication_data_type or "
                                       f"data_types.grad_accum_dtype is fp32; the sums lose precision",
                              edits=edits, fix_message="set communication_data_type to fp32")

