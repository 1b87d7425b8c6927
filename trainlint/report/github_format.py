"""GitHub Actions workflow commands: one annotation a finding.

``::warning file=train.py,line=14,col=1,endLine=14,endColumn=17,title=TL101 manual-device-placement::message``

In a notebook the annotation points at the line of the notebook's JSON where the cell line is
written, and the message starts with ``cell N, line L:``.

Escaping follows the runner's rules (actions/toolkit ``command.ts``): in the message ``%``,
``\\r`` and ``\\n`` become ``%25``, ``%0D``, ``%0A``; in property values also ``:`` and ``,``
become ``%3A`` and ``%2C``. Severities map to ``error``, ``warning`` and ``notice``.
"""

from __future__ import annotations

from typing import TextIO

from trainlint.diagnostics import Diagnostic
from trainlint.report.cells import NotebookTexts, label, where
from trainlint.report.summary import write_lines

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def annotation(d: Diagnostic, notebooks: NotebookTexts | None = None) -> str:
    line, col, end_line, end_col = d.line, d.column, d.end_line, d.end_column
    if d.cell is not None and notebooks is not None:
        line, col = notebooks.raw(d.path, d.cell, d.line, d.column)
        end_line, end_col = notebooks.raw(d.path, d.cell, d.end_line, d.end_column)
        if (end_line, end_col) <= (line, col):
            end_line, end_col = line, col + 1
    props = [
        ("file", d.path), ("line", str(line)), ("col", str(col)),
        ("endLine", str(end_line)), ("endColumn", str(end_col)),
        ("title", f"{d.code} {d.name}"),
    ]
    message = where(d) + d.message
    if d.fix is not None:
        message += f"\n(fix available: {d.fix.applicability}; run `trainlint fix"
        message += " --unsafe-fixes`)" if d.fix.applicability == "unsafe" else "`)"
    for r in d.related:
        message += f"\n{label(r)}: {r.message}"
    head = ",".join(f"{k}={escape_property(v)}" for k, v in props)
    return f"::{COMMAND[d.severity.value]} {head}::{escape_data(message)}"


def render(diagnostics: list[Diagnostic], texts: dict[str, str], out: TextIO, *, statistics: bool = False,
           color: bool | None = None) -> None:
    notebooks = NotebookTexts(texts)
    write_lines(diagnostics, out, lambda d: annotation(d, notebooks), statistics=statistics)
