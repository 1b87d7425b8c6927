"""Suppression comments.

* ``# trainlint: disable=TL101,padding-max-length`` or ``# noqa: TL101`` on the line of a
  finding (or on the first line of the statement it starts) silences those codes there; a bare
  ``# noqa`` silences everything on that line.
* ``# trainlint: disable-file=TL201`` anywhere in a file silences the codes in the whole file.
* Files without comments (JSON) use ``per-file-ignores`` in ``[tool.trainlint]``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from trainlint.diagnostics import Diagnostic
from trainlint.rule_index import is_selected

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.workspace import Workspace

_DISABLE = re.compile(r"#\s*trainlint:\s*disable=([\w\-, ]+)", re.IGNORECASE)
_DISABLE_FILE = re.compile(r"#\s*trainlint:\s*disable-file=([\w\-, ]+)", re.IGNORECASE)
_NOQA = re.compile(r"#\s*noqa(?::\s*([\w\-, ]+))?", re.IGNORECASE)


def _codes(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


def _source(f) -> str:
    """The text comments are read from: a notebook's code cells on its virtual lines (the
    positions findings have until ``to_cells``), else the file's text."""
    display = getattr(f.doc, "display", None) if f.kind == "notebook" else None
    return display if isinstance(display, str) else f.text.text


class Suppressions:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._file_codes: dict[str, list[str]] = {}
        self._line_cache: dict[str, list[str] | None] = {}

    def _lines(self, path: str) -> list[str] | None:
        if path not in self._line_cache:  # once per file: a file can have thousands of findings
            f = self.ws.files.get(path)
            self._line_cache[path] = None if f is None else _source(f).splitlines()
        return self._line_cache[path]

    def _file_level(self, path: str) -> list[str]:
        if path not in self._file_codes:
            codes: list[str] = []
            f = self.ws.files.get(path)
            if f is not None and "disable-file" in _source(f):
                for m in _DISABLE_FILE.finditer(_source(f)):
                    codes.extend(_codes(m.group(1)))
            self._file_codes[path] = codes
        return self._file_codes[path]

    def suppressed(self, d: Diagnostic) -> bool:
        file_codes = self._file_level(d.path)
        if file_codes and is_selected(d.code, d.name, file_codes):
            return True
        lines = self._lines(d.path)
        if not lines:
            return False
        for ln in {d.line, d.end_line}:
            if not 1 <= ln <= len(lines):
                continue
            text = lines[ln - 1]
            if "#" not in text:
                continue
            m = _DISABLE.search(text)
            if m and is_selected(d.code, d.name, _codes(m.group(1))):
                return True
            m = _NOQA.search(text)
            if m:
                if m.group(1) is None:
                    return True
                if is_selected(d.code, d.name, _codes(m.group(1))):
                    return True
        return False
