"""Embedded cases in every spelling the engine reads a TrainingArguments value from.

A rule on TrainingArguments values should flag the same setting however it is written: a
keyword of the call, a module constant, a ``**dict`` unpacked into the call, a launch-line flag
of an ``HfArgumentParser`` script, and a key of an HF args file. :func:`spelled_cases` builds
those five cases from one mapping of field values, so each rule states its setting once.
"""

from __future__ import annotations

import json
from typing import Any

from trainlint.rules.base import Case

# a script that reads the args file named on its command line (as the HF example scripts do)
HF_JSON_SCRIPT = ("import sys\nfrom transformers import HfArgumentParser, TrainingArguments\n"
                  "parser = HfArgumentParser((TrainingArguments,))\n"
                  "(args,) = parser.parse_json_file(sys.argv[1])\n")
HF_PARSER_SCRIPT = ("from transformers import HfArgumentParser, TrainingArguments\n"
                    "parser = HfArgumentParser((TrainingArguments,))\n"
                    "(args,) = parser.parse_args_into_dataclasses()\n")


def _flag_words(name: str, value: Any) -> str:
    if value is True:
        return f"--{name}"
    if value is False:
        return f"--{name} false"
    if isinstance(value, (dict, list)):
        return f"--{name} '{json.dumps(value)}'"
    return f"--{name} {value}"


def spelled_cases(values: dict[str, Any], *, flags: bool = True, cls: str = "TrainingArguments",
                  module: str = "transformers", extra: str = "", note: str = "",
                  only: tuple[str, ...] = ("keyword", "constant", "dict", "flag", "argsfile"),
                  options: dict[str, Any] | None = None) -> list[Case]:
    """One case per spelling of ``values`` (field -> Python value). ``extra`` is appended to the
    Python cases (code after the call, e.g. a Trainer built with ``args``). Launch-flag and
    args-file cases exist for ``TrainingArguments`` only (the parser script parses that class)."""
    opts = dict(options or {})
    out: list[Case] = []
    items = {"output_dir": "o", **values}
    head = f"from {module} import {cls}\n"
    kw = ", ".join(f"{k}={v!r}" for k, v in items.items())
    tail = ("\n" + extra) if extra else ""
    if "keyword" in only:
        out.append(Case(head + f"args = {cls}({kw})\n" + tail, flags=flags, options=opts,
                        note=(note + " (keyword)").strip()))
    if "constant" in only:
        consts = "".join(f"{k.upper()} = {v!r}\n" for k, v in values.items())
        kwc = ", ".join(["output_dir='o'"] + [f"{k}={k.upper()}" for k in values])
        out.append(Case(head + consts + f"args = {cls}({kwc})\n" + tail, flags=flags, options=opts,
                        note=(note + " (module constants)").strip()))
    if "dict" in only:
        d = ", ".join(f"{k!r}: {v!r}" for k, v in values.items())
        out.append(Case(head + f"cfg = {{{d}}}\nargs = {cls}(output_dir='o', **cfg)\n" + tail, flags=flags,
                        options=opts, note=(note + " (unpacked dict)").strip()))
    if cls == "TrainingArguments" and "flag" in only:
        words = " ".join(_flag_words(k, v) for k, v in items.items())
        out.append(Case(files={"run.sh": f"python train.py {words}\n", "train.py": HF_PARSER_SCRIPT},
                        flags=flags, options=opts, note=(note + " (launch flags)").strip()))
    if cls == "TrainingArguments" and "argsfile" in only:
        out.append(Case(files={"run.sh": "python train.py args.json\n", "train.py": HF_JSON_SCRIPT,
                               "args.json": json.dumps(items) + "\n"},
                        flags=flags, options=opts, note=(note + " (args file)").strip()))
    return out
