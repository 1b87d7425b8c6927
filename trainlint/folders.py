"""Where the paths written in a file may start, looked up once per folder while setups are built.

``workspace.reference_folders`` and ``workspace.repository_root`` look for a repository root
above a file (a ``stat`` of ``.git``, ``pyproject.toml`` and ``setup.py`` in each folder up)
and depend on the file's folder alone (and the working directory, which a build does not
change). Linking asks them for every script path of a launch line, every module an import may
start from and every args file beside a script: the same few folders again and again (peft:
~450 asks over ~80 folders). While ``linking.link_setups`` runs (``kept``), the answers are
kept per folder; outside it each ask looks again, as before (a later run, the server, may see
another tree)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

_KEPT: ContextVar[dict | None] = ContextVar("trainlint_link_folders", default=None)


@contextmanager
def kept() -> Iterator[None]:
    """Keep the answers below per folder until the block ends (nested blocks share them)."""
    if _KEPT.get() is not None:
        yield
        return
    token = _KEPT.set({})
    try:
        yield
    finally:
        _KEPT.reset(token)


def reference_folders(base_file: str) -> list[str]:
    """``workspace.reference_folders`` of ``base_file`` (a new list each time: callers may
    change it)."""
    from trainlint.workspace import reference_folders as look

    memo = _KEPT.get()
    if memo is None:
        return look(base_file)
    key = ("folders", os.path.dirname(base_file))
    found = memo.get(key)
    if found is None:
        found = memo[key] = tuple(look(base_file))
    return list(found)


def repository_root(base_file: str) -> str | None:
    """``workspace.repository_root`` of ``base_file``."""
    from trainlint.workspace import repository_root as look

    memo = _KEPT.get()
    if memo is None:
        return look(base_file)
    key = ("root", os.path.dirname(base_file))
    if key not in memo:
        memo[key] = look(base_file)
    return memo[key]
