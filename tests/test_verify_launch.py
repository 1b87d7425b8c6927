"""Launcher command lines, environment, detection, the boot shim's cheap paths, the fixed
copy and the command's usage errors.  No torch is imported by these tests."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainlint.verify import fixed as fixed_mod
from trainlint.verify import launch
from trainlint.verify.command import verify

PY = sys.executable


def test_build_command_per_launcher(tmp_path):
    s = tmp_path / "train.py"
    assert launch.build_command("python", s, ["--a", "1"], 1, python=PY) == [PY, str(s), "--a", "1"]
    assert launch.build_command("torchrun", s, [], 2, python=PY) == [
        PY, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(s)]
    acc = launch.build_command("accelerate", s, ["x"], 2, python=PY, port=1234)
    assert acc[:3] == [PY, "-m", "accelerate.commands.launch"]
    assert "--multi_gpu" in acc and "--cpu" not in acc
    assert acc[acc.index("--num_processes") + 1] == "2" and acc[acc.index("--main_process_port") + 1] == "1234"
    assert acc[-2:] == [str(s), "x"]
    assert "--multi_gpu" not in launch.build_command("accelerate", s, [], 1, python=PY, port=1)
    ds = launch.build_command("deepspeed", s, [], 4, python=PY, port=1, gpu=True)
    assert ds[ds.index("--num_gpus") + 1] == "4"


def test_build_command_refusals(tmp_path):
    with pytest.raises(launch.LaunchError, match="not supported on CPU"):
        launch.build_command("deepspeed", tmp_path / "t.py", [], 2, gpu=False)
    with pytest.raises(launch.LaunchError, match="one process"):
        launch.build_command("python", tmp_path / "t.py", [], 2)


def test_build_env(tmp_path):
    base = {"PYTHONPATH": "/mine", "RANK": "3", "WORLD_SIZE": "8", "HOME": "/h"}
    env = launch.build_env(base, results_dir=tmp_path, script=tmp_path / "t.py", steps=4, cpu=True)
    assert env["PYTHONPATH"] == f"{launch.boot_dir()}{os.pathsep}/mine"
    assert "RANK" not in env and "WORLD_SIZE" not in env and env["HOME"] == "/h"
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["OMP_NUM_THREADS"] == "1"
    assert env["HF_HUB_OFFLINE"] == "1" and env["WANDB_MODE"] == "disabled"
    assert env["TOKENIZERS_PARALLELISM"] == "false" and env["PYTHONUNBUFFERED"] == "1"
    assert env["TRAINLINT_SMOKE_STEPS"] == "4" and env["TRAINLINT_SMOKE_CPU"] == "1"
    gpu = launch.build_env({}, results_dir=tmp_path, script=tmp_path / "t.py", steps=4, cpu=False)
    assert "CUDA_VISIBLE_DEVICES" not in gpu and gpu["TRAINLINT_SMOKE_CPU"] == "0"


@pytest.mark.parametrize("sh,expected", [
    ("torchrun --nproc_per_node=4 \\\n   train.py --lr 1e-4 --bf16\n", ("torchrun", 4, ["--lr", "1e-4", "--bf16"])),
    ("python -m torch.distributed.run --nproc-per-node 2 train.py\n", ("torchrun", 2, [])),
    ("accelerate launch --num_processes 8 train.py --out $OUT\n", ("accelerate", 8, [])),
    ("deepspeed --num_gpus 2 train.py --deepspeed ds.json\n", ("deepspeed", 2, ["--deepspeed", "ds.json"])),
    ("# torchrun --nproc_per_node 4 train.py\npython train.py\n", None),
    ("torchrun --nproc_per_node 4 other.py\n", None),
])
@pytest.mark.parametrize("use_reader", [True, False])
def test_detect_launcher_from_shell(tmp_path, sh, expected, use_reader):
    script = tmp_path / "train.py"
    script.write_text("")
    (tmp_path / "run.sh").write_text(sh)
    det = launch.detect_launcher(script, None, use_reader=use_reader)
    if expected is None:
        assert det.launcher == "python" and det.nproc == 1
    else:
        assert (det.launcher, det.nproc, det.script_args) == expected
        assert det.source.endswith("run.sh:1")


def test_detect_launcher_resolves_shell_variables(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("")
    (tmp_path / "run.sh").write_text("N=3\ntorchrun --nproc_per_node $N train.py --lr 1\n")
    det = launch.detect_launcher(script, None)
    assert (det.launcher, det.nproc, det.script_args) == ("torchrun", 3, ["--lr", "1"])


def test_launcher_names_agree():
    from trainlint.verify import command

    assert command.LAUNCHERS == launch.LAUNCHERS


def test_detect_launcher_default(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("")
    assert launch.detect_launcher(script, 2).launcher == "torchrun"
    assert launch.detect_launcher(script, 1).launcher == "python"


def _env(results):
    return launch.build_env(dict(os.environ), results_dir=results, script=results / "nothing.py",
                            steps=3, cpu=True)


def test_sitecustomize_chain_loads_the_shadowed_one(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    marker = tmp_path / "marker"
    (other / "sitecustomize.py").write_text(
        f"import sys\nopen({str(marker)!r}, 'w').write(__name__ + ' ' + str('sitecustomize' in sys.modules))\n")
    for with_dir in (False, True):
        marker.unlink(missing_ok=True)
        env = _env(tmp_path)
        if not with_dir:
            del env["TRAINLINT_SMOKE_DIR"]
        env["PYTHONPATH"] += os.pathsep + str(other)
        subprocess.run([PY, "-c", "pass"], env=env, check=True)
        assert marker.read_text() == "sitecustomize True"


def test_launcher_like_processes_never_claim_a_rank(tmp_path):
    env = _env(tmp_path)
    subprocess.run([PY, "-c", "import sys; sys.exit(0)"], env=env, check=True)
    other = tmp_path / "other.py"
    other.write_text("print('hi')\n")
    subprocess.run([PY, str(other)], env=env, check=True)
    assert not list(tmp_path.glob("rank*"))


def test_worker_without_trainer_reports_no_train(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text("print('no trainer here')\n")
    env = launch.build_env(dict(os.environ), results_dir=tmp_path, script=script, steps=3, cpu=True)
    subprocess.run([PY, str(script)], env=env, check=True, cwd=tmp_path)
    started = json.loads((tmp_path / "rank0.started.json").read_text())
    result = json.loads((tmp_path / "rank0.result.json").read_text())
    assert started["pid"] == result["pid"]
    assert result["status"] == "no_train" and result["phase"] == "setup"


def test_worker_setup_error_is_recorded(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text("raise FileNotFoundError('no data.csv')\n")
    env = launch.build_env(dict(os.environ), results_dir=tmp_path, script=script, steps=3, cpu=True)
    proc = subprocess.run([PY, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 1 and "no data.csv" in proc.stderr  # the user's traceback is kept
    result = json.loads((tmp_path / "rank0.result.json").read_text())
    assert result["status"] == "error" and result["error"]["type"] == "FileNotFoundError"


def test_fixed_copy_is_hidden_next_to_the_script_and_removed(tmp_path, monkeypatch):
    script = tmp_path / "train.py"
    script.write_text("x = 1\n")
    other = tmp_path / "run.sh"
    monkeypatch.setattr(fixed_mod, "compute_fixes",
                        lambda s, unsafe: {script: "x = 2\n", other: "echo\n"})
    with fixed_mod.fixed_copy(script, unsafe=False) as fc:
        assert fc.path.parent == tmp_path and fc.path.name.startswith(".train.")
        assert fc.path.read_text() == "x = 2\n" and fc.other_files == [other]
        kept = fc.path
    assert not kept.exists() and script.read_text() == "x = 1\n"
    monkeypatch.setattr(fixed_mod, "compute_fixes", lambda s, unsafe: {})
    with fixed_mod.fixed_copy(script, unsafe=False) as fc:
        assert fc.path is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


def test_command_module_does_not_import_torch():
    code = ("import sys, trainlint.verify.command, trainlint.verify.compare, trainlint.verify.results;"
            "bad = [m for m in ('torch', 'transformers', 'accelerate', 'psutil') if m in sys.modules];"
            "sys.exit(str(bad) if bad else 0)")
    subprocess.run([PY, "-c", code], check=True)


@pytest.mark.parametrize("args,needle", [
    (["--launcher", "deepspeed", "--gpus", "2", "--cpu"], "not supported on CPU"),
    (["--launcher", "python", "--gpus", "2", "--cpu"], "one process"),
    (["--steps", "0"], "--steps"),
])
def test_command_usage_errors(tmp_path, args, needle):
    script = tmp_path / "t.py"
    script.write_text("")
    res = CliRunner().invoke(verify, [str(script), *args])
    assert res.exit_code == 2, res.output
    assert needle in res.output


def test_command_missing_script_is_usage_error(tmp_path):
    assert CliRunner().invoke(verify, [str(tmp_path / "nope.py")]).exit_code == 2


def test_command_no_trainer_fails_and_writes_json(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the kept run files land here
    script = tmp_path / "plain.py"
    script.write_text("import sys\nprint(sys.argv[1:])\n")
    out = tmp_path / "r.json"
    res = CliRunner().invoke(verify, [str(script), "--cpu", "--no-compare", "--json", str(out),
                                      "--", "--flag", "v"])
    assert res.exit_code == 1, res.output
    data = json.loads(out.read_text())
    assert data["verdict"] == "fail" and data["launcher"] == "python" and data["device"] == "cpu"
    assert data["runs"][0]["status"] == "no_trainer"
    assert "['--flag', 'v']" in data["runs"][0]["log_tail"]
    kept = list(tmp_path.glob("trainlint-verify-*/original/rank0.result.json"))
    assert len(kept) == 1 and "run files kept in" in res.output


def test_command_without_fixer_is_an_error(tmp_path, monkeypatch):
    script = tmp_path / "plain.py"
    script.write_text("pass\n")

    def unavailable(s, unsafe):
        raise fixed_mod.FixUnavailable("no engine")

    monkeypatch.setattr(fixed_mod, "compute_fixes", unavailable)
    res = CliRunner().invoke(verify, [str(script), "--cpu"])
    assert res.exit_code == 2 and "no engine" in res.output


def test_ctrl_c_ends_the_whole_tree(tmp_path):
    psutil = pytest.importorskip("psutil")
    script = tmp_path / "spawner.py"
    # the worker starts a grandchild in yet another session, like torchrun does
    script.write_text(textwrap.dedent("""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                 start_new_session=True)
        open("child.pid", "w").write(str(child.pid))
        time.sleep(600)
    """))
    spec = launch.RunSpec(launcher="python", script=script, script_args=[], nproc=1, steps=3,
                          timeout=60, cpu=True)

    def tick(label, elapsed, progress):
        if (tmp_path / "child.pid").exists():
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        launch.run_smoke(spec, "original", tmp_path / "results", on_tick=tick)
    worker = int(next((tmp_path / "results" / "pids").iterdir()).name)
    grandchild = int((tmp_path / "child.pid").read_text())
    for pid in (worker, grandchild):
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
