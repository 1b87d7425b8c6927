"""`check` and `fix` read code, they never import or run it: no hook in the checked folder
(sitecustomize, usercustomize, conftest.py, setup.py, a .pth file, a package shadowing
transformers, the script itself) runs, whatever the working folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import run_cli, settings_for

from trainlint.engine import fix_outcome, lint

PAYLOAD = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n"


def _trap_folder(root: Path) -> Path:
    marker = root / "MARKER"
    payload = PAYLOAD.format(marker=str(marker))
    files = {
        "train.py": payload + "from transformers import TrainingArguments\n"
                              "args = TrainingArguments(output_dir='o', logging_steps=1, fp16=True)\n",
        "sitecustomize.py": payload,
        "usercustomize.py": payload,
        "conftest.py": payload,
        "setup.py": payload + "from setuptools import setup\nsetup(name='x')\n",
        "trainlint_evil.pth": payload,
        "transformers/__init__.py": payload + "TrainingArguments = None\n",
        "click.py": payload,
        "pkg/__init__.py": payload,
        "pkg/__main__.py": payload,
        "run.sh": "python -c \"" + payload.strip().replace('"', '\\"') + "\"\npython train.py --output_dir o\n",
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return marker


@pytest.mark.parametrize("command", [["check"], ["fix"], ["fix", "--apply", "--unsafe-fixes"]])
def test_cli_runs_nothing_from_the_checked_folder(tmp_path, command):
    marker = _trap_folder(tmp_path)
    out = run_cli(*command, ".", "--gpu", "A100", cwd=tmp_path)
    assert out.returncode in (0, 1), out.stderr
    assert "Traceback" not in out.stderr
    assert not marker.exists(), "user code ran"
    if command == ["check"]:
        assert "TL201" in out.stdout  # it did read the script
    # named explicitly, from another working folder
    out = run_cli(*command, str(tmp_path / "train.py"), str(tmp_path / "setup.py"), "--gpu", "A100")
    assert out.returncode in (0, 1), out.stderr
    assert not marker.exists(), "user code ran"


def test_in_process_lint_and_fix_import_nothing_from_the_folder(tmp_path, monkeypatch):
    marker = _trap_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # even when the folder is importable
    before = set(sys.modules)
    result = lint([tmp_path], settings_for(tmp_path))
    assert any(d.code == "TL201" for d in result.diagnostics)
    fix_outcome([tmp_path], settings_for(tmp_path, options={"gpu": "A100"}), unsafe=True)
    new = set(sys.modules) - before
    assert not {"train", "conftest", "setup", "sitecustomize", "usercustomize", "pkg"} & new
    assert not any(m == "transformers" or m.startswith("transformers.") for m in new)
    assert not marker.exists()
