"""Helpers shared by the rules split out of `deepspeed_setup`: TL308-TL317: DeepSpeed configs against the model, the hardware and the script that uses them"""

from __future__ import annotations

from trainlint.rules._setup_util import as_int
from trainlint.setup import Setup

GIB = 2**30


def _ds(setup: Setup):
    return setup.extra.get("deepspeed")


def _stage(cfg) -> int | None:
    """ZeRO stage as an int (0 when zero_optimization or its stage is absent); None when it is
    not a number ("auto", a string)."""
    if cfg.zero_optimization is None:
        return 0
    v = cfg.stage
    if v is None:
        return 0
    return as_int(v.value)


def _trainer_script(model: str = "'m'", extra: str = "") -> str:
    return ("from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
            f"model = AutoModelForCausalLM.from_pretrained({model})\n"
            f"args = TrainingArguments(output_dir='o', deepspeed='ds.json'{extra})\n"
            "trainer = Trainer(model=model, args=args)\ntrainer.train()\n")


HIDDEN_KEYS = ("reduce_bucket_size", "stage3_prefetch_bucket_size", "stage3_param_persistence_threshold")


__all__ = [
    "AutoOutsideTrainer", "AutoTpWithConvertedWeights", "AutoWithoutHiddenSize", "Bf16Accumulation",
    "EvalOnlyLowStage", "HandSetHiddenSizeBuckets", "OffloadNotNeeded", "OptimizerTwice", "StageOnlyOption",
    "WarmupStepsNotPositive",
]

