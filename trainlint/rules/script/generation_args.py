"""TL117 generation-args-without-seq2seq."""

from __future__ import annotations

from typing import Iterable

from trainlint.analysis import base_trainer_class
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

GENERATION_FIELDS = ("predict_with_generate", "generation_max_length", "generation_num_beams", "generation_config",
                     "sortish_sampler")


class GenerationArgsWithoutSeq2Seq(Rule):
    """
    ## What it does
    Flags generation settings (`predict_with_generate`, `generation_max_length`,
    `generation_num_beams`, `generation_config`, `sortish_sampler`) written in a plain
    `TrainingArguments(...)` call (error), and `predict_with_generate=True` in arguments
    handed to the plain `Trainer` instead of `Seq2SeqTrainer` (warning).

    ## Why is this bad?
    These fields exist only on `Seq2SeqTrainingArguments` (4.57.1 and 5.24):
    `TrainingArguments(predict_with_generate=True)` is a `TypeError`. And only
    `Seq2SeqTrainer` generates during evaluation: the plain `Trainer` ignores the flag and
    computes metrics from the argmax of the logits (teacher-forced), which look far better than
    real generations, and `compute_metrics` written for generated ids fails on the shapes.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", predict_with_generate=True)
    trainer = Trainer(model=model, args=args)
    ```

    ## Use instead
    ```python
    args = Seq2SeqTrainingArguments(output_dir="out", predict_with_generate=True, generation_max_length=128)
    trainer = Seq2SeqTrainer(model=model, args=args)
    ```

    ## Fix safety
    No automatic fix: the class names (and imports) of both calls change together.

    ## References
    - https://github.com/huggingface/transformers/issues/10032, #12029, #13252, #13339, #30361
    - transformers `training_args_seq2seq.py` (the fields), `trainer_seq2seq.py`
    """

    code = "TL117"
    name = "generation-args-without-seq2seq"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = GENERATION_FIELDS
    fix_safety = "none"
    summary = "generation settings with TrainingArguments or the plain Trainer"

    cases = [
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", predict_with_generate=True)
            """,
        ),
        Case(
            """
            from transformers import Seq2SeqTrainingArguments, Trainer
            args = Seq2SeqTrainingArguments(output_dir="o", predict_with_generate=True)
            Trainer(model=model, args=args, compute_metrics=rouge)
            """,
            note="the plain Trainer ignores it",
        ),
        # must not flag
        Case(
            """
            from transformers import Seq2SeqTrainingArguments, Seq2SeqTrainer
            args = Seq2SeqTrainingArguments(output_dir="o", predict_with_generate=True)
            Seq2SeqTrainer(model=model, args=args)
            """,
            flags=False,
        ),
        Case(
            """
            from transformers import Seq2SeqTrainingArguments, Seq2SeqTrainer
            class MyTrainer(Seq2SeqTrainer):
                pass
            MyTrainer(model=model, args=Seq2SeqTrainingArguments(output_dir="o", predict_with_generate=True))
            """,
            flags=False, note="a Seq2SeqTrainer subclass",
        ),
        Case(
            """
            from transformers import TrainingArguments
            from dataclasses import dataclass
            @dataclass
            class GenArgs(TrainingArguments):
                predict_with_generate: bool = False
            args = GenArgs(output_dir="o", predict_with_generate=True)
            """,
            flags=False, note="a subclass that defines the field",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf in setup.scripts:
            for tac in pf.args_calls:
                if tac.class_name != "TrainingArguments" or pf.local_classes.get(_callee(tac)) is not None \
                        or not setup.judges(tac.args):
                    continue
                for f in GENERATION_FIELDS:
                    v = tac.args.get(f)
                    if v is not None:
                        yield self.diagnostic(
                            v.key_span or v.span,  # type: ignore[arg-type]
                            f"{f} is not a TrainingArguments field (only Seq2SeqTrainingArguments has it): this call "
                            f"raises TypeError; use Seq2SeqTrainingArguments with Seq2SeqTrainer")
            for tc in pf.trainer_calls:
                if base_trainer_class(pf, tc) != "Trainer" or tc.args_call is None:
                    continue
                v = tc.args_call.args.get("predict_with_generate")
                if tc.args_call.class_name == "TrainingArguments" or v is None or v.value is not True:
                    continue
                yield self.diagnostic(
                    v.key_span or v.span,  # type: ignore[arg-type]
                    f"predict_with_generate=True is ignored by the plain {tc.class_name}: evaluation computes metrics "
                    f"from the argmax of teacher-forced logits, not from generated text; use Seq2SeqTrainer",
                    severity=Severity.WARNING,
                    related=[pf.span(tc.site.node.func).related(f"{tc.class_name} is built here")])


def _callee(tac) -> str:
    import ast

    f = tac.site.node.func
    return f.id if isinstance(f, ast.Name) else ""
