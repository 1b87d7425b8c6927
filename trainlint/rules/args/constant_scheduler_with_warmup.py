"""TL235 constant-scheduler-with-warmup: lr_scheduler_type="constant" with a warmup, which it ignores"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._setup_util import set_edit
from trainlint.rules._spellings import spelled_cases
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import SiteRule, is_num, strategy
from trainlint.rules.args._args_checks_common import _related, _span


class ConstantSchedulerWithWarmup(SiteRule):
    """
    ## What it does
    Flags `lr_scheduler_type="constant"` together with `warmup_steps > 0` or `warmup_ratio > 0`.

    ## Why is this bad?
    The `"constant"` schedule has no warmup phase: transformers' `get_scheduler` builds it
    without the warmup argument, so the learning rate starts at its full value on step one and
    the warmup setting is silently ignored. `"constant_with_warmup"` is the schedule that warms
    up and then stays constant.

    ## Example
    ```python
    TrainingArguments(output_dir="o", lr_scheduler_type="constant", warmup_steps=100)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", lr_scheduler_type="constant_with_warmup", warmup_steps=100)
    ```

    ## Fix safety
    Unsafe: the fix writes `constant_with_warmup`, which changes the learning rate of the first
    steps (that is the point, but it changes the numerics of the run).

    ## References
    - transformers `optimization.py` (`get_scheduler`: `SchedulerType.CONSTANT` takes no
      `num_warmup_steps`)
    """

    code = "TL235"
    name = "constant-scheduler-with-warmup"
    severity = Severity.WARNING
    fix_safety = "unsafe"
    summary = 'lr_scheduler_type="constant" with a warmup, which it ignores'
    triggers = SETUP_NAMES
    fires_on = ("lr_scheduler_type",)
    cases = [
        *spelled_cases({"lr_scheduler_type": "constant", "warmup_steps": 100}),
        *spelled_cases({"lr_scheduler_type": "constant", "warmup_ratio": 0.05}, only=("keyword",),
                       options={"transformers_version": "4.57.1"}),
        *spelled_cases({"lr_scheduler_type": "constant_with_warmup", "warmup_steps": 100}, flags=False),
        *spelled_cases({"lr_scheduler_type": "constant", "warmup_steps": 0}, flags=False, only=("keyword", "flag")),
    ]
    cases[0].fixed = ("from transformers import TrainingArguments\n"
                      "args = TrainingArguments(output_dir='o', lr_scheduler_type='constant_with_warmup', "
                      "warmup_steps=100)\n")
    cases[0].unsafe = True

    def site_check(self, setup, site):
        sched = site.get("lr_scheduler_type")
        if sched is None or strategy(sched.value) != "constant":
            return
        warm = None
        for name in ("warmup_steps", "warmup_ratio"):
            v = self.eff(setup, site, name)
            if is_num(v) and v > 0:
                warm = name
                break
        if warm is None:
            return
        edit = set_edit(sched, "constant_with_warmup")
        yield self.diagnostic(_span(site, "lr_scheduler_type"),
                              f'lr_scheduler_type="constant" has no warmup phase, so {warm}={self.eff(setup, site, warm)!r} '
                              'is ignored and the run starts at the full learning rate; use "constant_with_warmup"',
                              edits=[edit] if edit is not None else None,
                              fix_message='use lr_scheduler_type="constant_with_warmup"',
                              related=_related(site, warm))
