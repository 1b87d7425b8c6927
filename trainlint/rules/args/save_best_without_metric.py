"""TL216 save-best-without-metric: save_strategy="best" without metric_for_best_model"""

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


class SaveBestWithoutMetric(SiteRule):
    """
    ## What it does
    Flags `save_strategy="best"` without `metric_for_best_model`.

    ## Why is this bad?
    Trainer raises `ValueError` at construction: "best" needs a metric to compare
    (`load_best_model_at_end` alone defaults the metric to the loss, "best" does not).

    ## Example
    ```python
    TrainingArguments(output_dir="o", eval_strategy="epoch", save_strategy="best")
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", eval_strategy="epoch", save_strategy="best",
                      metric_for_best_model="eval_loss")
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers 4.57.1 / 5.24 `Trainer.__init__`
    """

    code = "TL216"
    fires_on = ("save_strategy",)
    name = "save-best-without-metric"
    severity = Severity.ERROR
    summary = 'save_strategy="best" without metric_for_best_model'
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', eval_strategy='epoch', save_strategy='best')\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', eval_strategy='epoch', save_strategy='best', "
                  "metric_for_best_model='accuracy')\n", flags=False),
        Case(TA + "a = TrainingArguments(output_dir='o', eval_strategy='epoch', save_strategy='best', "
                  "load_best_model_at_end=True)\n", flags=False, note="the metric defaults to the loss"),
    ]

    def site_check(self, setup, site):
        if strategy(site.known("save_strategy")) != "best":
            return
        if self.eff(setup, site, "metric_for_best_model") is not None:
            return
        # __post_init__ fills metric_for_best_model="loss" for these
        if self.eff(setup, site, "load_best_model_at_end") is not False:
            return
        sched = strategy(self.eff(setup, site, "lr_scheduler_type"))
        if not isinstance(sched, str) or sched in ("reduce_lr_on_plateau", "greedy"):
            return
        yield self.diagnostic(_span(site, "save_strategy"), 'save_strategy="best" needs metric_for_best_model: '
                              "Trainer raises ValueError")

