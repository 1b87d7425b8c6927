"""Helpers shared by the setup rules (DeepSpeed, accelerate, launch and cross-file): effective
TrainingArguments values with defaults, wording of a value with its provenance, and edits
that write a new value in the file kind the value lives in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainlint.diagnostics import Edit
from trainlint.setup import (
    ACCELERATE,
    ARGSFILE,
    DEEPSPEED,
    FLAG,
    PYTHON,
    ArgsSite,
    Setup,
    Value,
)

# TrainingArguments defaults, transformers 4.40 .. 5.24 (training_args.py, read with ast)
TA_DEFAULTS: dict[str, Any] = {
    "per_device_train_batch_size": 8, "gradient_accumulation_steps": 1, "max_grad_norm": 1.0,
    "learning_rate": 5e-5, "adam_beta1": 0.9, "adam_beta2": 0.999, "adam_epsilon": 1e-8,
    "weight_decay": 0.0, "fp16": False, "bf16": False, "fp16_full_eval": False, "bf16_full_eval": False,
    "eval_strategy": "no", "save_strategy": "steps", "save_steps": 500, "eval_steps": None,
    "logging_steps": 500, "load_best_model_at_end": False, "max_steps": -1, "warmup_steps": 0,
    "auto_find_batch_size": False,
}
ALIASES = {"eval_strategy": ("evaluation_strategy",)}  # older spelling, same meaning


def effective(site: ArgsSite, name: str) -> Value | None:
    """The value a TrainingArguments field takes at ``site``: as written, else the default;
    None when unknown (an unresolved value, or ``**kwargs`` that may set it)."""
    v = site.get(name)
    if v is None:
        for alias in ALIASES.get(name, ()):
            v = site.get(alias)
            if v is not None:
                break
    if v is not None:
        return v if v.known else None
    if site.open_ended or name not in TA_DEFAULTS:
        return None
    return Value(value=TA_DEFAULTS[name], origin="default", name=name,
                 note=f"the TrainingArguments default")


def where(v: Value) -> str:
    if v.span is not None:
        return f"{Path(v.span.path).name}:{v.span.line}"
    return v.note or v.origin


def show(v: Value, value: Any = None) -> str:
    """How the setting is written: ``--per_device_train_batch_size 8``, ``fp16=True``,
    ``"fp16": true``, ``mixed_precision: fp16``; defaults say so."""
    val = v.value if value is None else value
    if v.origin == FLAG:
        if val is True and v.span == v.key_span:
            return v.key_text or f"--{v.name}"
        return f"{v.key_text or '--' + v.name} {val}"
    if v.origin == PYTHON:
        return f"{v.name}={val!r}"
    if v.origin in (ARGSFILE, DEEPSPEED, ACCELERATE):
        if v.span is not None and v.span.path.endswith(".json"):
            import json

            return f'"{v.name}": {json.dumps(val)}'
        return f"{v.name}: {yaml_text(val)}"
    return f"{v.name} {val!r}"


def located(v: Value) -> str:
    """``--per_device_train_batch_size 8 in run.sh:8`` / ``fp16 False (the TrainingArguments default)``."""
    if v.span is None:
        return f"{v.name} {v.value!r} ({v.note or 'default'})"
    return f"{show(v)} in {where(v)}"


def yaml_text(value: Any) -> str:
    from trainlint.sources.yamldoc import yaml_scalar_text

    return yaml_scalar_text(value)


def value_text(v: Value, new: Any) -> str:
    """``new`` written as a literal of the file ``v`` lives in."""
    path = (v.edit_span() or v.span).path if (v.edit_span() or v.span) is not None else ""
    if v.origin == PYTHON or path.endswith(".py"):
        from trainlint.fixing.python_edits import python_literal

        return python_literal(new)
    if v.origin == FLAG or path.endswith((".sh", ".bash", ".md")):
        from trainlint.sources.shell import shell_quote

        if isinstance(new, bool):
            return "true" if new else "false"
        return shell_quote(str(new))
    if path.endswith(".json"):
        from trainlint.sources.jsondoc import json_text

        return json_text(new)
    return yaml_text(new)


def set_edit(v: Value, new: Any) -> Edit | None:
    span = v.edit_span()
    if span is None:
        return None
    return span.edit(value_text(v, new))


def sites(setup: Setup) -> list[ArgsSite]:
    return list(setup.sites)


def is_true(v: Value | None) -> bool:
    return v is not None and v.value is True


def as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else None
