"""Regular expressions compiled on first use.

Compiling a pattern costs 0.1-0.5 ms (more with ``re.IGNORECASE`` or non-ASCII classes); a
module that compiles its patterns when it is imported makes every run pay for the ones only
some paths use (a one-file check compiled 19 patterns it never used, ~4 ms). ``lazy(pattern)``
stands for ``re.compile(pattern)``: the first use of any attribute compiles it, and from then
on the methods are the compiled pattern's own (bound on the instance, so a later call costs what
a call on the compiled pattern costs)."""

from __future__ import annotations

import re
from typing import Any

_METHODS = ("search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split", "scanner")


class lazy:  # noqa: N801 - it stands for ``re.compile``
    """``re.compile(pattern, flags)``, compiled when first used."""

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self._source = (pattern, flags)

    def compiled(self) -> re.Pattern:
        found = self.__dict__.get("_compiled")
        if found is None:
            found = self._compiled = re.compile(*self._source)
            for name in _METHODS:
                setattr(self, name, getattr(found, name))
        return found

    def __getattr__(self, name: str) -> Any:  # only for what is not set yet
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        return f"lazy({self._source[0]!r}, {self._source[1]!r})"
