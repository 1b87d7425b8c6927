"""An accelerate config (YAML, or JSON which accelerate also reads) with positions.

Accessors return ``trainlint.setup.Value`` (origin ``ACCELERATE``) or None when absent. Values
follow PyYAML's reading (what ``accelerate`` uses), see ``yamldoc``.
"""

from __future__ import annotations

from typing import Any

from trainlint.setup import ACCELERATE, Value
from trainlint.sources.yamldoc import YamlNode, parse_yaml

Node = Any  # YamlNode or JsonNode: both have get/get_path/span/key_span/to_python


class AccelerateConfig:
    def __init__(self, root: Node) -> None:
        self.root = root
        self.path = root.path

    @classmethod
    def parse(cls, text: str, path: str) -> AccelerateConfig:
        if path.endswith(".json"):
            from trainlint.sources.jsondoc import parse_json

            return cls(parse_json(text, path))
        return cls(parse_yaml(text, path))

    @property
    def problems(self):
        return self.root.problems

    def node(self, key_path: str) -> Node | None:
        return self.root.get_path(key_path)

    def value(self, key_path: str) -> Value | None:
        node = self.root.get_path(key_path)
        if node is None:
            return None
        return Value(value=node.to_python(), origin=ACCELERATE, span=node.span,
                     key_span=node.key_span, name=key_path)

    @property
    def distributed_type(self) -> Value | None:
        return self.value("distributed_type")

    @property
    def num_processes(self) -> Value | None:
        return self.value("num_processes")

    @property
    def num_machines(self) -> Value | None:
        return self.value("num_machines")

    @property
    def gpu_ids(self) -> Value | None:
        return self.value("gpu_ids")

    def gpu_id_list(self) -> list[int] | None:
        """``gpu_ids`` as a list of ints; None when absent, ``all`` or not a plain list."""
        v = self.gpu_ids
        if v is None:
            return None
        raw = v.value
        if isinstance(raw, int):
            return [raw]
        if isinstance(raw, str):
            if raw.strip().lower() == "all":
                return None
            parts = [p.strip() for p in raw.split(",") if p.strip()]
            return [int(p) for p in parts] if all(p.isdigit() for p in parts) else None
        if isinstance(raw, list) and all(isinstance(x, int) for x in raw):
            return list(raw)
        return None

    @property
    def mixed_precision(self) -> Value | None:
        return self.value("mixed_precision")

    @property
    def use_cpu(self) -> Value | None:
        return self.value("use_cpu")

    @property
    def deepspeed_config(self) -> Node | None:
        node = self.node("deepspeed_config")
        return node if node is not None and node.is_mapping else None

    @property
    def deepspeed_config_file(self) -> Value | None:
        return self.value("deepspeed_config.deepspeed_config_file")

    def deepspeed_value(self, key: str) -> Value | None:
        return self.value(f"deepspeed_config.{key}")

    @property
    def fsdp_config(self) -> Node | None:
        node = self.node("fsdp_config")
        return node if node is not None and node.is_mapping else None

    def fsdp_value(self, key: str) -> Value | None:
        return self.value(f"fsdp_config.{key}")

    def world_size(self) -> int | None:
        """``num_processes`` (accelerate counts it over all machines), when an int > 0."""
        v = self.num_processes
        return v.value if v is not None and isinstance(v.value, int) and v.value > 0 else None


__all__ = ["AccelerateConfig", "YamlNode"]
