"""Fixes in notebooks: edits of cell sources written back into the notebook's JSON.

A finding's fix in a notebook has edits in *cell* coordinates (``Edit.cell``, lines within the
cell). ``json_fixes`` turns them into edits of the JSON text that replace only the string
literals of the lines they touch: the notebook's indentation, key order, outputs, execution
counts, ids and metadata stay byte for byte, and a ``source`` written as a list of lines stays
a list of lines (one string per line, as nbformat writes it). ``check_notebook`` is the
re-parse before writing: valid JSON, nbformat 4, and every code cell's Python (with its
IPython syntax) still parses. ``cell_diff`` is the diff a person reads: cell sources, not
escaped JSON.
"""

from __future__ import annotations

import difflib
import json
from trainlint.record import replace
from typing import Any

from trainlint.diagnostics import Diagnostic, Edit


def _line_offsets(text: str) -> list[int]:
    starts = [0]
    i = text.find("\n")
    while i != -1:
        starts.append(i + 1)
        i = text.find("\n", i + 1)
    return starts


def _offset(starts: list[int], n: int, line: int, column: int) -> int:
    if line - 1 >= len(starts):
        return n
    return min(starts[line - 1] + column - 1, n)


def _encoder(text: str):
    ascii_only = text.isascii() and "\\u" in text  # written with ensure_ascii=True

    def enc(s: str) -> str:
        return json.dumps(s, ensure_ascii=ascii_only)

    return enc


def _split_lines(s: str) -> list[str]:
    return s.splitlines(keepends=True) if "\r" in s or "\x0b" in s else _keep_nl(s)


def _keep_nl(s: str) -> list[str]:
    out, start = [], 0
    i = s.find("\n")
    while i != -1:
        out.append(s[start:i + 1])
        start = i + 1
        i = s.find("\n", start)
    if start < len(s):
        out.append(s[start:])
    return out


def cell_json_edit(text: str, span: Any, edits: list[Edit], path: str, enc) -> Edit:
    """One JSON-text edit doing ``edits`` (cell coordinates, one cell) on the cell's source."""
    from trainlint.fixing.apply import apply_edits
    from trainlint.sources.errors import LineIndex

    strings = span.strings
    src = "".join(s for _, _, s in strings)
    starts = _line_offsets(src)
    ranges = [(_offset(starts, len(src), e.line, e.column), _offset(starts, len(src), e.end_line, e.end_column))
              for e in edits]
    index = LineIndex(text, path)
    if not span.is_list or not strings:
        new_src = apply_edits(src, [replace(e, cell=None) for e in edits], starts)
        if not span.is_list:
            return index.edit(strings[0][0], strings[0][1], enc(new_src))
        return index.edit(span.start, span.end, "[" + ", ".join(enc(s) for s in _split_lines(new_src)) + "]")
    offsets = []
    acc = 0
    for _, _, s in strings:
        offsets.append(acc)
        acc += len(s)
    lo = min(a for a, _ in ranges)
    hi = max(b for _, b in ranges)

    def element_at(off: int) -> int:
        k = 0
        for i, o in enumerate(offsets):
            if o <= off:
                k = i
        return k

    first = element_at(lo)
    last = max(first, element_at(hi - 1) if hi > lo else first)
    seg_start = offsets[first]
    seg_end = offsets[last] + len(strings[last][2])
    seg = src[seg_start:seg_end]
    seg_edits = [replace(e, cell=None, line=1, column=a - seg_start + 1, end_line=1, end_column=b - seg_start + 1)
                 for e, (a, b) in zip(edits, ranges)]
    new_seg = apply_edits(seg, seg_edits, [0])
    if last == len(strings) - 1 and not src.endswith("\n") and new_seg.endswith("\n"):
        new_seg = new_seg[:-1]  # the cell's last line keeps having no newline
    pieces = _split_lines(new_seg)
    if len(strings) > 1:
        sep = text[strings[0][1]:strings[1][0]]
    else:
        sep = ",\n" + " " * max(0, strings[0][0] - (text.rfind("\n", 0, strings[0][0]) + 1))
    if not pieces:
        if last + 1 < len(strings):
            return index.edit(strings[first][0], strings[last + 1][0], "")
        if first > 0:
            return index.edit(strings[first - 1][1], strings[last][1], "")
        return index.edit(span.start, span.end, "[]")
    return index.edit(strings[first][0], strings[last][1], sep.join(enc(p) for p in pieces))


def json_fixes(diagnostics: list[Diagnostic], texts: dict[str, str], kinds: dict[str, str]
               ) -> tuple[list[Diagnostic], dict[int, Diagnostic]]:
    """The diagnostics with their notebook edits as JSON-text edits, and id(new) -> original.
    A fix whose notebook edits cannot be placed (no cell, a cell without a source) is left out."""
    from trainlint.sources.notebook import source_spans

    spans: dict[str, Any] = {}
    out: list[Diagnostic] = []
    originals: dict[int, Diagnostic] = {}
    for d in diagnostics:
        if d.fix is None or not any(kinds.get(e.path) == "notebook" for e in d.fix.edits):
            out.append(d)
            continue
        new_edits: list[Edit] = []
        by_cell: dict[tuple[str, int], list[Edit]] = {}
        ok = True
        for e in d.fix.edits:
            if kinds.get(e.path) != "notebook":
                new_edits.append(e)
                continue
            if e.cell is None or e.path not in texts:
                ok = False
                break
            by_cell.setdefault((e.path, e.cell), []).append(e)
        if not ok:
            continue
        for (path, cell), edits in by_cell.items():
            if path not in spans:
                spans[path] = source_spans(texts[path])
            sp = spans[path]
            if sp is None or not 1 <= cell <= len(sp) or sp[cell - 1] is None:
                ok = False
                break
            try:
                new_edits.append(cell_json_edit(texts[path], sp[cell - 1], edits, path, _encoder(texts[path])))
            except ValueError:  # overlapping edits of the fix itself
                ok = False
                break
        if not ok:
            continue
        nd = replace(d, fix=replace(d.fix, edits=new_edits))
        originals[id(nd)] = d
        out.append(nd)
    return out, originals


def check_notebook(text: str, path: str, before: str | None = None) -> None:
    """Raise when the fixed notebook is not valid nbformat 4 JSON or a code cell's Python
    (IPython syntax included) or a written script no longer parses. ``before``: the notebook
    the fixes were applied to (libcst then reads only a program the fixes changed in a way
    that can change its verdict: ``trainlint.fixing.apply._libcst_roundtrip``)."""
    from trainlint.fixing.apply import _libcst_roundtrip
    from trainlint.sources.notebook import compile_program, read_notebook

    nb = read_notebook(path, text)
    if nb.broken or nb.findings:
        raise ValueError(nb.findings[0].message if nb.findings else "a cell does not parse")
    if nb.python_text.strip():
        compile_program(nb.python_text, path)
        old = None
        if before is not None:
            was = read_notebook(path, before)
            if not was.broken and not was.findings:
                old = was.python_text
        _libcst_roundtrip(nb.python_text, before=old)


def cell_diff(path: str, old: str, new: str) -> list[str]:
    """A unified diff of the changed cells' sources (``a/nb.ipynb:cell 3``), or of the text
    when the cells cannot be paired."""
    from trainlint.sources.notebook import cell_sources

    a, b = cell_sources(old), cell_sources(new)
    if a is None or b is None or len(a) != len(b):
        return list(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                         f"a/{path}", f"b/{path}"))
    out: list[str] = []
    for i, (x, y) in enumerate(zip(a, b), start=1):
        if x == y:
            continue
        xl, yl = x.splitlines(keepends=True), y.splitlines(keepends=True)
        for lines in (xl, yl):
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
        out.extend(difflib.unified_diff(xl, yl, f"a/{path}:cell {i}", f"b/{path}:cell {i}"))
    return out
