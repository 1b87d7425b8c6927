"""TL211 scheduler-needs-eval: a plateau/greedy scheduler without evaluation"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._versioned import (
    SiteRule,
    strategy,
)
from trainlint.rules.args._args_checks_common import (
    TA,
    _span,
)
from trainlint.rules.base import Case


class SchedulerNeedsEval(SiteRule):
    """
    ## What it does
    Flags `lr_scheduler_type="reduce_lr_on_plateau"` (or `"greedy"`, where it exists) with
    `eval_strategy="no"` (the default).

    ## Why is this bad?
    `ValueError: lr_scheduler_type reduce_lr_on_plateau requires an eval strategy`: the
    scheduler steps on evaluation metrics.

    ## Example
    ```python
    TrainingArguments(output_dir="o", lr_scheduler_type="reduce_lr_on_plateau")
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", lr_scheduler_type="reduce_lr_on_plateau", eval_strategy="epoch")
    ```

    ## Fix safety
    No automatic fix (adding evaluation needs an eval dataset).

    ## References
    - transformers `TrainingArguments.__post_init__`
    """

    code = "TL211"
    fires_on = ("lr_scheduler_type",)
    name = "scheduler-needs-eval"
    severity = Severity.ERROR
    summary = "a plateau/greedy scheduler without evaluation"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', lr_scheduler_type='reduce_lr_on_plateau')\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', lr_scheduler_type='reduce_lr_on_plateau', "
                  "eval_strategy='epoch')\n", flags=False),
    ]

    def site_check(self, setup, site):
        sched = strategy(site.known("lr_scheduler_type"))
        if sched not in ("reduce_lr_on_plateau", "greedy"):
            return
        if strategy(self.eff(setup, site, "eval_strategy")) != "no":
            return
        yield self.diagnostic(_span(site, "lr_scheduler_type"),
                              f'lr_scheduler_type="{sched}" steps on evaluation metrics but eval_strategy is "no": '
                              "TrainingArguments raises ValueError")

