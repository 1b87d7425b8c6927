"""The files a check reads from outside its workspace, recorded so that a cached result can
depend on them.

Most of what a setup's findings depend on is in the workspace (the scripts, the configs that
linking pulls in), whose texts are in the cache keys. A few rules and knowledge functions
look further: a local model folder's ``config.json``, the ``requirements*.txt``/``pyproject.toml``/
``setup.py`` of the folders above a script (the versions a project supports), the notebooks
and shell scripts beside it that install a version themselves, a DeepSpeed JSON a script
names. Each such place, found or not, is passed to :func:`note`; a folder whose listing
matters (a ``requirements*.txt`` that may appear) is noted as the folder itself.
:func:`recording` collects the notes of one check (``checking.check_group``), and they
become the result's dependencies: the cache hashes a file's bytes, a folder's listing, or
records the place as absent (``trainlint.cache.dep_digest``).

A function cached in memory across checks of one process uses :func:`memo` instead of
``functools.lru_cache``: a hit replays the notes the first call made, so every check that
uses the cached answer records what it depends on.

Stage 0: imports nothing of trainlint.
"""

from __future__ import annotations

import functools
import os
from contextlib import contextmanager
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


def memo(maxsize: int = 256) -> Callable[[F], F]:
    """``functools.lru_cache`` for functions that :func:`note` what they read: the answer is
    kept with its notes, and a hit notes them again. Arguments must be hashable."""

    def deco(fn: F) -> F:
        cache: dict[tuple, tuple[Any, frozenset[str]]] = {}

        @functools.wraps(fn)
        def wrapper(*args: Any) -> Any:
            hit = cache.get(args)
            if hit is None:
                with recording() as seen:
                    result = fn(*args)
                hit = (result, frozenset(seen))
                if len(cache) >= maxsize:
                    cache.pop(next(iter(cache)))
                cache[args] = hit
            elif _stack and hit[1]:
                for seen in _stack:
                    seen.update(hit[1])
            return hit[0]

        wrapper.cache_clear = cache.clear  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return deco
