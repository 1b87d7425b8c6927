"""TL123 auto-dtype-half-weights: transformers 5 loads a bf16/fp16 checkpoint in half precision, then fully fine-tunes it"""

from __future__ import annotations

from typing import Iterable

from trainlint.analysis import trainer_contexts
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._half_precision_weights_common import (
    fp16_values,
    local_checkpoint_dtype,
)
from trainlint.setup import Setup


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
    - transformers 5 `PreTrainedModel.from_pretrained` (`dtype=None`
      becomes `"auto"`), `_get_dtype`
    """

    code = "TL123"
    name = "auto-dtype-half-weights"
    severity = Severity.WARNING
    triggers = SETUP_NAMES
    needs_training = True
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

