"""Between trainlint's locations (1-based lines, columns counting characters, end exclusive)
and the protocol's (0-based lines, columns in UTF-16 code units, as LSP 3.17 defaults to)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote, unquote, urlparse


def path_to_uri(path: str) -> str:
    return Path(path).absolute().as_uri()


def uri_to_path(uri: str) -> str | None:
    """The file path of a ``file:`` URI (None for other schemes: untitled buffers, cells)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if parsed.netloc:  # file://host/share/... (UNC)
        path = f"//{parsed.netloc}{path}"
    return path


def rule_url(name: str) -> str:
    return f"https://github.com/trainlint/trainlint/blob/main/rules/{quote(name)}.md"


class LineIndex:
    """Lines of one text, to turn (line, character column) into (line, UTF-16 offset)."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")

    def position(self, line: int, column: int) -> tuple[int, int]:
        """0-based (line, UTF-16 column) of a 1-based line and 1-based character column,
        clamped to the text."""
        if line - 1 >= len(self.lines):  # past the last line (an edit that ends the text)
            return self.end()
        li = max(line - 1, 0)
        text = self.lines[li] if self.lines else ""
        chars = min(max(column - 1, 0), len(text))
        return li, _utf16_len(text[:chars])

    def offset_chars(self, line: int, utf16_col: int) -> tuple[int, int]:
        """1-based (line, character column) of a 0-based LSP position."""
        li = min(max(line, 0), max(len(self.lines) - 1, 0))
        text = self.lines[li] if self.lines else ""
        units = 0
        for i, ch in enumerate(text):
            if units >= utf16_col:
                return li + 1, i + 1
            units += 2 if ord(ch) > 0xFFFF else 1
        return li + 1, len(text) + 1

    def end(self) -> tuple[int, int]:
        last = self.lines[-1] if self.lines else ""
        return max(len(self.lines) - 1, 0), _utf16_len(last)


def _utf16_len(s: str) -> int:
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)
