"""TL209 bf16-unsupported-gpu: bf16 on a GPU without bf16 (pre-Ampere)"""

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


class Bf16UnsupportedGpu(SiteRule):
    """
    ## What it does
    Flags `bf16=True` (or `bf16_full_eval=True`) without `use_cpu=True` when the target GPU
    (`--gpu`) has no bf16 support (compute capability below 8.0: V100, T4, ...). Silent without
    a target GPU.

    ## Why is this bad?
    `ValueError: Your setup doesn't support bf16/gpu. ... You need Ampere+ GPU with cuda>=11.0`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", bf16=True)  # on a T4
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", fp16=True)
    ```

    ## Fix safety
    No automatic fix: fp16 changes numerics (and may overflow for bf16-pretrained models).

    ## References
    - transformers `TrainingArguments.__post_init__` (4.57, 5.24)
    """

    code = "TL209"
    needs = ("gpu",)  # every finding is about the target GPU, which only --gpu gives
    fires_on = ("bf16", "bf16_full_eval")
    name = "bf16-unsupported-gpu"
    severity = Severity.ERROR
    summary = "bf16 on a GPU without bf16 (pre-Ampere)"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', bf16=True)\n", options={"gpu": "T4"}),
        Case(TA + "a = TrainingArguments(output_dir='o', bf16=True)\n", options={"gpu": "A100"}, flags=False),
        Case(TA + "a = TrainingArguments(output_dir='o', bf16=True)\n", flags=False, note="no target GPU"),
        Case(TA + "a = TrainingArguments(output_dir='o', bf16=True, use_cpu=True)\n", options={"gpu": "T4"},
             flags=False),
    ]

    def site_check(self, setup, site):
        gpu = setup.gpu
        if gpu is None or gpu.bf16:
            return
        for name in ("use_cpu", "no_cuda"):
            if site.get(name) is not None and site.known(name) is not False:
                return  # on the CPU, or not known
        for name in ("bf16", "bf16_full_eval"):
            if site.known(name) is True:
                yield self.diagnostic(_span(site, name), f"{name}=True but the target GPU {gpu.name} has no bf16 "
                                      f"support: TrainingArguments raises ValueError")

