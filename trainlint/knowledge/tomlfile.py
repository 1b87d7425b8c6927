"""Reading a TOML file (``pyproject.toml``) once per run.

Settings discovery, the version pins and the ``[tool.trainlint]`` keys each read the project's
``pyproject.toml``; a one-file check used to parse it a dozen times. ``load`` parses a file once
for as long as its size and modification time stay the same (the language server sees edits).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

TOMLDecodeError = tomllib.TOMLDecodeError
_PARSED: dict[str, tuple[tuple[int, int], dict[str, Any]]] = {}


def load(path: Path | str) -> dict[str, Any]:
    """The parsed document (not to be changed by the caller); raises what reading and
    ``tomllib.loads`` raise (``OSError``, ``UnicodeDecodeError``, ``TOMLDecodeError``)."""
    key = os.fspath(path)
    st = os.stat(key)
    stamp = (st.st_mtime_ns, st.st_size)
    found = _PARSED.get(key)
    if found is not None and found[0] == stamp:
        return found[1]
    with open(key, encoding="utf-8") as f:
        data = tomllib.loads(f.read())
    if len(_PARSED) > 64:
        _PARSED.clear()
    _PARSED[key] = (stamp, data)
    return data
