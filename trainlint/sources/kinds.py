"""Which kind of training file a path is, by its content (the extension is only a hint).

Kinds: ``python``, ``notebook``, ``shell``, ``markdown``, ``deepspeed``, ``accelerate``, ``hf_args``,
``json``, ``yaml``, ``data`` (JSON Lines, a trainer_state.json dump: never a config),
``binary``, ``unknown``. A DeepSpeed config is recognised by its shape (a ``zero_optimization``
section with ZeRO keys, a micro batch size, an ``fp16``/``bf16`` section with ``enabled``, an
``optimizer``/``scheduler`` with ``type`` and ``params``, or several keys only DeepSpeed has),
never by one key appearing somewhere: a JSON schema or a document that mentions
``zero_optimization`` is not one. Cheap: JSON goes through the C ``json`` module,
YAML detection only reads the top-level keys with a regular expression.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePath

KINDS = ("python", "notebook", "shell", "markdown", "deepspeed", "accelerate", "hf_args", "json", "yaml",
         "data", "binary", "unknown")

# Keys only DeepSpeed configs have (deepspeed/runtime/constants.py, zero/config.py ...).
DEEPSPEED_KEYS = frozenset({
    "zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size",
    "gradient_clipping", "steps_per_print", "wall_clock_breakdown", "zero_allow_untested_optimizer",
    "zero_force_ds_cpu_optimizer", "activation_checkpointing", "flops_profiler", "aio",
    "comms_logger", "communication_data_type", "prescale_gradients",
    "gradient_predivide_factor", "sparse_attention", "data_types", "bfloat16", "amp",
    "elasticity", "pipeline", "tensor_parallel", "checkpoint", "compression_training",
    "data_efficiency", "curriculum_learning", "autotuning", "memory_breakdown",
    "dump_state", "sparse_gradients", "disable_allgather", "seq_parallel_communication_data_type",
    "nebula", "csv_monitor", "wandb", "tensorboard", "weight_quantization", "hybrid_engine",
    "zero_quantized_weights", "zero_quantized_gradients", "torch_autocast", "compile",
})
# Keys DeepSpeed shares with TrainingArguments; they count for DeepSpeed when their value is
# a section (``"fp16": {"enabled": ...}``) rather than a flag.
DEEPSPEED_SECTIONS = frozenset({"fp16", "bf16", "optimizer", "scheduler"})

ACCELERATE_KEYS = frozenset({
    "compute_environment", "distributed_type", "num_processes", "num_machines", "machine_rank",
    "main_training_function", "mixed_precision", "gpu_ids", "use_cpu", "rdzv_backend",
    "same_network", "main_process_ip", "main_process_port", "deepspeed_config", "fsdp_config",
    "megatron_lm_config", "downcast_bf16", "tpu_env", "tpu_use_cluster", "tpu_use_sudo",
    "dynamo_config", "enable_cpu_affinity", "debug", "parallelism_config", "ipex_config",
    "mpirun_config", "fp8_config",
})
ACCELERATE_STRONG = frozenset({"compute_environment", "distributed_type",
                               "main_training_function"})

# The most used TrainingArguments fields (the versioned field data lives in
# trainlint.knowledge.training_args; this set only recognises args files).
TRAINING_ARGS_FIELDS = frozenset({
    "output_dir", "overwrite_output_dir", "do_train", "do_eval", "do_predict",
    "eval_strategy", "evaluation_strategy", "prediction_loss_only",
    "per_device_train_batch_size", "per_device_eval_batch_size", "gradient_accumulation_steps",
    "eval_accumulation_steps", "learning_rate", "weight_decay", "adam_beta1", "adam_beta2",
    "adam_epsilon", "max_grad_norm", "num_train_epochs", "max_steps", "lr_scheduler_type",
    "warmup_ratio", "warmup_steps", "logging_dir", "logging_strategy", "logging_steps",
    "logging_first_step", "save_strategy", "save_steps", "save_total_limit", "seed",
    "data_seed", "bf16", "fp16", "tf32", "fp16_full_eval", "bf16_full_eval", "local_rank",
    "dataloader_num_workers", "dataloader_pin_memory", "eval_steps", "run_name",
    "remove_unused_columns", "label_names", "load_best_model_at_end",
    "metric_for_best_model", "greater_is_better", "report_to", "deepspeed", "fsdp",
    "fsdp_config", "optim", "group_by_length", "push_to_hub", "hub_model_id",
    "gradient_checkpointing", "gradient_checkpointing_kwargs", "auto_find_batch_size",
    "torch_compile", "predict_with_generate", "generation_max_length", "generation_num_beams",
    "resume_from_checkpoint", "ddp_find_unused_parameters", "save_safetensors",
    "include_num_input_tokens_seen", "neftune_noise_alpha", "max_seq_length",
    "use_cpu", "no_cuda", "disable_tqdm", "lr_scheduler_kwargs", "hub_strategy",
    "dataset_text_field", "packing", "beta", "max_length", "max_prompt_length",
})

_PY_EXT = {".py", ".pyw", ".pyi"}
_SH_EXT = {".sh", ".bash", ".zsh", ".ksh", ".slurm", ".sbatch"}
_MD_EXT = {".md", ".markdown", ".mdx"}
_JSON_EXT = {".json"}
_JSONL_EXT = {".jsonl", ".ndjson"}
# in a broken JSON text: a top-level section written as DeepSpeed writes it
_BROKEN_SECTIONS = (("fp16", "enabled"), ("bf16", "enabled"), ("optimizer", "type"), ("scheduler", "type"))

_YAML_EXT = {".yaml", ".yml"}
_TOP_KEY = re.compile(r"^([A-Za-z_][\w.-]*)[ \t]*:(?:[ \t]|$)", re.M)
_SHEBANG = re.compile(r"^#![ \t]*(\S+)(?:[ \t]+(\S+))?")


def is_binary(data: bytes | str) -> bool:
    if isinstance(data, str):
        return "\x00" in data[:8192]
    head = data[:8192]
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 4  # a multi-byte char cut at the end is fine
    return False


# Keys that only DeepSpeed uses at the top level (deepspeed/runtime/constants.py): two of them
# make a config even without a ZeRO section.
DEEPSPEED_SPECIFIC = frozenset({
    "train_micro_batch_size_per_gpu", "steps_per_print", "gradient_clipping", "wall_clock_breakdown",
    "zero_allow_untested_optimizer", "zero_force_ds_cpu_optimizer", "prescale_gradients",
    "gradient_predivide_factor", "sparse_gradients", "communication_data_type", "memory_breakdown",
    "dump_state", "disable_allgather", "zero_optimization", "seq_parallel_communication_data_type",
    "zero_quantized_weights", "zero_quantized_gradients", "flops_profiler", "activation_checkpointing",
})
# The keys of a ZeRO section (runtime/zero/config.py) ...
ZERO_KEYS = frozenset({
    "stage", "offload_optimizer", "offload_param", "overlap_comm", "contiguous_gradients",
    "reduce_bucket_size", "reduce_scatter", "allgather_partitions", "allgather_bucket_size",
    "stage3_prefetch_bucket_size", "stage3_param_persistence_threshold", "stage3_max_live_parameters",
    "stage3_max_reuse_distance", "stage3_gather_16bit_weights_on_model_save", "sub_group_size",
    "round_robin_gradients", "cpu_offload", "load_from_fp32_weights", "elastic_checkpoint",
    "zero_hpz_partition_size", "zero_quantized_weights", "zero_quantized_gradients", "mics_shard_size",
    "gather_16bit_weights_on_model_save", "ignore_unused_parameters", "memory_efficient_linear",
    "stage3_gather_fp16_weights_on_model_save", "prefetch_bucket_size", "param_persistence_threshold",
    "max_live_parameters", "max_reuse_distance", "offload_optimizer_device", "offload_param_device",
})
# ... and what a JSON schema or a document has instead
_SCHEMA_KEYS = frozenset({"$schema", "$ref", "$defs", "definitions", "properties", "items", "anyOf",
                          "oneOf", "allOf", "description", "title", "examples"})


def _batch_value(v: object) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or v == "auto" or v is None


def _is_schema(top: dict[str, object]) -> bool:
    return "$schema" in top or ("properties" in top and "type" in top)


def deepspeed_shape(top: dict[str, object]) -> bool:
    """``top`` (a config's top-level mapping; values may be None when only the keys are known)
    has the shape of a DeepSpeed config."""
    if _is_schema(top):
        return False
    zero = top.get("zero_optimization", _MISSING)
    if zero is not _MISSING:
        if isinstance(zero, bool) or zero is None:
            return True
        if isinstance(zero, dict):  # a ZeRO section, unless it is a schema of one
            keys = set(zero)
            return not (keys & _SCHEMA_KEYS and not keys & ZERO_KEYS)
    if "train_micro_batch_size_per_gpu" in top and _batch_value(top["train_micro_batch_size_per_gpu"]):
        return True
    for k in ("fp16", "bf16"):
        sec = top.get(k)
        if isinstance(sec, dict) and "enabled" in sec and not set(sec) & _SCHEMA_KEYS:
            return True
    for k in ("optimizer", "scheduler"):
        sec = top.get(k)
        if isinstance(sec, dict) and isinstance(sec.get("type"), str) and (
                isinstance(sec.get("params"), dict) or k == "scheduler") and "properties" not in sec:
            return True
    specific = [k for k in top if k in DEEPSPEED_SPECIFIC and not isinstance(top[k], (list, str))
                or (k == "communication_data_type" and isinstance(top[k], str))]
    if len(specific) >= 2:
        return True
    return bool(specific) and "train_batch_size" in top and _batch_value(top["train_batch_size"])


_MISSING = object()


def _classify_keys(top: dict[str, object]) -> str | None:
    keys = set(top)
    if deepspeed_shape(top):
        return "deepspeed"
    acc = keys & ACCELERATE_KEYS
    if acc & ACCELERATE_STRONG or len(acc) >= 3:
        return "accelerate"
    targs = keys & TRAINING_ARGS_FIELDS
    if len(targs) >= 2 and (len(targs) * 2 >= len(keys) or "output_dir" in targs):
        return "hf_args"
    if len(targs) == 1 and len(keys) == 1 and "output_dir" in targs:
        return "hf_args"
    return None


def is_state_dump(top: dict[str, object]) -> bool:
    """``trainer_state.json`` (what the Trainer writes next to a checkpoint): a log, never a
    config, even though it holds logging_steps, max_steps and train_batch_size."""
    return isinstance(top.get("log_history"), list) and "global_step" in top


_LINE_COMMENT = re.compile(r"^[ \t]*//[^\n]*$", re.MULTILINE)
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _top_level_keys(text: str, limit: int = 200_000) -> set[str]:
    """The keys of the top-level object of a JSON text that may be broken or truncated."""
    keys: set[str] = set()
    depth = 0
    i, n = 0, min(len(text), limit)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if depth == 1:
                k = j + 1
                while k < n and text[k] in " \t\r\n":
                    k += 1
                if k < n and text[k] == ":":
                    keys.add(text[i + 1:j])
            i = j + 1
            continue
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        i += 1
    return keys


def _relaxed_top(text: str) -> dict[str, object] | None:
    """The top-level mapping of JSON written with ``//`` or ``/* */`` comment lines or
    trailing commas (what editors accept), or None."""
    relaxed = _TRAILING_COMMA.sub(r"\1", _BLOCK_COMMENT.sub("", _LINE_COMMENT.sub("", text)))
    if relaxed == text:
        return None
    try:
        data = json.loads(relaxed)
    except ValueError:
        return None
    return data if isinstance(data, dict) else {}


def _json_lines(text: str) -> bool:
    """Two or more lines that are each a JSON value (JSON Lines data)."""
    lines = [ln for ln in text.splitlines()[:50] if ln.strip()]
    if len(lines) < 2:
        return False
    try:
        for ln in lines[:-1] if len(lines) == 50 else lines:
            json.loads(ln)
    except ValueError:
        return False
    return True


def _shebang_kind(text: str) -> str | None:
    m = _SHEBANG.match(text)
    if m is None:
        return None
    prog = m.group(1).rsplit("/", 1)[-1]
    if prog == "env" and m.group(2):
        prog = m.group(2).rsplit("/", 1)[-1]
    if prog.startswith("python"):
        return "python"
    if prog in ("sh", "bash", "zsh", "ksh", "dash"):
        return "shell"
    return None


def detect_kind(path: str, text: str | bytes) -> str:
    """The kind of file ``path`` with content ``text`` (``str`` or raw ``bytes``)."""
    if is_binary(text):
        return "binary"
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    suffix = PurePath(path).suffix.lower()
    if suffix in _PY_EXT:
        return "python"
    if suffix == ".ipynb":
        return "notebook"
    if suffix in _SH_EXT:
        return "shell"
    if suffix in _MD_EXT:
        return "markdown"
    stripped = text.lstrip("\ufeff \t\r\n")
    if suffix in _JSONL_EXT:
        return "data"
    if suffix in _JSON_EXT or (not suffix and stripped.startswith("{")):
        from trainlint.sources.jsondoc import json_value

        try:
            data = json_value(stripped)  # json.loads, noted for the reader's parse that follows
        except (ValueError, RecursionError):  # RecursionError: nested deeper than json can go
            data = None
            if _json_lines(stripped):
                return "data"
            relaxed = _relaxed_top(stripped)
            if relaxed is not None:  # JSON with comments or trailing commas: its real shape
                return _classify_keys(relaxed) or ("json" if suffix in _JSON_EXT else "unknown")
            # invalid JSON: a DeepSpeed config when its ZeRO section or micro batch is a key of
            # the top-level object (a document that mentions the key deeper down is not one)
            first = _top_level_keys(stripped)
            if not first & _SCHEMA_KEYS and (first & DEEPSPEED_SPECIFIC or any(
                    k in first and re.search(rf'"{k}"[ \t\r\n]*:[ \t\r\n]*\{{[ \t\r\n]*"{inner}"', stripped)
                    for k, inner in _BROKEN_SECTIONS)):
                return "deepspeed"
            keys = re.findall(r'"([^"\\]+)"[ \t]*:', text)  # any key, any depth
            top: dict[str, object] = {k: _MISSING for k in keys}
            top.pop("zero_optimization", None)
            top.pop("train_micro_batch_size_per_gpu", None)
            top = {k: None for k in top}
        else:
            top = data if isinstance(data, dict) else {}
            if is_state_dump(top):
                return "data"
        return _classify_keys(top) or ("json" if suffix in _JSON_EXT or data is not None
                                       else "unknown")
    if suffix in _YAML_EXT:
        top = {}
        for m in _TOP_KEY.finditer(text):
            top[m.group(1)] = None
        for section in ("fp16", "bf16", "optimizer", "scheduler", "zero_optimization"):
            if section in top and re.search(rf"^{section}:[ \t]*(?:#.*)?\n[ \t]+\S", text, re.M):
                top[section] = {} if section == "zero_optimization" else {"enabled": None}
        return _classify_keys(top) or "yaml"
    kind = _shebang_kind(text)
    if kind is not None:
        return kind
    return "unknown"
