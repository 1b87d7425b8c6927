import subprocess
import sys
from pathlib import Path

import pytest

from trainlint.sources.accelerate import AccelerateConfig
from trainlint.sources.argsfile import ArgsFile
from trainlint.sources.deepspeed import DeepSpeedConfig
from trainlint.sources.kinds import detect_kind
from trainlint.setup import ACCELERATE, ARGSFILE, DEEPSPEED

EX = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize(
    "rel,kind",
    [
        ("glue_cli/run.sh", "shell"),
        ("glue_cli/args.json", "hf_args"),
        ("glue_cli/ds_zero1.json", "deepspeed"),
        ("glue_cli/run_glue.py", "python"),
        ("flan_t5_multigpu/ds_config.json", "deepspeed"),
        ("flan_t5_multigpu/accelerate_config.yaml", "accelerate"),
        ("flan_t5_multigpu/launch.sh", "shell"),
        ("bert_imdb/git_history.md", "markdown"),
    ],
)
def test_examples(rel, kind):
    path = EX / rel
    assert detect_kind(str(path), path.read_text()) == kind
    assert detect_kind(str(path), path.read_bytes()) == kind


@pytest.mark.parametrize(
    "path,text,kind",
    [
        ("a.json", '{"fp16": true, "learning_rate": 1e-5, "output_dir": "o"}', "hf_args"),
        ("a.json", '{"fp16": {"enabled": true}}', "deepspeed"),
        ("a.json", '{"optimizer": {"type": "AdamW", "params": {"lr": "auto"}}, '
                   '"scheduler": {"type": "WarmupLR"}}', "deepspeed"),
        ("a.json", '{"name": "x", "version": 1}', "json"),
        ("a.json", '{"zero_optimization": {"stage": 2},}', "deepspeed"),  # invalid but clear
        ("a.json", "[1, 2]", "json"),
        ("c.yaml", "distributed_type: MULTI_GPU\nnum_processes: 2\n", "accelerate"),
        ("c.yml", "output_dir: out\nlearning_rate: 2.0e-5\nbf16: true\n", "hf_args"),
        ("c.yaml", "model: x\nname: y\n", "yaml"),
        ("c.yaml", "bf16:\n  enabled: true\nzero_optimization:\n  stage: 3\n", "deepspeed"),
        ("empty.sh", "echo hello\n", "shell"),
        ("noext", "#!/usr/bin/env python3\nprint(1)\n", "python"),
        ("noext", "#!/bin/bash\ntorchrun t.py\n", "shell"),
        ("noext", '{"train_micro_batch_size_per_gpu": 4}', "deepspeed"),
        ("notes.txt", "hello", "unknown"),
        ("model.bin", b"\x00\x01\x02weights", "binary"),
        ("x.json", b"\xff\xfe\x00{", "binary"),
    ],
)
def test_detect_by_content(path, text, kind):
    assert detect_kind(path, text) == kind


def test_deepspeed_view_flan():
    ds = DeepSpeedConfig.parse((EX / "flan_t5_multigpu/ds_config.json").read_text(), "ds_config.json")
    buckets = ds.buckets()
    ag, rb = buckets["allgather_bucket_size"], buckets["reduce_bucket_size"]
    assert ag.value == 200000000 and isinstance(ag.value, int)
    assert ag.span.line == 29 and rb.span.line == 32 and ag.origin == DEEPSPEED
    assert ag.key_span.column == 5
    assert ds.stage.value == 2
    assert ds.offload_optimizer_device.value == "cpu" and ds.offload_param_device is None
    assert ds.overlap_comm.value is True
    assert ds.bf16_enabled.value == "auto" and ds.fp16_enabled is None
    assert ds.is_auto("train_micro_batch_size_per_gpu")
    assert ds.optimizer_type.value == "AdamW"
    assert set(ds.optimizer_params) == {"lr", "betas", "eps", "weight_decay"}
    assert ds.scheduler_params["warmup_num_steps"].value == "auto"
    assert "scheduler.params.warmup_max_lr" in ds.auto_paths()


def test_deepspeed_view_zero1_and_legacy():
    ds = DeepSpeedConfig.parse((EX / "glue_cli/ds_zero1.json").read_text(), "ds_zero1.json")
    tbs, micro, ga = ds.batch_triple()
    assert micro.value == 16 and micro.span.line == 4 and micro.key_span.line == 4
    assert tbs.value == "auto" and ga.value == "auto"
    assert ds.fp16_enabled.value == "auto" and ds.fp16_enabled.span.line == 2
    legacy = DeepSpeedConfig.parse('{"zero_optimization": {"stage": 2, "cpu_offload": true},'
                                   ' "bfloat16": {"enabled": true}, "train_batch_size": 1.6e1}', "l.json")
    assert legacy.offload_optimizer_device.value == "cpu"
    assert legacy.bf16_enabled.value is True
    assert legacy.train_batch_size.value == 16 and isinstance(legacy.train_batch_size.value, int)


def test_accelerate_view():
    acc = AccelerateConfig.parse((EX / "flan_t5_multigpu/accelerate_config.yaml").read_text(), "acc.yaml")
    n = acc.num_processes
    assert n.value == 4 and n.span.line == 10 and n.origin == ACCELERATE
    assert acc.world_size() == 4
    assert acc.distributed_type.value == "DEEPSPEED"
    assert acc.deepspeed_config_file.value == "ds_config.json"
    assert acc.deepspeed_config_file.span.line == 5
    assert acc.deepspeed_value("zero3_init_flag").value is False
    assert acc.use_cpu.value is False and acc.mixed_precision is None
    assert acc.fsdp_config is None and acc.gpu_id_list() is None
    other = AccelerateConfig.parse("distributed_type: MULTI_GPU\ngpu_ids: 0,1\nnum_processes: 3\n"
                                   "fsdp_config:\n  fsdp_version: 2\n", "o.yaml")
    assert other.gpu_id_list() == [0, 1]
    assert other.fsdp_value("fsdp_version").value == 2
    assert AccelerateConfig.parse("gpu_ids: all\n", "a.yaml").gpu_id_list() is None
    js = AccelerateConfig.parse('{"num_processes": 2}', "a.json")
    assert js.num_processes.value == 2 and js.num_processes.span.column == 19


def test_args_file_json_and_yaml():
    args = ArgsFile.parse((EX / "glue_cli/args.json").read_text(), "args.json")
    lr = args.get("learning_rate")
    assert lr.value == 2e-5 and lr.origin == ARGSFILE and lr.span.line == 8
    assert lr.key_span.column == 3 and lr.name == "learning_rate"
    assert args.get("logging_steps").value == 1 and args.get("fp16").value is True
    site = args.as_site()
    assert site.known("per_device_train_batch_size") == 64
    y = ArgsFile.parse("output_dir: out  # here\nlearning_rate: 1e-5\nbf16: true\n", "a.yaml")
    assert y.get("bf16").value is True and y.get("output_dir").span.column == 13
    assert y.get("learning_rate").value == "1e-5"  # what parse_yaml_file would pass on


def test_import_is_light():
    code = (
        "import sys, trainlint.sources.kinds, trainlint.sources.shell, trainlint.sources.jsondoc, "
        "trainlint.sources.deepspeed, trainlint.sources.argsfile, trainlint.sources.accelerate\n"
        "heavy = [m for m in ('torch', 'transformers', 'accelerate', 'deepspeed', 'ruamel.yaml')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    root = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root,
                   env={"PYTHONPATH": str(root)})
