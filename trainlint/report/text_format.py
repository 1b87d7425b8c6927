"""The default terminal output: each finding with its source lines, like ruff's full format.

```
examples/bert_imdb/train.py:14:1: TL101 [*] manual-device-placement
   `model.to(device)` moves the model by hand before Trainer places it: ...
    |
 14 | model.to(device)  # "make sure" the model is on the GPU
    | ^^^^^^^^^^^^^^^^
    = fix (safe): remove the device move
    = note: examples/bert_imdb/train.py:42: the model is passed to Trainer here
```
"""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.markup import escape

from trainlint.diagnostics import Diagnostic
from trainlint.report.cells import NotebookTexts, label, short
from trainlint.report.summary import statistics_rows

_SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}


def _excerpt(d: Diagnostic, lines: list[str]) -> list[str]:
    if not lines or not 1 <= d.line <= len(lines):
        return []
    width = len(str(d.end_line))
    out = [f"[blue]{' ' * width} |[/]"]
    last = min(d.end_line, d.line + 3, len(lines))
    for ln in range(d.line, last + 1):
        text = lines[ln - 1].rstrip("\r\n").expandtabs(4)
        out.append(f"[blue]{ln:>{width}} |[/] {escape(text)}")
        if ln == d.line:
            start = d.column - 1
            end = d.end_column - 1 if d.end_line == d.line else len(text)
            carets = "^" * max(1, end - start)
            out.append(f"[blue]{' ' * width} |[/] {' ' * start}[{_SEVERITY_STYLE[d.severity.value]}]{carets}[/]")
    return out


def render(diagnostics: list[Diagnostic], texts: dict[str, str], out: TextIO, *, statistics: bool = False,
           color: bool | None = None) -> None:
    console = Console(file=out, force_terminal=color, no_color=color is False, highlight=False, soft_wrap=True)
    if statistics:
        for code, name, count, fixable in statistics_rows(diagnostics):
            console.print(f"{count:5d}  [bold]{code}[/]  [{'*' if fixable else ' '}] {name}")
        return
    cache: dict[str, list[str]] = {}
    notebooks = NotebookTexts(texts)
    for d in diagnostics:
        if d.cell is not None:  # a notebook: the lines of the finding's cell
            lines = notebooks.cell_lines(d.path, d.cell)
        else:
            if d.path not in cache:
                cache[d.path] = texts.get(d.path, "").splitlines()
            lines = cache[d.path]
        mark = " [*]" if d.fix is not None and d.fix.applicability == "safe" else \
            (" [-]" if d.fix is not None else "")
        style = _SEVERITY_STYLE[d.severity.value]
        console.print(f"[bold]{escape(label(d))}:[/] [{style}]{d.code}[/]{escape(mark)} "
                      f"[bold]{d.name}[/] [dim]({d.severity.value})[/]")
        console.print(f"  {escape(d.message)}")
        for line in _excerpt(d, lines):
            console.print("  " + line)
        if d.fix is not None:
            console.print(f"  [green]= fix ({d.fix.applicability}):[/] {escape(d.fix.message or 'available')}")
        for r in d.related:
            console.print(f"  [blue]= note:[/] {escape(short(r))}: {escape(r.message)}")
        console.print()
    n = len(diagnostics)
    if n:
        safe = sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability == "safe")
        unsafe = sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability == "unsafe")
        console.print(f"Found {n} finding{'s' if n != 1 else ''}.")
        if safe:
            console.print(f"[*] {safe} fixable with `trainlint fix --apply`.")
        if unsafe:
            console.print(f"[-] {unsafe} more fixable with `trainlint fix --apply --unsafe-fixes`.")
    else:
        console.print("All checks passed.")
