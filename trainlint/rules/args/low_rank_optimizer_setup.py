"""TL241 low-rank-optimizer-setup: GaLore/APOLLO optim without optim_target_modules, or layer-wise under accumulation, several processes or DeepSpeed"""

from __future__ import annotations

from trainlint.analysis import multi_process
from trainlint.diagnostics import Severity
from trainlint.rules._setup_util import as_int as as_int_value
from trainlint.rules._spellings import spelled_cases
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import SiteRule, strategy, wrapper_of
from trainlint.rules.args._args_checks_common import _related, _span

PREFIXES = ("galore_", "apollo_")


class LowRankOptimizerSetup(SiteRule):
    """
    ## What it does
    Flags `optim="galore_*"` / `"apollo_*"`:
    - without `optim_target_modules`;
    - in a layer-wise variant (`*_layerwise`) with `gradient_accumulation_steps > 1`, with
      several processes, or with DeepSpeed.

    ## Why is this bad?
    transformers raises when it builds the optimizer, after the model is loaded: "You need to
    define `optim_target_modules` to use ... optimizers"; "Layerwise ... does not support
    gradient accumulation" / "... DDP at this time" (`trainer_optimizer.py`). LLaMA-Factory
    refuses the same combinations and GaLore/APOLLO with DeepSpeed at start-up; the layer-wise
    optimizer hooks each parameter's gradient, which DeepSpeed's engine does not call.

    ## Example
    ```python
    TrainingArguments(output_dir="o", optim="galore_adamw_layerwise", gradient_accumulation_steps=4)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", optim="galore_adamw", optim_target_modules=["attn", "mlp"],
                      gradient_accumulation_steps=4)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `trainer_optimizer.py` (`_setup_low_rank_optimizer`)
    - LLaMA-Factory `hparams/parser.py` (`_check_extra_dependencies`, GaLore/APOLLO checks)
    """

    code = "TL241"
    name = "low-rank-optimizer-setup"
    severity = Severity.ERROR
    summary = "GaLore/APOLLO optim without optim_target_modules, or layer-wise with accumulation/DDP/DeepSpeed"
    triggers = SETUP_NAMES
    fires_on = ("optim",)
    cases = [
        *spelled_cases({"optim": "galore_adamw"}),
        *spelled_cases({"optim": "galore_adamw_layerwise", "optim_target_modules": ["attn"],
                        "gradient_accumulation_steps": 4}, only=("keyword", "flag")),
        *spelled_cases({"optim": "apollo_adamw_layerwise", "optim_target_modules": "all-linear"}, only=("flag",),
                       options={"gpus": 2}, note="several processes"),
        *spelled_cases({"optim": "galore_adamw", "optim_target_modules": ["attn", "mlp"]}, flags=False),
        *spelled_cases({"optim": "galore_adamw_layerwise", "optim_target_modules": ["attn"]}, flags=False,
                       only=("keyword",)),
        *spelled_cases({"optim": "adamw_torch"}, flags=False, only=("keyword",)),
    ]

    def site_check(self, setup, site):
        optim = strategy(site.known("optim"))
        if not isinstance(optim, str) or not optim.startswith(PREFIXES):
            return
        family = "GaLore" if optim.startswith("galore_") else "APOLLO"
        tm = self.eff(setup, site, "optim_target_modules")
        if tm is None:
            yield self.diagnostic(_span(site, "optim"),
                                  f'optim="{optim}" needs optim_target_modules (the modules {family} projects): '
                                  "transformers raises ValueError when it builds the optimizer; set "
                                  'optim_target_modules (e.g. ["attn", "mlp"] or "all-linear")')
            return
        if not optim.endswith("layerwise"):
            wrapped = wrapper_of(setup, site)
            if wrapped is not None and wrapped[0] == "DeepSpeed":
                yield self.diagnostic(_span(site, "optim"),
                                      f'optim="{optim}" with DeepSpeed: {family} is built by the Trainer and is not '
                                      "supported under the DeepSpeed engine (LLaMA-Factory refuses it); drop one of them",
                                      severity=Severity.WARNING)
            return
        gas = as_int_value(self.eff(setup, site, "gradient_accumulation_steps"))
        if gas is not None and gas > 1:
            yield self.diagnostic(_span(site, "optim"),
                                  f'layer-wise optim="{optim}" does not support gradient accumulation '
                                  f"(gradient_accumulation_steps={gas}): transformers raises ValueError; use "
                                  f'"{optim[:-len("_layerwise")]}" or accumulate 1 step',
                                  related=_related(site, "gradient_accumulation_steps"))
            return
        why = multi_process(setup, [site])
        if why is not None:
            yield self.diagnostic(_span(site, "optim"),
                                  f'layer-wise optim="{optim}" runs in one process only, but the run has {why}: '
                                  f'transformers raises NotImplementedError; use "{optim[:-len("_layerwise")]}"')
