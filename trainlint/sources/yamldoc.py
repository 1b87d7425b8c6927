"""YAML with the position of every key and value, read through ruamel.yaml's composer.

ruamel.yaml (round-trip mode) composes the node graph; every node has exact start/end marks,
so keys and values get exact spans. Values are resolved the way the files' consumers read
them: accelerate and ``HfArgumentParser.parse_yaml_file`` both use PyYAML's ``safe_load``
(YAML 1.1), where ``2e8`` and ``1e-5`` are *strings* (a float needs a dot and a signed
exponent) and ``yes``/``on`` are booleans. The node keeps its ``tag``/``style`` and the written
``raw`` text, so rules can point this out.

Aliases are expanded with a budget (an alias bomb is a ``ReadError``, quickly), duplicate keys
are reported as problems (PyYAML keeps the last value silently), and edits are plain text
edits, so comments and layout stay as they are.
"""

from __future__ import annotations

import sys

import json
import re
from typing import Any

from trainlint.diagnostics import Edit
from trainlint.sources.errors import ReadError, ReadProblem
from trainlint.sources.tree import Document, TreeNode

__all__ = [
    "YamlNode",
    "YamlDocument",
    "ReadError",
    "parse_yaml",
    "resolve_plain",
    "yaml_scalar_text",
    "replace_scalar_edit",
    "remove_key_edit",
    "insert_key_edit",
]

MAX_NODES = 100_000  # nodes after alias expansion
MAX_DEPTH = 200  # ruamel's composer recurses (and its scanner slows down) with depth

# PyYAML's implicit resolvers (yaml/resolver.py, YAML 1.1), which accelerate and
# HfArgumentParser see through ``yaml.safe_load``.
_BOOL = re.compile(r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?"
    r"|\.[0-9_]+(?:[eE][-+][0-9]+)?"
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*"
    r"|[-+]?\.(?:inf|Inf|INF)"
    r"|\.(?:nan|NaN|NAN))$"
)
_INT = re.compile(
    r"^(?:[-+]?0b[0-1_]+"
    r"|[-+]?0[0-7_]+"
    r"|[-+]?(?:0|[1-9][0-9_]*)"
    r"|[-+]?0x[0-9a-fA-F_]+"
    r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$"
)
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_TRUE = {"yes", "true", "on"}


def _sexagesimal(text: str, conv) -> Any:
    sign = -1 if text.startswith("-") else 1
    digits = [conv(p) for p in text.lstrip("+-").split(":")]
    value: Any = 0
    for d in digits:
        value = value * 60 + d
    return sign * value


def _to_int(text: str) -> int:
    t = text.replace("_", "")
    sign = -1 if t.startswith("-") else 1
    body = t.lstrip("+-")
    if body.startswith("0b"):
        return sign * int(body[2:], 2)
    if body.startswith("0x"):
        return sign * int(body[2:], 16)
    if ":" in body:
        return sign * _sexagesimal(body, int)
    if body != "0" and body.startswith("0"):
        return sign * int(body, 8)
    return sign * int(body)


def _to_float(text: str) -> float:
    t = text.replace("_", "").lower()
    sign = -1.0 if t.startswith("-") else 1.0
    body = t.lstrip("+-")
    if body == ".inf":
        return sign * float("inf")
    if body == ".nan":
        return float("nan")
    if ":" in body:
        return sign * float(_sexagesimal(body, float))
    return sign * float(body)


def resolve_plain(text: str) -> Any:
    """A plain (unquoted) scalar as PyYAML's ``safe_load`` reads it."""
    if not text:
        return None
    c = text[0]
    if c in "yYnNtTfFoO" and _BOOL.match(text):
        return text.lower() in _TRUE
    if c in "~nN" and _NULL.match(text):
        return None
    if c in "-+0123456789.":
        if _INT.match(text):
            return _to_int(text)
        if _FLOAT.match(text):
            return _to_float(text)
    return text


_TAG = "tag:yaml.org,2002:"


def _explicit(tag: str, text: str) -> Any:
    kind = tag[len(_TAG):] if tag.startswith(_TAG) else tag
    try:
        if kind == "int":
            return _to_int(text)
        if kind == "float":
            return _to_float(text)
        if kind == "bool":
            return text.lower() in _TRUE
        if kind == "null":
            return None
    except ValueError:
        pass
    return text


class YamlDocument(Document):
    __slots__ = ()


class YamlNode(TreeNode):
    """One YAML node, with the same access API as ``JsonNode``.

    ``kind``: ``"mapping"``, ``"sequence"`` or ``"scalar"``. Scalars hold ``value`` (resolved
    as PyYAML does), ``tag`` (as ruamel resolved it), ``style`` (None plain, ``'`` ``"`` ``|``
    ``>``). Mappings keep ``members`` (value nodes with ``key``/``key_span``), sequences
    ``items``; ``flow`` tells ``{...}``/``[...]`` from block style. ``alias`` is True for a node
    reached through ``*alias`` (its span is the anchor's definition).
    """

    MAPPING = "mapping"
    SEQUENCE = "sequence"
    __slots__ = ("tag", "style", "flow", "alias", "merges")

    def __init__(self, kind: str, doc: YamlDocument, start: int, end: int) -> None:
        super().__init__(kind, doc, start, end)
        self.tag = ""
        self.style: str | None = None
        self.flow = False
        self.alias = False
        self.merges: list[YamlNode] = []

    def get(self, key: str) -> YamlNode | None:
        """The value for ``key`` (last duplicate wins; ``<<`` merges are looked into)."""
        node = super().get(key)
        if node is None and self.kind == self.MAPPING:
            for merged in self.merges:
                node = merged.get(key)
                if node is not None:
                    break
        return node

    def to_python(self) -> Any:
        if self.kind == self.MAPPING and self.merges:
            out: dict[Any, Any] = {}
            for merged in reversed(self.merges):
                if merged.kind == self.MAPPING:
                    out.update(merged.to_python())
            for m in self.members:
                out[m.key] = m.to_python()
            return out
        return super().to_python()


def _ruamel_error(doc: YamlDocument, exc: Exception) -> ReadError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).strip().splitlines()[0]
    context = getattr(exc, "context", None)
    msg = f"{context}, {problem}" if context else str(problem)
    if mark is not None:
        line, col = mark.line + 1 + doc.index.line_offset, mark.column + 1
    else:
        line, col = 1 + doc.index.line_offset, 1
    return ReadError(f"Invalid YAML: {msg}", line, col, doc.path)


def _trimmed_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1] in " \t\r\n":
        end -= 1
    return end


def parse_yaml(
    text: str, path: str = "<yaml>", *, max_nodes: int = MAX_NODES, line_offset: int = 0
) -> YamlNode:
    """Parse one YAML document; ``ReadError`` with a position when it is not valid YAML."""
    doc = YamlDocument(text, path, line_offset)
    _check_flow_depth(doc)
    _check_block_depth(doc)
    fast = _compose_libyaml(text)
    tree_nodes = None  # the nodes of a composed graph that shares none (no alias)
    if fast is not None:
        composed, classes, tree_nodes = fast
    else:
        from ruamel.yaml import YAML  # lazy: only files that are YAML pay for the import
        from ruamel.yaml.error import YAMLError
        from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

        classes = (MappingNode, ScalarNode, SequenceNode)
        yaml = YAML(typ="rt")
        try:
            composed = yaml.compose(text)
        except YAMLError as exc:
            raise _ruamel_error(doc, exc) from None
        except RecursionError:
            raise ReadError(f"Nesting too deep (more than {MAX_DEPTH} levels)", 1 + line_offset, 1,
                            path) from None
    if composed is None:
        root = YamlNode("scalar", doc, 0, 0)
        root.tag = _TAG + "null"
        doc.root = root
        return root
    # without an alias the graph is a tree: nothing recurses, and no node's expansion holds more
    # nodes than the tree (keys included), so the count can refuse nothing
    if tree_nodes is None or tree_nodes > max_nodes:
        _check_expansion(doc, composed, max_nodes, classes)
    root = _build(doc, composed, max_nodes, classes)
    doc.root = root
    return root


# -- the fast composer -------------------------------------------------------------------------
#
# libyaml (PyYAML's C parser) composes the same node graph as ruamel's pure-Python one, ~30x
# faster, with the same marks. It is used for a document it reads without complaint and with no
# ``%`` directive, tab or folded (``>``) scalar; anything else (an error, whose message and
# position ruamel gives, a version directive) goes to ruamel, and so does an empty value whose
# mark this reader cannot place where ruamel does (``_empty_value_mark``). Plain scalars get the tag ruamel's YAML 1.2 resolver gives them
# (libyaml's composer resolves YAML 1.1); ``tests/test_sources_yaml.py`` compares the two
# composers node by node on every YAML file of the test data.

# ruamel.yaml's implicit resolvers for YAML 1.2 (resolver.py), in its order, by first character
_RESOLVE_12 = [
    ("bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), "tTfF"),
    ("float", re.compile(r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
                         r"|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)"
                         r"|[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?"
                         r"|[-+]?\.(?:inf|Inf|INF)"
                         r"|\.(?:nan|NaN|NAN))$"), "-+0123456789."),
    ("int", re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+)$"), "-+0123456789"),
    ("merge", re.compile(r"^(?:<<)$"), "<"),
    ("null", re.compile(r"^(?:~|null|Null|NULL|)$"), "~nN"),
    ("timestamp", re.compile(r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
                             r"|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?"
                             r"(?:[Tt]|[ \t]+)[0-9][0-9]?"
                             r":[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?"
                             r"(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$"), "0123456789"),
    ("value", re.compile(r"^(?:=)$"), "="),
]
_BY_FIRST: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
for _kind, _rx, _firsts in _RESOLVE_12:
    for _ch in _firsts:
        _BY_FIRST.setdefault(_ch, []).append((_TAG + _kind, _rx))
_EMPTY = [(_TAG + "null", _RESOLVE_12[4][1])]


def _plain_tag(value: str) -> str:
    for tag, rx in (_BY_FIRST.get(value[0], ()) if value else _EMPTY):
        if rx.match(value):
            return tag
    return _TAG + "str"


class _Mark:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


_SKIP = re.compile(r"(?:[ \t\r\n]|#[^\n]*)*")


_BLANKS = re.compile(r"[ \t]*")


def _empty_value_mark(text: str, at: int, key: Any) -> int | None:
    """Where ruamel marks an empty value that libyaml marks at ``at`` (just after its key's
    colon), or None when this reader does not know (then ruamel reads the document). ruamel's
    parser puts it at the next token (past blank lines and comments: the next key, or where the
    mapping ends), unless a comment follows on the colon's line and the mapping goes on, which
    ruamel attaches to the colon: then just after the colon, like libyaml."""
    if not key or key.start_mark.index == key.end_mark.index:
        return None  # a sequence item, a flow collection, an empty key
    j = key.start_mark.index - 1
    while j >= 0 and text[j] in " \t\r\n":
        j -= 1
    if j >= 0 and text[j] == "?":
        return None  # an explicit key (``? key``)
    nxt = _SKIP.match(text, at).end()  # type: ignore[union-attr]
    if nxt >= len(text):
        return len(text)
    column = nxt - (text.rfind("\n", 0, nxt) + 1)
    indent = key.start_mark.column
    if text.startswith(("---", "..."), nxt) or column > indent:
        return None
    if column < indent:
        return nxt  # the mapping ends
    same_line_comment = text.startswith("#", _BLANKS.match(text, at).end())  # type: ignore[union-attr]
    return at if same_line_comment else nxt


_PROPERTY = re.compile(r"[&!][^\s,\[\]{}]*\s*")


def _tagged(text: str, start: int) -> bool:
    """Whether the node whose properties start at ``start`` has a tag (``!x``, ``!!str``) among
    them (an anchor ``&a`` alone is no tag)."""
    while text[start:start + 1] in ("&", "!"):
        if text[start] == "!":
            return True
        m = _PROPERTY.match(text, start)
        if m is None or m.end() == start:  # pragma: no cover - a property is never empty
            return False
        start = m.end()
    return False


def _compose_libyaml(text: str) -> tuple[Any, tuple, int | None] | None:
    """(the composed root, its node classes, how many nodes it has when none is reached twice
    (no alias), else None) through libyaml, or None (then ruamel reads it)."""
    try:
        import yaml
    except ImportError:  # pragma: no cover - PyYAML is a dependency
        return None
    if not getattr(yaml, "__with_libyaml__", False) or "\t" in text or "%" in text and re.search(r"(?m)^%", text):
        return None  # tabs: ruamel refuses some that libyaml takes
    try:
        composed = yaml.compose(text, Loader=yaml.CSafeLoader)
    except Exception:  # noqa: BLE001 - any complaint: ruamel reads it and says what is wrong
        return None
    if composed is None:
        return None
    from yaml.nodes import MappingNode, ScalarNode, SequenceNode

    seen: set[int] = set()
    shared = False
    stack: list[tuple[Any, Any]] = [(composed, None)]  # (node, its key when a block mapping's value)
    while stack:
        node, key = stack.pop()
        if id(node) in seen:
            shared = True
            continue
        seen.add(id(node))
        if isinstance(node, ScalarNode):
            if node.style == ">":
                return None  # ruamel marks the folds of a folded scalar in its value ("\a")
            if not node.style:
                node.style = None
                if not _tagged(text, node.start_mark.index):
                    node.tag = _plain_tag(node.value)
                if node.value == "" and node.start_mark.index == node.end_mark.index:
                    at = _empty_value_mark(text, node.start_mark.index, key)
                    if at is None:
                        return None
                    node.start_mark = node.end_mark = _Mark(at)
        elif isinstance(node, MappingNode):
            flow = bool(node.flow_style)
            for k, v in node.value:
                stack.append((k, False))  # an empty key: no block mapping's value
                stack.append((v, None if flow else k))
        else:
            stack.extend((item, False) for item in node.value)
    return composed, (MappingNode, ScalarNode, SequenceNode), None if shared else len(seen)


_FLOW_CHARS = re.compile(r'[\[\]{}"#]')


def _check_flow_depth(doc: YamlDocument) -> None:
    """Refuse absurd ``[[[[...`` nesting before ruamel's recursive composer sees it."""
    text = doc.text
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    depth = 0
    pos = 0
    n = len(text)
    while pos < n:
        m = _FLOW_CHARS.search(text, pos)
        if m is None:
            return
        c = m.group()
        pos = m.end()
        if c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line, col = doc.index.position(m.start())
                raise ReadError(f"Nesting deeper than {MAX_DEPTH} levels", line, col, doc.path)
        elif c in "]}":
            depth = max(0, depth - 1)
        elif c == '"':
            end = text.find('"', pos)
            while end != -1 and text[end - 1] == "\\":
                end = text.find('"', end + 1)
            pos = n if end == -1 else end + 1
        elif c == "#" and (m.start() == 0 or text[m.start() - 1] in " \t\n"):
            end = text.find("\n", pos)
            pos = n if end == -1 else end


_BLOCK_LINE = re.compile(r"^([ ]*)((?:-[ ]+)*)(?=[^ \n#])", re.M)


def _check_block_depth(doc: YamlDocument) -> None:
    """Refuse absurd block nesting (indentation, ``- - - x``) before ruamel's composer
    recurses into it: its scanner gets slow with depth (seconds for a few thousand levels)."""
    text = doc.text
    if text.count("\n") <= MAX_DEPTH and text.count("- ") <= MAX_DEPTH:
        return
    indents: list[int] = []
    for m in _BLOCK_LINE.finditer(text):
        indent = len(m.group(1))
        while indents and indents[-1] >= indent:
            indents.pop()
        indents.append(indent)
        depth = len(indents) + m.group(2).count("-")
        if depth > MAX_DEPTH:
            line, col = doc.index.position(m.end())
            raise ReadError(f"Nesting deeper than {MAX_DEPTH} levels", line, col, doc.path)


def _check_expansion(doc: YamlDocument, top: Any, max_nodes: int, classes: tuple) -> None:
    """Count the nodes the tree has once aliases are expanded, without expanding them; refuse
    recursive aliases and alias bombs."""
    MappingNode, _, SequenceNode = classes

    size: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(top, False)]
    while stack:
        node, done = stack.pop()
        nid = id(node)
        if done:
            active.discard(nid)
            if isinstance(node, MappingNode):
                kids = [v for _, v in node.value]
            elif isinstance(node, SequenceNode):
                kids = node.value
            else:
                kids = []
            total = 1 + sum(size[id(k)] for k in kids)
            size[nid] = total
            if total > max_nodes:
                line, col = doc.index.position(node.start_mark.index)
                raise ReadError(
                    f"YAML aliases expand to more than {max_nodes} nodes (alias bomb?)",
                    line, col, doc.path,
                )
            continue
        if nid in size:
            continue
        if nid in active:
            line, col = doc.index.position(node.start_mark.index)
            raise ReadError("Recursive YAML alias", line, col, doc.path)
        active.add(nid)
        stack.append((node, True))
        if isinstance(node, MappingNode):
            stack.extend((v, False) for _, v in node.value if id(v) not in size)
        elif isinstance(node, SequenceNode):
            stack.extend((v, False) for v in node.value if id(v) not in size)


def _build(doc: YamlDocument, top: Any, max_nodes: int, classes: tuple) -> YamlNode:
    MappingNode, ScalarNode, SequenceNode = classes

    text = doc.text
    created: list[YamlNode] = []
    seen: set[int] = set()
    # (composed node, parent YamlNode or None, key info or None, ancestors' ids)
    root: YamlNode | None = None
    work: list[tuple[Any, YamlNode | None, tuple | None, frozenset[int], int]] = [
        (top, None, None, frozenset(), 0)
    ]
    while work:
        cnode, parent, keyinfo, ancestors, depth = work.pop()
        if depth > MAX_DEPTH:
            line, col = doc.index.position(cnode.start_mark.index)
            raise ReadError(f"Nesting deeper than {MAX_DEPTH} levels", line, col, doc.path)
        if len(created) >= max_nodes:
            line, col = doc.index.position(cnode.start_mark.index)
            raise ReadError(
                f"YAML aliases expand to more than {max_nodes} nodes (alias bomb?)",
                line, col, doc.path,
            )
        start, end = cnode.start_mark.index, cnode.end_mark.index
        is_alias = id(cnode) in seen
        seen.add(id(cnode))
        if isinstance(cnode, ScalarNode):
            node = YamlNode("scalar", doc, start, end)
            node.style = cnode.style
            node.tag = cnode.tag
            if cnode.style in ("|", ">"):
                node.end = _trimmed_end(text, start, end)
            explicit = text[start:start + 1] == "!"
            try:
                if explicit:
                    node.value = _explicit(cnode.tag, cnode.value)
                elif cnode.style is None:
                    node.value = resolve_plain(cnode.value)
                else:
                    node.value = cnode.value
            except ValueError as exc:  # an integer past Python's digit limit (4300)
                line, col = doc.index.position(start)
                digits = sum(ch.isdigit() for ch in cnode.value)
                raise ReadError(f"an integer with {digits} digits: Python reads at most "
                                f"{getattr(sys, 'get_int_max_str_digits', lambda: 4300)()} ({exc.__class__.__name__}"
                                f" in yaml.safe_load too)", line, col, doc.path) from None
        elif isinstance(cnode, MappingNode):
            node = YamlNode("mapping", doc, start, end)
            node.flow = bool(cnode.flow_style)
            node.tag = cnode.tag
        elif isinstance(cnode, SequenceNode):
            node = YamlNode("sequence", doc, start, end)
            node.flow = bool(cnode.flow_style)
            node.tag = cnode.tag
        else:  # pragma: no cover - composer yields only these three
            raise ReadError("Unsupported YAML node", 1, 1, doc.path)
        node.alias = is_alias
        created.append(node)
        if parent is None:
            root = node
        elif keyinfo is not None:
            key, ks, ke, merge = keyinfo
            node.parent = parent
            if merge:
                if node.kind == "sequence":  # << : [*a, *b]
                    parent.merges.extend(node.items)
                else:
                    parent.merges.append(node)
            else:
                node.key, node.key_start, node.key_end = key, ks, ke
                parent.members.append(node)
        else:
            node.parent = parent
            parent.items.append(node)
        inner = ancestors
        if isinstance(cnode, MappingNode):
            firsts: dict[Any, tuple[int, int, Any]] = {}
            children = []
            for knode, vnode in cnode.value:
                ks, ke = knode.start_mark.index, knode.end_mark.index
                merge = knode.tag == _TAG + "merge"
                if isinstance(knode, ScalarNode):
                    try:
                        key = resolve_plain(knode.value) if knode.style is None else knode.value
                    except ValueError:  # an integer key past the digit limit: keep its text
                        key = knode.value
                    key = key if isinstance(key, str) else str(knode.value)
                else:
                    key = text[ks:ke]
                if not merge and not is_alias:
                    if key in firsts:
                        fs, fe, fvalue = firsts[key]
                        same = (isinstance(fvalue, ScalarNode) and isinstance(vnode, ScalarNode)
                                and fvalue.tag == vnode.tag and fvalue.value == vnode.value)
                        doc.problems.append(ReadProblem(
                            "duplicate-key-same" if same else "duplicate-key",
                            f"Duplicate key {key!r} with the same value: harmless today, but an edit of "
                            f"one copy is silently overridden by the other" if same else
                            f"Duplicate key {key!r}: PyYAML keeps the later value silently",
                            doc.span(ks, ke), related=doc.span(fs, fe),
                        ))
                    else:
                        firsts[key] = (ks, ke, vnode)
                children.append((vnode, node, (key, ks, ke, merge), inner, depth + 1))
            work.extend(reversed(children))
        elif isinstance(cnode, SequenceNode):
            work.extend(
                (item, node, None, inner, depth + 1) for item in reversed(cnode.value)
            )
    assert root is not None
    # Block collections: end at their last content (the composer's end mark runs on to the
    # next token, past comments and blank lines). Children come after parents in `created`.
    for node in reversed(created):
        if node.kind != "scalar" and not node.flow and not node.alias:
            last = max(
                [c.end for c in node.members] + [c.end for c in node.items]
                + [c.end for c in node.merges] + [node.start],
            )
            node.end = max(node.start, last) if (node.members or node.items or node.merges) \
                else _trimmed_end(text, node.start, node.end)
    return root


# -- edits ----------------------------------------------------------------------------------


def yaml_scalar_text(value: Any) -> str:
    """A Python scalar as YAML text that PyYAML reads back as the same value."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        r = repr(value)
        if r in ("inf", "-inf", "nan"):
            return {"inf": ".inf", "-inf": "-.inf", "nan": ".nan"}[r]
        if "e" in r and "." not in r.split("e")[0]:
            mant, exp = r.split("e")
            r = f"{mant}.0e{exp}"
        if "e" in r and r.split("e")[1][0] not in "+-":
            mant, exp = r.split("e")
            r = f"{mant}e+{exp}"
        return r
    s = str(value)
    if (
        s
        and resolve_plain(s) == s
        and not re.search(r"[:#{}\[\],&*!|>'\"%@`]|^[-?\s]|\s$", s)
    ):
        return s
    return json.dumps(s)


def replace_scalar_edit(node: YamlNode, new_text: str) -> Edit:
    """Replace a scalar (with its quotes, or a block scalar with its indicator) by
    ``new_text``; comments after it on the line stay."""
    return node.span.edit(new_text)


def _member(mapping: YamlNode, key: str | YamlNode) -> YamlNode:
    if isinstance(key, YamlNode):
        return key
    for m in reversed(mapping.members):
        if m.key == key:
            return m
    raise KeyError(key)


def remove_key_edit(mapping: YamlNode, key: str | YamlNode) -> Edit:
    """Remove a member. Block style: its lines (the key's line through its value's last
    line, with a comment on those lines); comments on lines of their own stay. Flow style:
    the member and one comma."""
    member = _member(mapping, key)
    doc = mapping.doc
    idx = doc.index
    text = doc.text
    if mapping.flow:
        i = mapping.members.index(member)
        if len(mapping.members) == 1:
            return idx.edit(mapping.start + 1, mapping.end - 1, "")
        if i + 1 < len(mapping.members):
            return idx.edit(member.key_start, mapping.members[i + 1].key_start, "")
        return idx.edit(mapping.members[i - 1].end, member.end, "")
    start = idx.line_start(member.key_start)
    if text[start:member.key_start].strip():
        # key after "- " of a sequence item or in a compact mapping: remove from the key on
        start = member.key_start
    end = idx.line_end(max(member.end, member.key_end))
    end = min(end + 1, len(text))
    return idx.edit(start, end, "")


def insert_key_edit(mapping: YamlNode, key: str, value_text: str) -> Edit:
    """Add ``key: value_text`` as the last member, at the members' indentation (block) or as
    ``, key: value`` (flow). A multi-line ``value_text`` is indented under the key."""
    doc = mapping.doc
    idx = doc.index
    text = doc.text
    key_text = yaml_scalar_text(key)
    if mapping.flow or (mapping.kind == "mapping" and not mapping.members and mapping.raw):
        if mapping.members:
            last = mapping.members[-1]
            return idx.edit(last.end, last.end, f", {key_text}: {value_text}")
        return idx.edit(mapping.start + 1, mapping.end - 1, f"{key_text}: {value_text}")
    if mapping.members:
        first = mapping.members[0]
        col = first.key_start - idx.line_start(first.key_start)
        indent = " " * col
        last = mapping.members[-1]
        at = idx.line_end(max(last.end, last.key_end))
    else:  # an empty document
        indent = ""
        at = len(text.rstrip("\n"))
    if "\n" in value_text.strip("\n"):
        lines = value_text.strip("\n").split("\n")
        body = ":\n" + "\n".join(indent + "  " + line for line in lines)
    else:
        body = ": " + value_text.strip("\n")
    new_line = f"{indent}{key_text}{body}"
    if at >= len(text):
        prefix = "\n" if text and not text.endswith("\n") else ""
        return idx.edit(len(text), len(text), f"{prefix}{new_line}\n")
    return idx.edit(at + 1, at + 1, f"{new_line}\n")
