"""TL206 logging-steps-zero: logging_steps=0 with logging_strategy="steps" """

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._versioned import (
    SiteRule,
    is_num,
    strategy,
)
from trainlint.rules.args._args_checks_common import (
    TA,
    _span,
)
from trainlint.rules.base import Case


class LoggingStepsZero(SiteRule):
    """
    ## What it does
    Flags `logging_steps=0` while `logging_strategy` is `"steps"` (its default).

    ## Why is this bad?
    `ValueError: logging strategy steps requires non-zero --logging_steps`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", logging_steps=0)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", logging_strategy="no")
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `TrainingArguments.__post_init__`
    """

    code = "TL206"
    fires_on = ("logging_steps",)
    name = "logging-steps-zero"
    severity = Severity.ERROR
    summary = 'logging_steps=0 with logging_strategy="steps"'
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', logging_steps=0)\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', logging_steps=0, logging_strategy='epoch')\n", flags=False),
    ]

    def site_check(self, setup, site):
        if site.get("logging_steps") is None:
            return
        ls = self.eff(setup, site, "logging_steps")
        if strategy(self.eff(setup, site, "logging_strategy")) == "steps" and is_num(ls) and ls == 0:
            yield self.diagnostic(_span(site, "logging_steps"),
                                  'logging_steps=0 with logging_strategy="steps": TrainingArguments raises ValueError')

