"""An HF args file (``HfArgumentParser.parse_json_file`` / ``parse_yaml_file``): each top-level
key with its value and positions, as ``trainlint.setup.Value`` (origin ``ARGSFILE``)."""

from __future__ import annotations

from typing import Any

from trainlint.record import Record
from trainlint.setup import ARGSFILE, ArgsSite, Value


class ArgsFile(Record):
    """An HF args file (JSON or YAML) read as TrainingArguments values."""

    __slots__ = ("path", "root", "values", "__dict__")
    path: str
    root: Any  # JsonNode or YamlNode
    values: dict[str, Value]

    def __init__(self, path: str, root: Any, values: dict[str, Value] | None = None) -> None:
        self.path = path
        self.root = root
        self.values = {} if values is None else values

    @classmethod
    def from_root(cls, root: Any) -> ArgsFile:
        values: dict[str, Value] = {}
        if root.is_mapping:
            for member in root.members:
                values[member.key] = Value(
                    value=member.to_python(), origin=ARGSFILE, span=member.span,
                    key_span=member.key_span, name=member.key,
                )
        return cls(root.path, root, values)

    @classmethod
    def parse(cls, text: str, path: str) -> ArgsFile:
        """JSON for ``*.json`` (and text starting with ``{``), YAML otherwise."""
        if path.endswith(".json") or text.lstrip().startswith("{"):
            from trainlint.sources.jsondoc import parse_json

            return cls.from_root(parse_json(text, path))
        from trainlint.sources.yamldoc import parse_yaml

        return cls.from_root(parse_yaml(text, path))

    @property
    def problems(self):
        return self.root.problems

    def get(self, key: str) -> Value | None:
        return self.values.get(key)

    def node(self, key: str) -> Any:
        return self.root.get(key) if self.root.is_mapping else None

    def as_site(self, class_name: str = "TrainingArguments") -> ArgsSite:
        """An ``ArgsSite`` holding every key (unknown keys included; rules filter them)."""
        span = self.root.span
        return ArgsSite(path=self.path, class_name=class_name, values=dict(self.values),
                        span=span)
