"""TL202 eval-batch-with-generate."""

from __future__ import annotations

from typing import Iterable


from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule, RuleOptions, option
from trainlint.setup import Setup

DEFAULT_EVAL_BATCH = 8  # TrainingArguments.per_device_eval_batch_size default (4.x and 5.x)


class EvalBatchOptions(RuleOptions):

    max_sequences: int = option(
        16, ge=1, alias="max-sequences",
        description="flag when per_device_eval_batch_size x generation_num_beams exceeds this")


class EvalBatchWithGenerate(Rule):
    """
    ## What it does
    Flags `predict_with_generate=True` together with a per-device eval batch that generates
    many sequences at once: `per_device_eval_batch_size x generation_num_beams` above the
    configured limit (16 by default), from a TrainingArguments keyword, a launch-line flag or
    an args file.

    ## Why is this bad?
    With `predict_with_generate`, evaluation runs `model.generate()` on every eval batch.
    Generation keeps `batch x num_beams` sequences alive and a key/value cache for each of
    them, for every layer, growing up to `generation_max_length` tokens. That memory is not
    needed in training, so a run whose training step fits can still run out of memory at the
    first evaluation (often hours in). Large eval batches with generation are the classic
    "training fits, eval OOMs" report.

    ## Example
    ```python
    args = Seq2SeqTrainingArguments(
        output_dir="out",
        per_device_train_batch_size=2,
        per_device_eval_batch_size=50,
        predict_with_generate=True,
    )
    ```

    ## Use instead
    ```python
    args = Seq2SeqTrainingArguments(
        output_dir="out",
        per_device_train_batch_size=2,
        per_device_eval_batch_size=8,
        predict_with_generate=True,
    )
    ```

    ## Fix safety
    Unsafe: evaluation results can change slightly with the batch composition (padding), and
    evaluation gets slower. The fix sets the eval batch to twice the train batch (at least 8,
    at most the limit).

    ## References
    - https://github.com/huggingface/transformers/issues/13597
    """

    code = "TL202"
    name = "eval-batch-with-generate"
    severity = Severity.WARNING
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("predict_with_generate",)
    fix_safety = "unsafe"
    summary = "a large eval batch with predict_with_generate can OOM at evaluation"
    Options = EvalBatchOptions

    cases = [
        Case(
            """
            from transformers import Seq2SeqTrainingArguments
            args = Seq2SeqTrainingArguments(
                output_dir="out",
                per_device_train_batch_size=2,
                per_device_eval_batch_size=50,
                predict_with_generate=True,
            )
            """,
            unsafe=True,
            fixed=(
                "from transformers import Seq2SeqTrainingArguments\n"
                "args = Seq2SeqTrainingArguments(\n"
                '    output_dir="out",\n'
                "    per_device_train_batch_size=2,\n"
                "    per_device_eval_batch_size=8,\n"
                "    predict_with_generate=True,\n"
                ")\n"
            ),
        ),
        Case(
            """
            from transformers import Seq2SeqTrainingArguments
            EVAL_BS = 12
            args = Seq2SeqTrainingArguments(output_dir="o", per_device_eval_batch_size=EVAL_BS,
                                            predict_with_generate=True, generation_num_beams=4)
            """,
        ),
        Case(
            """
            from transformers import Seq2SeqTrainingArguments
            args = Seq2SeqTrainingArguments(output_dir="o", predict_with_generate=True, generation_num_beams=4)
            """,
            note="default eval batch 8 x 4 beams",
        ),
        # must not flag
        Case("from transformers import Seq2SeqTrainingArguments\n"
             "args = Seq2SeqTrainingArguments(output_dir='o', per_device_eval_batch_size=50)\n",
             flags=False, note="no generation"),
        Case("from transformers import Seq2SeqTrainingArguments\n"
             "args = Seq2SeqTrainingArguments(output_dir='o', per_device_eval_batch_size=16, predict_with_generate=True)\n",
             flags=False),
        Case("from transformers import Seq2SeqTrainingArguments\nimport os\n"
             "args = Seq2SeqTrainingArguments(output_dir='o', per_device_eval_batch_size=int(os.environ['B']),"
             " predict_with_generate=True)\n", flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        limit = self.options.max_sequences  # type: ignore[attr-defined]
        for site in setup.sites:
            gen = site.get("predict_with_generate")
            if gen is None or gen.value is not True:
                continue
            bs_v = site.get("per_device_eval_batch_size")
            if bs_v is not None and not bs_v.known:
                continue
            bs = bs_v.value if bs_v is not None else DEFAULT_EVAL_BATCH
            beams_v = site.get("generation_num_beams")
            beams = beams_v.value if beams_v is not None and isinstance(beams_v.value, int) else 1
            if not isinstance(bs, int) or isinstance(bs, bool) or bs * beams <= limit:
                continue
            train_bs = site.known("per_device_train_batch_size")
            suggestion = min(limit // max(beams, 1) or 1, max(train_bs * 2, 8)) if isinstance(train_bs, int) \
                else max(1, min(limit // max(beams, 1), 8))
            beams_text = f" x {beams} beams = {bs * beams} sequences" if beams > 1 else ""
            train_text = f" while training uses {train_bs} per device" if isinstance(train_bs, int) else ""
            message = (f"per_device_eval_batch_size={bs}{beams_text} with predict_with_generate=True: generation keeps "
                       f"every sequence and its key/value cache for up to generation_max_length tokens, so evaluation "
                       f"can run out of memory{train_text}; use about {suggestion}")
            anchor = bs_v if bs_v is not None else (beams_v or gen)
            span = anchor.span or anchor.key_span
            edits = None
            if bs_v is not None and bs_v.edit_span() is not None and suggestion < bs:
                edits = [bs_v.edit_span().edit(str(suggestion))]  # type: ignore[union-attr]
            related = [gen.key_span.related("predict_with_generate=True is set here")] \
                if gen.key_span is not None and gen.key_span != span else []
            yield self.diagnostic(span, message, edits=edits, related=related,  # type: ignore[arg-type]
                                  fix_message=f"set per_device_eval_batch_size to {suggestion}")
