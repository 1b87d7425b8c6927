"""Reading a file as it was at a git revision (for rules that compare with ``--base``)."""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache


@lru_cache(maxsize=256)
def read_at_revision(path: str, rev: str) -> str | None:
    """The text of ``path`` at ``rev`` (``HEAD`` by default: what a pre-commit hook compares
    with), or None when the folder is not a git work tree, the file is not tracked at that
    revision, or git is missing."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    name = os.path.basename(path)
    if not _in_git_tree(folder):
        return None  # no repository: skip starting git for every file
    try:
        out = subprocess.run(
            ["git", "-C", folder, "show", f"{rev}:./{name}"],
            capture_output=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    try:
        return out.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None


@lru_cache(maxsize=1024)
def _in_git_tree(folder: str) -> bool:
    """Whether ``folder`` or a parent holds ``.git`` (or ``GIT_DIR`` is set)."""
    if os.environ.get("GIT_DIR"):
        return True
    parent = os.path.dirname(folder)
    if os.path.exists(os.path.join(folder, ".git")):
        return True
    return parent != folder and _in_git_tree(parent)


def base_problem(paths: list[str], rev: str) -> str | None:
    """Why ``--base rev`` cannot be used for ``paths`` (not a git work tree, or a revision the
    repository lacks), else None. A silent fallback would disable lr-not-scaled unnoticed."""
    folder = os.path.abspath(paths[0] if paths else ".")
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder) or "."
    if not _in_git_tree(folder):
        return f"--base {rev}: {folder} is not in a git work tree (lr-not-scaled compares with a git revision)"
    try:
        out = subprocess.run(["git", "-C", folder, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                             capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        return f"--base {rev}: git could not be run ({e})"
    if out.returncode != 0:
        return f"--base {rev}: no such revision in the repository at {folder} (try a branch, tag or commit SHA)"
    return None
