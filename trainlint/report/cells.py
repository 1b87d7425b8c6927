"""Notebook locations in the reports.

A finding in a notebook has ``cell`` (1-based, every cell counted, markdown included) and its
``line``/``column`` inside that cell. Reporters that show source lines take them from the cell;
those whose consumers open the file itself (GitHub annotations, SARIF) point at the place in
the notebook's JSON where that cell line is written and name the cell in the message.
"""

from __future__ import annotations

from typing import Any


def label(d: Any) -> str:
    """``path:cell N:line:col`` for a notebook position, else ``path:line:col``."""
    if getattr(d, "cell", None) is not None:
        return f"{d.path}:cell {d.cell}:{d.line}:{d.column}"
    return f"{d.path}:{d.line}:{d.column}"


def short(d: Any) -> str:
    """``path:cell N:line`` / ``path:line`` (notes)."""
    if getattr(d, "cell", None) is not None:
        return f"{d.path}:cell {d.cell}:{d.line}"
    return f"{d.path}:{d.line}"


def where(d: Any) -> str:
    """``cell N, line L: `` to put before a message (empty outside notebooks)."""
    if getattr(d, "cell", None) is None:
        return ""
    return f"cell {d.cell}, line {d.line}: "


class NotebookTexts:
    """Cell lines and JSON positions of the notebooks among ``texts`` (parsed on first use)."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self._cells: dict[str, list[str] | None] = {}
        self._spans: dict[str, Any] = {}

    def cell_lines(self, path: str, cell: int) -> list[str]:
        if path not in self._cells:
            from trainlint.sources.notebook import cell_sources

            self._cells[path] = cell_sources(self.texts.get(path, ""))
        cells = self._cells[path]
        if not cells or not 1 <= cell <= len(cells):
            return []
        return cells[cell - 1].splitlines()

    def raw(self, path: str, cell: int | None, line: int, column: int) -> tuple[int, int]:
        """Where (cell, line, column) is written in the notebook's JSON text (the position
        itself when it is not a notebook position)."""
        if cell is None:
            return line, column
        if path not in self._spans:
            from trainlint.sources.notebook import source_spans

            self._spans[path] = source_spans(self.texts[path]) if path in self.texts else None
        spans = self._spans[path]
        if spans is None:
            return 1, 1
        from trainlint.sources.notebook import raw_position

        return raw_position(self.texts[path], spans, cell, line, column) or (1, 1)


def as_raw(d: Any, texts: dict[str, str]) -> Any:
    """A notebook finding with the positions of its notebook's JSON text (``cell`` None, the
    cell named in the message, fix edits as replacements of the JSON text): for consumers that
    see the ``.ipynb`` file as text (an editor through the language server)."""
    from trainlint.record import replace

    if d.cell is None and not any(r.cell is not None for r in d.related) and not (
            d.fix is not None and any(e.cell is not None for e in d.fix.edits)):
        return d
    nbs = NotebookTexts(texts)
    fix = d.fix
    if fix is not None and any(e.cell is not None for e in fix.edits):
        from trainlint.fixing.notebook import json_fixes

        out, _ = json_fixes([d], texts, {e.path: "notebook" for e in fix.edits if e.cell is not None})
        fix = out[0].fix if out else None
    related = [replace(r, cell=None, line=nbs.raw(r.path, r.cell, r.line, r.column)[0],
                       column=nbs.raw(r.path, r.cell, r.line, r.column)[1], message=where(r) + r.message)
               if r.cell is not None and r.path in texts else r for r in d.related]
    if d.cell is None or d.path not in texts:
        return replace(d, related=related, fix=fix)
    line, col = nbs.raw(d.path, d.cell, d.line, d.column)
    end_line, end_col = nbs.raw(d.path, d.cell, d.end_line, d.end_column)
    if (end_line, end_col) <= (line, col):
        end_line, end_col = line, col + 1
    return replace(d, cell=None, line=line, column=col, end_line=end_line, end_column=end_col,
                   message=where(d) + d.message, related=related, fix=fix)
