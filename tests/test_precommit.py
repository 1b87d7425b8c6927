"""The pre-commit hooks, through the real ``pre-commit try-repo``.

The hook repository is a fresh git repository holding a copy of this checkout (tracked and
untracked, not ignored files), committed; pre-commit builds its own environment from it
(``pip install .``, which fetches the dependencies from PyPI), as it does for users.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO_ROOT, commit_base, git

BAD = (
    "from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments\n"
    "model = AutoModelForSequenceClassification.from_pretrained('bert-base-uncased')\n"
    "model.to('cuda')\n"
    "args = TrainingArguments(output_dir='o', evaluation_strategy='no', save_total_limit=2)\n"
    "Trainer(model=model, args=args)\n"
)


def _pre_commit() -> list[str]:
    exe = Path(sys.executable).parent / "pre-commit"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("pre-commit")
    if found:
        return [found]
    return [sys.executable, "-m", "pre_commit"]


def _hook_repo(dest: Path) -> Path:
    listed = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-co", "--exclude-standard", "-z"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO_ROOT / rel
        if not src.is_file() or rel.startswith(("tests/", "benchmarks/")):
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "hooks")
    return dest


@pytest.mark.slow
def test_pre_commit_try_repo_check_and_fix(tmp_path):
    hooks = _hook_repo(tmp_path / "hooks")
    assert (hooks / ".pre-commit-hooks.yaml").is_file()
    user = tmp_path / "user"
    user.mkdir()
    commit_base(user, {"README.md": "a training project\n"})
    (user / "train.py").write_text(BAD)
    git(user, "add", "train.py")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pc-home"), "PYTHONPATH": "",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}

    check = subprocess.run([*_pre_commit(), "try-repo", str(hooks), "trainlint", "--all-files", "--color", "never"],
                           cwd=user, capture_output=True, text=True, env=env, timeout=900)
    assert check.returncode == 1, check.stdout + check.stderr
    assert "Failed" in check.stdout
    assert "train.py:4:" in check.stdout and "TL601" in check.stdout and "removed-argument" in check.stdout
    assert "TL101" in check.stdout
    assert (user / "train.py").read_text() == BAD  # the check hook never writes

    fix = subprocess.run([*_pre_commit(), "try-repo", str(hooks), "trainlint-fix", "--all-files", "--color", "never"],
                         cwd=user, capture_output=True, text=True, env=env, timeout=900)
    assert fix.returncode == 1, fix.stdout + fix.stderr  # files were modified by the hook
    assert "files were modified by this hook" in fix.stdout
    fixed = (user / "train.py").read_text()
    assert fixed != BAD
    assert "model.to('cuda')" not in fixed and "evaluation_strategy" not in fixed and "eval_strategy='no'" in fixed
    compile(fixed, "train.py", "exec")

    git(user, "add", "train.py")
    again = subprocess.run([*_pre_commit(), "try-repo", str(hooks), "trainlint", "--all-files", "--color", "never"],
                           cwd=user, capture_output=True, text=True, env=env, timeout=900)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Passed" in again.stdout
