"""The shared run context: what makes a file a test, a run short, a step heavy or fast."""

from __future__ import annotations

import pytest
from helpers import settings_for, write_files

from trainlint.resolve import build_setups, read_workspace
from trainlint.rules._context import is_test_path, run_context


@pytest.mark.parametrize("path,test", [
    ("tests/test_train.py", True), ("test_train.py", True), ("train_test.py", True), ("conftest.py", True),
    ("tests/data/run.sh", True), ("test/args.yaml", True), ("/home/me/test/repo/tests/x.py", True),
    ("train.py", False), ("scripts/train.py", False), ("/home/me/test/repo/train.py", False),
    ("/srv/tests-archive/train.py", False), ("contest.py", False), ("attest/train.py", False),
])
def test_is_test_path(path, test):
    assert is_test_path(path) is test


def _context(tmp_path, files):
    write_files(tmp_path, files)
    settings = settings_for(tmp_path)
    setups = build_setups(read_workspace([tmp_path], settings, {}), settings)
    setup = next(s for s in setups if s.sites)
    return run_context(setup, setup.sites[0])


def test_short_runs_and_step_cost(tmp_path):
    ctx = _context(tmp_path / "a", {"train.py": "from transformers import TrainingArguments\n"
                                                "args = TrainingArguments(output_dir='o', max_steps=40)\n"})
    assert ctx.short_run == "max_steps=40" and ctx.quiet_reason == "max_steps=40" and ctx.test_file is None
    ctx = _context(tmp_path / "b", {"train.py": "from transformers import AutoModel, TrainingArguments\n"
                                                "m = AutoModel.from_pretrained('my-org/Qwen3-30B-A3B-custom')\n"
                                                "args = TrainingArguments(output_dir='o', max_steps=5000)\n"})
    assert ctx.short_run is None and ctx.params == 30_000_000_000 and ctx.heavy_steps.startswith("a 30.0B")
    ctx = _context(tmp_path / "c", {"train.py": "from transformers import AutoModel, TrainingArguments\n"
                                                "m = AutoModel.from_pretrained('bert-base-uncased')\n"
                                                "args = TrainingArguments(output_dir='o')\n"})
    assert ctx.fast_steps == "a 109M-parameter model" and ctx.heavy_steps is None
    ctx = _context(tmp_path / "d", {"train.py": "from trl import SFTConfig\n"
                                                "args = SFTConfig(output_dir='o', packing=True, max_length=512)\n"})
    assert ctx.heavy_steps == "packed sequences (packing=True)" and ctx.fast_steps is None


def test_memory_tightness_needs_a_gpu_and_an_estimate(tmp_path):
    files = {"train.py": "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                         "m = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n"
                         "args = TrainingArguments(output_dir='o', bf16=True, per_device_train_batch_size=1)\n"}
    write_files(tmp_path, files)
    for gpu, tight in ((None, None), ("A100-40GB", True), ("H200", False)):
        settings = settings_for(tmp_path, options={"gpu": gpu} if gpu else None)
        setup = next(s for s in build_setups(read_workspace([tmp_path], settings, {}), settings) if s.sites)
        assert run_context(setup).memory_tight is tight, gpu
