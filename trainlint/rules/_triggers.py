"""Trigger names for the rules' ``triggers`` (what a walked Python file must contain for a rule
to report on a setup of its own; see ``Rule.triggers``).

A walked script that nothing links is a setup of its own: every value a rule reads comes from
its text. A TrainingArguments-like call, a Trainer or an argument parser that builds one names
its class (an import, a qualified name or a string); a DeepSpeed config is linked by
``deepspeed=`` or ``HfDeepSpeedConfig``. Launch lines and accelerate configs never come from a
script alone, so rules that only read those have no Python trigger (a script a launch line runs
is always parsed).
"""

from __future__ import annotations

from trainlint.sources.python import TRAINING_ARGS_CLASSES, TRL_CONFIG_CLASSES

SETUP_NAMES = tuple(sorted(TRAINING_ARGS_CLASSES | TRL_CONFIG_CLASSES)) + ("Trainer", "HfArgumentParser", "TrlParser")
DEEPSPEED_NAMES = SETUP_NAMES + ("deepspeed", "DeepSpeed")
LAUNCH_NAMES = DEEPSPEED_NAMES + ("fsdp", "FSDP", "Accelerator")
CHECKPOINTING_NAMES = SETUP_NAMES + ("gradient_checkpointing", "activation_checkpointing")
QUANTIZED_NAMES = SETUP_NAMES + ("quantization_config", "BitsAndBytesConfig", "4bit", "8bit")
NO_NAMES: tuple[str, ...] = ()
