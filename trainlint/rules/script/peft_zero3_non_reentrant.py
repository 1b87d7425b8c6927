"""TL125 peft-zero3-non-reentrant: use_reentrant=False with PEFT under DeepSpeed ZeRO-3"""

from __future__ import annotations

from typing import Iterable

from trainlint.analysis import trainer_contexts
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import CHECKPOINTING_NAMES
from trainlint.rules._versioned import target
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._gradient_checkpointing_common import CHECKPOINTING_WORDS, checkpointing_sources
from trainlint.rules.script.zero3_init_order import zero_stage
from trainlint.setup import Setup

DS3 = '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}\n'


def _script(kwargs: str, trainer: str = "Trainer", extra: str = "") -> str:
    head = ("from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
            "from trl import SFTTrainer, SFTConfig\nfrom peft import LoraConfig, get_peft_model\n")
    if trainer == "Trainer":
        return (head + "model = get_peft_model(AutoModelForCausalLM.from_pretrained('m'), LoraConfig())\n"
                f"args = TrainingArguments(output_dir='o', deepspeed='ds.json', gradient_checkpointing=True{kwargs})\n"
                f"Trainer(model=model, args=args{extra}).train()\n")
    return (head + f"args = SFTConfig(output_dir='o', deepspeed='ds.json', gradient_checkpointing=True{kwargs})\n"
            f"SFTTrainer(model='m', args=args, peft_config=LoraConfig(){extra}).train()\n")


class PeftZero3NonReentrant(Rule):
    """
    ## What it does
    Flags `gradient_checkpointing_kwargs={"use_reentrant": False}` (also on
    `gradient_checkpointing_enable(...)` and `prepare_model_for_kbit_training(...)`) on a model
    with PEFT adapters trained under DeepSpeed ZeRO-3.

    ## Why is this bad?
    With ZeRO-3 the frozen base weights are partitioned and gathered on use; non-reentrant
    checkpointing recomputes the forward with the gathered tensors released, and the recomputed
    tensors' metadata differ from the saved ones: `torch.utils.checkpoint.CheckpointError`
    at the first backward (axolotl warns of this). TRL's `SFTTrainer` forces `use_reentrant=True`
    in this setup with a warning in the releases that carry that check (the range comes from data
    generated from the TRL wheels), so there the written value is silently replaced.

    ## Example
    ```python
    args = TrainingArguments(output_dir="o", deepspeed="ds_zero3.json", gradient_checkpointing=True,
                             gradient_checkpointing_kwargs={"use_reentrant": False})
    Trainer(model=get_peft_model(model, lora), args=args)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="o", deepspeed="ds_zero3.json", gradient_checkpointing=True,
                             gradient_checkpointing_kwargs={"use_reentrant": True})
    ```

    ## Fix safety
    No automatic fix (the reentrant variant also needs input gradients: TL108).

    ## References
    - TRL `trainer/sft_trainer.py` ("`use_reentrant` is forced to `True` in this configuration")
    - axolotl `utils/schemas/validation.py` (PEFT + ZeRO-3 + non-reentrant checkpointing)
    """

    code = "TL125"
    name = "peft-zero3-non-reentrant"
    severity = Severity.WARNING
    summary = "use_reentrant=False with PEFT under DeepSpeed ZeRO-3"
    triggers = CHECKPOINTING_NAMES
    needs_training = True
    fires_on = CHECKPOINTING_WORDS
    cases = [
        Case(files={"train.py": _script(', gradient_checkpointing_kwargs={"use_reentrant": False}'), "ds.json": DS3}),
        Case(files={"train.py": _script(', gradient_checkpointing_kwargs={"use_reentrant": False}', trainer="SFT"),
                    "ds.json": DS3}, note="TRL replaces it"),
        Case(files={"train.py": _script(', gradient_checkpointing_kwargs={"use_reentrant": True}'), "ds.json": DS3},
             flags=False),
        Case(files={"train.py": _script(', gradient_checkpointing_kwargs={"use_reentrant": False}'),
                    "ds.json": DS3.replace('"stage": 3', '"stage": 2')}, flags=False),
        Case(files={"train.py": _script(', gradient_checkpointing_kwargs={"use_reentrant": False}').replace(
            "get_peft_model(AutoModelForCausalLM.from_pretrained('m'), LoraConfig())",
            "AutoModelForCausalLM.from_pretrained('m')"), "ds.json": DS3}, flags=False, note="no PEFT"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for ctx in trainer_contexts(setup):
            if ctx.flow is None or not ctx.flow.has_adapters or not ctx.sites:
                continue
            stage = None
            for site in ctx.sites:
                s, where = zero_stage(setup, ctx.pf, site)
                if s == 3:
                    stage = where
                    break
            if stage is None:
                continue
            for src in checkpointing_sources(ctx):
                if src.reentrant is not False:
                    continue
                from trainlint.knowledge import behaviour

                base = ctx.pf.local_classes.get(ctx.trainer.class_name, ("", ctx.trainer.class_name))[1]
                if base == "SFTTrainer" and behaviour.holds("sft_forces_reentrant_peft_zero3", target(setup)[2]):
                    effect = ("SFTTrainer replaces it with use_reentrant=True (with a warning), so the written value "
                              "is ignored")
                else:
                    effect = ("non-reentrant recomputation under ZeRO-3 sees re-gathered parameters and can fail with "
                              "CheckpointError at the first backward")
                yield self.diagnostic(src.span, f"use_reentrant=False with PEFT adapters under DeepSpeed ZeRO-3 ({stage}): "
                                                f"{effect}; use use_reentrant=True in this setup")
