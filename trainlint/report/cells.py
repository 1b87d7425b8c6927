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
