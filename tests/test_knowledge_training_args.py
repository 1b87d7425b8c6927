"""Facts of the generated TrainingArguments/TRL data (pitfalls-catalog section 1) and the API."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainlint.knowledge import training_args as ta

ROOT = Path(__file__).resolve().parent.parent


def names(cls, version, trl_version=None):
    return ta.field_names(cls, version, trl_version)


# --------------------------------------------------------------------------- versions


def test_known_versions_cover_the_required_releases():
    vs = ta.known_versions()
    for v in ("4.40.0", "4.46.0", "4.51.0", "5.0.0", "5.24.0"):
        assert v in vs
    assert any(v.startswith("4.57.") for v in vs)
    assert vs == sorted(vs, key=ta.vkey)
    assert ta.newest() == vs[-1]
    tvs = ta.trl_known_versions()
    for v in ("0.12.0", "0.16.0", "0.19.0", "0.20.0"):
        assert v in tvs
    assert ta.trl_newest() == tvs[-1]


def test_data_version_for_takes_the_newest_not_newer():
    assert ta.data_version_for("5.10.2") == "5.10.2"
    assert ta.data_version_for("5.10.3") == "5.10.2"
    assert ta.data_version_for("4.46.2") == "4.46.1"
    assert ta.data_version_for("4.57.99") == max(
        (v for v in ta.known_versions() if v.startswith("4.57.")), key=ta.vkey
    )
    assert ta.data_version_for("99.0") == ta.newest()
    assert ta.data_version_for("5.0.0rc1").startswith("4.57.")  # a pre-release is older
    assert ta.data_version_for("3.0.0") == ta.known_versions()[0]
    assert ta.data_version_for(None) == ta.newest()
    assert ta.trl_data_version_for("0.19.5") == "0.19.1"


# --------------------------------------------------------------------------- catalog facts


def test_evaluation_strategy_removed_in_451():
    assert "evaluation_strategy" in names("TrainingArguments", "4.46.0")
    assert "evaluation_strategy" not in names("TrainingArguments", "4.51.0")
    h = ta.history("TrainingArguments", "evaluation_strategy")
    assert h.removed_in == "4.51.0"
    assert h.deprecated_in == "4.41.0"
    assert "eval_strategy" in h.deprecation
    assert ta.fields("TrainingArguments", "4.46.0")["evaluation_strategy"].deprecated


def test_v5_removals():
    assert "overwrite_output_dir" in names("TrainingArguments", "4.57.1")
    assert "overwrite_output_dir" not in names("TrainingArguments", "5.0.0")
    for old in ("no_cuda", "per_gpu_train_batch_size", "fp16_backend", "push_to_hub_token",
                "use_mps_device", "adafactor", "torchdynamo", "include_inputs_for_metrics",
                "fsdp_min_num_params", "tpu_num_cores", "save_safetensors", "half_precision_backend"):
        assert old in names("TrainingArguments", "4.57.1"), old
        assert old not in names("TrainingArguments", "5.0.0"), old
        assert ta.history("TrainingArguments", old).removed_in == "5.0.0", old


def test_v52_and_later_removals():
    for name in ("logging_dir", "warmup_ratio", "group_by_length"):
        assert name in names("TrainingArguments", "5.0.0"), name
        assert name not in names("TrainingArguments", "5.24.0"), name
    # deprecation messages are read from the 5.0.0 source, not typed by hand
    assert "TENSORBOARD_LOGGING_DIR" in ta.fields("TrainingArguments", "5.0.0")["logging_dir"].deprecated
    assert "warmup_steps" in ta.fields("TrainingArguments", "5.0.0")["warmup_ratio"].deprecated
    assert ta.fields("TrainingArguments", "5.24.0")["train_sampling_strategy"].choices == (
        "random", "sequential", "group_by_length", "batch_rebalance")


def test_dispatch_batches_removed_in_451_and_tp_size_short_life():
    assert ta.history("TrainingArguments", "dispatch_batches").removed_in == "4.51.0"
    h = ta.history("TrainingArguments", "tp_size")
    assert h.first.startswith("4.50") and h.removed_in is not None


def test_report_to_default_flip():
    h = ta.history("TrainingArguments", "report_to")
    assert ta.fields("TrainingArguments", "4.57.1")["report_to"].default is None
    assert ta.fields("TrainingArguments", "5.0.0")["report_to"].default == "none"
    assert ("5.0.0", "none") in h.default_changes


def test_gradient_checkpointing_deprecated_alias_in_523():
    f = ta.fields("TrainingArguments", "5.24.0")["gradient_checkpointing"]
    assert f.deprecated and "activation_checkpointing" in f.deprecated
    assert ta.fields("TrainingArguments", "5.0.0")["gradient_checkpointing"].deprecated is None
    assert ta.history("TrainingArguments", "gradient_checkpointing").removed_in is None


def test_predict_with_generate_only_on_seq2seq():
    for v in ("4.40.0", "4.57.1", "5.24.0"):
        assert "predict_with_generate" in names("Seq2SeqTrainingArguments", v)
        assert "predict_with_generate" not in names("TrainingArguments", v)
    s2s = ta.fields("Seq2SeqTrainingArguments", "5.24.0")
    assert s2s["predict_with_generate"].owner == "Seq2SeqTrainingArguments"
    assert s2s["predict_with_generate"].default is False
    assert s2s["learning_rate"].owner == "TrainingArguments"  # inherited


def test_fields_carry_type_default_help_choices():
    f = ta.fields("TrainingArguments", "5.24.0")
    lr = f["learning_rate"]
    assert lr.type == "float" and lr.default == 5e-05 and lr.default_is_literal
    assert "learning rate" in lr.help.lower()
    assert f["per_device_train_batch_size"].default == 8
    # enum-typed fields get the enum values as choices
    assert set(f["eval_strategy"].choices) == {"no", "steps", "epoch"}
    assert "adamw_torch" in f["optim"].choices
    # a default that is not a literal is kept as its expression text
    assert not f["optim"].default_is_literal and f["optim"].default == "default_optim"
    # 4.40 output_dir had no default
    assert ta.fields("TrainingArguments", "4.40.0")["output_dir"].required
    # init=False fields are known but not constructor arguments
    old = ta.fields("TrainingArguments", "4.57.1")
    assert old["_n_gpu"].init is False and "_n_gpu" not in names("TrainingArguments", "4.57.1")


def test_trl_max_seq_length_removed_in_020():
    assert "max_seq_length" in names("SFTConfig", "4.57.1", "0.19.0")
    assert "max_seq_length" not in names("SFTConfig", "4.57.1", "0.20.0")
    assert "max_length" in names("SFTConfig", "4.57.1", "0.20.0")
    h = ta.history("SFTConfig", "max_seq_length")
    assert h.package == "trl"
    assert h.removed_in == "0.20.0"
    assert h.deprecated_in == "0.16.0"


def test_trl_config_inherits_the_transformers_version_fields():
    old = ta.fields("SFTConfig", "4.46.0", "0.12.0")
    new = ta.fields("SFTConfig", "5.24.0", "0.12.0")
    assert "evaluation_strategy" in old and "evaluation_strategy" not in new
    assert old["dataset_text_field"].owner == "SFTConfig"
    # SFTConfig overrides TrainingArguments defaults
    assert ta.fields("SFTConfig", "5.24.0", "1.16.0")["learning_rate"].owner == "SFTConfig"
    assert ta.fields("TrainingArguments", "5.24.0")["learning_rate"].default == 5e-05


def test_trl_classes_by_version():
    assert "GRPOConfig" not in ta.trl_classes("0.12.0")
    assert "GRPOConfig" in ta.trl_classes("0.16.0")
    for c in ("SFTConfig", "DPOConfig", "RewardConfig", "KTOConfig", "ORPOConfig", "CPOConfig", "PPOConfig"):
        assert c in ta.trl_classes("0.16.0"), c
    with pytest.raises(ta.UnknownClassError):
        ta.fields("GRPOConfig", "5.24.0", "0.12.0")
    with pytest.raises(ta.UnknownClassError):
        ta.fields("NotAConfig", "5.24.0")


def test_did_you_mean():
    assert ta.did_you_mean("TrainingArguments", "learning_rat", "5.24.0") == ["learning_rate"]
    assert ta.did_you_mean("TrainingArguments", "per_device_train_bach_size", "5.24.0")[0] == (
        "per_device_train_batch_size")
    # a known old name suggests its replacement first
    assert ta.did_you_mean("TrainingArguments", "evaluation_strategy", "5.24.0")[0] == "eval_strategy"
    assert ta.did_you_mean("TrainingArguments", "zzzz", "5.24.0") == []
    assert ta.did_you_mean("SFTConfig", "max_seq_length", "5.24.0", "0.20.0")[0] == "max_length"


def test_renames_when_comes_from_the_data():
    by_old = {r.old: r for r in ta.renames()}
    assert by_old["evaluation_strategy"].new == "eval_strategy"
    assert by_old["evaluation_strategy"].removed_in == "4.51.0"
    assert by_old["no_cuda"].new == "use_cpu" and by_old["no_cuda"].removed_in == "5.0.0"
    assert by_old["adafactor"].kind == "value" and by_old["adafactor"].value == "adafactor"
    assert by_old["group_by_length"].new == "train_sampling_strategy"
    assert by_old["max_seq_length"].package == "trl" and by_old["max_seq_length"].removed_in == "0.20.0"
    for r in ta.renames():
        assert r.ref.startswith("R"), r
        # every old name is a field some known version had
        assert ta.history(r.classes[0], r.old).known, r.old
        # a field/value/dict-key replacement is a real field, known from `new_since` on
        if r.kind in ("field", "value", "dict-key"):
            assert r.new_since is not None, r
            h = ta.history(r.classes[0], r.old)
            if r.package == "transformers":
                assert r.new in ta.fields("TrainingArguments", r.new_since), r
                # the replacement exists when the old name goes (or while it still exists)
                assert r.new in ta.fields("TrainingArguments", r.removed_in or h.last) or (
                    r.new in ta.fields("TrainingArguments", h.last)), r
    # 4.x: half_precision_backend replaces fp16_backend, then both are removed in 5.0.0
    assert by_old["fp16_backend"].removed_in == "5.0.0"
    assert ta.history("TrainingArguments", "half_precision_backend").removed_in == "5.0.0"
    # group_by_length goes in the same version train_sampling_strategy arrives
    assert by_old["group_by_length"].new_since == by_old["group_by_length"].removed_in
    assert ta.rename_for("DPOConfig", "evaluation_strategy").new == "eval_strategy"
    assert ta.rename_for("DPOConfig", "max_seq_length") is None
    assert ta.rename_for("SFTConfig", "max_seq_length").new == "max_length"


def test_data_is_small_and_well_formed():
    data = ROOT / "trainlint" / "knowledge" / "data"
    # a one-file check reads the transformers file; keep it small
    assert (data / "training_args.json").stat().st_size < 200 * 1024
    assert (data / "trl_args.json").stat().st_size < 2 * 1024 * 1024
    n_tf = 0
    for pkg, name in (("transformers", "training_args.json"), ("trl", "trl_args.json")):
        doc = json.loads((data / name).read_text(encoding="utf-8"))
        assert doc["schema"] == 2 and set(doc) - {"trl_versions"} == {"schema", "generator", pkg, "texts"}
        if pkg == "transformers":
            trl_versions = doc["trl_versions"]
        else:
            assert doc["trl"]["versions"] == trl_versions  # the copy the version resolution reads
        n = len(doc[pkg]["versions"])
        n_tf = n_tf or n
        assert all(isinstance(t, str) for t in doc["texts"]) and len(set(doc["texts"])) == len(doc["texts"])
        used = {v[k] for e in doc[pkg]["classes"].values() for vs in e["fields"].values() for v in vs
                for k in ("help", "deprecated") if k in v}
        assert used == set(range(len(doc["texts"])))  # every text is used, every index exists
        for cls, entry in doc[pkg]["classes"].items():
            for name, variants in entry["fields"].items():
                last = -1
                for v in variants:
                    a, b = v["v"]
                    assert last < a <= b < n, (cls, name)
                    last = b
                    assert "default" in v or "default_expr" in v or v.get("required")
    assert n_tf >= 6


def test_check_path_does_not_import_transformers():
    code = (
        "import sys; from trainlint.knowledge import training_args as t, versions as v;"
        "t.fields('SFTConfig', '5.24.0', '1.0.0'); t.renames(); t.did_you_mean('TrainingArguments','lr','5.0.0');"
        "v.resolve_transformers_version(None, None);"
        "bad=[m for m in ('transformers','torch','trl','accelerate') if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# --------------------------------------------------------------------------- against the real library


def _installed_match(cls_name: str):
    transformers = pytest.importorskip("transformers")
    version = transformers.__version__
    if version not in ta.known_versions():
        pytest.skip(f"installed transformers {version} is not a data version")
    real_cls = getattr(transformers, cls_name)
    real = {f.name: f for f in dataclasses.fields(real_cls)}
    data = ta.fields(cls_name, version)
    assert set(real) == set(data)
    checked = 0
    for name, f in real.items():
        info = data[name]
        assert info.init == f.init, name
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            assert info.required, name
            continue
        if info.default_is_literal:
            if hasattr(default, "value") and not isinstance(default, (str, int, float)):
                default = default.value  # an Enum member
            assert info.default == default, name
            checked += 1
        help_text = f.metadata.get("help")
        if isinstance(help_text, str):
            assert info.help == help_text, name
        if "choices" in f.metadata:
            assert list(info.choices) == list(f.metadata["choices"]), name
    assert checked > 50


def test_data_matches_installed_training_arguments():
    _installed_match("TrainingArguments")


def test_data_matches_installed_seq2seq_training_arguments():
    _installed_match("Seq2SeqTrainingArguments")


def test_trl_class_names_end_with_config():
    """``is_trl_class`` answers other names without reading TRL's table: it relies on this."""
    from trainlint.knowledge.training_args import TRANSFORMERS_CLASSES, _package_data, is_trl_class

    names = set(_package_data("trl")["classes"])
    assert names and all(n.endswith("Config") and n != "Config" for n in names)
    assert not names & set(TRANSFORMERS_CLASSES)
    assert all(is_trl_class(n) for n in names)
    assert not any(is_trl_class(n) for n in (*TRANSFORMERS_CLASSES, "Config", "Trainer", "LoraConfig"))
