"""TL213 prefetch-without-workers: dataloader_prefetch_factor without dataloader workers"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._versioned import (
    SiteRule,
)
from trainlint.rules.args._args_checks_common import (
    TA,
    _span,
)
from trainlint.rules.base import Case
from trainlint.setup import UNKNOWN


class PrefetchWithoutWorkers(SiteRule):
    """
    ## What it does
    Flags `dataloader_prefetch_factor` set while `dataloader_num_workers` is 0 (the default).

    ## Why is this bad?
    `ValueError: --dataloader_prefetch_factor can only be set when data is loaded in a
    different process`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", dataloader_prefetch_factor=4)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", dataloader_prefetch_factor=4, dataloader_num_workers=4)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `TrainingArguments.__post_init__`
    """

    code = "TL213"
    fires_on = ("dataloader_prefetch_factor",)
    name = "prefetch-without-workers"
    severity = Severity.ERROR
    summary = "dataloader_prefetch_factor without dataloader workers"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', dataloader_prefetch_factor=4)\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', dataloader_prefetch_factor=4, dataloader_num_workers=2)\n",
             flags=False),
    ]

    def site_check(self, setup, site):
        pf = site.known("dataloader_prefetch_factor")
        if pf is None or pf is UNKNOWN or site.get("dataloader_prefetch_factor") is None:
            return
        if self.eff(setup, site, "dataloader_num_workers") == 0:
            yield self.diagnostic(_span(site, "dataloader_prefetch_factor"),
                                  f"dataloader_prefetch_factor={pf!r} with dataloader_num_workers=0: "
                                  "TrainingArguments raises ValueError")

