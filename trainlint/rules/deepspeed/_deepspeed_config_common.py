"""Helpers shared by the rules split out of `deepspeed_config`: TL3xx: DeepSpeed configs, alone and against the TrainingArguments of their setup."""

from __future__ import annotations

from trainlint.setup import Setup, Value


def _ds(setup: Setup):
    return setup.extra.get("deepspeed")


def _auto_edit(v: Value):
    return v.span.edit('"auto"') if v.span is not None else None

