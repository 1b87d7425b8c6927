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
