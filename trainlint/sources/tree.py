"""What the JSON and YAML readers share: a document with a line index, and nodes that know
their exact spans and offer one access API (``get``, ``get_path``, ``keys``, ``walk``,
``to_python``, ``key_path``)."""

from __future__ import annotations

from typing import Any, ClassVar, Iterator

from trainlint.diagnostics import Span
from trainlint.sources.errors import LineIndex, ReadProblem


class Document:
    """The text a tree was read from, with its line index and the problems found."""

    __slots__ = ("text", "path", "index", "problems", "root")

    def __init__(self, text: str, path: str, line_offset: int = 0) -> None:
        self.text = text
        self.path = path
        self.index = LineIndex(text, path, line_offset)
        self.problems: list[ReadProblem] = []
        self.root: TreeNode | None = None

    def span(self, start: int, end: int) -> Span:
        return self.index.span(start, end)


class TreeNode:
    """One value of a JSON or YAML document. ``members`` are the value nodes of a mapping in
    written order (each with ``key`` and ``key_start``/``key_end``), ``items`` those of a
    sequence; ``start``/``end`` are character offsets into the document's text."""

    MAPPING: ClassVar[str]
    SEQUENCE: ClassVar[str]

    __slots__ = ("kind", "value", "start", "end", "doc", "parent", "key", "key_start", "key_end",
                 "members", "items", "_index")

    def __init__(self, kind: str, doc: Document, start: int, end: int, value: Any = None) -> None:
        self.kind = kind
        self.value = value
        self.start = start
        self.end = end
        self.doc = doc
        self.parent: TreeNode | None = None
        self.key: str | None = None  # set when this node is the value of a mapping member
        self.key_start = -1
        self.key_end = -1
        self.members: list = []
        self.items: list = []
        self._index: dict | None = None

    # -- shape ---------------------------------------------------------------------------
    @property
    def is_mapping(self) -> bool:
        return self.kind == self.MAPPING

    @property
    def is_sequence(self) -> bool:
        return self.kind == self.SEQUENCE

    @property
    def is_scalar(self) -> bool:
        return self.kind not in (self.MAPPING, self.SEQUENCE)

    @property
    def path(self) -> str:
        return self.doc.path

    @property
    def problems(self) -> list[ReadProblem]:
        return self.doc.problems

    @property
    def raw(self) -> str:
        """The text as written (with quotes for quoted strings)."""
        return self.doc.text[self.start:self.end]

    @property
    def span(self) -> Span:
        return self.doc.span(self.start, self.end)

    @property
    def key_span(self) -> Span | None:
        """Where the key of this member is written (with its quotes), or None."""
        if self.key is None:
            return None
        return self.doc.span(self.key_start, self.key_end)

    @property
    def key_path(self) -> str:
        """``zero_optimization.offload_optimizer.device``; sequence items as numbers."""
        parts: list[str] = []
        node: TreeNode | None = self
        while node is not None and node.parent is not None:
            parts.append(node.key if node.key is not None else str(node.parent.items.index(node)))
            node = node.parent
        return ".".join(reversed(parts))

    # -- access --------------------------------------------------------------------------
    def get(self, key: str):
        """The member for ``key`` (the last one when a key is duplicated, as parsers do)."""
        if self.kind != self.MAPPING:
            return None
        if self._index is None:
            self._index = {m.key: m for m in self.members}
        return self._index.get(key)

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def keys(self) -> list[str]:
        return list(dict.fromkeys(m.key for m in self.members))

    def get_path(self, path: str | list[str] | tuple[str, ...]):
        """``node.get_path("zero_optimization.stage")``; a number indexes a sequence."""
        parts = path.split(".") if isinstance(path, str) else list(path)
        node: TreeNode | None = self
        for part in parts:
            if node is None:
                return None
            if node.kind == self.MAPPING:
                node = node.get(part)
            elif node.kind == self.SEQUENCE and part.lstrip("-").isdigit():
                i = int(part)
                node = node.items[i] if -len(node.items) <= i < len(node.items) else None
            else:
                return None
        return node

    def to_python(self) -> Any:
        """The plain value (last duplicate key wins)."""
        if self.kind == self.MAPPING:
            return {m.key: m.to_python() for m in self.members}
        if self.kind == self.SEQUENCE:
            return [i.to_python() for i in self.items]
        return self.value

    def walk(self) -> Iterator:
        """This node and all below it, in document order."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.members if node.kind == self.MAPPING else node.items))

    def __repr__(self) -> str:
        sp = self.span
        if self.is_scalar:
            return f"{type(self).__name__}({self.kind} {self.raw!r} @{sp.line}:{sp.column})"
        return f"{type(self).__name__}({self.kind} @{sp.line}:{sp.column})"
