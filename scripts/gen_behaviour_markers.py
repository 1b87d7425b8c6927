"""Generate trainlint/knowledge/data/behaviour_markers.json: which released versions of
transformers and TRL contain a given start-up check.

Some rules depend on *behaviour* that changed between releases rather than on a field: TRL's
``SFTTrainer`` refusing a ``PeftModel`` together with ``peft_config``, the
``EarlyStoppingCallback`` asserting ``load_best_model_at_end`` (4.x) or only warning. Each
marker below names a file inside the wheel and a regular expression of the source text that
carries the behaviour (an error message, as a rule's message quotes it). For every version the
TrainingArguments data knows (``trainlint.knowledge.training_args.known_versions`` /
``trl_known_versions``), the script downloads the wheel (``pip download --no-deps``, reusing
``--wheel-dir``), reads the file as text (nothing is imported) and records whether the
pattern occurs; the JSON holds, per marker, the version ranges where it does. A pattern with a
``(?P<quote>...)`` group also records what the group matched, per version range (``quotes``):
the release a deprecation message announces, for a rule's message to cite.

DeepSpeed is published as a source archive only: its markers read the ``.tar.gz`` from PyPI's
simple index (sha256 checked; nothing is built or run), for every release from
``DEEPSPEED_FROM`` on that ``pip index versions deepspeed`` lists (the JSON records them under
``versions["deepspeed"]``).

    python scripts/gen_behaviour_markers.py --wheel-dir /tmp/trainlint-wheels
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from gen_training_args import download, vkey

from trainlint.knowledge import training_args as ta

DEFAULT_OUT = ROOT / "trainlint" / "knowledge" / "data" / "behaviour_markers.json"

DEEPSPEED_FROM = "0.10.0"

# id -> (package, file in the wheel, regular expression, what it means)
MARKERS: dict[str, tuple[str, str, str, str]] = {
    "ds_warmup_num_steps_must_be_positive": (
        "deepspeed", "deepspeed/runtime/lr_schedules.py",
        r"warmup_num_steps must be a positive integer",
        "WarmupLR (and WarmupDecayLR, WarmupCosineLR) raise ValueError for warmup_num_steps <= 0 or not an int"),
    "ds_warmup_num_steps_clamped_to_two": (
        "deepspeed", "deepspeed/runtime/lr_schedules.py",
        r"self\.warmup_num_steps = max\(2, warmup_num_steps\)",
        "WarmupLR uses at least 2 warmup steps (a 0 or 1 becomes 2)"),
    "ds_rejects_removed_config_keys": (
        "deepspeed", "deepspeed/runtime/config.py",
        r"def _reject_removed_config_keys\(",
        "DeepSpeedConfig raises DeepSpeedConfigError for the keys of removed features (MiCS's "
        "zero_optimization.mics_shard_size, ...; deepspeed_schema.json's removed_keys)"),
    "early_stopping_asserts_load_best": (
        "transformers", "transformers/trainer_callback.py",
        r"assert args\.load_best_model_at_end",
        "EarlyStoppingCallback.on_train_begin asserts load_best_model_at_end (later releases warn)"),
    "sft_rejects_peft_model_with_peft_config": (
        "trl", "trl/trainer/sft_trainer.py",
        r"`PeftModel` instance together with a `peft_config`",
        "SFTTrainer raises ValueError for a PeftModel passed with peft_config"),
    "sft_rejects_quantization_config_twice": (
        "trl", "trl/trainer/sft_trainer.py",
        r"`quantization_config` both as a trainer argument and in `args\.model_init_kwargs`",
        "SFTTrainer raises ValueError for quantization_config= together with model_init_kwargs['quantization_config']"),
    "dpo_rejects_same_ref_model": (
        "trl", "trl/trainer/dpo_trainer.py",
        r"`model` and `ref_model` cannot be the same object",
        "DPOTrainer raises ValueError when ref_model is model"),
    "sft_forces_reentrant_peft_zero3": (
        "trl", "trl/trainer/sft_trainer.py",
        r"`use_reentrant` is forced to `True`",
        "SFTTrainer forces use_reentrant=True under PEFT + DeepSpeed ZeRO-3 (with a warning)"),
    "sft_warns_padding_free_without_flash_attention": (
        "trl", "trl/trainer/sft_trainer.py",
        r"Padding-free training is enabled, but the attention implementation is not set to a supported",
        "SFTTrainer warns that padding-free training needs a Flash Attention implementation"),
    "sft_warns_packing_cross_contamination": (
        "trl", "trl/trainer/sft_trainer.py",
        r"cross-contamination between samples",
        "SFTTrainer warns that packing without Flash Attention lets samples attend to each other"),
    "sft_padding_free_rejects_max_length": (
        "trl", "trl/trainer/sft_trainer.py",
        r"When `padding_free=True` without packing, `max_length` is not enforced",
        "SFTTrainer raises ValueError for padding_free=True without packing while max_length is set"),
    "sft_padding_free_rejects_custom_collator": (
        "trl", "trl/trainer/sft_trainer.py",
        r"Passing a custom data collator is not supported when using padding-free",
        "SFTTrainer raises ValueError for padding_free with a data_collator"),
    "sft_rejects_formatting_func_with_completion_only_loss": (
        "trl", "trl/trainer/sft_trainer.py",
        r"A formatting function was provided while `completion_only_loss=True`",
        "SFTTrainer raises ValueError for formatting_func with completion_only_loss=True"),
    "grpo_batch_per_device_times_world": (
        "trl", "trl/trainer/grpo_trainer.py",
        r"global_batch_size = args\.per_device_train_batch_size \* num_processes\s",
        "GRPOTrainer: per_device_train_batch_size x processes must be divisible by num_generations"),
    "grpo_batch_times_accumulation": (
        "trl", "trl/trainer/grpo_trainer.py",
        r"effective_batch_size = args\.per_device_train_batch_size \* num_processes \* args\.gradient_accumulation_steps",
        "GRPOTrainer: per-device batch x processes x accumulation must be divisible by num_generations"),
    "grpo_generation_batch_divisible": (
        "trl", "trl/trainer/grpo_config.py",
        r"must be divisible by num_generations|\{self\.steps_per_generation\}\) must be evenly divisible by the number of generations",
        "GRPOConfig: generation_batch_size must be divisible by num_generations"),
    "grpo_eval_batch_divisible": (
        "trl", "trl/trainer/grpo_config.py",
        r"The global eval batch size",
        "GRPOConfig: per_device_eval_batch_size x processes must be divisible by the eval generations"),
    "grpo_rejects_generation_batch_and_steps": (
        "trl", "trl/trainer/grpo_config.py",
        r"can not be both configured at the same time",
        "GRPOConfig raises when generation_batch_size and steps_per_generation are both set"),
    "grpo_rejects_auto_find_batch_size": (
        "trl", "trl/trainer/grpo_config.py",
        r"auto_find_batch_size is not supported by GRPO",
        "GRPOConfig raises for auto_find_batch_size"),
    "grpo_reward_weights_length": (
        "trl", "trl/trainer/grpo_trainer.py",
        r"Number of reward weights",
        "GRPOTrainer raises when reward_weights and reward_funcs differ in length"),
    "dpo_loss_weights_length": (
        "trl", "trl/trainer/dpo_config.py",
        r"`loss_weights` must have the same length as `loss_type`",
        "DPOConfig raises when loss_weights and loss_type differ in length"),
    "label_smoothing_off_for_multi_label": (
        "transformers", "transformers/trainer.py",
        r"Label smoothing is not compatible with multi-label classification",
        "Trainer turns label smoothing off (with a warning) for a multi-label classifier"),
    "save_only_model_rejects_sharded_fsdp": (
        "transformers", "transformers/trainer.py",
        r"save_only_model option is not compatible with FSDP state dict type 'SHARDED_STATE_DICT'",
        "Trainer raises ValueError for save_only_model with FSDP's SHARDED_STATE_DICT"),
    "fsdp_legacy_applied_to_config": (
        "transformers", "transformers/training_args.py",
        r"def _apply_legacy_fsdp_to_config\(",
        "TrainingArguments maps the legacy fsdp string onto fsdp_config (the FSDP2-by-default handling)"),
    "fsdp_legacy_form_announced_removal": (
        "transformers", "transformers/training_args.py",
        r"Passing `fsdp` as a string is deprecated and will be removed in Transformers v(?P<quote>\d+(?:\.\d+)*)",
        "TrainingArguments warns that the legacy fsdp string is deprecated; quote: the release it names for the removal"),
    "fsdp1_announced_removal": (
        "transformers", "transformers/training_args.py",
        r"FSDP1 \(`fsdp_config\['version'\] = 1`\) is deprecated and will be removed in Transformers \"?\s*\"?v"
        r"(?P<quote>\d+(?:\.\d+)*)",
        "TrainingArguments warns that FSDP1 is deprecated; quote: the release it names for the removal"),
    "evaluation_strategy_enum_exists": (
        "transformers", "transformers/trainer_utils.py",
        r"class EvaluationStrategy\(",
        "transformers.trainer_utils defines the EvaluationStrategy enum"),
    "trainer_rejects_headless_model": (
        "transformers", "transformers/trainer.py",
        r"cannot be used as is for training: it only",
        "Trainer raises ValueError for a model class without a head (MODEL_MAPPING_NAMES)"),
    "trainer_rejects_eval_strategy_without_eval_dataset": (
        "transformers", "transformers/trainer.py",
        r"but you didn't pass an `eval_dataset` to `Trainer`",
        "Trainer raises ValueError for an eval_strategy other than no without eval_dataset"),
    "trainer_rejects_model_and_model_init": (
        "transformers", "transformers/trainer.py",
        r"raise ValueError\(\s*\"`Trainer` requires either a `model` or `model_init` argument, but not both",
        "Trainer raises ValueError for model= with model_init= (earlier releases warn)"),
    "trainer_rejects_optimizers_with_optimizer_cls_and_kwargs": (
        "transformers", "transformers/trainer.py",
        r"Passing both `optimizers` and `optimizer_cls_and_kwargs` arguments is incompatible",
        "Trainer raises RuntimeError for optimizers= with optimizer_cls_and_kwargs="),
    "trainer_rejects_optimizers_with_deepspeed": (
        "transformers", "transformers/trainer.py",
        r"Passing `optimizers` is not allowed if Deepspeed",
        "Trainer raises RuntimeError for optimizers= under DeepSpeed (later releases only under FSDP)"),
    "warmup_ratio_range_checked": (
        "transformers", "transformers/training_args.py",
        r"warmup_ratio must lie in range \[0,1\]",
        "TrainingArguments raises ValueError for warmup_ratio outside [0, 1]"),
    "warmup_steps_must_be_int": (
        "transformers", "transformers/training_args.py",
        r"warmup_steps must be of type int and must be 0 or a positive integer",
        "TrainingArguments raises ValueError for a warmup_steps that is not an int >= 0"),
    "warmup_steps_negative_raises": (
        "transformers", "transformers/training_args.py",
        r"self\.warmup_steps < 0",
        "TrainingArguments raises ValueError for a negative warmup_steps"),
    "dpo_exo_pair_needs_label_smoothing": (
        "trl", "trl/trainer/dpo_trainer.py",
        r"Label smoothing must be greater than 0\.0 when using 'exo_pair' loss",
        "DPOTrainer raises for loss_type exo_pair with label_smoothing 0"),
}


def found(archive: Path, inner: str, pattern: str) -> re.Match | None:
    if archive.name.endswith(".tar.gz"):  # a source archive: <name>-<version>/<inner>
        with tarfile.open(archive) as t:
            member = next((m for m in t.getmembers() if m.name.split("/", 1)[-1] == inner), None)
            f = t.extractfile(member) if member is not None else None
            if f is None:
                return None
            text = f.read().decode("utf-8", "replace")
    else:
        with zipfile.ZipFile(archive) as z:
            try:
                text = z.read(inner).decode("utf-8", "replace")
            except KeyError:
                return None
    return re.search(pattern, text)


def released(package: str, since: str) -> list[str]:
    """The final releases of ``package`` from ``since`` on, oldest first (``pip index versions``)."""
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", package, "--disable-pip-version-check"],
                         check=True, capture_output=True, text=True).stdout
    line = next(x for x in out.splitlines() if x.strip().startswith("Available versions:"))
    found_versions = [v.strip() for v in line.split(":", 1)[1].split(",")]
    final = [v for v in found_versions if re.fullmatch(r"\d+(\.\d+)*", v)]
    return sorted((v for v in final if vkey(v) >= vkey(since)), key=vkey)


def download_sdist(package: str, version: str, dest: Path) -> Path:
    """The source archive of ``package==version``, fetched from PyPI's simple index and checked
    against the index's sha256 (``pip download`` of a source archive would run its setup.py)."""
    import hashlib
    import urllib.request

    target = dest / f"{package}-{version}.tar.gz"
    if target.is_file():
        return target
    index = urllib.request.urlopen(urllib.request.Request(f"https://pypi.org/simple/{package}/",
                                                          headers={"Accept": "text/html"}), timeout=60).read()
    m = re.search(rf'href="([^"]+/{re.escape(target.name)})#sha256=([0-9a-f]+)"', index.decode("utf-8", "replace"))
    if m is None:
        raise SystemExit(f"no source archive {target.name} on PyPI's simple index")
    data = urllib.request.urlopen(m.group(1), timeout=120).read()
    if hashlib.sha256(data).hexdigest() != m.group(2):
        raise SystemExit(f"{target.name}: sha256 differs from the index")
    tmp = target.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(target)
    return target


def quote_ranges(versions: list[str], quotes: list[str | None]) -> list[list[str]]:
    """[first, last, quote] for each run of versions with the same quote."""
    out: list[list[str]] = []
    for v, q in zip(versions, quotes):
        if q is None:
            continue
        if out and out[-1][2] == q and versions.index(out[-1][1]) == versions.index(v) - 1:
            out[-1][1] = v
        else:
            out.append([v, v, q])
    return out


def ranges(versions: list[str], flags: list[bool]) -> list[list[str]]:
    out: list[list[str]] = []
    start = None
    for i, (v, f) in enumerate(zip(versions, flags)):
        if f and start is None:
            start = v
        if start is not None and (not f or i == len(versions) - 1):
            out.append([start, v if f else versions[i - 1]])
            start = None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel-dir", type=Path, required=True, help="download wheels here and reuse them")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--jobs", type=int, default=4)
    args = ap.parse_args(argv)
    versions = {"transformers": sorted(ta.known_versions(), key=vkey), "trl": sorted(ta.trl_known_versions(), key=vkey),
                "deepspeed": released("deepspeed", DEEPSPEED_FROM)}
    args.wheel_dir.mkdir(parents=True, exist_ok=True)
    needed = sorted({m[0] for m in MARKERS.values()})
    jobs = [(p, v) for p in needed for v in versions[p]]

    def fetch(job: tuple[str, str]) -> Path:
        package, version = job
        return download_sdist(package, version, args.wheel_dir) if package == "deepspeed" else \
            download(package, version, args.wheel_dir)

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        wheels = dict(zip(jobs, pool.map(fetch, jobs)))
    doc: dict = {"schema": 1, "generator": "python scripts/gen_behaviour_markers.py", "versions": versions,
                 "markers": {}}
    for mid, (package, inner, pattern, meaning) in MARKERS.items():
        matches = [found(wheels[(package, v)], inner, pattern) for v in versions[package]]
        doc["markers"][mid] = {"package": package, "file": inner, "pattern": pattern, "meaning": meaning,
                               "present": ranges(versions[package], [m is not None for m in matches])}
        if "(?P<quote>" in pattern:
            doc["markers"][mid]["quotes"] = quote_ranges(
                versions[package], [m.group("quote") if m is not None else None for m in matches])
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
