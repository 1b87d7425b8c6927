"""Framework command lines and example scripts whose arguments are a Hugging Face / TRL
arguments class (``data/framework_clis.json``, each fact with its source).

* ``cli(name, subcommand)``: for ``trl sft``, ``llamafactory-cli train`` ... the class their
  parser fills, how an args file is given (``--config`` or the first positional), or None.
* ``example_class(script)``: the TrainingArguments class of a Hugging Face example script
  (``run_summarization.py`` parses ``Seq2SeqTrainingArguments``).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from trainlint.record import Record, _set


class FrameworkCli(Record, frozen=True):
    __slots__ = ("name", "class_name", "parser", "config_flag", "args_file_positional", "source", "redeclared")
    name: str  # "trl sft"
    class_name: str
    parser: str  # "TrlParser", "HfArgumentParser"
    config_flag: str | None  # "config": ``--config x.yaml``
    args_file_positional: bool  # ``llamafactory-cli train x.yaml``
    source: str
    redeclared: frozenset[str]  # fields the framework's own subclass declares again

    def __init__(
        self,
        name: str,
        class_name: str,
        parser: str,
        config_flag: str | None,
        args_file_positional: bool,
        source: str,
        redeclared: frozenset[str] = frozenset(),
    ) -> None:
        _set(self, "name", name)
        _set(self, "class_name", class_name)
        _set(self, "parser", parser)
        _set(self, "config_flag", config_flag)
        _set(self, "args_file_positional", args_file_positional)
        _set(self, "source", source)
        _set(self, "redeclared", redeclared)


@lru_cache(maxsize=1)
def _data() -> dict:
    text = (Path(__file__).resolve().parent / "data" / "framework_clis.json").read_text(encoding="utf-8")
    return json.loads(text)


def cli_names() -> frozenset[str]:
    return frozenset(_data()["clis"])


def cli(name: str, subcommand: str | None) -> FrameworkCli | None:
    entries = _data()["clis"]
    entry = entries.get(name)
    if entry is None:
        return None
    if "alias" in entry:
        name, entry = entry["alias"], entries[entry["alias"]]
    cls = entry["subcommands"].get(subcommand or "")
    if cls is None:
        return None
    return FrameworkCli(name=f"{name} {subcommand}", class_name=cls, parser=entry["parser"],
                        config_flag=entry.get("config_flag"),
                        args_file_positional=entry.get("args_file") == "first-positional",
                        source=entry["source"], redeclared=frozenset(entry.get("redeclared", ())))


def example_class(script: str) -> str:
    """The arguments class a Hugging Face example script of this name parses."""
    base = script.replace("\\", "/").rsplit("/", 1)[-1]
    return "Seq2SeqTrainingArguments" if base in _data()["example_scripts"]["seq2seq"] else "TrainingArguments"


def looks_like_hf_example(script: str) -> bool:
    """A path laid out as the Hugging Face examples are (``examples/pytorch/...``)."""
    path = script.replace("\\", "/")
    return any(h in path or path.startswith(h) for h in _data()["example_scripts"]["path_hints"])
