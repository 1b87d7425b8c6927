"""Edits applied to one text: line starts, offsets, non-overlapping replacements.

Pure text work with no conflict handling or validation (that is ``trainlint.fixing.apply``), so
the rules' own edit builders (``trainlint.fixing.python_edits``) can use it.
"""

from __future__ import annotations

import re

from trainlint.diagnostics import Edit

_LINE_END = re.compile(r"\r\n|\r|\n")


def _line_starts(text: str) -> list[int]:
    """Offsets where each line starts (``\\n``, ``\\r\\n`` and a lone ``\\r`` end a line)."""
    starts = [0]
    starts.extend(m.end() for m in _LINE_END.finditer(text))
    return starts


def offset(starts: list[int], text_len: int, line: int, column: int) -> int:
    if line - 1 >= len(starts):
        return text_len
    return min(starts[line - 1] + column - 1, text_len)


def apply_edits(text: str, edits: list[Edit], starts: list[int] | None = None) -> str:
    """Apply non-overlapping edits (all for one file) to ``text``."""
    starts = starts if starts is not None else _line_starts(text)
    spans = sorted(
        ((offset(starts, len(text), e.line, e.column), offset(starts, len(text), e.end_line, e.end_column), e.content)
         for e in edits),
        key=lambda t: (t[0], t[1]),
    )
    out = []
    pos = 0
    for a, b, content in spans:
        if a < pos:
            raise ValueError("overlapping edits")
        out.append(text[pos:a])
        out.append(content)
        pos = max(b, a)
    out.append(text[pos:])
    return "".join(out)
