"""TL105 quantized-without-adapters: a quantized model is trained without trainable adapters"""

from __future__ import annotations

from typing import Iterable

from trainlint.analysis import trainer_contexts
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import QUANTIZED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._quantized_model_common import (
    QUANT_WORDS,
    _quantized_loads,
)
from trainlint.setup import Setup


class QuantizedWithoutAdapters(Rule):
    """
    ## What it does
    Flags a `Trainer` (or TRL trainer) whose model was loaded quantized
    (`quantization_config=BitsAndBytesConfig(load_in_4bit=True)`, 8-bit, GPTQ, AWQ, ... or the
    legacy `load_in_4bit=True`) and reaches the trainer without trainable adapters: no
    `get_peft_model`, `PeftModel`, `AutoPeftModel*`, `model.add_adapter(...)` or TRL
    `peft_config=` on its way, or the adapters were merged away with `merge_and_unload()`.

    ## Why is this bad?
    Quantized weights cannot be trained. The Trainer checks this at construction and raises
    "You cannot perform fine-tuning on purely quantized models. Please attach trainable
    adapters on top of the quantized model to correctly perform fine-tuning"
    (`validate_quantization_for_training`), after the model has been downloaded and loaded.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m",
                                                 quantization_config=BitsAndBytesConfig(load_in_4bit=True))
    trainer = Trainer(model=model, args=args, train_dataset=ds)
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m",
                                                 quantization_config=BitsAndBytesConfig(load_in_4bit=True))
    model = prepare_model_for_kbit_training(model)
    model = get_peft_model(model, LoraConfig(r=16, task_type="CAUSAL_LM"))
    trainer = Trainer(model=model, args=args, train_dataset=ds)
    ```

    ## Fix safety
    No automatic fix: adding adapters changes the training method (which layers learn, what
    gets saved).

    ## References
    - transformers `trainer_utils.validate_quantization_for_training` (5.24)
    - https://github.com/unslothai/unsloth/issues/1110, https://github.com/BAAI-DCAI/Bunny/issues/112
    """

    code = "TL105"
    name = "quantized-without-adapters"
    severity = Severity.ERROR
    triggers = QUANTIZED_NAMES
    needs_training = True
    fires_on = QUANT_WORDS
    fix_safety = "none"
    summary = "a quantized model is trained without trainable adapters"

    cases = [
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=BitsAndBytesConfig(load_in_4bit=True))
            Trainer(model=model, args=args).train()
            """,
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer
            from peft import get_peft_model, prepare_model_for_kbit_training
            q = BitsAndBytesConfig(load_in_8bit=True)
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=q)
            model = prepare_model_for_kbit_training(model)
            model = get_peft_model(model, lora)
            model = model.merge_and_unload()
            Trainer(model=model, args=args).train()
            """,
            note="adapters merged away",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, GPTQConfig
            from trl import SFTTrainer
            def load(name):
                return AutoModelForCausalLM.from_pretrained(name, quantization_config=GPTQConfig(bits=4))
            SFTTrainer(model=load("m"), train_dataset=ds)
            """,
        ),
        # must not flag
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer
            from peft import get_peft_model, prepare_model_for_kbit_training
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=BitsAndBytesConfig(load_in_4bit=True))
            model = prepare_model_for_kbit_training(model)
            model = get_peft_model(model, lora)
            Trainer(model=model, args=args).train()
            """,
            flags=False,
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig
            from trl import SFTTrainer
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=BitsAndBytesConfig(load_in_4bit=True))
            SFTTrainer(model=model, train_dataset=ds, peft_config=lora)
            """,
            flags=False, note="TRL attaches the adapters",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=BitsAndBytesConfig(load_in_4bit=True))
            model.add_adapter(lora)
            Trainer(model=model, args=args).train()
            """,
            flags=False, note="transformers' PEFT integration",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=BitsAndBytesConfig(load_in_4bit=True))
            print(model.generate(**inputs))
            """,
            flags=False, note="quantized inference",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for ctx in trainer_contexts(setup):
            flow = ctx.flow
            if flow is None:
                continue
            if flow.trainer_peft_config is not None or flow.called("add_adapter", "load_adapter"):
                continue
            pf = ctx.pf
            for ld in _quantized_loads(flow.loads):
                if ld.adapters or ld.outer == "peft":
                    continue
                merged = ld.outer == "merged"
                what = f"{ld.quant} " if ld.quant in ("4bit", "8bit") else ""
                reason = ("its adapters are merged away by merge_and_unload() before training" if merged
                          else "no adapters are attached (get_peft_model / peft_config=)")
                related = [pf.span(s.call).related("merged here") for s in flow.step("merge")][:1]
                related.append(pf.span(ctx.trainer.site.node.func).related(
                    f"trained by {ctx.trainer.class_name} here"))
                yield self.diagnostic(
                    ld.quant_span or pf.span(ld.call),
                    f"the model is loaded {what}quantized but {reason}: {ctx.trainer.class_name} raises \"You cannot "
                    f"perform fine-tuning on purely quantized models\"; wrap it with get_peft_model(model, LoraConfig(...))",
                    related=related)
                break

