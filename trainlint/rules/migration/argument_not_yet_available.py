"""TL604 argument-not-yet-available: an argument added after the target version"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.knowledge import training_args as ta
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    target,
    target_text,
)
from trainlint.rules.base import Case, Rule
from trainlint.rules.migration._migration_common import (
    V424,
    V446,
    _shown,
    _written_with_status,
)
from trainlint.setup import Setup


class ArgumentNotYetAvailable(Rule):
    """
    ## What it does
    Flags an argument that exists only in versions newer than the target (for example
    `eval_strategy` with transformers 4.40, or `train_sampling_strategy` before 5.2).

    ## Why is this bad?
    The target version's dataclass does not have it: `TypeError` at construction. This happens
    when a script written for a newer release runs in an older pinned environment.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", eval_strategy="epoch")  # transformers 4.40
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", evaluation_strategy="epoch")
    ```
    or upgrade transformers.

    ## Fix safety
    No fix: upgrading or renaming back is the user's choice.

    ## References
    - transformers `src/transformers/training_args.py` of each release (the fields a version
      accepts), read by `scripts/gen_training_args.py` into trainlint's data
    - https://github.com/huggingface/transformers/releases (when an argument was added)
    """

    code = "TL604"
    name = "argument-not-yet-available"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fix_safety = "none"
    summary = "an argument added after the target version"

    cases = [
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", eval_strategy="epoch")
            """, options=V424),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", eval_strategy="epoch")
            """, options=V446, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site, name, value, h in _written_with_status(setup, "too-new"):
            if h is None:
                continue
            old = [r.old for r in ta.renames() if r.new == name and r.kind == "field"]
            hint = f"; this version calls it {old[0]}" if old else ""
            try:
                if old and old[0] not in ta.field_names(site.class_name, *target(setup)[::2]):
                    hint = ""
            except ta.UnknownClassError:
                hint = ""
            message = (f"{_shown(value)} was added to {site.class_name} in {h.package} {h.first} "
                       f"({target_text(setup, h.package)}){hint}")
            span = value.key_span or value.span or site.span
            if span is None:
                continue
            yield self.diagnostic(span, message)

