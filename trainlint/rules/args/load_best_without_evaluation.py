"""TL238 load-best-without-evaluation: load_best_model_at_end with neither evaluation nor saves"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._spellings import spelled_cases
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import SiteRule, strategy
from trainlint.rules.args._args_checks_common import _related, _span


class LoadBestWithoutEvaluation(SiteRule):
    """
    ## What it does
    Flags `load_best_model_at_end=True` with `save_strategy="no"` and `eval_strategy="no"`
    (both are the defaults of the other's check: when only one of them is `"no"`, the strategies
    differ and TL505 reports the `ValueError`).

    ## Why is this bad?
    The strategies match, so `TrainingArguments` accepts it, but nothing is ever evaluated or
    saved: there is no best checkpoint, and the model at the end is simply the last one. The
    setting does nothing while it reads as if the best model were kept.

    ## Example
    ```python
    TrainingArguments(output_dir="o", load_best_model_at_end=True, save_strategy="no")
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="epoch",
                      save_strategy="epoch")
    ```

    ## Fix safety
    No automatic fix (evaluation needs an eval dataset).

    ## References
    - transformers `TrainingArguments.__post_init__` (the strategies must match) and
      `Trainer._load_best_model` (runs only when a best checkpoint was recorded)
    """

    code = "TL238"
    name = "load-best-without-evaluation"
    severity = Severity.WARNING
    summary = "load_best_model_at_end with neither evaluation nor saves"
    triggers = SETUP_NAMES
    fires_on = ("load_best_model_at_end",)
    cases = [
        *spelled_cases({"load_best_model_at_end": True, "save_strategy": "no"}),
        *spelled_cases({"load_best_model_at_end": True, "save_strategy": "no", "eval_strategy": "epoch"},
                       flags=False, only=("keyword", "flag"), note="TL505 reports the mismatch"),
        *spelled_cases({"load_best_model_at_end": True, "save_strategy": "epoch", "eval_strategy": "epoch"},
                       flags=False, only=("keyword",)),
    ]

    def site_check(self, setup, site):
        lb = site.get("load_best_model_at_end")
        if lb is None or lb.value is not True:
            return
        if strategy(self.eff(setup, site, "save_strategy")) != "no" or \
                strategy(self.eff(setup, site, "eval_strategy")) != "no":
            return
        yield self.diagnostic(_span(site, "load_best_model_at_end"),
                              'load_best_model_at_end=True does nothing with save_strategy="no" and eval_strategy="no": '
                              "no checkpoint is evaluated or saved, so the last model is kept; set both strategies "
                              '(e.g. "epoch") or drop it', related=_related(site, "save_strategy", "eval_strategy"))
