"""Real smoke runs on CPU (gloo): the demo script under python, torchrun and accelerate,
and every run status provoked with the shim's private fault injection."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

psutil = pytest.importorskip("psutil")
pytest.importorskip("transformers")

from trainlint.verify.command import verify  # noqa: E402
from trainlint.verify.launch import ENV_DIR, RunSpec, run_smoke  # noqa: E402

pytestmark = pytest.mark.smoke
DEMO = Path(__file__).resolve().parents[1] / "examples" / "verify_demo"


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny") / "tiny-bert"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    subprocess.run([sys.executable, str(DEMO / "make_tiny_model.py"), str(out)], check=True,
                   env=env, capture_output=True)
    return out


@pytest.fixture
def demo(tmp_path, tiny_model, monkeypatch):
    """The demo script copied into a fresh folder (its working directory in the run)."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(DEMO / "train.py", work / "train.py")
    monkeypatch.setenv("TINY_MODEL", str(tiny_model))
    return work / "train.py"


def smoke(tmp_path, script, launcher="python", nproc=1, fault=None, timeout=120, steps=3):
    spec = RunSpec(launcher=launcher, script=Path(script), script_args=[], nproc=nproc, steps=steps,
                   timeout=timeout, cpu=True, fault=fault)
    return run_smoke(spec, "original", tmp_path / "results")


def survivors(results_dir: Path) -> list:
    """Every process on the box that still belongs to this smoke run."""
    left = []
    for p in psutil.process_iter():
        try:
            if p.environ().get(ENV_DIR) == str(results_dir) and p.status() != psutil.STATUS_ZOMBIE:
                left.append(p)
        except psutil.Error:
            continue
    return left


def test_python_single_process_ok(tmp_path, demo):
    run = smoke(tmp_path, demo)
    assert run.status == "ok", run.log_tail
    (rank,) = run.ranks
    assert rank.steps == 3 and len(rank.losses) == 3 and rank.loss_finite
    assert rank.median_step_s > 0 and rank.samples_per_s > 0 and rank.peak_memory_bytes > 10 * 2**20
    assert rank.overrides["max_steps"]["to"] == "3" and rank.overrides["use_cpu"]["to"] == "True"
    assert rank.overrides["eval_strategy"]["to"] == "'no'"
    # the script's post-train save_model("out/final") and its output_dir were not touched
    assert sorted(p.name for p in demo.parent.iterdir()) == ["train.py"]
    assert survivors(tmp_path / "results") == []


def test_torchrun_two_ranks_real_ddp(tmp_path, demo):
    run = smoke(tmp_path, demo, "torchrun", 2)
    assert run.status == "ok", run.log_tail
    assert [r.rank for r in run.ranks] == [0, 1]
    for r in run.ranks:
        assert r.status == "ok" and r.args_world_size == 2 and r.steps == 3
        assert r.device["dist_backend"] == "gloo" and "DISTRIBUTED" in r.parallel_mode


def test_accelerate_two_ranks_real_ddp(tmp_path, demo):
    run = smoke(tmp_path, demo, "accelerate", 2)
    assert run.status == "ok", run.log_tail
    assert [(r.rank, r.status, r.args_world_size) for r in run.ranks] == [(0, "ok", 2), (1, "ok", 2)]


def test_crash_on_one_rank_names_it_root_cause(tmp_path, demo):
    run = smoke(tmp_path, demo, "torchrun", 2, fault="raise@2:1")
    assert run.status == "crash" and run.root_cause_rank == 1, run.log_tail
    assert "trainlint injected fault" in run.message
    r1 = run.ranks[1]
    assert r1.status == "error" and r1.steps == 1 and r1.error.type == "RuntimeError"
    assert survivors(tmp_path / "results") == []


def test_oom(tmp_path, demo):
    run = smoke(tmp_path, demo, fault="oom@2")
    assert run.status == "oom", run.log_tail
    assert run.ranks[0].error.type == "OutOfMemoryError" and run.ranks[0].error.oom


def test_nonfinite_loss(tmp_path, demo):
    run = smoke(tmp_path, demo, fault="nan@2")
    assert run.status == "nonfinite_loss", run.log_tail
    r = run.ranks[0]
    assert r.steps == 3 and r.loss_finite is False and r.first_loss == r.first_loss  # first is finite


def test_killed_by_signal(tmp_path, demo):
    run = smoke(tmp_path, demo, fault="sigkill@2")
    assert run.status == "killed" and run.returncode == -9, run.log_tail
    assert run.ranks[0].status == "killed" and run.ranks[0].steps == 1


def test_ddp_not_active_is_detected(tmp_path, demo):
    # without the shim's use_cpu/gloo settings, torchrun on CPU runs N separate trainings
    run = smoke(tmp_path, demo, "torchrun", 2, fault="no_ddp")
    assert run.status == "ddp_not_active", run.log_tail
    assert {r.args_world_size for r in run.ranks} == {1}


def test_timeout_kills_the_whole_tree(tmp_path):
    script = tmp_path / "sleepy.py"
    script.write_text(
        "import os, signal, time\n"
        "if os.environ.get('RANK') == '1':\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # needs the SIGKILL escalation\n"
        "open(f\"ready{os.environ.get('RANK')}\", 'w').close()\n"
        "time.sleep(600)\n"
    )
    t0 = time.monotonic()
    # generous enough that both workers start even on a loaded 2-core machine
    run = smoke(tmp_path, script, "torchrun", 2, timeout=20)
    elapsed = time.monotonic() - t0
    assert run.status == "timeout"
    assert (tmp_path / "ready0").exists() and (tmp_path / "ready1").exists(), run.log_tail
    assert [r.status for r in run.ranks] == ["timeout", "timeout"]
    assert elapsed < 20 + 5 + 8  # timeout + SIGTERM grace + slack
    pids = [int(p.name) for p in (tmp_path / "results" / "pids").iterdir()]
    assert len(pids) == 2
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert survivors(tmp_path / "results") == []


def test_command_compares_original_and_fixed(tmp_path, demo):
    """End to end with the core fixer: the fixed copy is a hidden file next to the script."""
    from trainlint.engine import fix_in_memory

    assert demo.resolve() in {Path(p).resolve() for p in fix_in_memory([demo], unsafe=False)}
    out = tmp_path / "r.json"
    res = CliRunner().invoke(verify, [str(demo), "--cpu", "--steps", "3", "--json", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["verdict"] == "pass" and [r["label"] for r in data["runs"]] == ["original", "fixed"]
    assert [r["status"] for r in data["runs"]] == ["ok", "ok"]
    assert any("not compared" in n for n in data["notes"])
    assert "verdict: pass" in res.output
    assert sorted(p.name for p in demo.parent.iterdir()) == ["train.py"]  # hidden copy removed
