"""Shared test helpers: run trainlint in-process on files written to a temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from trainlint.config import Settings, load_settings
from trainlint.engine import fix_outcome, lint


def write_files(root: Path, files: dict[str, str]) -> list[Path]:
    paths = []
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        paths.append(p)
    return paths


def git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


def commit_base(root: Path, files: dict[str, str]) -> None:
    git(root, "init", "-q")
    write_files(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")


def settings_for(root: Path, select: list[str] | None = None, options: dict | None = None,
                 rule_options: dict | None = None) -> Settings:
    s = load_settings(root, {**(options or {}), **({"select": select} if select else {})})
    if rule_options:
        s = s.model_copy(update={"rule_options": rule_options})
    return s


def lint_folder(root: Path, **kw):
    return lint([root], settings_for(root, **kw))


def fix_folder(root: Path, unsafe: bool = False, **kw):
    return fix_outcome([root], settings_for(root, **kw), unsafe=unsafe)


def trainlint_cmd() -> str:
    """The installed ``trainlint`` console script (the one next to this interpreter)."""
    import shutil
    import sys

    candidate = Path(sys.executable).parent / "trainlint"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("trainlint")
    assert found, "the trainlint command is not installed (pip install -e .)"
    return found


REPO_ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, cwd: Path | None = None, input: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the installed ``trainlint`` command on the code of this checkout."""
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), full_env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run([trainlint_cmd(), *args], capture_output=True, text=True, cwd=cwd, input=input,
                          env=full_env)


def probe_one_file_check(path: Path, cwd: Path, report: str) -> dict[str, str]:
    """Run ``trainlint check PATH --no-cache`` in a fresh interpreter, then ``report`` (Python
    code printing ``KEY=value`` lines to stderr); the values by key. For what a check imports."""
    probe = (
        "import sys, io, contextlib\n"
        f"sys.argv = ['trainlint', 'check', {str(path)!r}, '--no-cache']\n"
        "from trainlint.cli import main\n"
        "try:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        main()\n"
        "except SystemExit:\n"
        "    pass\n" + report
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd,
                         env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})
    found = dict(line.split("=", 1) for line in out.stderr.splitlines()
                 if "=" in line and line.split("=", 1)[0].isupper())
    assert found, out.stderr
    return found

