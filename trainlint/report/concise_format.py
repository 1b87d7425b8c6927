"""``path:line:col: CODE [name] message``, one finding a line (grep- and editor-friendly);
``path:cell N:line:col: ...`` in a notebook."""

from __future__ import annotations

from typing import TextIO

from trainlint.diagnostics import Diagnostic
from trainlint.report.cells import label
from trainlint.report.summary import write_lines


def line_of(d: Diagnostic) -> str:
    return f"{label(d)}: {d.code} [{d.name}] {d.message}"


def render(diagnostics: list[Diagnostic], texts: dict[str, str], out: TextIO, *, statistics: bool = False,
           color: bool | None = None) -> None:
    write_lines(diagnostics, out, line_of, statistics=statistics)
