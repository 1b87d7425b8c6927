"""TL223 accumulation-set-twice: gradient accumulation set in accelerator_config and gradient_accumulation_steps"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._versioned import (
    SiteRule,
    dict_literal,
    is_num,
)
from trainlint.rules.args._args_checks_common import (
    TA,
    _related,
    _span,
)
from trainlint.rules.base import Case


class AccumulationSetTwice(SiteRule):
    """
    ## What it does
    Flags `accelerator_config={"gradient_accumulation_kwargs": {"num_steps": N}}` together with
    `gradient_accumulation_steps > 1`.

    ## Why is this bad?
    `ValueError: The AcceleratorConfig's num_steps is set but gradient_accumulation_steps is
    greater than 1`: the Trainer cannot tell which one is meant.

    ## Example
    ```python
    TrainingArguments(output_dir="o", gradient_accumulation_steps=4,
                      accelerator_config={"gradient_accumulation_kwargs": {"num_steps": 4}})
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", gradient_accumulation_steps=4)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `Trainer.create_accelerator_and_postprocess`
    """

    code = "TL223"
    fires_on = ("accelerator_config",)
    name = "accumulation-set-twice"
    severity = Severity.ERROR
    summary = "gradient accumulation set in accelerator_config and gradient_accumulation_steps"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', gradient_accumulation_steps=4, "
                  "accelerator_config={'gradient_accumulation_kwargs': {'num_steps': 4}})\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', "
                  "accelerator_config={'gradient_accumulation_kwargs': {'num_steps': 4}})\n", flags=False),
    ]

    def site_check(self, setup, site):
        gas = site.known("gradient_accumulation_steps")
        cfg = site.get("accelerator_config")
        if cfg is None or not is_num(gas) or gas <= 1:
            return
        value = cfg.value
        if not isinstance(value, dict):
            value = dict_literal(setup, cfg)
        if not isinstance(value, dict):
            return
        kwargs = value.get("gradient_accumulation_kwargs")
        if isinstance(kwargs, dict) and "num_steps" in kwargs:
            yield self.diagnostic(_span(site, "accelerator_config"),
                                  "accelerator_config sets gradient_accumulation_kwargs.num_steps while "
                                  f"gradient_accumulation_steps={gas}: Trainer raises ValueError",
                                  related=_related(site, "gradient_accumulation_steps"))

