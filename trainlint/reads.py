"""The files a check reads from outside its workspace, recorded so that a cached result can
depend on them.

Most of what a setup's findings depend on is in the workspace (the scripts, the configs that
linking pulls in), whose texts are in the cache keys. A few rules and knowledge functions
look further: a local model folder's ``config.json``, the ``requirements*.txt``/``pyproject.toml``/
``setup.py`` of the folders above a script (the versions a project supports), the notebooks
and shell scripts beside it that install a version themselves, a DeepSpeed JSON a script
names. Each such place, found or not, is passed to :func:`note`; a pattern looked up in a folder
(``requirements*.txt``) to :func:`note_glob`, a folder's existence to :func:`note_isdir`.
:func:`recording` collects the notes of one check (``checking.check_group``), and they
become the result's dependencies: the cache hashes a file's bytes, a folder's listing, or
records the place as absent, and for a virtual dependency (:func:`virtual`) the names that
match or whether the folder is there (``trainlint.cache.dep_digest``).

A function cached in memory across checks of one process uses :func:`memo` instead of
``functools.lru_cache``: a hit replays the notes the first call made, so every check that
uses the cached answer records what it depends on.

Stage 0: imports nothing of trainlint.
"""

from __future__ import annotations

import functools
import os
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterator, TypeVar

_stack: list[set[str]] = []

F = TypeVar("F", bound=Callable[..., Any])


def note(path: Any) -> None:
    """Record that the result depends on ``path`` (a file read, a place looked at and found
    empty, or a folder whose listing was read)."""
    if _stack:
        p = os.fspath(path)
        for seen in _stack:
            seen.add(p)


VIRTUAL = "\0"  # a dependency that is no path: "\0kind\0arg\0arg..."


def virtual(kind: str, *args: str) -> str:
    """A dependency that is not one file: ``kind`` names how the cache computes its digest
    (``trainlint.cache.dep_digest``), from ``args``."""
    return VIRTUAL + VIRTUAL.join((kind, *args))


def parse_virtual(dep: str) -> tuple[str, list[str]] | None:
    if not dep.startswith(VIRTUAL):
        return None
    kind, *args = dep[1:].split(VIRTUAL)
    return kind, args


GLOB = "glob"  # the names in a folder that match a pattern (``rglob`` with "**/" in front)
IS_DIR = "isdir"  # whether a folder exists
SAME_NAME = "same-name"  # the repository's files of a name (``sources.files.same_name``)
PACKAGE_READS = "package-reads"  # whether a package's other modules read a field (``sources.files.package_reads``)


def note_glob(folder: Any, pattern: str) -> None:
    """Record that the result depends on which files in ``folder`` match ``pattern`` (a
    requirements file that appears), not on the rest of the folder."""
    if _stack:
        note(virtual(GLOB, os.fspath(folder), pattern))


def note_isdir(folder: Any) -> None:
    if _stack:
        note(virtual(IS_DIR, os.fspath(folder)))


def active() -> bool:
    return bool(_stack)


@contextmanager
def recording() -> Iterator[set[str]]:
    """Collect the notes made inside the block (nested blocks also report to the outer ones)."""
    seen: set[str] = set()
    _stack.append(seen)
    try:
        yield seen
    finally:  # by identity (equal sets are different recordings)
        for i in range(len(_stack) - 1, -1, -1):
            if _stack[i] is seen:
                del _stack[i]
                break


def replay(notes: frozenset[str] | set[str]) -> None:
    """Note again what an answer kept from an earlier check read."""
    for seen in _stack:
        seen.update(notes)


class _Scopes(threading.local):
    def __init__(self) -> None:
        self.open: list[dict[Any, tuple[Any, frozenset[str]]]] = []


_scopes = _Scopes()  # per thread: a language server's checks do not share answers


@contextmanager
def one_check() -> Iterator[None]:
    """A scope in which :func:`kept` answers are kept: one check of a workspace, during which
    no file changes (``checking.run_rules``)."""
    _scopes.open.append({})
    try:
        yield
    finally:
        _scopes.open.pop()


def kept(key: Any, compute: Callable[[], Any]) -> Any:
    """``compute()``, once per ``key`` within the innermost :func:`one_check` (every setup of
    the workspace asks the target of a package for its folder, what a project allows for a
    file); a hit notes again what the first call read. Outside a scope, computed each time."""
    if not _scopes.open:
        return compute()
    answers = _scopes.open[-1]
    hit = answers.get(key)
    if hit is None:
        answers[key] = hit = _recorded(compute)
    elif hit[1] and _stack:
        replay(hit[1])
    return hit[0]


# The files a run's split already read (``partition.Plan.read``: path -> ``TextFile``), for
# whatever reads one of them again during the run's tasks (a workspace; the install lines of
# ``knowledge.versions``): each file is read once per run. Not for a path of the run's overlay
# (an editor's buffer, a fix in memory: its reader takes the overlay). Per thread and context
# (a language server checks in several).
_ALREADY_READ: ContextVar[tuple[dict[str, Any], Any] | None] = ContextVar("trainlint_already_read", default=None)


@contextmanager
def files_already_read(files: dict[str, Any], overlay: Any = ()) -> Iterator[None]:
    """While in it, :func:`already_read` answers from ``files`` (what ``read_text`` gave
    earlier in the run), except for the paths in ``overlay``."""
    token = _ALREADY_READ.set((files, overlay))
    try:
        yield
    finally:
        _ALREADY_READ.reset(token)


def already_read(path: str) -> Any | None:
    """What the run read of ``path`` (a ``TextFile``), or None: not read, in the overlay, or
    outside :func:`files_already_read`."""
    current = _ALREADY_READ.get()
    if current is None or path in current[1]:
        return None
    return current[0].get(path)


def _recorded(compute: Callable[[], Any]) -> tuple[Any, frozenset[str]]:
    """``compute()`` with the notes it made (what a kept answer read)."""
    with recording() as seen:
        value = compute()
    return value, frozenset(seen)


def memo(maxsize: int = 256) -> Callable[[F], F]:
    """``functools.lru_cache`` for functions that :func:`note` what they read: the answer is
    kept with its notes, and a hit notes them again. Arguments must be hashable."""

    def deco(fn: F) -> F:
        cache: dict[tuple, tuple[Any, frozenset[str]]] = {}

        @functools.wraps(fn)
        def wrapper(*args: Any) -> Any:
            hit = cache.get(args)
            if hit is None:
                hit = _recorded(lambda: fn(*args))
                if len(cache) >= maxsize:
                    cache.pop(next(iter(cache)))
                cache[args] = hit
            elif _stack and hit[1]:
                replay(hit[1])
            return hit[0]

        wrapper.cache_clear = cache.clear  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return deco
