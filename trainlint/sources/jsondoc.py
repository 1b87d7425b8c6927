"""A small JSON parser that keeps the position of every key and value.

It accepts what Python's ``json`` module (and so DeepSpeed) accepts, including ``NaN`` and
``Infinity`` (reported as problems, as they are not standard JSON), reports duplicate keys
instead of crashing, raises ``ReadError`` with the exact position on invalid JSON and never
recurses (a nesting limit turns absurd depth into a ``ReadError``).

It also builds minimal text edits that keep the file's layout: replace a value, remove a key
(with its comma) and insert a key in the indentation style already used.
"""

from __future__ import annotations

import sys

import re
from typing import Any

from trainlint.diagnostics import Edit
from trainlint.sources.errors import LineIndex, ReadError, ReadProblem
from trainlint.sources.tree import Document, TreeNode

__all__ = [
    "JsonNode",
    "JsonDocument",
    "ReadError",
    "parse_json",
    "replace_value_edit",
    "remove_key_edit",
    "insert_key_edit",
    "json_text",
]

MAX_DEPTH = 500

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_CHUNK = re.compile(r'([^"\\\x00-\x1f]*)(["\\\x00-\x1f])')
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_CONSTANTS = {
    "true": ("bool", True),
    "false": ("bool", False),
    "null": ("null", None),
    "NaN": ("number", float("nan")),
    "Infinity": ("number", float("inf")),
    "-Infinity": ("number", float("-inf")),
}


class JsonDocument(Document):
    """The text a JSON tree was read from, with its line index and the problems found."""

    __slots__ = ()


class JsonNode(TreeNode):
    """One JSON value.

    ``kind`` is ``"object"``, ``"array"``, ``"string"``, ``"number"``, ``"bool"`` or ``"null"``.
    Scalars hold their Python ``value``; objects keep their ``members`` (value nodes in written
    order, each with ``key`` and ``key_span``); arrays their ``items``. ``start``/``end`` are
    character offsets into the document's text.
    """

    MAPPING = "object"
    SEQUENCE = "array"
    __slots__ = ()

    def __init__(self, kind: str, doc: JsonDocument, start: int, value: Any = None) -> None:
        super().__init__(kind, doc, start, start, value)



_INT_DIGITS = getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 4300


def _err(doc: JsonDocument, msg: str, pos: int) -> ReadError:
    line, col = doc.index.position(pos)
    return ReadError(msg, line, col, doc.path)


def _scan_string(doc: JsonDocument, pos: int) -> tuple[str, int]:
    """``pos`` is at the opening quote; returns (value, offset after the closing quote)."""
    text = doc.text
    begin = pos
    pos += 1
    chunks: list[str] = []
    append = chunks.append
    match = _CHUNK.match
    while True:
        m = match(text, pos)
        if m is None:
            raise _err(doc, "Unterminated string", begin)
        content, term = m.groups()
        if content:
            append(content)
        pos = m.end()
        if term == '"':
            break
        if term != "\\":
            raise _err(doc, "Invalid control character in string", pos - 1)
        if pos >= len(text):
            raise _err(doc, "Unterminated string", begin)
        esc = text[pos]
        if esc != "u":
            if esc not in _ESCAPES:
                raise _err(doc, f"Invalid \\escape: {esc!r}", pos - 1)
            append(_ESCAPES[esc])
            pos += 1
            continue
        code = _hex4(doc, pos + 1)
        pos += 5
        if 0xD800 <= code <= 0xDBFF and text[pos:pos + 2] == "\\u":
            low = _hex4(doc, pos + 2)
            if 0xDC00 <= low <= 0xDFFF:
                code = 0x10000 + (((code - 0xD800) << 10) | (low - 0xDC00))
                pos += 6
        append(chr(code))
    return "".join(chunks), pos


def _hex4(doc: JsonDocument, pos: int) -> int:
    esc = doc.text[pos:pos + 4]
    if len(esc) == 4 and all(c in "0123456789abcdefABCDEF" for c in esc):
        return int(esc, 16)
    raise _err(doc, "Invalid \\uXXXX escape", pos - 2)


def _scalar(doc: JsonDocument, pos: int) -> JsonNode:
    text = doc.text
    ch = text[pos] if pos < len(text) else ""
    if ch == '"':
        value, end = _scan_string(doc, pos)
        node = JsonNode("string", doc, pos, value)
        node.end = end
        return node
    m = _NUMBER.match(text, pos)
    if m is not None:
        integer, frac, exp = m.groups()
        if not (frac or exp) and len(integer.lstrip("-")) > _INT_DIGITS:
            # Python refuses to convert it (sys.get_int_max_str_digits), so json.load, and with
            # it HfArgumentParser, accelerate and DeepSpeed, cannot read this file either
            raise _err(doc, f"an integer with {len(integer.lstrip('-'))} digits: Python reads at most "
                            f"{_INT_DIGITS} (json.load fails on it)", pos)
        value: Any = float(integer + (frac or "") + (exp or "")) if frac or exp else int(integer)
        node = JsonNode("number", doc, pos, value)
        node.end = m.end()
        return node
    for word, (kind, value) in _CONSTANTS.items():
        if text.startswith(word, pos):
            node = JsonNode(kind, doc, pos, value)
            node.end = pos + len(word)
            if kind == "number":
                doc.problems.append(ReadProblem(
                    "non-standard-number",
                    f"{word} is not valid JSON (Python's json accepts it, other tools do not)",
                    doc.span(node.start, node.end),
                ))
            return node
    if text.startswith("//", pos) or text.startswith("/*", pos):
        raise _err(doc, "Comments are not allowed in JSON", pos)
    if ch == "":
        raise _err(doc, "Expecting value, found end of file", pos)
    if ch == "'":
        raise _err(doc, "Strings must use double quotes in JSON", pos)
    raise _err(doc, "Expecting value", pos)


def _key(doc: JsonDocument, pos: int, obj: JsonNode) -> tuple[str, int, int, int]:
    """At a key: returns (key, key_start, key_end, offset of the value)."""
    text = doc.text
    if pos >= len(text) or text[pos] != '"':
        if pos < len(text) and text[pos] == "}":
            raise _err(doc, "Trailing comma is not allowed in JSON", _prev_comma(text, pos))
        if text.startswith("//", pos) or text.startswith("/*", pos):
            raise _err(doc, "Comments are not allowed in JSON", pos)
        raise _err(doc, "Expecting property name enclosed in double quotes", pos)
    key, end = _scan_string(doc, pos)
    colon = _WS.match(text, end).end()
    if colon >= len(text) or text[colon] != ":":
        raise _err(doc, "Expecting ':' delimiter", colon)
    return key, pos, end, _WS.match(text, colon + 1).end()


def _prev_comma(text: str, pos: int) -> int:
    i = text.rfind(",", 0, pos)
    return i if i != -1 else pos


LAZY_MIN_CHARS = 200_000  # a text this long is read by ``json.loads`` first, its tree built on demand

# from just after a bracket outside any string to the next such bracket (possessive: linear)
_BRACKET = re.compile(r'(?:[^"\[\]{}]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+([\[\]{}])')
_MEMBERS = TreeNode.__dict__["members"]
_ITEMS = TreeNode.__dict__["items"]


class LazyJsonNode(JsonNode):
    """An object or array of a document that ``json.loads`` read without a problem: its
    members or items are read (with their exact positions, as ``parse_json`` reads them) when
    first asked for; nested containers are again lazy. ``to_python`` is ``json.loads`` of its
    text."""

    __slots__ = ("_pending", "_ends")

    def __init__(self, kind: str, doc: JsonDocument, start: int, ends: dict[int, int]) -> None:
        self._pending = True
        self._ends = ends  # offset of every container's opening bracket -> offset after its end
        super().__init__(kind, doc, start)
        self.end = ends[start]

    @property  # type: ignore[override]
    def members(self) -> list:
        if self._pending:
            self._expand()
        return _MEMBERS.__get__(self)

    @members.setter
    def members(self, value: list) -> None:
        _MEMBERS.__set__(self, value)

    @property  # type: ignore[override]
    def items(self) -> list:
        if self._pending:
            self._expand()
        return _ITEMS.__get__(self)

    @items.setter
    def items(self, value: list) -> None:
        _ITEMS.__set__(self, value)

    def to_python(self) -> Any:
        import json

        return json.loads(self.doc.text[self.start:self.end])

    def __repr__(self) -> str:
        sp = self.span
        return f"JsonNode({self.kind} @{sp.line}:{sp.column})"

    def _expand(self) -> None:
        self._pending = False
        doc = self.doc
        text = doc.text
        ends = self._ends
        ws = _WS.match
        is_object = self.kind == "object"
        out = _MEMBERS.__get__(self) if is_object else _ITEMS.__get__(self)
        pos = ws(text, self.start + 1).end()
        if text[pos] in "}]":
            return
        while True:
            if is_object:
                key, ks, ke, pos = _key(doc, pos, self)
            ch = text[pos]
            if ch == "{" or ch == "[":
                child: JsonNode = LazyJsonNode("object" if ch == "{" else "array", doc, pos, ends)
            else:
                child = _scalar(doc, pos)
            child.parent = self
            if is_object:
                child.key, child.key_start, child.key_end = key, ks, ke
            out.append(child)
            pos = ws(text, child.end).end()
            if text[pos] != ",":
                return
            pos = ws(text, pos + 1).end()


def _container_ends(text: str, start: int, max_depth: int) -> dict[int, int] | None:
    """For the valid JSON container at ``start``: the offset after the end of every container
    in it, by the offset of its opening bracket; None when they nest deeper than ``max_depth``."""
    ends: dict[int, int] = {}
    stack: list[int] = []
    push, pop = stack.append, stack.pop
    for m in _BRACKET.finditer(text, start):
        at = m.end() - 1
        if m.group(1) in "[{":
            push(at)
            if len(stack) > max_depth:
                return None
        else:
            ends[pop()] = at + 1
            if not stack:
                break
    return ends


# the texts ``json_value`` read, by their object, and whether each was plain: the run's split
# tells every JSON file's kind before the tasks read them, so each one's verdict is kept until its
# parse takes it (at most ``_CHECKED_MAX`` texts, ``_CHECKED_MAX_CHARS`` characters: the oldest go)
_CHECKED: dict[int, tuple[str, bool]] = {}
_CHECKED_CHARS = [0]
_CHECKED_MAX = 4096
_CHECKED_MAX_CHARS = 128 * 1024 * 1024


def _keep(text: str, plain: bool) -> None:
    old = _CHECKED.pop(id(text), None)
    if old is not None:
        _CHECKED_CHARS[0] -= len(old[0])
    _CHECKED[id(text)] = (text, plain)
    _CHECKED_CHARS[0] += len(text)
    while len(_CHECKED) > _CHECKED_MAX or _CHECKED_CHARS[0] > _CHECKED_MAX_CHARS:
        gone = _CHECKED.pop(next(iter(_CHECKED)))
        _CHECKED_CHARS[0] -= len(gone[0])


def forget_verdicts() -> None:
    """Drop every kept verdict (the end of a run: a language server's next check must not hold
    the texts of this one)."""
    _CHECKED.clear()
    _CHECKED_CHARS[0] = 0


def _taken(text: str) -> bool | None:
    """The verdict kept for this very ``text`` (no longer kept), or None."""
    kept = _CHECKED.pop(id(text), None)
    if kept is None:
        return None
    _CHECKED_CHARS[0] -= len(kept[0])
    return kept[1] if kept[0] is text else None


def _checked_loads(text: str) -> tuple[Any, bool]:
    """``json.loads(text)`` and whether it met nothing ``parse_json`` reports (a duplicate key,
    NaN or Infinity)."""
    import json

    odd = []

    def pairs(items: list) -> dict:
        d = dict(items)
        if len(d) != len(items):
            odd.append("duplicate")
        return d

    def constant(word: str) -> float:
        odd.append(word)
        return float(word)

    value = json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    return value, not odd


def json_value(text: str) -> Any:
    """``json.loads(text)`` (the same value and errors); the text's verdict is kept for the
    ``parse_json`` of the same text that usually follows (file kinds are told by the value;
    the reader asks for a lazy tree of every walked JSON: peft's 239 results files were each
    loaded twice)."""
    value, plain = _checked_loads(text)
    _keep(text, plain)
    return value


def loaded_just_now(text: str) -> bool:
    """Whether ``json_value`` loaded ``text`` (this very object) and its verdict is still kept
    (no parse has taken it): it is valid JSON (``json.loads`` reads it without an error)."""
    kept = _CHECKED.get(id(text))
    return kept is not None and kept[0] is text


def _lazy_root(text: str, path: str, max_depth: int, line_offset: int) -> JsonNode | None:
    """The tree of ``text`` built on demand, when ``json.loads`` reads it with nothing to
    report: no duplicate key, no NaN/Infinity, no nesting deeper than ``max_depth``; else None
    (``parse_json`` reads it node by node and reports what it finds)."""
    body = text[1:] if text.startswith("\ufeff") else text
    plain = _taken(body)
    if plain is None:
        try:
            plain = _checked_loads(body)[1]
        except (ValueError, RecursionError, MemoryError):
            return None
    if not plain:
        return None
    doc = JsonDocument(text, path, line_offset)
    start = _WS.match(text, 1 if body is not text else 0).end()
    if text[start] in "{[":
        ends = _container_ends(text, start, max_depth)
        if ends is None:
            return None
        root: JsonNode = LazyJsonNode("object" if text[start] == "{" else "array", doc, start, ends)
    else:
        root = _scalar(doc, start)
    doc.root = root
    return root


def parse_json(
    text: str, path: str = "<json>", *, max_depth: int = MAX_DEPTH, line_offset: int = 0,
    lazy: bool | None = None,
) -> JsonNode:
    """Parse ``text``; the root node's ``doc.problems`` lists duplicate keys and NaN/Infinity.

    A long text (``lazy``: None decides by ``LAZY_MIN_CHARS``) that ``json.loads`` reads with
    nothing to report gets a tree built on demand (``LazyJsonNode``): the same nodes, values
    and positions, only read when asked for (a test compares them)."""
    if lazy or (lazy is None and len(text) >= LAZY_MIN_CHARS):
        root = _lazy_root(text, path, max_depth, line_offset)
        if root is not None:
            return root
    doc = JsonDocument(text, path, line_offset)
    n = len(text)
    ws = _WS.match
    pos = ws(text, 0).end()
    if text.startswith("\ufeff"):
        pos = ws(text, 1).end()
    stack: list[JsonNode] = []
    pending: list[tuple[str, int, int] | None] = []  # key of the value being parsed per level
    seen: list[dict[str, JsonNode] | None] = []
    while True:
        # -- a value starts at pos ---------------------------------------------------------
        ch = text[pos] if pos < n else ""
        node: JsonNode
        if ch == "{" or ch == "[":
            if len(stack) >= max_depth:
                raise _err(doc, f"Nesting deeper than {max_depth} levels", pos)
            container = JsonNode("object" if ch == "{" else "array", doc, pos)
            inner = ws(text, pos + 1).end()
            close = "}" if ch == "{" else "]"
            if inner < n and text[inner] == close:
                container.end = inner + 1
                pos = inner + 1
                node = container
            else:
                stack.append(container)
                if ch == "{":
                    key, ks, ke, pos = _key(doc, inner, container)
                    pending.append((key, ks, ke))
                    seen.append({})
                else:
                    pending.append(None)
                    seen.append(None)
                    pos = inner
                    if pos < n and text[pos] == ",":
                        raise _err(doc, "Expecting value", pos)
                continue
        else:
            node = _scalar(doc, pos)
            pos = node.end
        # -- a value ended: attach it and read what follows --------------------------------
        while True:
            if not stack:
                end = ws(text, pos).end()
                if end != n:
                    raise _err(doc, "Extra data after the JSON value", end)
                doc.root = node
                return node
            parent = stack[-1]
            node.parent = parent
            if parent.kind == "object":
                key, ks, ke = pending[-1]  # type: ignore[misc]
                node.key, node.key_start, node.key_end = key, ks, ke
                keys = seen[-1]
                assert keys is not None
                first = keys.get(key)
                if first is not None:
                    doc.problems.append(ReadProblem(
                        "duplicate-key",
                        f"Duplicate key {key!r}: the later value wins in Python's json, "
                        "DeepSpeed refuses the file",
                        doc.span(ks, ke),
                        related=doc.span(first.key_start, first.key_end),
                    ))
                else:
                    keys[key] = node
                parent.members.append(node)
                close = "}"
            else:
                parent.items.append(node)
                close = "]"
            pos = ws(text, pos).end()
            ch = text[pos] if pos < n else ""
            if ch == ",":
                pos = ws(text, pos + 1).end()
                if parent.kind == "object":
                    key, ks, ke, pos = _key(doc, pos, parent)
                    pending[-1] = (key, ks, ke)
                elif pos < n and text[pos] == "]":
                    raise _err(doc, "Trailing comma is not allowed in JSON", _prev_comma(text, pos))
                break  # parse the next value
            if ch == close:
                parent.end = pos + 1
                pos += 1
                stack.pop()
                pending.pop()
                seen.pop()
                node = parent
                continue
            if ch == "":
                raise _err(doc, f"Expecting ',' or '{close}', found end of file", pos)
            if text.startswith("//", pos) or text.startswith("/*", pos):
                raise _err(doc, "Comments are not allowed in JSON", pos)
            raise _err(doc, f"Expecting ',' delimiter or '{close}'", pos)


# -- edits ----------------------------------------------------------------------------------


def json_text(value: Any) -> str:
    """A Python value as compact JSON text for an edit (``True`` -> ``true``)."""
    import json

    return json.dumps(value)


def replace_value_edit(node: JsonNode, new_json_text: str) -> Edit:
    """Replace the value ``node`` with ``new_json_text`` (already JSON, e.g. ``'"auto"'``)."""
    return node.span.edit(new_json_text)


def _member(obj: JsonNode, key: str | JsonNode) -> JsonNode:
    if isinstance(key, JsonNode):
        return key
    node = obj.get(key)
    if node is None:
        raise KeyError(key)
    return node


def remove_key_edit(obj: JsonNode, key: str | JsonNode) -> Edit:
    """Remove a member (by key, or the member node itself) with its comma.

    A member on a line of its own is removed with its whole line; the last member takes the
    comma before it away; the only member leaves ``{}``.
    """
    member = _member(obj, key)
    doc = obj.doc
    text = doc.text
    idx = doc.index
    i = obj.members.index(member)
    if len(obj.members) == 1:
        return doc.index.edit(obj.start + 1, obj.end - 1, "")
    if i + 1 < len(obj.members):
        nxt = obj.members[i + 1]
        start, end = member.key_start, nxt.key_start
        ls = idx.line_start(start)
        nls = idx.line_start(end)
        if not text[ls:start].strip() and not text[nls:end].strip() and nls > ls:
            start, end = ls, nls
        return idx.edit(start, end, "")
    prev = obj.members[i - 1]
    return idx.edit(prev.end, member.end, "")


def _indent_of(text: str, idx: LineIndex, offset: int) -> str:
    ls = idx.line_start(offset)
    line = text[ls:offset]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _indent_unit(text: str) -> str:
    best = None
    for m in re.finditer(r"\n([ \t]+)\S", text):
        w = m.group(1)
        if best is None or len(w) < len(best):
            best = w
    return best or "  "


def insert_key_edit(obj: JsonNode, key: str, value_text: str) -> Edit:
    """Add ``"key": value_text`` after the last member, in the object's own style.

    Multi-line objects get a new line with the members' indentation (continuation lines of a
    multi-line ``value_text`` are indented to match); one-line objects get ``, "key": value``.
    """
    doc = obj.doc
    text = doc.text
    idx = doc.index
    key_text = json_text(key)
    if obj.members:
        last = obj.members[-1]
        sep = text[last.key_end:last.start]  # '": "' style between key and value
        sep = sep if sep.strip() == ":" else ": "
        multiline = idx.line_start(last.key_start) != idx.line_start(obj.start)
        if multiline:
            indent = _indent_of(text, idx, last.key_start)
            value_text = value_text.replace("\n", "\n" + indent)
            return idx.edit(last.end, last.end, f",\n{indent}{key_text}{sep}{value_text}")
        return idx.edit(last.end, last.end, f", {key_text}{sep}{value_text}")
    inner = text[obj.start + 1:obj.end - 1]
    if "\n" in inner:
        outer = _indent_of(text, idx, obj.start)
        indent = outer + _indent_unit(text)
        value_text = value_text.replace("\n", "\n" + indent)
        return idx.edit(obj.start + 1, obj.end - 1, f"\n{indent}{key_text}: {value_text}\n{outer}")
    return idx.edit(obj.start + 1, obj.end - 1, f"{key_text}: {value_text}")
