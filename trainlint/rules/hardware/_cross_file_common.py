"""Helpers shared by the rules split out of `cross_file`: TL503-TL549: rules that read more than one source of a setup (launch line, script, args"""

from __future__ import annotations

HF_SCRIPT = ("from transformers import HfArgumentParser, TrainingArguments\n"
             "parser = HfArgumentParser((TrainingArguments,))\n"
             "(args,) = parser.parse_args_into_dataclasses()\n")


def _strategy(v) -> str | None:
    if v is None or not isinstance(v.value, str):
        return None
    return v.value.lower()

