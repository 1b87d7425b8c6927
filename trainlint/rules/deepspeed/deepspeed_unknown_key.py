"""TL306 deepspeed-unknown-key: unknown, misspelled or deprecated DeepSpeed keys"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_config_common import (
    _ds,
)
from trainlint.setup import Setup


@lru_cache(maxsize=1)
def ds_schema() -> dict:
    path = Path(__file__).resolve().parent.parent.parent / "knowledge" / "data" / "deepspeed_schema.json"
    return json.loads(path.read_text(encoding="utf-8"))


def _close(word: str, possibilities: list[str], n: int, cutoff: float) -> list[str]:
    import difflib  # only for a key that is not valid

    return difflib.get_close_matches(word, possibilities, n=n, cutoff=cutoff)


def _valid_keys(section: str) -> tuple[set[str], dict[str, dict]]:
    fields = ds_schema()[section]
    valid = set(fields)
    for info in fields.values():
        if info.get("alias"):
            valid.add(info["alias"])
    return valid, fields


# Top-level sections DeepSpeed reads (runtime/config.py and the sub-configs it builds).
TOP_LEVEL_EXTRA = {
    "zero_optimization", "fp16", "bf16", "bfloat16", "amp", "optimizer", "scheduler", "gradient_clipping",
    "activation_checkpointing", "flops_profiler", "wall_clock_breakdown", "memory_breakdown", "comms_logger",
    "tensorboard", "wandb", "csv_monitor", "comet", "aio", "checkpoint", "data_types", "elasticity", "autotuning",
    "pipeline", "tensor_parallel", "hybrid_engine", "compile", "compression_training", "data_efficiency",
    "curriculum_learning", "nebula", "dump_state", "torch_autocast", "timers", "weight_quantization",
    "quantize_training", "eigenvalue", "progressive_layer_drop", "sequence_parallel_size", "sparse_attention",
    "sparse_gradients", "zero_quantized_weights", "zero_quantized_gradients", "graph_harvesting",
    "use_data_before_expert_parallelism", "gradient_accumulation_dtype", "expert_parallel",
}



def _normalised_match(key: str, known) -> list[str]:
    """The known key that ``key`` is once stripped of spaces and lower-cased (the near misses
    difflib ranks too low for short keys: ``"train_batch_size "``, ``"FP16"``)."""
    norm = key.strip().lower().replace("-", "_")
    if norm == key:
        return []
    hits = [k for k in known if k.lower() == norm]
    return hits[:1]


class DeepSpeedUnknownKey(Rule):
    """
    ## What it does
    Checks key names in a DeepSpeed config against DeepSpeed's own schema (its pydantic models
    in `runtime/zero/config.py` and `runtime/zero/offload_config.py`, shipped as generated
    data): unknown keys inside `zero_optimization`, `offload_optimizer` and `offload_param`
    (with the nearest valid key), deprecated keys (`cpu_offload`, `cpu_offload_param`,
    `cpu_offload_use_pin_memory`, `stage3_gather_fp16_weights_on_model_save`, the legacy
    `"zero_optimization": true`) with their rewrite, and top-level keys that look like a
    misspelling of a known one. A key that is a known key once stripped of spaces and
    lower-cased (`"train_batch_size "`, `"FP16"`) is always a near miss, however short. Keys of
    features DeepSpeed removed (MiCS's `zero_optimization.mics_shard_size`, `sparse_attention`,
    `elasticity`, ...: the list `runtime/config.py` rejects, generated data) are errors on the
    releases that reject them (the project's declared DeepSpeed, else the newest known) and
    valid on the older ones.

    ## Why is this bad?
    Inside `zero_optimization` DeepSpeed's schema forbids extra keys, so a typo stops the run
    at start-up with a validation error; deprecated keys are remapped with a warning and may
    go away; a misspelled top-level key is silently ignored ("DeepSpeed doesn't validate
    parameter names and any typos fallback on the parameter's default"); a removed feature's key
    raises DeepSpeedConfigError when the config is read.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "overlap_com": true, "cpu_offload": true}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 2, "overlap_comm": true, "offload_optimizer": {"device": "cpu"}}}
    ```

    ## Fix safety
    Deprecated keys are rewritten to their replacement (safe: DeepSpeed maps them the same
    way). A misspelled key is renamed to the suggestion (unsafe: the setting starts to apply).

    ## References
    - DeepSpeed `runtime/zero/config.py`, `runtime/zero/offload_config.py`, `runtime/config_utils.py`
      (`extra="forbid"`)
    - https://huggingface.co/docs/transformers/deepspeed
    - https://github.com/deepspeedai/DeepSpeed/issues/8489 (the removed features and their config keys)
    """

    code = "TL306"
    name = "deepspeed-unknown-key"
    severity = Severity.WARNING
    triggers = DEEPSPEED_NAMES
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    fix_safety = "safe"
    summary = "unknown, misspelled or deprecated DeepSpeed keys"

    cases = [
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2, "overlap_com": true}}\n'},
             unsafe=True, fixed='{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2, "overlap_comm": true}}\n',
             fixed_path="ds.json"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2, "cpu_offload": true}}\n'},
             fixed='{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2, '
                   '"offload_optimizer": {"device": "cpu"}}}\n', fixed_path="ds.json"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3,'
                               ' "stage3_gather_fp16_weights_on_model_save": true}}\n'},
             fixed='{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3,'
                   ' "stage3_gather_16bit_weights_on_model_save": true}}\n', fixed_path="ds.json"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "gradient_cliping": 1.0, "zero_optimization": {"stage": 1}}\n'}),
        Case(files={"ds.json": '{"train_batch_size ": 8, "zero_optimization": {"stage": 1}}\n'}, unsafe=True,
             fixed='{"train_batch_size": 8, "zero_optimization": {"stage": 1}}\n', fixed_path="ds.json",
             note="a trailing space"),
        Case(files={"ds.json": '{"Gradient_Accumulation_Steps": 1, "zero_optimization": {"stage": 1}}\n'},
             note="another case"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3,'
                               ' "offload_param": {"device": "cpu", "pin_memroy": true}}}\n'}),
        Case(files={"requirements.txt": "deepspeed>=0.13.5\n",
                    "ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3,'
                               ' "mics_shard_size": 64, "mics_hierarchical_params_gather": false}}\n'},
             note="smollm's zero3_mics_mini_fixed.json: MiCS was removed, the newest allowed release refuses it"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "sparse_attention": {"mode": "fixed"},'
                               ' "zero_optimization": {"stage": 2}}\n'},
             note="a removed top-level block"),
        # must not flag
        Case(files={"requirements.txt": "deepspeed==0.14.4\n",
                    "ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3,'
                               ' "mics_shard_size": 64, "mics_hierarchical_params_gather": false}}\n'},
             flags=False, note="DeepSpeed 0.14.4 still has MiCS: the keys are valid there"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3,'
                               ' "stage3_prefetch_bucket_size": "auto", "offload_param": {"device": "cpu", "pin_memory": true},'
                               ' "overlap_comm": true}, "steps_per_print": 10}\n'}, flags=False),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 1}, "my_notes": "x"}\n'},
             flags=False, note="an unrelated top-level key is not a typo"),
    ]

    REWRITES = {
        "cpu_offload": ("offload_optimizer", '{"device": "cpu"}'),
        "cpu_offload_param": ("offload_param", '{"device": "cpu"}'),
    }

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        from trainlint.sources.jsondoc import JsonNode

        if not isinstance(cfg.root, JsonNode) or not cfg.root.is_mapping:
            return
        root = cfg.root
        zero = root.get("zero_optimization")
        if zero is not None and zero.kind == "bool":
            yield self.diagnostic(zero.span, "\"zero_optimization\": true|false is DeepSpeed's deprecated format; "
                                             "write {\"stage\": N}", edits=[zero.span.edit(
                                                 '{"stage": %d}' % (1 if zero.value else 0))],
                                  fix_message="use the object format")
        removed = ds_schema().get("removed_keys", {})
        if zero is not None and zero.is_mapping:
            for m in zero.members:
                if m.key in removed.get("zero_optimization", {}):
                    yield from self._removed(setup, m, "zero_optimization", removed["zero_optimization"][m.key])
            yield from self._section(zero, "zero_optimization", skip=removed.get("zero_optimization", {}))
            for sub in ("offload_param", "offload_optimizer"):
                node = zero.get(sub)
                if node is not None and node.is_mapping:
                    yield from self._section(node, sub)
        known = set(ds_schema()["constants"]) | TOP_LEVEL_EXTRA
        from trainlint.sources.kinds import DEEPSPEED_KEYS

        known |= DEEPSPEED_KEYS
        for m in root.members:
            if m.key in removed.get("top_level", {}):
                yield from self._removed(setup, m, "the config", removed["top_level"][m.key])
                continue
            if m.key in known:
                continue
            close = _normalised_match(m.key, known) or \
                _close(m.key, sorted(known), n=1, cutoff=0.85)
            if close:
                yield self.diagnostic(m.key_span, f"unknown top-level DeepSpeed key {m.key!r}: DeepSpeed ignores it "  # type: ignore[arg-type]
                                                  f"silently; did you mean {close[0]!r}?",
                                      edits=[m.key_span.edit(json.dumps(close[0]))],  # type: ignore[union-attr]
                                      applicability="unsafe", fix_message=f"rename to {close[0]}")

    def _removed(self, setup: Setup, m, where: str, message: str) -> Iterable[Diagnostic]:
        """A key of a feature DeepSpeed removed (MiCS's ``mics_shard_size``, ``sparse_attention``):
        an error on the releases that reject it, nothing on the older ones that still read it."""
        from trainlint.knowledge import behaviour

        target = setup.target_of("deepspeed")
        if not behaviour.holds(REJECTS_REMOVED, target):
            return
        resolved = setup.versions.get("deepspeed")
        who = f"DeepSpeed {target} ({resolved.note or 'resolved'})" if target and resolved is not None else \
            f"DeepSpeed from {behaviour.first_version(REJECTS_REMOVED)} on (the version is not known: assumed the newest)"
        yield self.diagnostic(m.key_span, f"{m.key!r} in {where} belongs to a removed feature: {who} stops at "  # type: ignore[arg-type]
                                          f"start-up with DeepSpeedConfigError (\"{message}\"); remove the key, or "
                                          f"pin a DeepSpeed release before {behaviour.first_version(REJECTS_REMOVED)}",
                              severity=Severity.ERROR)

    def _section(self, node, section: str, skip=()) -> Iterable[Diagnostic]:
        valid, fields = _valid_keys(section)
        present = set(node.keys())
        for m in node.members:
            key = m.key
            if key in skip:
                continue
            info = fields.get(key)
            if info is not None and info.get("deprecated"):
                new = info.get("new_param", "")
                edits = None
                if key in self.REWRITES and m.value is True:
                    new_key, value = self.REWRITES[key]
                    if new_key not in present:
                        edits = [m.key_span.edit(json.dumps(new_key)), m.span.edit(value)]  # type: ignore[union-attr]
                elif key == "stage3_gather_fp16_weights_on_model_save" \
                        and "stage3_gather_16bit_weights_on_model_save" not in present:
                    new = "stage3_gather_16bit_weights_on_model_save"
                    edits = [m.key_span.edit(json.dumps(new))]  # type: ignore[union-attr]
                yield self.diagnostic(m.key_span, f"{key!r} in {section} is deprecated in DeepSpeed; use {new}",  # type: ignore[arg-type]
                                      edits=edits, fix_message=f"rewrite as {new}")
                continue
            if key in valid:
                continue
            close = _normalised_match(key, valid) or _close(key, sorted(valid), n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            yield self.diagnostic(m.key_span, f"unknown key {key!r} in {section}: DeepSpeed's schema forbids "  # type: ignore[arg-type]
                                              f"extra keys there and stops at start-up{hint}",
                                  edits=[m.key_span.edit(json.dumps(close[0]))] if close else None,  # type: ignore[union-attr]
                                  applicability="unsafe", severity=Severity.ERROR,
                                  fix_message=f"rename to {close[0]}" if close else "")


REJECTS_REMOVED = "ds_rejects_removed_config_keys"
