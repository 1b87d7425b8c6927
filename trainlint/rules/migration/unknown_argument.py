"""TL602 unknown-argument: an argument name TrainingArguments never had (with did-you-mean)"""

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
    V524,
    _shown,
    _written_with_status,
)
from trainlint.setup import Setup


class UnknownArgument(Rule):
    """
    ## What it does
    Flags an argument name that no version of `TrainingArguments` (or the TRL config class)
    has ever had: a misspelt keyword, `--flag` or args-file key. The message suggests the
    closest valid names of the target version. Local subclasses' own annotated fields, and the
    other dataclasses an `HfArgumentParser` script parses into, count as valid; keys that an
    unresolved `**kwargs` may add are never reported.

    ## Why is this bad?
    `TrainingArguments(learning_rat=1e-4)` raises `TypeError` at construction, and
    `HfArgumentParser` rejects `--learning_rat 1e-4` ("the following arguments are not
    recognized"), after the model and data have been loaded.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", learning_rat=1e-4)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", learning_rate=1e-4)
    ```

    ## Fix safety
    No automatic fix: the closest name is a guess.

    ## References
    - transformers `TrainingArguments` (a dataclass: unknown keywords raise `TypeError`)
    - transformers `HfArgumentParser.parse_args_into_dataclasses` ("Some specified arguments are
      not used by the HfArgumentParser")
    """

    code = "TL602"
    name = "unknown-argument"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    fix_safety = "none"
    summary = "an argument name TrainingArguments never had (with did-you-mean)"

    cases = [
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", learning_rat=1e-4)
            """),
        Case("""
            from transformers import Seq2SeqTrainingArguments
            opts = dict(output_dir="o", predict_with_generat=True)
            args = Seq2SeqTrainingArguments(**opts)
            """),
        Case("""
            from dataclasses import dataclass, field
            from transformers import TrainingArguments
            @dataclass
            class MyArgs(TrainingArguments):
                lora_rank: int = 8
            args = MyArgs(output_dir="o", lora_rank=16, lerning_rate=1e-4)
            """, note="the subclass's own field is fine, the typo is not"),
        # must not flag
        Case("""
            from dataclasses import dataclass, field
            from transformers import TrainingArguments
            @dataclass
            class MyArgs(TrainingArguments):
                lora_rank: int = 8
            args = MyArgs(output_dir="o", lora_rank=16)
            """, flags=False),
        Case("""
            from transformers import TrainingArguments
            class MyArgs(TrainingArguments):
                def __init__(self, lerning_rate=None, **kw):
                    super().__init__(learning_rate=lerning_rate, **kw)
            args = MyArgs(output_dir="o", lerning_rate=1e-4)
            """, flags=False, note="its own __init__ decides"),
        Case("""
            from transformers import TrainingArguments
            def build(**kw):
                return TrainingArguments(output_dir="o", **kw)
            """, flags=False),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", evaluation_strategy="epoch")
            """, options=V524, flags=False, note="a removed name is TL601's"),
        Case("""
            from mylib import TrainingArguments
            args = TrainingArguments(output_dir="o", learning_rat=1e-4)
            """, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site, name, value, _ in _written_with_status(setup, "unknown"):
            tf, _, trl, _ = target(setup)
            try:
                guesses = ta.did_you_mean(site.class_name, name, tf, trl)
            except ta.UnknownClassError:
                guesses = []
            if value.origin == "flag":
                guesses = [f"--{g}" for g in guesses]
            hint = f"; did you mean {' or '.join(guesses)}?" if guesses else ""
            what = "has no argument"
            message = (f"{site.class_name} {what} {_shown(value)} ({target_text(setup)}): construction "
                       f"fails{hint}")
            span = value.key_span or value.span or site.span
            if span is None:
                continue
            yield self.diagnostic(span, message)

