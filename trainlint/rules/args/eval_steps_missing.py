"""TL205 eval-steps-missing: eval_strategy="steps" without eval_steps or logging_steps"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._versioned import (
    SiteRule,
    is_num,
    strategy,
)
from trainlint.rules.args._args_checks_common import (
    TA,
    _related,
    _span,
)
from trainlint.rules.base import Case


class EvalStepsMissing(SiteRule):
    """
    ## What it does
    Flags `eval_strategy="steps"` with no `eval_steps` (or 0) and `logging_steps=0`.

    ## Why is this bad?
    `ValueError: evaluation strategy steps requires either non-zero --eval_steps or
    --logging_steps`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", eval_strategy="steps", logging_steps=0)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", eval_strategy="steps", eval_steps=500)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `TrainingArguments.__post_init__`
    """

    code = "TL205"
    fires_on = ("eval_strategy", "evaluation_strategy")
    name = "eval-steps-missing"
    severity = Severity.ERROR
    summary = 'eval_strategy="steps" without eval_steps or logging_steps'
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', eval_strategy='steps', logging_steps=0, "
                  "logging_strategy='no')\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', eval_strategy='steps')\n", flags=False),
    ]

    def site_check(self, setup, site):
        if strategy(self.eff(setup, site, "eval_strategy")) != "steps":
            return
        es = self.eff(setup, site, "eval_steps")
        ls = self.eff(setup, site, "logging_steps")
        if (es is None or (is_num(es) and es == 0)) and is_num(ls) and ls <= 0:
            yield self.diagnostic(
                _span(site, "eval_strategy", "evaluation_strategy"),
                f'eval_strategy="steps" needs a non-zero eval_steps or logging_steps, but eval_steps={es!r} '
                f"and logging_steps={ls!r}: TrainingArguments raises ValueError",
                related=_related(site, "logging_steps", "eval_steps"))

