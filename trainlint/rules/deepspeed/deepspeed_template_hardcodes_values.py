"""TL319 deepspeed-template-hardcodes-values: a DeepSpeed config written for the HF integration that hard-codes values the Trainer compares"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_config_common import _auto_edit, _ds
from trainlint.setup import Setup

# the keys transformers' HfTrainerDeepSpeedConfig.trainer_config_process compares with
# TrainingArguments (fill_match) and raises on when they differ
COMPARED = ("train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "train_batch_size",
            "gradient_clipping", "fp16.enabled", "bf16.enabled")
MIN_AUTOS = 2


class DeepSpeedTemplateHardcodesValues(Rule):
    """
    ## What it does
    Flags, in a DeepSpeed config that no script, launch line or args file of the checked files
    uses (a shared template), hard-coded `train_micro_batch_size_per_gpu`, `gradient_accumulation_steps`,
    `train_batch_size`, `gradient_clipping`, `fp16.enabled` or `bf16.enabled` when the same
    config uses `"auto"` elsewhere (it is written for the HF Trainer integration).

    ## Why is this bad?
    The HF integration compares every non-`"auto"` value with TrainingArguments and raises
    "Please correct the following DeepSpeed config values that mismatch TrainingArguments
    values" when they differ (`trainer_config_process`). A template that hard-codes them breaks
    every launch whose batch size, accumulation, clipping or precision differs. When the config
    is linked to its TrainingArguments, TL301 compares the actual values instead.

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": "auto",
     "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}}
    ```

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
     "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}}
    ```

    ## Fix safety
    Unsafe: `"auto"` takes the TrainingArguments value, which is the same for every launch that
    works today, but a launch that never goes through the Trainer would need the number.

    ## References
    - transformers `integrations/deepspeed.py` (`HfTrainerDeepSpeedConfig.fill_match`)
    - https://huggingface.co/docs/transformers/deepspeed ("auto" values)
    """

    code = "TL319"
    name = "deepspeed-template-hardcodes-values"
    severity = Severity.INFO
    fix_safety = "unsafe"
    summary = "a DeepSpeed config written for the HF integration that hard-codes values the Trainer compares"
    triggers = ()
    cases = [
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": "auto", '
                               '"zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}}\n'},
             unsafe=True, fixed_path="ds.json",
             fixed='{"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto", '
                   '"zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}}\n'),
        Case(files={"ds.json": '{"bf16": {"enabled": true}, "train_batch_size": "auto", '
                               '"train_micro_batch_size_per_gpu": "auto"}\n'}),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}\n'},
             flags=False, note="no auto: not written for the HF integration"),
        Case(files={"ds.json": '{"bf16": {"enabled": "auto"}, "train_batch_size": "auto", '
                               '"train_micro_batch_size_per_gpu": "auto"}\n'}, flags=False),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": "auto", '
                               '"zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}}\n',
                    "train.py": "from transformers import TrainingArguments\n"
                                "args = TrainingArguments(output_dir='o', deepspeed='ds.json', "
                                "per_device_train_batch_size=4)\n"},
             flags=False, note="linked: TL301 compares the real values"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None or setup.all_sites or setup.scripts:
            return  # linked to the arguments of a run (any reader): TL301 compares real values
        autos = cfg.auto_paths()
        if len(autos) < MIN_AUTOS:
            return
        for key in COMPARED:
            v = cfg.value(key)
            if v is None or v.value == "auto" or v.span is None:
                continue
            if key.endswith(".enabled") and v.value is not True:
                continue  # false matches a run without that precision; only a forced True breaks others
            edit = _auto_edit(v)
            yield self.diagnostic(v.key_span or v.span,
                                  f'"{key}": {v.value!r} is hard-coded in a config that uses "auto" elsewhere '
                                  f'({len(autos)} values): the HF Trainer raises a mismatch for every launch whose '
                                  f'TrainingArguments differ; write "auto"',
                                  edits=[edit] if edit is not None else None, fix_message='write "auto"')
