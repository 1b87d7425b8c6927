"""The installed command: formats, exit codes, configuration, selection, suppression."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from helpers import run_cli

BAD = (
    "from transformers import AutoModelForSequenceClassification, TrainingArguments, Trainer\n"
    "args = TrainingArguments(output_dir='o', logging_steps=1, fp16=True, save_total_limit=2)\n"
    "Trainer(model=AutoModelForSequenceClassification.from_pretrained('bert-base-uncased'), args=args)\n"
)


MIG = "from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', evaluation_strategy='epoch')\n"


def _write(tmp_path: Path, text: str = BAD, name: str = "train.py") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_exit_codes(tmp_path):
    bad = _write(tmp_path)
    good = _write(tmp_path, "from transformers import TrainingArguments\nTrainingArguments(output_dir='o')\n", "ok.py")
    assert run_cli("check", str(good)).returncode == 0
    assert run_cli("check", str(bad)).returncode == 1
    assert run_cli("check", str(bad), "--exit-zero").returncode == 0
    assert run_cli("check", str(bad), "--fail-on", "error").returncode == 0
    assert run_cli("check", str(bad), "--gpus", "0").returncode == 2
    out = run_cli("check", str(bad), "--gpu", "NoSuchGPU-9000")
    assert out.returncode == 2 and "unknown GPU" in out.stderr and "Traceback" not in out.stderr


def test_concise_and_text_formats(tmp_path):
    bad = _write(tmp_path)
    out = run_cli("check", str(bad), "--format", "concise")
    assert f"{bad}:2:56: TL201 [logging-steps-too-low]" in out.stdout
    text = run_cli("check", str(bad), "--format", "text", "--gpu", "A100")
    assert "TL201" in text.stdout and "logging_steps=1" in text.stdout and "^" in text.stdout
    # TL201 has no fix here (per-step logs may be the choice); a safe migration fix shows the hint
    assert "fixable with `trainlint fix --apply`" not in text.stdout
    mig = _write(tmp_path, MIG, "mig.py")
    text = run_cli("check", str(mig), "--format", "text")
    assert "TL601" in text.stdout and "fixable with `trainlint fix --apply`" in text.stdout, text.stdout


def test_statistics(tmp_path):
    bad = _write(tmp_path)
    out = run_cli("check", str(bad), "--statistics", "--format", "json", "--gpu", "A100")
    stats = json.loads(out.stdout)
    assert {s["code"]: s["count"] for s in stats} == {"TL201": 1, "TL501": 1}


def test_select_and_ignore_by_code_prefix_and_name(tmp_path):
    bad = _write(tmp_path)
    def codes(*args):
        return sorted(d["code"] for d in json.loads(run_cli("check", str(bad), "--format", "json", "--gpu", "A100", *args).stdout))
    assert codes() == ["TL201", "TL501"]
    assert codes("--select", "TL2") == ["TL201"]
    assert codes("--select", "fp16-on-bf16-hardware") == ["TL501"]
    assert codes("--ignore", "TL201,TL5") == []


def test_pyproject_configuration(tmp_path):
    bad = _write(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.trainlint]\ngpu = "H100"\nignore = ["TL201"]\n'
        '[tool.trainlint.logging-steps-too-low]\nthreshold = 5\n')
    out = json.loads(run_cli("check", str(bad), "--format", "json").stdout)
    assert [d["code"] for d in out] == ["TL501"]  # gpu from config; TL201 ignored
    # command line overrides the file
    out = json.loads(run_cli("check", str(bad), "--format", "json", "--select", "TL201").stdout)
    assert [d["code"] for d in out] == ["TL201"]
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nno_such_key = 1\n')
    bad_cfg = run_cli("check", str(bad))
    assert bad_cfg.returncode == 2 and "unknown key" in bad_cfg.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint.logging-steps-too-low]\nthreshold = "x"\n')
    assert run_cli("check", str(bad)).returncode == 2


def test_per_file_ignores(tmp_path):
    _write(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint.per-file-ignores]\n"train.py" = ["TL201"]\n')
    out = json.loads(run_cli("check", str(tmp_path), "--format", "json").stdout)
    assert out == []


def test_suppression_comments(tmp_path):
    line = "args = TrainingArguments(output_dir='o', logging_steps=1, save_total_limit=2)"
    head = "from transformers import TrainingArguments\n"
    for comment, silenced in [
        ("# trainlint: disable=TL201", True),
        ("# trainlint: disable=logging-steps-too-low", True),
        ("# noqa: TL201", True),
        ("# noqa", True),
        ("# noqa: E501", False),
        ("# trainlint: disable=TL101", False),
    ]:
        p = _write(tmp_path, f"{head}{line}  {comment}\n")
        out = json.loads(run_cli("check", str(p), "--format", "json").stdout)
        assert (out == []) == silenced, comment
    p = _write(tmp_path, f"# trainlint: disable-file=TL201\n{head}{line}\n")
    assert json.loads(run_cli("check", str(p), "--format", "json").stdout) == []


def test_folder_walk_skips_venvs_and_gitignored(tmp_path):
    _write(tmp_path)
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    _write(tmp_path / ".venv" / "lib", BAD, "x.py")
    (tmp_path / "build_out").mkdir()
    _write(tmp_path / "build_out", BAD, "y.py")
    (tmp_path / ".gitignore").write_text("build_out/\n")
    out = json.loads(run_cli("check", str(tmp_path), "--format", "json").stdout)
    assert {Path(d["path"]).name for d in out} == {"train.py"}


def test_missing_path_is_a_finding_not_a_crash(tmp_path):
    out = run_cli("check", str(tmp_path / "nope.py"), "--format", "json")
    assert out.returncode == 1
    assert json.loads(out.stdout)[0]["code"] == "TL002"


def test_check_path_never_imports_heavy_libraries(tmp_path):
    """`trainlint check` must not import torch, transformers, accelerate or deepspeed."""
    bad = _write(tmp_path)
    probe = (
        "import sys\n"
        f"sys.argv = ['trainlint', 'check', {str(bad)!r}, '--gpu', 'A100', '--format', 'json']\n"
        "from trainlint.cli import main  # entry() would leave with os._exit before the probe\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('torch', 'transformers', 'accelerate', 'deepspeed') if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\n"
    )
    import subprocess
    from helpers import REPO_ROOT
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})
    assert "HEAVY=\n" in out.stderr or out.stderr.rstrip().endswith("HEAVY="), out.stderr


def test_walked_generic_json_is_not_judged_unless_referenced(tmp_path):
    (tmp_path / "tsconfig.json").write_text('{\n  // comments are fine for TypeScript\n  "a": 1\n}\n')
    (tmp_path / "other.json").write_text('{\n  // also not a training config\n}\n')
    out = json.loads(run_cli("check", str(tmp_path), "--format", "json").stdout)
    assert out == []
    # named explicitly: reported
    out = json.loads(run_cli("check", str(tmp_path / "other.json"), "--format", "json").stdout)
    assert [d["code"] for d in out] == ["TL003"]
    # referenced by a launch line as a DeepSpeed config: reported
    (tmp_path / "train.py").write_text("from transformers import Trainer\nTrainer(model=m)\n")
    (tmp_path / "run.sh").write_text("deepspeed --num_gpus 2 train.py --deepspeed tsconfig.json\n")
    out = json.loads(run_cli("check", str(tmp_path), "--format", "json").stdout)
    assert [(Path(d["path"]).name, d["code"]) for d in out if d["code"] == "TL003"] == [("tsconfig.json", "TL003")]


def test_walked_sed_template_json_is_not_judged_unless_referenced(tmp_path):
    # DeepSpeedExamples: a script fills ds_config_TEMPLATE.json with sed before launching
    (tmp_path / "ds_config_TEMPLATE.json").write_text(
        '{\n  "train_batch_size": 32,\n  "train_micro_batch_size_per_gpu": BATCH_SIZE_PER_GPU,\n'
        '  "zero_optimization": {"stage": 0}\n}\n')
    (tmp_path / "broken.json").write_text('{\n  "zero_optimization": {"stage": 0,}\n}\n')
    (tmp_path / "accelerate.yaml").write_text("distributed_type: MULTI_GPU\nnum_processes: [2\n")  # broken YAML
    out = json.loads(run_cli("check", str(tmp_path), "--format", "json", "--no-cache").stdout)
    assert sorted((Path(d["path"]).name, d["code"]) for d in out) == [("accelerate.yaml", "TL003"),
                                                                        ("broken.json", "TL003")]
    (tmp_path / "run.sh").write_text("deepspeed --num_gpus 2 train.py --deepspeed ds_config_TEMPLATE.json\n")
    (tmp_path / "train.py").write_text("from transformers import Trainer\nTrainer(model=m)\n")
    out = json.loads(run_cli("check", str(tmp_path), "--format", "json", "--no-cache").stdout)
    assert ("ds_config_TEMPLATE.json", "TL003") in [(Path(d["path"]).name, d["code"]) for d in out]


def test_info_findings_are_shown_but_do_not_fail_by_default(tmp_path):
    p = _write(tmp_path, "from transformers import Trainer, TrainingArguments\n"
                         "Trainer(model=m, args=TrainingArguments(output_dir='o')).train()\n")
    out = run_cli("check", str(p), "--format", "json")
    assert [d["severity"] for d in json.loads(out.stdout)] == ["info"]  # save-total-limit-missing
    assert out.returncode == 0
    assert run_cli("check", str(p), "--fail-on", "info").returncode == 1
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nfail-on = "info"\n')
    assert run_cli("check", str(p)).returncode == 1


def test_quick_exit_flushes_everything_and_keeps_exit_codes(tmp_path):
    """The console script leaves `check` with os._exit: output through a pipe must still be
    complete (a large JSON document parses), and every exit code must come through."""
    for i in range(60):
        _write(tmp_path, BAD, f"train_{i}.py")
    out = run_cli("check", str(tmp_path), "--format", "json", "--no-cache")
    assert out.returncode == 1
    found = json.loads(out.stdout)
    assert len(found) >= 60 and {Path(d["path"]).name for d in found} == {f"train_{i}.py" for i in range(60)}
    other = tmp_path.parent / f"{tmp_path.name}-mig"
    other.mkdir()
    fixed = run_cli("fix", str(_write(other, MIG, "mig.py")))  # a safe fix (TL201 offers none for BAD)
    assert fixed.returncode == 1 and fixed.stdout.startswith("--- a/") and "Would fix" in fixed.stderr
    assert run_cli("check", str(tmp_path / "train_0.py"), "--select", "TL201", "--exit-zero").returncode == 0
    bad_option = run_cli("check", "--no-such-option")
    assert bad_option.returncode == 2 and "No such option" in bad_option.stderr
    assert run_cli("rules", "--format", "json").returncode == 0
