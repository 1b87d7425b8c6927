"""TL214 empty-cache-steps-invalid: torch_empty_cache_steps not a positive int"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._versioned import (
    SiteRule,
    fields_for,
)
from trainlint.rules.args._args_checks_common import (
    TA,
)
from trainlint.rules.base import Case


class EmptyCacheStepsInvalid(SiteRule):
    """
    ## What it does
    Flags `torch_empty_cache_steps` that is not a positive int.

    ## Why is this bad?
    `ValueError: torch_empty_cache_steps must be an integer bigger than 0`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", torch_empty_cache_steps=0)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", torch_empty_cache_steps=100)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `TrainingArguments.__post_init__`
    """

    code = "TL214"
    fires_on = ("torch_empty_cache_steps",)
    name = "empty-cache-steps-invalid"
    severity = Severity.ERROR
    summary = "torch_empty_cache_steps not a positive int"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', torch_empty_cache_steps=0)\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', torch_empty_cache_steps=100)\n", flags=False),
    ]

    def site_check(self, setup, site):
        v = site.get("torch_empty_cache_steps")
        if v is None or not v.known or v.value is None:
            return
        if "torch_empty_cache_steps" not in (fields_for(setup, site.class_name) or {}):
            return
        x = v.value
        if isinstance(x, bool) or not isinstance(x, int) or x <= 0:
            yield self.diagnostic(v.key_span or v.span, f"torch_empty_cache_steps={x!r} must be an integer "
                                  "bigger than 0: TrainingArguments raises ValueError")

