"""TL312 deepspeed-optimizer-and-trainer-optim: DeepSpeed optimizer section together with a TrainingArguments optim"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import located
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_setup_common import (
    _ds,
    _trainer_script,
)
from trainlint.setup import Setup

OPTIM_DEFAULTS = {"adamw_torch", "adamw_torch_fused", "adamw_hf"}


def where_node(node) -> str:
    from pathlib import Path

    return f"{Path(node.span.path).name}:{node.span.line}"



class OptimizerTwice(Rule):
    """
    ## What it does
    Flags a DeepSpeed config with an `optimizer` section used by a Trainer whose
    TrainingArguments also set `optim` to something other than the default AdamW.

    ## Why is this bad?
    With an `optimizer` section the Trainer hands the optimizer to DeepSpeed (`DummyOptim`) and
    never builds its own: the `optim` choice is silently ignored in transformers 5.
    transformers 4.x raised for `optim="adafactor"` ("--adafactor was passed, but also found
    `optimizer` configured in the DeepSpeed config. Only one optimizer can be configured.").

    ## Example
    ```python
    TrainingArguments(output_dir="o", deepspeed="ds.json", optim="adamw_bnb_8bit")
    ```
    with `"optimizer": {"type": "AdamW", ...}` in ds.json.

    ## Use instead
    Remove the DeepSpeed `optimizer` section to use `optim`, or drop `optim`.

    ## Fix safety
    No fix: which optimizer is meant is a choice.

    ## References
    - transformers `integrations/deepspeed.py` (`deepspeed_optim_sched`), 4.57 and 5.24
    """

    code = "TL312"
    name = "deepspeed-optimizer-and-trainer-optim"
    severity = Severity.WARNING
    triggers = DEEPSPEED_NAMES
    needs_training = True
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    summary = "DeepSpeed optimizer section together with a TrainingArguments optim"

    DS = '{"optimizer": {"type": "AdamW", "params": {"lr": "auto"}}, "train_micro_batch_size_per_gpu": "auto"}\n'
    cases = [
        Case(files={"train.py": _trainer_script(extra=", optim='adamw_bnb_8bit'"), "ds.json": DS}),
        Case(files={"train.py": _trainer_script(extra=", optim='adafactor'"), "ds.json": DS}),
        # must not flag
        Case(files={"train.py": _trainer_script(extra=", optim='adamw_torch'"), "ds.json": DS}, flags=False),
        Case(files={"train.py": _trainer_script(extra=", optim='adafactor'"),
                    "ds.json": '{"train_micro_batch_size_per_gpu": "auto"}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        opt = cfg.node("optimizer")
        if opt is None or not opt.is_mapping:
            return
        major = setup.transformers_tuple()[0]
        for site in setup.sites:
            v = site.get("optim")
            if v is None or not isinstance(v.value, str) or v.value.lower() in OPTIM_DEFAULTS:
                continue
            value = v.value.lower()
            adafactor = value == "adafactor"
            if adafactor and major < 5:
                sev, why = Severity.ERROR, "transformers 4.x raises (\"Only one optimizer can be configured\")"
            else:
                sev, why = Severity.WARNING, "the Trainer hands the optimizer to DeepSpeed and ignores optim"
            yield self.diagnostic(v.key_span or v.span, f"{located(v)} but the DeepSpeed config {where_node(opt)} "  # type: ignore[arg-type]
                                                        f"defines its own optimizer: {why}", severity=sev,
                                  related=[opt.key_span.related("DeepSpeed optimizer section")] if opt.key_span else [])

