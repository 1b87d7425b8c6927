"""Suppression comments.

* ``# trainlint: disable=TL101,padding-max-length`` or ``# noqa: TL101`` on the line of a
  finding (or on the first line of the statement it starts) silences those codes there; a bare
  ``# noqa`` silences everything on that line.
* ``# trainlint: disable-next=TL201`` on a comment line of its own silences the codes on the
  next code line and its continuation: the lines of a shell command joined with a trailing backslash, or a
  Python/YAML line whose brackets stay open. That is how one command of a multi-line launch
  script is silenced without touching its lines (a comment cannot follow a line continuation).
* ``# trainlint: disable-file=TL201`` anywhere in a file silences the codes in the whole file.
* Files without comments (JSON) use ``per-file-ignores`` in ``[tool.trainlint]``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from trainlint.diagnostics import Diagnostic
from trainlint.lazyre import lazy
from trainlint.rule_index import is_selected

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.workspace import Workspace

_DISABLE = lazy(r"#\s*trainlint:\s*disable=([\w\-, ]+)", re.IGNORECASE)
# compiled on first use (re's cache): a text is searched only when it holds the word
_DISABLE_FILE = r"#\s*trainlint:\s*disable-file=([\w\-, ]+)"
_DISABLE_NEXT = r"^\s*#\s*trainlint:\s*disable-next=([\w\-, ]+)"
_NOQA = lazy(r"#\s*noqa(?::\s*([\w\-, ]+))?", re.IGNORECASE)


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
        self._next_codes: dict[str, dict[int, list[str]]] = {}

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
                for m in re.finditer(_DISABLE_FILE, _source(f), re.IGNORECASE):
                    codes.extend(_codes(m.group(1)))
            self._file_codes[path] = codes
        return self._file_codes[path]

    def _next_level(self, path: str) -> dict[int, list[str]]:
        """Line number -> codes silenced there by a ``disable-next`` comment above."""
        if path not in self._next_codes:
            out: dict[int, list[str]] = {}
            f = self.ws.files.get(path)
            lines = self._lines(path) if f is not None and "disable-next" in f.text.text else None
            for i, text in enumerate(lines or []):
                m = re.match(_DISABLE_NEXT, text, re.IGNORECASE)
                if not m:
                    continue
                codes = _codes(m.group(1))
                for ln in _logical_line_after(lines, i + 1):  # type: ignore[arg-type]
                    out.setdefault(ln, []).extend(codes)
            self._next_codes[path] = out
        return self._next_codes[path]

    def suppressed(self, d: Diagnostic) -> bool:
        file_codes = self._file_level(d.path)
        if file_codes and is_selected(d.code, d.name, file_codes):
            return True
        lines = self._lines(d.path)
        if not lines:
            return False
        nxt = self._next_level(d.path)
        if nxt and is_selected(d.code, d.name, nxt.get(d.line, [])):
            return True
        for ln in {d.line, d.end_line}:
            if not 1 <= ln <= len(lines):
                continue
            text = lines[ln - 1]
            if "#" not in text:
                continue
            # an ASCII line holds a comment only with its word (case aside): most lines with a
            # ``#`` hold neither, and the patterns are not compiled for them
            low = text.lower() if text.isascii() else None
            m = _DISABLE.search(text) if low is None or "trainlint" in low else None
            if m and is_selected(d.code, d.name, _codes(m.group(1))):
                return True
            m = _NOQA.search(text) if low is None or "noqa" in low else None
            if m:
                if m.group(1) is None:
                    return True
                if is_selected(d.code, d.name, _codes(m.group(1))):
                    return True
        return False


def _logical_line_after(lines: list[str], start: int) -> list[int]:
    """1-based numbers of the first code line at or after index ``start`` (skipping blank and
    comment lines) and of its continuation lines (a trailing backslash, or open brackets)."""
    i = start
    while i < len(lines) and (not lines[i].strip() or lines[i].lstrip().startswith("#")):
        i += 1
    out: list[int] = []
    depth = 0
    while i < len(lines):
        text = lines[i]
        out.append(i + 1)
        code = re.sub(r"'[^']*'|\"[^\"]*\"|#.*$", "", text)
        depth += sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
        if not (text.rstrip().endswith("\\") or depth > 0):
            break
        i += 1
    return out
