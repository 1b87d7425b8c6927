"""What a reader reports: a fatal ReadError, or problems it noticed while reading.

Positions are 1-based lines and 1-based columns counted in characters, like ``Span``.
"""

from __future__ import annotations

from bisect import bisect_right

from trainlint.diagnostics import Span
from trainlint.record import Record, _set


class ReadError(Exception):
    """The file cannot be read as its kind (invalid JSON/YAML, nesting too deep, alias bomb)."""

    def __init__(self, message: str, line: int, column: int, path: str = "") -> None:
        super().__init__(f"{path + ':' if path else ''}{line}:{column}: {message}")
        self.message = message
        self.line = line
        self.column = column
        self.path = path

    def span(self) -> Span:
        return Span(
            path=self.path, line=self.line, column=self.column,
            end_line=self.line, end_column=self.column + 1,
        )


class ReadProblem(Record, frozen=True):
    """Something legal enough to read but worth a finding.

    ``kind`` is one of ``"duplicate-key"``, ``"non-standard-number"`` (NaN/Infinity in JSON),
    ``"unresolved-variable"`` ... ; ``span`` is where it is written; ``related`` an optional
    second place (the first occurrence of a duplicate key).
    """

    __slots__ = ("kind", "message", "span", "related")
    kind: str
    message: str
    span: Span
    related: Span | None

    def __init__(self, kind: str, message: str, span: Span, related: Span | None = None) -> None:
        _set(self, "kind", kind)
        _set(self, "message", message)
        _set(self, "span", span)
        _set(self, "related", related)


class LineIndex:
    """Maps character offsets of a text to (line, column), both 1-based."""

    __slots__ = ("text", "_starts", "path", "line_offset")

    def __init__(self, text: str, path: str = "", line_offset: int = 0) -> None:
        self.text = text
        self.path = path
        self.line_offset = line_offset
        self._starts: list[int] | None = None

    @property
    def starts(self) -> list[int]:
        """The offset where each line starts (computed on first use: a large config with no
        finding never needs it)."""
        if self._starts is None:
            text = self.text
            starts = [0]
            find = text.find
            i = find("\n")
            while i != -1:
                starts.append(i + 1)
                i = find("\n", i + 1)
            self._starts = starts
        return self._starts

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self.starts, offset) - 1
        return line + 1 + self.line_offset, offset - self.starts[line] + 1

    def offset(self, line: int, column: int) -> int:
        """Inverse of ``position``."""
        return self.starts[line - 1 - self.line_offset] + column - 1

    def span(self, start: int, end: int) -> Span:
        line, col = self.position(start)
        end_line, end_col = self.position(end)
        return Span(path=self.path, line=line, column=col, end_line=end_line, end_column=end_col)

    def line_start(self, offset: int) -> int:
        return self.starts[bisect_right(self.starts, offset) - 1]

    def line_end(self, offset: int) -> int:
        """Offset of the newline that ends the line holding ``offset`` (or len(text))."""
        i = self.text.find("\n", offset)
        return len(self.text) if i == -1 else i

    def edit(self, start: int, end: int, content: str):
        return self.span(start, end).edit(content)
