"""TL501 fp16-on-bf16-hardware."""

from __future__ import annotations

import ast

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Edit, Severity
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup, Value

_PAIRS = (("fp16", "bf16"), ("fp16_full_eval", "bf16_full_eval"))


class Fp16OnBf16Hardware(Rule):
    """
    ## What it does
    Flags fp16 mixed precision when the target GPU supports bf16 (NVIDIA Ampere or newer:
    A100, A10, L4, RTX 30xx and later, H100, H200, B200, ...): `fp16=True` in
    TrainingArguments, `--fp16` on a launch line, `"fp16": true` in an HF args file,
    `mixed_precision: fp16` in an accelerate config, or `"fp16": {"enabled": true}` in a
    DeepSpeed config. The target comes from `--gpu` (or `gpu = ...` in `[tool.trainlint]`,
    or `--gpu auto`); without a target the rule is silent. A setup that trains GPTQ or AWQ
    weights (`GPTQConfig`, `AwqConfig`, `auto_gptq`) is left alone: those kernels run in fp16.

    ## Why is this bad?
    fp16 has a maximum of 65504 and a narrow exponent, so activations and gradients overflow to
    inf/NaN or underflow to zero; it needs a dynamic loss scaler that skips steps. bf16 has the
    exponent range of fp32, needs no loss scaling and runs at the same tensor-core speed on
    these GPUs. Models pretrained in bf16 (T5, Flan-T5, Llama, ...) are known to produce NaN
    losses in fp16. The transformers docs: bf16 is "generally preferred over FP16 ... if your
    hardware supports it".

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", fp16=True)  # trainlint check --gpu A100
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", bf16=True)
    ```

    ## Fix safety
    Unsafe: it changes the numerics of training (bf16 has fewer mantissa bits than fp16, more
    range). Apply it with `--unsafe-fixes`. The fix switches every place that sets fp16 in the
    setup, so the files do not end up disagreeing.

    ## References
    - transformers `TrainingArguments.bf16` docstring
    - DeepSpeed guide in transformers docs ("fp16 on older GPU architectures and bf16 on Ampere")
    - https://github.com/huggingface/transformers/issues/14189 (T5 NaN in fp16)
    """

    code = "TL501"
    needs = ("gpu",)  # every finding is about the target GPU, which only --gpu gives
    name = "fp16-on-bf16-hardware"
    severity = Severity.WARNING
    triggers = DEEPSPEED_NAMES
    fires_on = ("fp16", "fp16_full_eval")
    fix_safety = "unsafe"
    summary = "fp16 mixed precision on a GPU that supports bf16"

    cases = [
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", fp16=True)
            """,
            options={"gpu": "A100"},
            unsafe=True,
            fixed='from transformers import TrainingArguments\nargs = TrainingArguments(output_dir="out", bf16=True)\n',
        ),
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", fp16=True, bf16=False)
            """,
            options={"gpu": "H100"},
            unsafe=True,
            fixed='from transformers import TrainingArguments\nargs = TrainingArguments(output_dir="out", fp16=False, bf16=True)\n',
        ),
        Case(
            """
            from transformers import TrainingArguments
            precision = {"fp16": True}
            args = TrainingArguments(output_dir="out", **precision)
            """,
            options={"gpu": "RTX 4090"},
            unsafe=True,
            fixed='from transformers import TrainingArguments\nprecision = {"bf16": True}\nargs = TrainingArguments(output_dir="out", **precision)\n',
        ),
        Case(files={"run.sh": "torchrun --nproc_per_node 2 run.py \\\n  --output_dir out \\\n  --fp16 \\\n"
                              "  --deepspeed ds.json\n",
                    "run.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                              "parser = HfArgumentParser((TrainingArguments,))\n",
                    "ds.json": '{\n  "fp16": {"enabled": true},\n  "train_micro_batch_size_per_gpu": "auto"\n}\n'},
             options={"gpu": "A100"}, note="flag and DeepSpeed section (switched together: tests/test_setup_examples.py)"),
        Case(files={"accelerate.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                                       "mixed_precision: fp16  # fast\nnum_processes: 2\n"},
             options={"gpu": "H100"}, unsafe=True,
             fixed="compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                   "mixed_precision: bf16  # fast\nnum_processes: 2\n", fixed_path="accelerate.yaml"),
        # must not flag
        Case("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', fp16=True)\n",
             flags=False, options={"gpu": "V100"}, note="V100 has no bf16"),
        Case(files={"ds.json": '{"fp16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": 8}\n'},
             flags=False, options={"gpu": "A100"}, note="auto follows TrainingArguments"),
        Case("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', fp16=True)\n",
             flags=False, note="no target GPU: never guess"),
        Case("from transformers import AutoModelForCausalLM, GPTQConfig, Trainer, TrainingArguments\n"
             "model = AutoModelForCausalLM.from_pretrained('Qwen/Qwen-7B-Chat-Int4',"
             " quantization_config=GPTQConfig(bits=4, disable_exllama=True))\n"
             "Trainer(model=model, args=TrainingArguments(output_dir='o', fp16=True)).train()\n",
             flags=False, options={"gpu": "A100"}, note="GPTQ kernels compute in fp16 (Qwen's QLoRA scripts)"),
        Case("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', bf16=True)\n",
             flags=False, options={"gpu": "A100"}),
        Case("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', fp16=False)\n",
             flags=False, options={"gpu": "A100"}),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        gpu = setup.gpu
        if gpu is None or not gpu.bf16:
            return
        from trainlint.knowledge.gpus import is_ampere_or_newer

        if not is_ampere_or_newer(gpu):
            return
        if _fp16_kernels(setup):
            return  # GPTQ/AWQ kernels run in fp16: bf16 is not an option for these weights
        places = list(self.fp16_places(setup))
        if not places:
            return
        # one fix switches every place of the setup, so the files never end up disagreeing
        all_edits: list[Edit] = []
        for _, _, edits in places:
            all_edits.extend(edits or [])
        for v, what, _ in places:
            yield self.diagnostic(
                v.key_span or v.span,  # type: ignore[arg-type]
                f"{what} on {gpu.describe()}, which supports bf16: bf16 has fp32's range, "
                f"needs no loss scaling and is as fast here; fp16 can overflow to inf/NaN",
                edits=all_edits or None,
                fix_message="switch every fp16 setting of the setup to bf16",
            )

    def fp16_places(self, setup: Setup):
        """(value, description, edits switching it to bf16) for every place that turns fp16 on:
        TrainingArguments values (script, flags, args file), accelerate ``mixed_precision`` and
        DeepSpeed ``fp16.enabled``."""
        for site in setup.sites:
            for fp16_name, bf16_name in _PAIRS:
                v = site.get(fp16_name)
                if v is None or v.value is not True:
                    continue
                what = {"flag": f"--{fp16_name}", "argsfile": f'"{fp16_name}": true'}.get(v.origin, f"{fp16_name}=True")
                yield v, what, self._switch(v, site.get(bf16_name), bf16_name)
        acc = setup.extra.get("accelerate")
        if acc is not None:
            mp = acc.mixed_precision
            if mp is not None and mp.value == "fp16" and mp.span is not None:
                yield mp, "accelerate mixed_precision: fp16", [mp.span.edit("bf16")]
        cfg = setup.extra.get("deepspeed")
        if cfg is not None:
            fp = cfg.value("fp16.enabled")
            if fp is not None and fp.value is True:
                yield fp, 'DeepSpeed "fp16": {"enabled": true}', self._ds_switch(cfg, fp)

    @staticmethod
    def _ds_switch(cfg, fp: Value) -> list[Edit] | None:
        from trainlint.sources.jsondoc import JsonNode, insert_key_edit

        section = cfg.node("fp16")
        if not isinstance(section, JsonNode) or fp.span is None:
            return None
        bf = cfg.node("bf16") or cfg.node("bfloat16")
        if bf is None:
            if section.keys() == ["enabled"] and section.key_span is not None:
                return [section.key_span.edit('"bf16"')]  # the section only switches precision
            return [fp.span.edit("false"), insert_key_edit(cfg.root, "bf16", '{"enabled": true}')]
        bf_en = bf.get("enabled") if bf.is_mapping else None
        if bf_en is None:
            return None
        return [fp.span.edit("false"), bf_en.span.edit("true")]

    @staticmethod
    def _switch(fp16: Value, bf16: Value | None, bf16_name: str) -> list[Edit] | None:
        if bf16 is None:
            e = fp16.rename_edit(bf16_name)
            return [e] if e is not None else None
        # both written: fp16 -> False, bf16 -> True (in the file's own spelling)
        a, b = fp16.edit_span(), bf16.edit_span()
        if a is None or b is None or bf16.value is True:
            return None
        false_text, true_text = ("false", "true") if fp16.origin in ("argsfile", "deepspeed") else ("False", "True")
        return [a.edit(false_text), b.edit(true_text)]


_FP16_QUANT_CONFIGS = ("GPTQConfig", "AwqConfig")
_FP16_QUANT_MODULES = ("auto_gptq", "gptqmodel", "awq")


def _fp16_kernels(setup: Setup) -> bool:
    """Whether a script of the setup trains GPTQ or AWQ weights (a ``GPTQConfig``/``AwqConfig``
    call, an ``auto_gptq``/``gptqmodel``/``awq`` import): their kernels compute in fp16, which
    is why Qwen's QLoRA scripts say "use --fp16 instead of --bf16 due to autogptq"."""
    for pf in setup.scripts:
        if any(q.split(".")[0] in _FP16_QUANT_MODULES for q in pf.imports.values()):
            return True
        for cs in pf.calls:
            f = cs.node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in _FP16_QUANT_CONFIGS:
                return True
    return False
