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

import os
from typing import TextIO

from trainlint.diagnostics import Diagnostic
from trainlint.report.cells import NotebookTexts, label, short
from trainlint.report.summary import statistics_rows

# Written directly (SGR escape codes when coloured): a terminal library's markup parsing and
# rendering per line cost ~0.8 ms a finding, 4x the concise format.
_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "blue": "34", "cyan": "36"}
_SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold cyan"}


class _Styler:
    def __init__(self, color: bool) -> None:
        self.color = color
        self._codes: dict[str, str] = {}

    def __call__(self, style: str, text: str) -> str:
        if not self.color or not text:
            return text
        code = self._codes.get(style)
        if code is None:
            code = self._codes[style] = "\x1b[" + ";".join(_SGR[s] for s in style.split()) + "m"
        return f"{code}{text}\x1b[0m"


def _use_color(out: TextIO, color: bool | None) -> bool:
    if color is not None:
        return color
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def _excerpt(d: Diagnostic, lines: list[str], st: _Styler) -> list[str]:
    if not lines or not 1 <= d.line <= len(lines):
        return []
    width = len(str(d.end_line))
    out = [st("blue", f"{' ' * width} |")]
    last = min(d.end_line, d.line + 3, len(lines))
    for ln in range(d.line, last + 1):
        text = lines[ln - 1].rstrip("\r\n").expandtabs(4)
        out.append(f"{st('blue', f'{ln:>{width}} |')} {text}")
        if ln == d.line:
            start = d.column - 1
            end = d.end_column - 1 if d.end_line == d.line else len(text)
            carets = "^" * max(1, end - start)
            out.append(f"{st('blue', f'{chr(32) * width} |')} {' ' * start}{st(_SEVERITY_STYLE[d.severity.value], carets)}")
    return out


def render(diagnostics: list[Diagnostic], texts: dict[str, str], out: TextIO, *, statistics: bool = False,
           color: bool | None = None) -> None:
    st = _Styler(_use_color(out, color))
    write = out.write
    if statistics:
        for code, name, count, fixable in statistics_rows(diagnostics):
            write(f"{count:5d}  {st('bold', code)}  [{'*' if fixable else ' '}] {name}\n")
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
        parts = [f"{st('bold', label(d) + ':')} {st(style, d.code)}{mark} "
                 f"{st('bold', d.name)} {st('dim', f'({d.severity.value})')}",
                 f"  {d.message}"]
        parts.extend("  " + line for line in _excerpt(d, lines, st))
        if d.fix is not None:
            parts.append(f"  {st('green', f'= fix ({d.fix.applicability}):')} {d.fix.message or 'available'}")
        for r in d.related:
            parts.append(f"  {st('blue', '= note:')} {short(r)}: {r.message}")
        parts.append("")
        write("\n".join(parts) + "\n")
    n = len(diagnostics)
    if n:
        safe = sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability == "safe")
        unsafe = sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability == "unsafe")
        write(f"Found {n} finding{'s' if n != 1 else ''}.\n")
        if safe:
            write(f"[*] {safe} fixable with `trainlint fix --apply`.\n")
        if unsafe:
            write(f"[-] {unsafe} more fixable with `trainlint fix --apply --unsafe-fixes`.\n")
    else:
        write("All checks passed.\n")
