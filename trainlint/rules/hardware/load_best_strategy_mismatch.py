"""TL505 load-best-strategy-mismatch: load_best_model_at_end with different save and eval strategies"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import effective, located, set_edit
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.hardware._cross_file_common import (
    HF_SCRIPT,
    _strategy,
)
from trainlint.setup import Setup


class LoadBestStrategyMismatch(Rule):
    """
    ## What it does
    Flags `load_best_model_at_end` when the save strategy is not `"best"` and differs from the
    evaluation strategy (`eval_strategy`, or the older `evaluation_strategy`; the default is
    `"no"`), wherever they are set: script, launch flags, args file.

    ## Why is this bad?
    `TrainingArguments.__post_init__` raises "--load_best_model_at_end requires the save and
    eval strategy to match" before training starts.

    ## Example
    ```bash
    python run.py --eval_strategy epoch --save_strategy steps --save_steps 500 --load_best_model_at_end
    ```

    ## Use instead
    ```bash
    python run.py --eval_strategy epoch --save_strategy epoch --load_best_model_at_end
    ```

    ## Fix safety
    Safe for the training itself: the save strategy is set to the evaluation strategy (the
    checkpoint cadence changes). Offered when the save strategy is written.

    ## References
    - transformers `training_args.py` (`__post_init__`)
    """

    code = "TL505"
    name = "load-best-strategy-mismatch"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    needs_training = True
    fires_on = ("load_best_model_at_end",)
    fix_safety = "safe"
    summary = "load_best_model_at_end with different save and eval strategies"

    cases = [
        Case(files={"run.sh": "python run.py --output_dir o --eval_strategy epoch \\\n  --save_strategy steps "
                              "--load_best_model_at_end\n", "run.py": HF_SCRIPT},
             fixed="python run.py --output_dir o --eval_strategy epoch \\\n  --save_strategy epoch "
                   "--load_best_model_at_end\n", fixed_path="run.sh"),
        Case("""
             from transformers import TrainingArguments
             args = TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="epoch")
             """, note="save_strategy defaults to steps"),
        # must not flag
        Case("""
             from transformers import TrainingArguments
             args = TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="epoch",
                                      save_strategy="epoch")
             """, flags=False),
        Case("""
             from transformers import TrainingArguments
             args = TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="epoch",
                                      save_strategy="best", metric_for_best_model="loss")
             """, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site in setup.sites:
            lb = site.get("load_best_model_at_end")
            if lb is None or lb.value is not True:
                continue
            ev, sv = effective(site, "eval_strategy"), effective(site, "save_strategy")
            e, s = _strategy(ev), _strategy(sv)
            if e is None or s is None or s == "best" or e == s:
                continue
            edits = None
            if sv is not None and sv.span is not None:
                edit = set_edit(sv, e)
                edits = [edit] if edit is not None else None
            span = lb.key_span or lb.span
            yield self.diagnostic(span, f"load_best_model_at_end needs the save and eval strategies to match, but "  # type: ignore[arg-type]
                                        f"{located(ev)} and {located(sv)}: TrainingArguments raises before "  # type: ignore[arg-type]
                                        f"training", edits=edits,
                                  related=[v.span.related(f"{v.name} is set here") for v in (ev, sv)
                                           if v is not None and v.span is not None],
                                  fix_message=f"set save_strategy to {e}")

