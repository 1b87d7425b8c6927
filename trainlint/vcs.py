"""Reading files as they were at a git revision (for rules that compare with ``--base``, and
for the findings cache's key).

One ``git cat-file --batch`` process per repository (and per process of the run) answers every
question: a run over a repository starts git once, not once per file.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import threading
from functools import lru_cache
from typing import IO, Any


@lru_cache(maxsize=256)
def read_at_revision(path: str, rev: str) -> str | None:
    """The text of ``path`` at ``rev`` (``HEAD`` by default: what a pre-commit hook compares
    with), or None when the folder is not a git work tree, the file is not tracked at that
    revision, or git is missing."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if os.environ.get("GIT_DIR"):
        return _show(folder, os.path.basename(path), rev)
    root = repository_root(folder)
    if root is None:
        return None  # no repository: skip starting git for every file
    rel = os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
    batch = _batch(root)
    data = batch.get(f"{rev}:{rel}", "blob") if batch is not None else None
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def commit_at(folder: str, rev: str) -> str | None:
    """The commit ``rev`` names in the repository holding ``folder``, or None."""
    root = repository_root(os.path.abspath(folder))
    batch = _batch(root) if root is not None else None
    if batch is None:
        return None
    return batch.object_id(f"{rev}^{{commit}}")


def _show(folder: str, name: str, rev: str) -> str | None:
    """``git show`` of one file (when ``GIT_DIR`` says where the repository is)."""
    try:
        out = subprocess.run(["git", "-C", folder, "show", f"{rev}:./{name}"],
                             capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    try:
        return out.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None


@lru_cache(maxsize=1024)
def repository_root(folder: str) -> str | None:
    """The nearest folder at or above ``folder`` that holds ``.git``."""
    if os.path.exists(os.path.join(folder, ".git")):
        return folder
    parent = os.path.dirname(folder)
    return None if parent == folder else repository_root(parent)


def _in_git_tree(folder: str) -> bool:
    """Whether ``folder`` or a parent holds ``.git`` (or ``GIT_DIR`` is set)."""
    return bool(os.environ.get("GIT_DIR")) or repository_root(folder) is not None


class _Batch:
    """A ``git cat-file --batch`` process for one repository."""

    def __init__(self, root: str) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            ["git", "-C", root, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL)

    def _ask(self, spec: str) -> tuple[str, str, bytes] | None:
        if self.proc is None or "\n" in spec:
            return None
        with self.lock:
            try:
                stdin: IO[bytes] = self.proc.stdin  # type: ignore[assignment]
                stdout: IO[bytes] = self.proc.stdout  # type: ignore[assignment]
                stdin.write(spec.encode("utf-8", "surrogateescape") + b"\n")
                stdin.flush()
                header = stdout.readline().split()
                if len(header) != 3 or not header[2].isdigit():
                    return None  # "<spec> missing", "ambiguous", or git went away
                data = stdout.read(int(header[2]))
                stdout.read(1)
                return header[0].decode(), header[1].decode(), data
            except (OSError, ValueError):
                self.close()
                return None

    def get(self, spec: str, kind: str) -> bytes | None:
        found = self._ask(spec)
        return found[2] if found is not None and found[1] == kind else None

    def object_id(self, spec: str) -> str | None:
        found = self._ask(spec)
        return found[0] if found is not None else None

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                proc.stdin.close()  # type: ignore[union-attr]
                proc.wait(timeout=5)
            except (OSError, subprocess.SubprocessError):
                proc.kill()


_BATCHES: dict[tuple[int, str], Any] = {}


def _batch(root: str) -> _Batch | None:
    key = (os.getpid(), root)  # a forked worker starts its own: pipes are not shared
    if key not in _BATCHES:
        try:
            _BATCHES[key] = _Batch(root)
        except OSError:  # no git
            _BATCHES[key] = None
    return _BATCHES[key]


@atexit.register
def close_all() -> None:
    """End this process's git processes and forget what they read (a run calls it at its
    end, so that the next run sees new commits)."""
    for key, batch in list(_BATCHES.items()):
        if key[0] == os.getpid():
            if batch is not None:
                batch.close()
            del _BATCHES[key]
    read_at_revision.cache_clear()
