"""TL210 tf32-unsupported-gpu: tf32=True on a GPU without TF32"""

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


class Tf32UnsupportedGpu(SiteRule):
    """
    ## What it does
    Flags `tf32=True` when the target GPU (`--gpu`) has no TF32 (pre-Ampere NVIDIA, AMD).
    Silent without a target GPU.

    ## Why is this bad?
    `ValueError: --tf32 requires Ampere or a newer GPU arch, cuda>=11 and torch>=1.7`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", tf32=True)  # on a V100
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o")
    ```

    ## Fix safety
    Safe: TF32 cannot be used on that GPU anyway; the argument is removed.

    ## References
    - transformers `TrainingArguments.__post_init__`
    """

    code = "TL210"
    needs = ("gpu",)  # every finding is about the target GPU, which only --gpu gives
    fires_on = ("tf32",)
    name = "tf32-unsupported-gpu"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "tf32=True on a GPU without TF32"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', tf32=True)\n", options={"gpu": "V100"},
             fixed=TA + "a = TrainingArguments(output_dir='o')\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', tf32=True)\n", options={"gpu": "H100"}, flags=False),
    ]

    def site_check(self, setup, site):
        gpu = setup.gpu
        if gpu is None or gpu.tf32 or site.known("tf32") is not True or site.known("use_cpu") is True:
            return
        from trainlint.rules._versioned import remove_edit

        v = site.get("tf32")
        e = remove_edit(setup, site, v)  # type: ignore[arg-type]
        yield self.diagnostic(_span(site, "tf32"), f"tf32=True but the target GPU {gpu.name} has no TF32: "
                              "TrainingArguments raises ValueError", edits=[e] if e else None,
                              fix_message="remove tf32=True")

