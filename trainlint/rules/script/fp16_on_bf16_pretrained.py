"""TL107 fp16-on-bf16-pretrained: fp16 training of a model pretrained in bfloat16 (T5 family, ...)"""

from __future__ import annotations

import re
from typing import Iterable

from trainlint.analysis import LoadCall, trainer_contexts
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._half_precision_weights_common import (
    fp16_values,
)
from trainlint.setup import Setup

# Checkpoints pretrained (and stored) in bfloat16. T5-family: the T5 paper's codebase "All of
# our experiments use bfloat16" (google-research/text-to-text-transfer-transformer#539) and the
# fp16 NaN reports below. The others: the ``torch_dtype`` of their published config.json.
_BF16_PRETRAINED = [
    (re.compile(r"(^|/)(t5-(small|base|large|3b|11b)|t5-v1_1-|t5_v1_1|flan-t5|mt5-|byt5-|ul2|flan-ul2|mt0-|t0(pp|_3b|$))",
                re.I), "T5-family", "pretrained in bfloat16; fp16 activations overflow (transformers#14189, #23918)"),
    (re.compile(r"(^|/)(meta-)?llama-3", re.I), "Llama 3", "stored in bfloat16 (config.json torch_dtype)"),
    (re.compile(r"(^|/)(code)?gemma", re.I), "Gemma", "stored in bfloat16 (config.json torch_dtype)"),
    (re.compile(r"(^|/)qwen(2|3)", re.I), "Qwen2/Qwen3", "stored in bfloat16 (config.json torch_dtype)"),
]


def bf16_pretrained(model_id: str | None) -> tuple[str, str] | None:
    if not model_id:
        return None
    for pattern, family, why in _BF16_PRETRAINED:
        if pattern.search(model_id):
            return family, why
    return None



class Fp16OnBf16Pretrained(Rule):
    """
    ## What it does
    Flags `fp16=True` when the trained model comes from a checkpoint pretrained in bfloat16:
    the T5 family (`t5-*`, `google/t5-v1_1-*`, `google/flan-t5-*`, `google/mt5-*`,
    `google/byt5-*`, `google/ul2`, `bigscience/mt0-*`/`T0`), and checkpoints published in
    bfloat16 (Llama 3, Gemma, Qwen2/Qwen3). The model id is followed through constants,
    variables and helper functions; an id that cannot be resolved is not flagged.

    ## Why is this bad?
    bf16 has fp32's exponent range; fp16 tops out at 65504. Activations of a model trained in
    bf16 routinely exceed that (T5's feed-forward outputs are the classic case), so fp16
    training produces inf/NaN losses or silently skipped steps.

    ## Example
    ```python
    model = AutoModelForSeq2SeqLM.from_pretrained("google/flan-t5-large")
    args = Seq2SeqTrainingArguments(output_dir="out", fp16=True)
    ```

    ## Use instead
    ```python
    model = AutoModelForSeq2SeqLM.from_pretrained("google/flan-t5-large")
    args = Seq2SeqTrainingArguments(output_dir="out", bf16=True)  # fp32 on GPUs without bf16
    ```

    ## Fix safety
    No automatic fix here: bf16 needs an Ampere-or-newer GPU (`fp16-on-bf16-hardware`, TL501,
    switches it when the target GPU is known), otherwise train in fp32.

    ## References
    - https://github.com/huggingface/transformers/issues/5651, #11461, #14189, #23918
    - https://github.com/google-research/text-to-text-transfer-transformer/issues/539
    - transformers DeepSpeed guide (bf16-pretrained models in fp16)
    """

    code = "TL107"
    name = "fp16-on-bf16-pretrained"
    severity = Severity.WARNING
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("fp16",)
    fix_safety = "none"
    summary = "fp16 training of a model pretrained in bfloat16 (T5 family, ...)"

    cases = [
        Case(
            """
            from transformers import AutoModelForSeq2SeqLM, Seq2SeqTrainer, Seq2SeqTrainingArguments
            model = AutoModelForSeq2SeqLM.from_pretrained("google/flan-t5-large")
            args = Seq2SeqTrainingArguments(output_dir="out", fp16=True)
            Seq2SeqTrainer(model=model, args=args)
            """,
        ),
        Case(
            """
            from transformers import T5ForConditionalGeneration, Trainer, TrainingArguments
            MODEL = "t5-base"
            def load():
                return T5ForConditionalGeneration.from_pretrained(MODEL)
            Trainer(model=load(), args=TrainingArguments(output_dir="o", fp16=True))
            """,
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import get_peft_model
            model = get_peft_model(AutoModelForCausalLM.from_pretrained("meta-llama/Meta-Llama-3-8B"), cfg)
            Trainer(model=model, args=TrainingArguments(output_dir="o", fp16=True))
            """,
        ),
        # must not flag
        Case(
            """
            from transformers import AutoModelForSeq2SeqLM, Seq2SeqTrainer, Seq2SeqTrainingArguments
            model = AutoModelForSeq2SeqLM.from_pretrained("google/flan-t5-large")
            Seq2SeqTrainer(model=model, args=Seq2SeqTrainingArguments(output_dir="o", bf16=True))
            """,
            flags=False,
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
            Trainer(model=model, args=TrainingArguments(output_dir="o", fp16=True))
            """,
            flags=False, note="Llama 2 was published in float16",
        ),
        Case(
            """
            from transformers import AutoModelForSeq2SeqLM, Seq2SeqTrainer, Seq2SeqTrainingArguments
            model = AutoModelForSeq2SeqLM.from_pretrained(model_args.model_name_or_path)
            Seq2SeqTrainer(model=model, args=Seq2SeqTrainingArguments(output_dir="o", fp16=True))
            """,
            flags=False, note="model id not known",
        ),
        Case(
            """
            from transformers import AutoModelForSeq2SeqLM
            model = AutoModelForSeq2SeqLM.from_pretrained("t5-small").half()
            print(model.generate(**batch))
            """,
            flags=False, note="inference, no Trainer",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for ctx in trainer_contexts(setup):
            flow = ctx.flow
            fp16 = fp16_values(ctx)
            if flow is None or not fp16:
                continue
            pf = ctx.pf
            ld: LoadCall
            for ld in flow.loads:
                hit = bf16_pretrained(ld.model_id_text())
                if hit is None:
                    continue
                family, why = hit
                v = fp16[0]
                related = [ld.model_id.span.related(f"{ld.model_id_text()} is loaded here")] \
                    if ld.model_id is not None and ld.model_id.span is not None else []
                yield self.diagnostic(
                    v.key_span or v.span or pf.span(ld.call),  # type: ignore[arg-type]
                    f"fp16=True on {ld.model_id_text()} ({family}, {why}): fp16's range ends at 65504 and bf16 "
                    f"activations overflow it (inf/NaN loss); use bf16=True on GPUs that have it, else fp32",
                    related=related)
                break

