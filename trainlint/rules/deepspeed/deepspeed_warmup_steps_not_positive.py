"""TL313 deepspeed-warmup-steps-not-positive: scheduler warmup_num_steps that recent DeepSpeed rejects"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_setup_common import (
    _ds,
)
from trainlint.setup import Setup


class WarmupStepsNotPositive(Rule):
    """
    ## What it does
    Flags `scheduler.params.warmup_num_steps` written as zero, a negative number or a
    non-integer (`1e3`, `100.0`) in a DeepSpeed config.

    ## Why is this bad?
    Recent DeepSpeed releases reject it when the scheduler is built (`WarmupLR`, `WarmupDecayLR`,
    `WarmupCosineLR`: "warmup_num_steps must be a positive integer"): an error. Older releases
    silently used 2 steps instead (`max(2, warmup_num_steps)`): a warning, since the warmup is
    not what the file says. Which releases do which comes from DeepSpeed's released source
    archives (`behaviour_markers.json`); the DeepSpeed version is the project's declaration
    (`requirements.txt`, `pyproject.toml`, ...), else the installed one, else the newest known.
    transformers' own `"auto"` fill uses `max(1, warmup steps)` for this reason.

    ## Example
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 0}}}
    ```

    ## Use instead
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 1}}}
    ```
    (or `"auto"` under the HF Trainer).

    ## Fix safety
    Safe: `1` (an integral float is written as the integer); older DeepSpeed used 2 for 0 and
    for 1 alike, so the run there is unchanged.

    ## References
    - DeepSpeed 0.19.8 `runtime/lr_schedules.py` (`WarmupLR.__init__`)
    - transformers 5.24 `integrations/deepspeed.py` (`trainer_config_finalize` comment)
    """

    code = "TL313"
    name = "deepspeed-warmup-steps-not-positive"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    fix_safety = "safe"
    summary = "scheduler warmup_num_steps that recent DeepSpeed rejects"

    cases = [
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8,\n "scheduler": {"type": "WarmupLR",'
                               ' "params": {"warmup_num_steps": 0}}}\n'}, fixed_path="ds.json",
             fixed='{"train_micro_batch_size_per_gpu": 8,\n "scheduler": {"type": "WarmupLR",'
                   ' "params": {"warmup_num_steps": 1}}}\n'),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "scheduler": {"type": "WarmupDecayLR",'
                               ' "params": {"warmup_num_steps": 1e3, "total_num_steps": 10000}}}\n'},
             fixed_path="ds.json",
             fixed='{"train_micro_batch_size_per_gpu": 8, "scheduler": {"type": "WarmupDecayLR",'
                   ' "params": {"warmup_num_steps": 1000, "total_num_steps": 10000}}}\n'),
        Case(files={"requirements.txt": "deepspeed==0.14.4\n",
                    "ds.json": '{"train_micro_batch_size_per_gpu": 8,\n "scheduler": {"type": "WarmupLR",'
                               ' "params": {"warmup_num_steps": 0}}}\n'}, fixed_path="ds.json",
             fixed='{"train_micro_batch_size_per_gpu": 8,\n "scheduler": {"type": "WarmupLR",'
                   ' "params": {"warmup_num_steps": 1}}}\n',
             note="an older DeepSpeed the project pins uses 2 steps silently: a warning"),
        # must not flag
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "scheduler": {"type": "WarmupLR",'
                               ' "params": {"warmup_num_steps": 100}}}\n'}, flags=False),
        Case(files={"requirements.txt": "deepspeed==0.14.4\n",
                    "ds.json": '{"train_micro_batch_size_per_gpu": 8, "scheduler": {"type": "WarmupDecayLR",'
                               ' "params": {"warmup_num_steps": 1e3, "total_num_steps": 10000}}}\n'}, flags=False,
             note="a float number of steps works on the DeepSpeed the project pins"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "scheduler": {"type": "WarmupLR",'
                               ' "params": {"warmup_num_steps": "auto"}}}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        node = cfg.node("scheduler.params.warmup_num_steps")
        if node is None or node.kind != "number":
            return
        raw = node.value
        if isinstance(raw, int) and raw > 0:
            return
        from trainlint.knowledge import behaviour

        target = setup.target_of("deepspeed")
        raises = behaviour.holds(RAISES, target)
        positive_float = isinstance(raw, float) and raw.is_integer() and raw > 0
        if positive_float:
            new = str(int(raw))
            what = f"{node.raw} is a float"
        else:
            new = "1"
            what = f"{node.raw} is not positive"
        resolved = setup.versions.get("deepspeed")
        who = f"DeepSpeed {target} ({resolved.note or 'resolved'})" if target and resolved is not None else \
            f"DeepSpeed from {behaviour.first_version(RAISES)} on (the version is not known: assumed the newest)"
        if raises:
            yield self.diagnostic(node.span, f"scheduler warmup_num_steps {what}: {who} raises "
                                             f"\"warmup_num_steps must be a positive integer\" when it builds the "
                                             f"scheduler", edits=[node.span.edit(new)],
                                  fix_message=f"set warmup_num_steps to {new}")
        elif not positive_float and behaviour.holds(CLAMPS, target):
            yield self.diagnostic(node.span, f"scheduler warmup_num_steps {what}: {who} silently warms up for 2 "
                                             f"steps instead (max(2, warmup_num_steps)), and releases from "
                                             f"{behaviour.first_version(RAISES)} on raise", severity=Severity.WARNING,
                                  edits=[node.span.edit(new)], fix_message=f"set warmup_num_steps to {new}")


RAISES = "ds_warmup_num_steps_must_be_positive"
CLAMPS = "ds_warmup_num_steps_clamped_to_two"
