"""Which kind of training file a path is, by its content (the extension is only a hint).

Kinds: ``python``, ``notebook``, ``shell``, ``markdown``, ``deepspeed``, ``accelerate``, ``hf_args``,
``json``, ``yaml``, ``binary``, ``unknown``. Cheap: JSON goes through the C ``json`` module,
YAML detection only reads the top-level keys with a regular expression.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePath

KINDS = ("python", "notebook", "shell", "markdown", "deepspeed", "accelerate", "hf_args", "json", "yaml",
         "binary", "unknown")

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


def _classify_keys(top: dict[str, object]) -> str | None:
    keys = set(top)
    ds = len(keys & DEEPSPEED_KEYS) + sum(
        1 for k in keys & DEEPSPEED_SECTIONS if isinstance(top.get(k), dict)
    )
    if ds:
        zero = top.get("zero_optimization")
        if ds >= 2 or isinstance(zero, dict) or "train_micro_batch_size_per_gpu" in keys:
            return "deepspeed"
        sections = [top.get(k) for k in ("fp16", "bf16") if isinstance(top.get(k), dict)]
        if any("enabled" in s for s in sections):  # type: ignore[operator]
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
    if suffix in _JSON_EXT or (not suffix and stripped.startswith("{")):
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
            keys = re.findall(r'"([^"\\]+)"[ \t]*:', text)  # invalid JSON: any key, any depth
            top: dict[str, object] = {k: None for k in keys}
            if "zero_optimization" in top or "train_micro_batch_size_per_gpu" in top:
                return "deepspeed"
        else:
            top = data if isinstance(data, dict) else {}
        return _classify_keys(top) or ("json" if suffix in _JSON_EXT or data is not None
                                       else "unknown")
    if suffix in _YAML_EXT:
        top = {}
        for m in _TOP_KEY.finditer(text):
            top[m.group(1)] = None
        for section in ("fp16", "bf16", "optimizer", "scheduler", "zero_optimization"):
            if section in top and re.search(rf"^{section}:[ \t]*(?:#.*)?\n[ \t]+\S", text, re.M):
                top[section] = {"enabled": None}
        return _classify_keys(top) or "yaml"
    kind = _shebang_kind(text)
    if kind is not None:
        return kind
    return "unknown"
