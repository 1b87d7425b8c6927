"""TL506 load-best-steps-not-multiple: save_steps is not a multiple of eval_steps with load_best_model_at_end"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import effective, set_edit, where
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.hardware._cross_file_common import (
    _strategy,
)
from trainlint.setup import Setup


class LoadBestStepsNotMultiple(Rule):
    """
    ## What it does
    Flags `load_best_model_at_end` with step evaluation and saving when `save_steps` is not a
    multiple of `eval_steps` (which falls back to `logging_steps` when unset).

    ## Why is this bad?
    `TrainingArguments.__post_init__` raises "--load_best_model_at_end requires the saving steps
    to be a round multiple of the evaluation steps".

    ## Example
    ```python
    TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="steps",
                      save_strategy="steps", eval_steps=300, save_steps=500)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="steps",
                      save_strategy="steps", eval_steps=300, save_steps=600)
    ```

    ## Fix safety
    Safe for training: `save_steps` is rounded up to the next multiple of `eval_steps`.

    ## References
    - transformers `training_args.py` (`__post_init__`)
    """

    code = "TL506"
    name = "load-best-steps-not-multiple"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    needs_training = True
    fires_on = ("load_best_model_at_end",)
    fix_safety = "safe"
    summary = "save_steps is not a multiple of eval_steps with load_best_model_at_end"

    cases = [
        Case("""
             from transformers import TrainingArguments
             args = TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="steps",
                                      eval_steps=300, save_steps=500)
             """,
             fixed='from transformers import TrainingArguments\n'
                   'args = TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="steps",\n'
                   '                         eval_steps=300, save_steps=600)\n'),
        # must not flag
        Case("""
             from transformers import TrainingArguments
             args = TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="steps",
                                      eval_steps=250, save_steps=500)
             """, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site in setup.sites:
            lb = site.get("load_best_model_at_end")
            if lb is None or lb.value is not True:
                continue
            e, s = _strategy(effective(site, "eval_strategy")), _strategy(effective(site, "save_strategy"))
            if e != "steps" or s != "steps":
                continue
            ev = site.get("eval_steps") or effective(site, "logging_steps")
            sv = effective(site, "save_steps")
            if ev is None or sv is None or not ev.known or not sv.known:
                continue
            a, b = ev.value, sv.value
            if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in (a, b)) or b % a == 0:
                continue
            new = (b // a + 1) * a
            edit = set_edit(sv, new) if sv.span is not None else None
            yield self.diagnostic(sv.span or lb.key_span or lb.span,  # type: ignore[arg-type]
                                  f"save_steps {b} is not a multiple of eval_steps {a} ({where(ev)}): with "
                                  f"load_best_model_at_end TrainingArguments raises", edits=[edit] if edit else None,
                                  fix_message=f"set save_steps to {new}")

