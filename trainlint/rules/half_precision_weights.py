"""TL106 fp16-amp-on-fp16-weights, TL107 fp16-on-bf16-pretrained, TL123 auto-dtype-half-weights."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable

from trainlint.analysis import LoadCall, TrainerContext, trainer_contexts
from trainlint.diagnostics import Diagnostic, Related, Severity
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup, Value


def fp16_values(ctx: TrainerContext) -> list[Value]:
    """``fp16=True`` in the sites that configure this Trainer."""
    return [v for s in ctx.sites or [] for v in [s.get("fp16")] if v is not None and v.value is True]


def local_checkpoint_dtype(pf_path: str, model_id: str | None) -> str | None:
    """The dtype a local checkpoint folder's config.json says it is stored in (never the hub)."""
    if not model_id or model_id.count("/") > 1 and not model_id.startswith((".", "/")):
        return None
    base = Path(pf_path).parent
    for cand in (Path(model_id), base / model_id):
        cfg = cand / "config.json"
        try:
            if cfg.is_file():
                data = json.loads(cfg.read_text(encoding="utf-8"))
                value = data.get("dtype") or data.get("torch_dtype")
                return value if isinstance(value, str) else None
        except (OSError, ValueError):
            return None
    return None


class Fp16AmpOnFp16Weights(Rule):
    """
    ## What it does
    Flags `fp16=True` (mixed precision) when the trained model's weights are themselves fp16
    and trainable: loaded with `dtype=torch.float16` (or `torch_dtype=`, `"float16"`), cast
    with `.half()` / `.to(torch.float16)`, or, under transformers 5's default `dtype="auto"`,
    a local checkpoint whose `config.json` says float16. Models with PEFT adapters (the frozen
    base may be fp16, the adapters are kept in fp32) and quantized models are not flagged; hub
    checkpoints whose stored dtype is not known are not guessed.

    ## Why is this bad?
    fp16 AMP keeps fp32 master weights and scales the loss with a `GradScaler`. With fp16
    weights the gradients are fp16 too, and the scaler refuses them at the first step:
    "ValueError: Attempting to unscale FP16 gradients." Even without the error, fp16 weight
    updates lose most small steps to rounding.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m", dtype=torch.float16)
    args = TrainingArguments(output_dir="out", fp16=True)
    Trainer(model=model, args=args).train()
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m", dtype=torch.float32)
    args = TrainingArguments(output_dir="out", fp16=True)
    Trainer(model=model, args=args).train()
    ```

    ## Fix safety
    No automatic fix: loading in fp32 doubles weight memory, switching to bf16 changes
    numerics; which one is right depends on the GPU and the model size.

    ## References
    - https://github.com/haotian-liu/LLaVA/issues/363, https://github.com/Facico/Chinese-Vicuna/issues/168
    - https://github.com/LAION-AI/Open-Assistant/issues/3213 (fixed by loading in float32)
    - torch `GradScaler.unscale_` ("Attempting to unscale FP16 gradients")
    - pitfalls catalog P05, R24
    """

    code = "TL106"
    name = "fp16-amp-on-fp16-weights"
    severity = Severity.ERROR
    fix_safety = "none"
    summary = "fp16=True on a model whose trainable weights are already fp16"

    cases = [
        Case(
            """
            import torch
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m", dtype=torch.float16)
            args = TrainingArguments(output_dir="out", fp16=True)
            Trainer(model=model, args=args).train()
            """,
        ),
        Case(
            """
            import torch
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            DTYPE = torch.float16
            kw = {"torch_dtype": DTYPE}
            def build():
                return AutoModelForCausalLM.from_pretrained("m", **kw)
            model = build()
            Trainer(model=model, args=TrainingArguments(output_dir="o", fp16=True))
            """,
        ),
        Case(
            """
            from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
            model.half()
            Trainer(model=model, args=TrainingArguments(output_dir="o", fp16=True))
            """,
        ),
        Case(
            files={
                "ckpt/config.json": '{"model_type": "gpt2", "torch_dtype": "float16"}',
                "train.py": (
                    "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                    'model = AutoModelForCausalLM.from_pretrained("ckpt")\n'
                    'Trainer(model=model, args=TrainingArguments(output_dir="o", fp16=True))\n'
                ),
            },
            options={"transformers-version": "5.24.0"},
            note="v5 loads a local fp16 checkpoint in fp16 by default",
        ),
        # must not flag
        Case(
            """
            import torch
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import get_peft_model
            model = AutoModelForCausalLM.from_pretrained("m", dtype=torch.float16)
            model = get_peft_model(model, lora)
            Trainer(model=model, args=TrainingArguments(output_dir="o", fp16=True))
            """,
            flags=False, note="frozen fp16 base, fp32 adapters",
        ),
        Case(
            """
            import torch
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("m", dtype=torch.float16)
            Trainer(model=model, args=TrainingArguments(output_dir="o", bf16=True))
            """,
            flags=False, note="no fp16 AMP",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m")
            Trainer(model=model, args=TrainingArguments(output_dir="o", fp16=True))
            """,
            flags=False, note="hub checkpoint of unknown stored dtype: not guessed",
        ),
        Case(
            """
            import torch
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained("m", dtype=torch.float16)
            with torch.autocast("cuda"):
                out = model.generate(**inputs)
            """,
            flags=False, note="inference",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:

        major = setup.transformers_tuple()[0]
        for ctx in trainer_contexts(setup):
            flow = ctx.flow
            fp16 = fp16_values(ctx)
            if flow is None or not fp16 or flow.has_adapters or any(ld.quant for ld in flow.loads):
                continue
            pf = ctx.pf
            found: tuple | None = None
            for ld in flow.loads:
                dt = ld.dtype(pf)
                if dt == "float16":
                    node = ld.nodes.get("dtype", ld.nodes.get("torch_dtype"))
                    found = (pf.span(node) if node is not None else pf.span(ld.call), "it is loaded with dtype float16")
                elif dt is None and major >= 5 and local_checkpoint_dtype(pf.path, ld.model_id_text()) == "float16":
                    found = (pf.span(ld.call), f"transformers {major} loads the float16 checkpoint "
                             f"{ld.model_id_text()!r} in float16 by default (dtype=\"auto\")")
            for st in flow.step("cast"):
                if st.detail == "float16":
                    found = (pf.span(st.call), f"`{pf.source_of(st.call)[:40]}` casts it to float16")
            for c in flow.called("half"):
                if c.receiver and "." not in c.receiver:
                    found = (pf.span(c.site.node), f"`{pf.source_of(c.site.node)[:40]}` casts it to float16")
            if found is None:
                continue
            span, why = found
            related: list[Related] = [v.key_span.related("fp16=True is set here") for v in fp16[:1] if v.key_span]
            yield self.diagnostic(
                span,
                f"the model's trainable weights are float16 ({why}) while fp16=True mixed precision is on: the "
                f"gradient scaler raises \"Attempting to unscale FP16 gradients\"; load the weights in float32 "
                f"(dtype=torch.float32) or train with bf16",
                related=related)


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
    - pitfalls catalog P06
    """

    code = "TL107"
    name = "fp16-on-bf16-pretrained"
    severity = Severity.WARNING
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


def stored_dtype(pf_path: str, model_id: str | None) -> str | None:
    """The dtype a checkpoint is stored in: a local folder's config.json, else the model table
    (the published config.json of hub models it lists); None when unknown."""
    local = local_checkpoint_dtype(pf_path, model_id)
    if local is not None or not model_id:
        return local
    from trainlint.knowledge.models import lookup_model

    info = lookup_model(model_id)
    return info.torch_dtype if info is not None else None


class AutoDtypeHalfWeights(Rule):
    """
    ## What it does
    Flags, for transformers 5 and later, a model that is fully fine-tuned (no PEFT adapters, not
    quantized) after a `from_pretrained` call without `dtype=` (`torch_dtype=`), when the
    checkpoint is stored in bfloat16 or float16: a local folder whose `config.json` says so, or
    a hub model the model table knows (Llama 2: float16; Llama 3, Mistral, Qwen2: bfloat16). A
    later cast (`.float()`, `.to(torch.float32)`) silences it, and so does DeepSpeed (its
    bf16/fp16 optimizers keep fp32 master weights).

    ## Why is this bad?
    transformers 5 changed `from_pretrained`'s default from float32 to `dtype="auto"`: the
    weights load in the dtype they are stored in. The Trainer then trains half-precision weights
    directly: AdamW's updates are applied to bf16/fp16 parameters, with no fp32 master copy
    (bf16/fp16 mixed precision only changes the compute dtype), so updates smaller than the
    weights' resolution are lost, and a float16 checkpoint with `fp16=True` stops at the first
    step ("Attempting to unscale FP16 gradients"). The same script trained float32 weights on
    transformers 4.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Meta-Llama-3-8B")
    args = TrainingArguments(output_dir="out", bf16=True)
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Meta-Llama-3-8B", dtype="float32")
    args = TrainingArguments(output_dir="out", bf16=True)
    ```
    (or `dtype="auto"`, written, when half-precision weights are what you want).

    ## Fix safety
    Unsafe: `dtype="float32"` restores transformers 4's numerics but doubles the weights'
    memory, and the optimizer's (fp32) states do not change.

    ## References
    - pitfalls catalog R24; transformers 5 `PreTrainedModel.from_pretrained` (`dtype=None`
      becomes `"auto"`), `_get_dtype`
    """

    code = "TL123"
    name = "auto-dtype-half-weights"
    severity = Severity.WARNING
    fix_safety = "unsafe"
    summary = "transformers 5 loads a bf16/fp16 checkpoint in half precision, then fully fine-tunes it"

    cases = [
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("meta-llama/Meta-Llama-3-8B")
            Trainer(model=model, args=TrainingArguments(output_dir="o", bf16=True))
            """,
            unsafe=True,
            fixed=(
                "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                'model = AutoModelForCausalLM.from_pretrained("meta-llama/Meta-Llama-3-8B", dtype="float32")\n'
                'Trainer(model=model, args=TrainingArguments(output_dir="o", bf16=True))\n'
            ),
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            MODEL = "meta-llama/Llama-2-7b-hf"
            Trainer(model=AutoModelForCausalLM.from_pretrained(MODEL), args=TrainingArguments(output_dir="o"))
            """,
            note="float16 checkpoint, no mixed precision",
        ),
        # must not flag
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("meta-llama/Meta-Llama-3-8B")
            Trainer(model=model, args=TrainingArguments(output_dir="o", bf16=True))
            """,
            flags=False, options={"transformers_version": "4.57.1"}, note="transformers 4 loads float32",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("meta-llama/Meta-Llama-3-8B", dtype="auto")
            Trainer(model=model, args=TrainingArguments(output_dir="o", bf16=True))
            """,
            flags=False, note="written on purpose",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import LoraConfig, get_peft_model
            model = get_peft_model(AutoModelForCausalLM.from_pretrained("meta-llama/Meta-Llama-3-8B"), LoraConfig())
            Trainer(model=model, args=TrainingArguments(output_dir="o", bf16=True))
            """,
            flags=False, note="adapters: the frozen base may stay bf16",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("meta-llama/Meta-Llama-3-8B").float()
            Trainer(model=model, args=TrainingArguments(output_dir="o", bf16=True))
            """,
            flags=False, note="cast back to float32",
        ),
        Case(
            """
            from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
            Trainer(model=model, args=TrainingArguments(output_dir="o", fp16=True))
            """,
            flags=False, note="stored in float32",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("meta-llama/Meta-Llama-3-8B")
            Trainer(model=model, args=TrainingArguments(output_dir="o", bf16=True, deepspeed="ds_zero3.json"))
            """,
            flags=False, note="DeepSpeed keeps fp32 master weights",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        from trainlint.fixing.python_edits import add_keyword

        from trainlint.rules._versioned import wrapper_of

        if setup.transformers_tuple()[0] < 5:
            return
        for ctx in trainer_contexts(setup):
            flow = ctx.flow
            if flow is None or flow.has_adapters or any(ld.quant for ld in flow.loads):
                continue
            if any((w := wrapper_of(setup, site)) is not None and w[0] == "DeepSpeed" for site in ctx.sites or []):
                continue  # DeepSpeed's bf16/fp16 optimizers keep fp32 master weights themselves
            if any(st.detail == "float32" for st in flow.step("cast")) or flow.called("float"):
                continue
            pf = ctx.pf
            fp16 = fp16_values(ctx)
            for ld in flow.loads:
                if ld.method != "from_pretrained" or ld.dtype(pf) is not None:
                    continue
                model_id = ld.model_id_text()
                stored = stored_dtype(pf.path, model_id)
                if stored not in ("bfloat16", "float16"):
                    continue
                if stored == "float16" and fp16 and local_checkpoint_dtype(pf.path, model_id) == "float16":
                    continue  # fp16-amp-on-fp16-weights (TL106) reports this one as the error it is
                crash = (" and fp16=True stops at the first step (\"Attempting to unscale FP16 gradients\")"
                         if stored == "float16" and fp16 else "")
                yield self.diagnostic(
                    pf.span(ld.call),
                    f"transformers {setup.transformers_tuple()[0]} loads {model_id!r} in its stored {stored} "
                    f"(from_pretrained's default is dtype=\"auto\" since 5.0), and it is fully fine-tuned: the "
                    f"optimizer updates {stored} weights with no fp32 master copy, so small updates are lost"
                    f"{crash}; on transformers 4 this trained float32 weights. Pass dtype=\"float32\" (twice the "
                    f"weight memory), or write dtype=\"auto\" if half-precision weights are intended",
                    edits=[add_keyword(pf, ld.call, 'dtype="float32"')], fix_message='load with dtype="float32"')
