"""The shipped examples, end to end through the installed command."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

from helpers import commit_base, git, run_cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_bert_imdb_json_reports_the_named_rules_at_their_lines():
    script = EXAMPLES / "bert_imdb" / "train.py"
    out = run_cli("check", str(script), "--gpu", "A100", "--format", "json")
    assert out.returncode == 1, out.stderr
    found = json.loads(out.stdout)
    keys = {"code", "name", "severity", "message", "path", "cell", "line", "column", "end_line", "end_column", "fix",
            "related"}
    assert all(set(d) == keys and d["cell"] is None for d in found)  # `cell`: notebooks only
    by_name = {d["name"]: d for d in found}
    assert by_name["manual-device-placement"]["line"] == _line_of(script, "model.to(device)")
    assert by_name["padding-max-length"]["line"] == _line_of(script, 'padding="max_length"')
    assert by_name["logging-steps-too-low"]["line"] == _line_of(script, "logging_steps=1")
    assert by_name["fp16-on-bf16-hardware"]["line"] == _line_of(script, "fp16=True")
    assert by_name["fp16-on-bf16-hardware"]["fix"]["applicability"] == "unsafe"
    assert by_name["manual-device-placement"]["fix"]["applicability"] == "safe"


def test_bert_imdb_fix_apply_twice(tmp_path):
    work = tmp_path / "bert_imdb"
    shutil.copytree(EXAMPLES / "bert_imdb", work)
    script = work / "train.py"
    first = run_cli("fix", "--apply", str(script), "--gpu", "A100")
    assert first.returncode in (0, 1), first.stderr
    text = script.read_text()
    ast.parse(text)
    assert ".to(device)" not in text
    assert 'padding="max_length"' not in text
    assert "logging_steps=1," in text  # TL201 reports it; no fix: per-step logs may be the author's choice
    assert "fp16=True" in text  # unsafe: not applied without --unsafe-fixes
    # comments and layout elsewhere are kept
    assert "# pads every review to 512 tokens" in text
    # the migration rules rename the removed argument in place (target: the installed 5.x)
    assert '    eval_strategy="epoch",  # evaluate every epoch' in text
    before = script.read_bytes()
    second = run_cli("fix", "--apply", str(script), "--gpu", "A100")
    assert second.returncode in (0, 1)
    assert script.read_bytes() == before
    assert "Fixed 0 findings" in second.stderr


def test_fix_without_apply_prints_a_diff_and_writes_nothing(tmp_path):
    work = tmp_path / "bert_imdb"
    shutil.copytree(EXAMPLES / "bert_imdb", work)
    before = (work / "train.py").read_bytes()
    out = run_cli("fix", str(work), "--gpu", "A100", "--unsafe-fixes")
    assert out.returncode == 1
    assert "-model.to(device)" in out.stdout and "+    bf16=True," in out.stdout
    assert (work / "train.py").read_bytes() == before


def test_git_history_case_lr_not_scaled(tmp_path):
    """examples/bert_imdb/git_history.md: committed at batch 8, edited to 32, same lr."""
    original = (EXAMPLES / "bert_imdb" / "train.py").read_text()
    committed = original.replace("per_device_train_batch_size=32", "per_device_train_batch_size=8")
    assert committed != original
    commit_base(tmp_path, {"train.py": committed})
    (tmp_path / "train.py").write_text(original)
    out = run_cli("check", str(tmp_path / "train.py"), "--select", "lr-not-scaled", "--format", "json")
    found = json.loads(out.stdout)
    assert [d["name"] for d in found] == ["lr-not-scaled"], out.stderr
    d = found[0]
    assert d["line"] == _line_of(tmp_path / "train.py", "learning_rate=2e-5")
    assert "about 4e-5" in d["message"] and "from 8" in d["message"] and "to 32" in d["message"]
    assert d["fix"]["edits"][0]["content"] == "4e-5"
    # linear rule via configuration
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint.lr-not-scaled]\nrule = "linear"\n')
    out = run_cli("check", str(tmp_path / "train.py"), "--select", "TL502", "--format", "json")
    assert "about 8e-5" in json.loads(out.stdout)[0]["message"]
    # once the change is committed, the pre-commit view sees nothing new
    git(tmp_path, "add", "train.py")
    git(tmp_path, "commit", "-q", "-m", "raise batch")
    out = run_cli("check", str(tmp_path / "train.py"), "--select", "TL502", "--format", "json")
    assert json.loads(out.stdout) == []
    # but comparing with the first commit still does
    out = run_cli("check", str(tmp_path / "train.py"), "--select", "TL502", "--base", "HEAD~1", "--format", "json")
    assert len(json.loads(out.stdout)) == 1


def test_check_examples_folder_runs_clean_of_internal_errors():
    out = run_cli("check", str(EXAMPLES), "--format", "json", "--gpu", "A100")
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert not [d for d in json.loads(out.stdout) if d["code"] == "TL000"]
