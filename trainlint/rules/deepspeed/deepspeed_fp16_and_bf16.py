"""TL303 deepspeed-fp16-and-bf16: fp16 and bf16 both enabled in a DeepSpeed config"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import where
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_config_common import (
    _auto_edit,
    _ds,
)
from trainlint.setup import Setup


class DeepSpeedFp16AndBf16(Rule):
    """
    ## What it does
    Flags a DeepSpeed config that enables both `fp16` and `bf16` (literally `true`).

    ## Why is this bad?
    DeepSpeed asserts "bfloat16 and fp16 modes cannot be simultaneously enabled" when the
    engine starts.

    ## Example
    ```json
    {"fp16": {"enabled": true}, "bf16": {"enabled": true}}
    ```

    ## Use instead
    ```json
    {"fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}}
    ```
    (under the HF Trainer, which fills them from `--fp16`/`--bf16`), or enable one.

    ## Fix safety
    Safe under the HF Trainer (the fix is offered only when the setup has TrainingArguments):
    both become `"auto"` and follow TrainingArguments.

    ## References
    - DeepSpeed `runtime/config.py` (`_do_error_check`)
    """

    code = "TL303"
    name = "deepspeed-fp16-and-bf16"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    fix_safety = "safe"
    summary = "fp16 and bf16 both enabled in a DeepSpeed config"

    cases = [
        Case(files={"ds.json": '{"fp16": {"enabled": true}, "bf16": {"enabled": true}, '
                               '"train_micro_batch_size_per_gpu": 8}\n'}),
        Case(files={"train.py": "from transformers import TrainingArguments\n"
                                "args = TrainingArguments(output_dir='o', deepspeed='ds.json')\n",
                    "ds.json": '{"fp16": {"enabled": true}, "bf16": {"enabled": true}, '
                               '"train_micro_batch_size_per_gpu": "auto"}\n'},
             fixed='{"fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}, '
                   '"train_micro_batch_size_per_gpu": "auto"}\n', fixed_path="ds.json"),
        # must not flag
        Case(files={"ds.json": '{"fp16": {"enabled": "auto"}, "bf16": {"enabled": true}, '
                               '"train_micro_batch_size_per_gpu": 8}\n'}, flags=False),
        Case(files={"ds.json": '{"fp16": {"enabled": false}, "bf16": {"enabled": true}, '
                               '"train_micro_batch_size_per_gpu": 8}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        fp, bf = cfg.value("fp16.enabled"), cfg.precision_enabled("bf16")
        if fp is None or bf is None or fp.value is not True or bf.value is not True or not bf.name.endswith("enabled"):
            return
        edits = [e for e in (_auto_edit(fp), _auto_edit(bf)) if e] if setup.sites else None
        yield self.diagnostic(fp.span, f"fp16 and bf16 are both enabled ({where(fp)}, {where(bf)}): DeepSpeed "  # type: ignore[arg-type]
                                       f"asserts that at most one is", edits=edits,
                              related=[bf.span.related("bf16 enabled here")] if bf.span else [],
                              fix_message="set both to \"auto\" (TrainingArguments decides)")

