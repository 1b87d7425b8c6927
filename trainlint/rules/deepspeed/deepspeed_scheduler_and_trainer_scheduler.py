"""TL318 deepspeed-scheduler-and-trainer-scheduler: a DeepSpeed scheduler section while TrainingArguments set lr_scheduler_type"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import located
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_setup_common import _ds, _trainer_script
from trainlint.rules.deepspeed.deepspeed_optimizer_and_trainer_optim import where_node
from trainlint.setup import Setup

DS = '{"train_micro_batch_size_per_gpu": "auto", "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": "auto"}}}\n'


class DeepSpeedSchedulerAndTrainerScheduler(Rule):
    """
    ## What it does
    Flags a DeepSpeed config with a `scheduler` section used by a Trainer whose
    TrainingArguments also set `lr_scheduler_type` (or `lr_scheduler_kwargs`), in the script, on
    the launch line or in an args file.

    ## Why is this bad?
    When the DeepSpeed config has a `scheduler`, the HF integration hands scheduling to
    DeepSpeed (`deepspeed_optim_sched` builds a `DummyScheduler`): the TrainingArguments
    schedule is silently not used, so `lr_scheduler_type="cosine"` trains with DeepSpeed's
    `WarmupLR` (or whatever the section says).

    ## Example
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": "auto"}}}
    ```
    with `--lr_scheduler_type cosine`.

    ## Use instead
    Remove the `scheduler` section (the Trainer's schedule is used), or drop
    `lr_scheduler_type` and choose the schedule in the DeepSpeed config, with `"auto"` values.

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `integrations/deepspeed.py` (`deepspeed_optim_sched`)
    - https://huggingface.co/docs/transformers/deepspeed ("Scheduler")
    """

    code = "TL318"
    name = "deepspeed-scheduler-and-trainer-scheduler"
    severity = Severity.WARNING
    summary = "a DeepSpeed scheduler section while TrainingArguments set lr_scheduler_type"
    triggers = DEEPSPEED_NAMES
    needs_training = True
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    cases = [
        Case(files={"train.py": _trainer_script(extra=", lr_scheduler_type='cosine'"), "ds.json": DS}),
        Case(files={"run.sh": "deepspeed train.py --deepspeed ds.json --output_dir o --lr_scheduler_type cosine\n",
                    "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                                "parser = HfArgumentParser((TrainingArguments,))\n"
                                "(args,) = parser.parse_args_into_dataclasses()\n", "ds.json": DS}),
        Case(files={"train.py": _trainer_script(), "ds.json": DS}, flags=False),
        Case(files={"train.py": _trainer_script(extra=", lr_scheduler_type='cosine'"),
                    "ds.json": '{"train_micro_batch_size_per_gpu": "auto"}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        sched = cfg.node("scheduler")
        if sched is None or not sched.is_mapping:
            return
        st = cfg.scheduler_type
        kind = f' ({st.value})' if st is not None and isinstance(st.value, str) else ""
        for site in setup.sites:
            for name in ("lr_scheduler_type", "lr_scheduler_kwargs"):
                v = site.get(name)
                if v is None or v.value is None:
                    continue
                yield self.diagnostic(v.key_span or v.span,  # type: ignore[arg-type]
                                      f"{located(v)} is not used: the DeepSpeed config {where_node(sched)} has a "
                                      f"scheduler section{kind}, and the Trainer hands scheduling to DeepSpeed; remove "
                                      f"the section or drop {name}",
                                      related=[sched.key_span.related("DeepSpeed scheduler section")]
                                      if sched.key_span else [])
                break
