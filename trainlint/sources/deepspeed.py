"""A DeepSpeed config as typed settings, each with where it is written.

Every accessor returns a ``trainlint.setup.Value`` (origin ``DEEPSPEED``, ``span`` on the
value, ``key_span`` on the key, ``name`` the dotted key path) or None when the key is absent.
``"auto"`` values keep the string ``"auto"``; numbers written as ``2e8`` become the integer
``200000000`` where DeepSpeed expects an integer (batch sizes, steps, stage, bucket sizes).
"""

from __future__ import annotations

from typing import Any

from trainlint.setup import DEEPSPEED, Value
from trainlint.sources.jsondoc import JsonNode, parse_json

AUTO = "auto"

# Keys DeepSpeed reads as integers (its pydantic schema casts integral floats like 2e8).
INT_KEYS = frozenset({
    "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
    "steps_per_print", "zero_optimization.stage", "zero_optimization.allgather_bucket_size",
    "zero_optimization.reduce_bucket_size", "zero_optimization.stage3_prefetch_bucket_size",
    "zero_optimization.stage3_param_persistence_threshold",
    "zero_optimization.stage3_max_live_parameters", "zero_optimization.stage3_max_reuse_distance",
    "zero_optimization.stage3_model_persistence_threshold", "zero_optimization.sub_group_size",
    "zero_optimization.offload_param.buffer_count", "zero_optimization.offload_param.buffer_size",
    "zero_optimization.offload_param.max_in_cpu", "zero_optimization.offload_optimizer.buffer_count",
    "scheduler.params.warmup_num_steps", "scheduler.params.total_num_steps",
    "fp16.loss_scale_window", "fp16.initial_scale_power", "fp16.hysteresis",
})
BUCKET_KEYS = (
    "allgather_bucket_size", "reduce_bucket_size", "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold", "stage3_max_live_parameters",
    "stage3_max_reuse_distance",
)


def as_int(value: Any) -> Any:
    """``2e8`` (a float) -> ``200000000``; other values unchanged."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class DeepSpeedConfig:
    """Typed access to a DeepSpeed JSON config read with ``jsondoc``."""

    def __init__(self, root: JsonNode) -> None:
        self.root = root
        self.path = root.path

    @classmethod
    def parse(cls, text: str, path: str) -> DeepSpeedConfig:
        return cls(parse_json(text, path))

    @property
    def problems(self):
        return self.root.problems

    def node(self, key_path: str) -> JsonNode | None:
        return self.root.get_path(key_path)

    def value(self, key_path: str) -> Value | None:
        node = self.root.get_path(key_path)
        if node is None:
            return None
        raw = node.to_python()
        if key_path in INT_KEYS or key_path.rsplit(".", 1)[-1] in BUCKET_KEYS:
            raw = as_int(raw)
        return Value(value=raw, origin=DEEPSPEED, span=node.span, key_span=node.key_span,
                     name=key_path)

    def is_auto(self, key_path: str) -> bool:
        node = self.root.get_path(key_path)
        return node is not None and node.kind == "string" and node.value == AUTO

    def auto_paths(self) -> list[str]:
        """Dotted paths of every ``"auto"`` value, in file order. A section whose text holds
        neither ``"auto"`` nor an escape (``"\u0061uto"``) has none: it is not read (a large
        config's payload stays unread, ``jsondoc.LazyJsonNode``)."""
        text = self.root.doc.text
        out: list[str] = []
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node.kind == "string":
                if node.value == AUTO:
                    out.append(node.key_path)
                continue
            if node.is_scalar or (text.find('"auto"', node.start, node.end) == -1
                                  and text.find("\\", node.start, node.end) == -1):
                continue
            stack.extend(reversed(node.members if node.kind == "object" else node.items))
        return out

    # -- sections -------------------------------------------------------------------------
    @property
    def stage(self) -> Value | None:
        return self.value("zero_optimization.stage")

    @property
    def zero_optimization(self) -> JsonNode | None:
        return self.node("zero_optimization")

    def offload_device(self, which: str) -> Value | None:
        """``which``: ``"optimizer"`` or ``"param"`` -> ``offload_<which>.device``; the legacy
        ``cpu_offload: true`` counts as optimizer offload to ``cpu``."""
        v = self.value(f"zero_optimization.offload_{which}.device")
        if v is None and which == "optimizer":
            legacy = self.value("zero_optimization.cpu_offload")
            if legacy is not None and legacy.value is True:
                return Value(value="cpu", origin=DEEPSPEED, span=legacy.span,
                             key_span=legacy.key_span, name=legacy.name, note="legacy key")
        return v

    @property
    def offload_optimizer_device(self) -> Value | None:
        return self.offload_device("optimizer")

    @property
    def offload_param_device(self) -> Value | None:
        return self.offload_device("param")

    def buckets(self) -> dict[str, Value]:
        """The bucket-size-like settings present under ``zero_optimization``."""
        out: dict[str, Value] = {}
        for key in BUCKET_KEYS:
            v = self.value(f"zero_optimization.{key}")
            if v is not None:
                out[key] = v
        return out

    @property
    def overlap_comm(self) -> Value | None:
        return self.value("zero_optimization.overlap_comm")

    def precision_enabled(self, section: str) -> Value | None:
        """``fp16.enabled`` / ``bf16.enabled`` (``bfloat16`` is DeepSpeed's older name for
        ``bf16``). A section present without ``enabled`` is reported as the section."""
        names = (section, "bfloat16") if section == "bf16" else (section,)
        for name in names:
            sec = self.node(name)
            if sec is None:
                continue
            if sec.kind == "object":
                v = self.value(f"{name}.enabled")
                if v is not None:
                    return v
            return Value(value=sec.to_python(), origin=DEEPSPEED, span=sec.span,
                         key_span=sec.key_span, name=name)
        return None

    @property
    def fp16_enabled(self) -> Value | None:
        return self.precision_enabled("fp16")

    @property
    def bf16_enabled(self) -> Value | None:
        return self.precision_enabled("bf16")

    @property
    def train_batch_size(self) -> Value | None:
        return self.value("train_batch_size")

    @property
    def micro_batch_size(self) -> Value | None:
        return self.value("train_micro_batch_size_per_gpu")

    @property
    def gradient_accumulation_steps(self) -> Value | None:
        return self.value("gradient_accumulation_steps")

    def batch_triple(self) -> tuple[Value | None, Value | None, Value | None]:
        """(train_batch_size, train_micro_batch_size_per_gpu, gradient_accumulation_steps)."""
        return self.train_batch_size, self.micro_batch_size, self.gradient_accumulation_steps

    @property
    def gradient_clipping(self) -> Value | None:
        return self.value("gradient_clipping")

    @property
    def optimizer_type(self) -> Value | None:
        return self.value("optimizer.type")

    @property
    def scheduler_type(self) -> Value | None:
        return self.value("scheduler.type")

    def _params(self, section: str) -> dict[str, Value]:
        params = self.node(f"{section}.params")
        if params is None or params.kind != "object":
            return {}
        return {k: v for k in params.keys() if (v := self.value(f"{section}.params.{k}"))}

    @property
    def optimizer_params(self) -> dict[str, Value]:
        return self._params("optimizer")

    @property
    def scheduler_params(self) -> dict[str, Value]:
        return self._params("scheduler")
