"""TL218 auto-batch-size-zero3: auto_find_batch_size with DeepSpeed ZeRO-3"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._versioned import (
    SiteRule,
    dict_literal,
)
from trainlint.rules.args._args_checks_common import (
    TA,
    _span,
)
from trainlint.rules.base import Case
from trainlint.setup import Value


class AutoBatchSizeZero3(SiteRule):
    """
    ## What it does
    Flags `auto_find_batch_size=True` with a linked DeepSpeed config at ZeRO stage 3. Silent
    when no DeepSpeed config is linked to the setup.

    ## Why is this bad?
    `ValueError: auto_find_batch_size isn't supported yet with DeepSpeed Zero-3`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", auto_find_batch_size=True, deepspeed="ds_zero3.json")
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", per_device_train_batch_size=4, deepspeed="ds_zero3.json")
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers 5.24 `Trainer` (DeepSpeed setup)
    """

    code = "TL218"
    fires_on = ("auto_find_batch_size",)
    name = "auto-batch-size-zero3"
    severity = Severity.ERROR
    summary = "auto_find_batch_size with DeepSpeed ZeRO-3"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', auto_find_batch_size=True, "
                  "deepspeed={'zero_optimization': {'stage': 3}})\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', auto_find_batch_size=True)\n", flags=False,
             note="no DeepSpeed config linked"),
        Case(TA + "a = TrainingArguments(output_dir='o', per_device_train_batch_size=4)\n", flags=False),
    ]

    def site_check(self, setup, site):
        if site.known("auto_find_batch_size") is not True:
            return
        ds = setup.extra.get("deepspeed")
        stage = getattr(ds, "stage", None) if ds is not None else None
        value = stage.value if isinstance(stage, Value) else stage
        inline = site.get("deepspeed")
        if stage is None and inline is not None:
            cfg = inline.value if isinstance(inline.value, dict) else dict_literal(setup, inline)
            zero = cfg.get("zero_optimization") if isinstance(cfg, dict) else None
            value = zero.get("stage") if isinstance(zero, dict) else None
        if value == 3:
            related = [stage.span.related("ZeRO stage 3 here")] if isinstance(stage, Value) and stage.span else []
            yield self.diagnostic(_span(site, "auto_find_batch_size"), "auto_find_batch_size=True is not supported "
                                  "with DeepSpeed ZeRO-3: Trainer raises ValueError", related=related)

