"""Helpers shared by the rules split out of `accelerate_fsdp`: TL407-TL414: accelerate configs with FSDP, parallelism and precision settings, alone and"""

from __future__ import annotations

from trainlint.setup import Setup, Value

FSDP_YAML = "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n"


def _acc(setup: Setup):
    acc = setup.extra.get("accelerate")
    if acc is None:
        return None
    return acc


def _fsdp(setup: Setup):
    """The accelerate config when it selects FSDP and has an ``fsdp_config`` mapping."""
    acc = _acc(setup)
    if acc is None or acc.fsdp_config is None:
        return None
    dt = acc.distributed_type
    if dt is None or dt.value != "FSDP":
        return None
    return acc


def fsdp_get(acc, key: str) -> Value | None:
    """``fsdp_config.fsdp_<key>`` or ``fsdp_config.<key>`` (the launcher adds the prefix)."""
    return acc.fsdp_value(f"fsdp_{key}") or acc.fsdp_value(key)


def fsdp_version(acc) -> int | None:
    v = fsdp_get(acc, "version")
    if v is None:
        return 1  # accelerate launch's default (--fsdp_version "1")
    try:
        return int(v.value)
    except (TypeError, ValueError):
        return None


def _truthy(v: Value | None) -> bool | None:
    """A YAML value as the launcher passes it on (``str(value).lower()``) and the plugin reads
    it (``str_to_bool``); None when absent or not a truth value."""
    if v is None:
        return None
    text = str(v.value).lower()
    if text in ("y", "yes", "t", "true", "on", "1"):
        return True
    if text in ("n", "no", "f", "false", "off", "0"):
        return False
    return None


def _launch_script(extra: str = "") -> str:
    return ("from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
            "model = AutoModelForCausalLM.from_pretrained('Qwen/Qwen2.5-0.5B')\n"
            f"args = TrainingArguments(output_dir='o'{extra})\n"
            "Trainer(model=model, args=args).train()\n")


LAUNCH = "accelerate launch --config_file acc.yaml train.py\n"


__all__ = [
    "AccelerateBf16WithoutBf16Gpu", "CpuRamEfficientWithoutSync", "FsdpActivationCheckpointingTwice",
    "FsdpBadWrapPolicy", "FsdpVersionSettings", "FsdpWrapClassNotInModel", "Fsdp1PeftOrigParams",
    "ParallelismConfigWithoutFsdp2",
]

