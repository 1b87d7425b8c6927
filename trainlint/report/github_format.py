"""GitHub Actions workflow commands: one annotation a finding.

``::warning file=train.py,line=14,col=1,endLine=14,endColumn=17,title=TL101 manual-device-placement::message``

Escaping follows the runner's rules (actions/toolkit ``command.ts``): in the message ``%``,
``\\r`` and ``\\n`` become ``%25``, ``%0D``, ``%0A``; in property values also ``:`` and ``,``
become ``%3A`` and ``%2C``. Severities map to ``error``, ``warning`` and ``notice``.
"""

from __future__ import annotations

from typing import TextIO

from trainlint.diagnostics import Diagnostic
from trainlint.report.summary import write_lines

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def annotation(d: Diagnostic) -> str:
    props = [
        ("file", d.path), ("line", str(d.line)), ("col", str(d.column)),
        ("endLine", str(d.end_line)), ("endColumn", str(d.end_column)),
        ("title", f"{d.code} {d.name}"),
    ]
    message = d.message
    if d.fix is not None:
        message += f"\n(fix available: {d.fix.applicability}; run `trainlint fix"
        message += " --unsafe-fixes`)" if d.fix.applicability == "unsafe" else "`)"
    for r in d.related:
        message += f"\n{r.path}:{r.line}:{r.column}: {r.message}"
    head = ",".join(f"{k}={escape_property(v)}" for k, v in props)
    return f"::{COMMAND[d.severity.value]} {head}::{escape_data(message)}"


def render(diagnostics: list[Diagnostic], texts: dict[str, str], out: TextIO, *, statistics: bool = False,
           color: bool | None = None) -> None:
    write_lines(diagnostics, out, annotation, statistics=statistics)
