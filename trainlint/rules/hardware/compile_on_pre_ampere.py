"""TL511 compile-on-pre-ampere: torch_compile=True on a GPU older than Ampere"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._spellings import spelled_cases
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import SiteRule
from trainlint.rules.args._args_checks_common import _span


class CompileOnPreAmpere(SiteRule):
    """
    ## What it does
    Flags `torch_compile=True` when the target GPU (`--gpu`) is older than Ampere (compute
    capability below 8.0: V100, T4, ...).

    ## Why is this bad?
    transformers warns at start-up that "the speedups for torchdynamo mostly come with GPU
    Ampere or higher": on older GPUs the compile time (minutes for a large model, again on every
    shape change) is rarely paid back. Advice only.

    ## Example
    ```python
    TrainingArguments(output_dir="o", torch_compile=True)   # on a T4
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o")
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `TrainingArguments.__post_init__` (the torchdynamo warning)
    """

    code = "TL511"
    needs = ("gpu",)  # every finding is about the target GPU, which only --gpu gives
    name = "compile-on-pre-ampere"
    severity = Severity.INFO
    summary = "torch_compile=True on a GPU older than Ampere"
    triggers = SETUP_NAMES
    fires_on = ("torch_compile",)
    cases = [
        *spelled_cases({"torch_compile": True}, options={"gpu": "T4"}),
        *spelled_cases({"torch_compile": True}, flags=False, options={"gpu": "A100"}, only=("keyword", "flag")),
        *spelled_cases({"torch_compile": True}, flags=False, only=("keyword",), note="no target GPU"),
    ]

    def site_check(self, setup, site):
        gpu = setup.gpu
        if gpu is None:
            return
        from trainlint.knowledge.gpus import is_ampere_or_newer

        if gpu is None or gpu.compute_capability is None or is_ampere_or_newer(gpu):
            return
        v = site.get("torch_compile")
        if v is None or v.value is not True:
            return
        yield self.diagnostic(_span(site, "torch_compile"),
                              f"torch_compile=True on {gpu.describe()}: torch.compile's speedups mostly need Ampere or "
                              "newer (transformers warns so), and the compile time is rarely paid back here")
