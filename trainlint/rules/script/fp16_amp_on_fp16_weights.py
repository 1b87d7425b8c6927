"""TL106 fp16-amp-on-fp16-weights: fp16=True on a model whose trainable weights are already fp16"""

from __future__ import annotations

from typing import Iterable

from trainlint.analysis import trainer_contexts
from trainlint.diagnostics import Diagnostic, Related, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._half_precision_weights_common import (
    fp16_values,
    local_checkpoint_dtype,
)
from trainlint.setup import Setup


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
    """

    code = "TL106"
    name = "fp16-amp-on-fp16-weights"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("fp16",)
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

