"""TL126 compile-quantized-model: torch.compile of a bitsandbytes-quantized model passed to the Trainer"""

from __future__ import annotations

from typing import Iterable

from trainlint.analysis import trainer_contexts
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import QUANTIZED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

HEAD = ("import torch\nfrom transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments\n"
        "from peft import LoraConfig, get_peft_model\n"
        "model = AutoModelForCausalLM.from_pretrained('m', quantization_config=BitsAndBytesConfig(load_in_4bit=True))\n"
        "model = get_peft_model(model, LoraConfig())\n")


class CompileQuantizedModel(Rule):
    """
    ## What it does
    Flags `torch.compile(model)` applied, before the Trainer, to a model loaded with bitsandbytes
    4-bit or 8-bit quantization (with or without PEFT adapters from `get_peft_model`).

    ## Why is this bad?
    `Trainer.__init__` refuses it: "You cannot fine-tune quantized model with `torch.compile()`
    make sure to pass a non-compiled model when fine-tuning a quantized model with PEFT"
    (`validate_quantization_for_training`), after the model has been loaded. Note that
    `TrainingArguments(torch_compile=True)` is a different path (accelerate compiles after this
    check) and is not what raises here.

    ## Example
    ```python
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(name, quantization_config=bnb), lora)
    model = torch.compile(model)
    Trainer(model=model, args=args)
    ```

    ## Use instead
    ```python
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(name, quantization_config=bnb), lora)
    Trainer(model=model, args=args)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `trainer_utils.py` (`validate_quantization_for_training`)
    """

    code = "TL126"
    name = "compile-quantized-model"
    severity = Severity.ERROR
    summary = "torch.compile of a bitsandbytes-quantized model passed to the Trainer"
    triggers = QUANTIZED_NAMES
    needs_training = True
    fires_on = ("compile",)
    cases = [
        Case(HEAD + "model = torch.compile(model)\nTrainer(model=model, args=TrainingArguments(output_dir='o')).train()\n"),
        Case(HEAD + "Trainer(model=torch.compile(model), args=TrainingArguments(output_dir='o'))\n"),
        Case(HEAD + "Trainer(model=model, args=TrainingArguments(output_dir='o')).train()\n", flags=False),
        Case(HEAD.replace(", quantization_config=BitsAndBytesConfig(load_in_4bit=True)", "") +
             "model = torch.compile(model)\nTrainer(model=model, args=TrainingArguments(output_dir='o'))\n", flags=False),
        Case(HEAD.replace("model = get_peft_model(model, LoraConfig())\n", "model.add_adapter(LoraConfig())\n") +
             "model = torch.compile(model)\nTrainer(model=model, args=TrainingArguments(output_dir='o'))\n", flags=False,
             note="the transformers adapter integration marks the model as having adapters"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for ctx in trainer_contexts(setup):
            flow = ctx.flow
            if flow is None or not flow.step("compile"):
                continue
            bnb = [ld for ld in flow.loads if ld.bnb]
            if not bnb or flow.called("add_adapter", "load_adapter"):
                continue
            step = flow.step("compile")[0]
            yield self.diagnostic(ctx.pf.span(step.call),
                                  f"torch.compile of a {bnb[0].quant} bitsandbytes-quantized model: Trainer raises "
                                  "\"You cannot fine-tune quantized model with torch.compile()\" at construction; pass "
                                  "the model uncompiled",
                                  related=[ctx.pf.span(bnb[0].call).related("quantized model loaded here")])
