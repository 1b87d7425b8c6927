"""TL207 non-integer-steps: a step count above 1 that is not a whole number"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._versioned import (
    SiteRule,
    is_num,
    strategy,
)
from trainlint.rules.args._args_checks_common import (
    TA,
)
from trainlint.rules.base import Case


class NonIntegerSteps(SiteRule):
    """
    ## What it does
    Flags `logging_steps`, `eval_steps` or `save_steps` above 1 that is not a whole number
    (values below 1 are ratios of the total steps), when its strategy is `"steps"`.

    ## Why is this bad?
    `ValueError: --save_steps must be an integer if bigger than 1`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", save_steps=1500.5)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", save_steps=1500)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `TrainingArguments.__post_init__`
    """

    code = "TL207"
    fires_on = ("logging_steps", "eval_steps", "save_steps")
    name = "non-integer-steps"
    severity = Severity.ERROR
    summary = "a step count above 1 that is not a whole number"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', save_steps=1500.5)\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', save_steps=0.25, logging_steps=10.0)\n", flags=False),
    ]

    def site_check(self, setup, site):
        for name, strat in (("logging_steps", "logging_strategy"), ("eval_steps", "eval_strategy"),
                            ("save_steps", "save_strategy")):
            v = site.get(name)
            if v is None or not is_num(v.value) or v.value <= 1 or v.value == int(v.value):
                continue
            if strategy(self.eff(setup, site, strat)) != "steps":
                continue
            yield self.diagnostic(v.key_span or v.span, f"{name}={v.value!r} is above 1 but not a whole number: "
                                  f"TrainingArguments raises ValueError")

