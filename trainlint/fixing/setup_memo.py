"""The findings of a setup, kept across the passes of one ``fix`` by what the rules can see.

After a pass's fixes, the next pass links the whole group of files again (linking is global:
a change in one module can change what another script links to), and then, for each of its
setups, looks up the findings the rules gave a setup with the same *digest* in an earlier
pass. Only a setup whose digest is new runs the rules. The digest covers everything a rule
can read from the setup once linking is done:

* every field of the setup and of the objects it holds (sites, values, spans, consumers,
  launch lines, configs, ``extra``), walked through their attributes, lists, dicts and sets;
* each document it reaches: its path and the digest of its text (a document whose text a
  fix changed never matches), and, for a Python file, every attribute except those its
  reader fills and linking leaves alone (``PYTHON_READ``, the same objects in every pass:
  the tree, the index) and the indexes of the tree made on first use (``PYTHON_CACHES``);
  so what linking added (classes and objects from other modules, the
  training calls found again with them, the sites' consumers) is in the digest;
* a syntax tree node, a scope or a binding by its kind and position (its file's text is in
  the digest through the document or the span that leads to it);
* the names of the rules that run on the setup, in their order.

An object the walk does not know (a type from outside trainlint that is not a plain value or
container) makes the setup's digest None: its rules run. What the rules read from outside the
workspace (``trainlint.reads``) is kept with the findings and noted again on a hit, so the
check's dependencies are the same as a run of the rules would give; a setup whose rules read
a file a fix changed runs again.

Stage: checking (imports the model and the readers' types only).
"""

from __future__ import annotations

import ast
import enum
import hashlib
import os
from pathlib import PurePath
from typing import Any

from trainlint import reads

# A Python file's attributes that its reader sets and nothing later changes (the tree, the
# index built from it, the line lists): the same objects in every pass for the same text.
PYTHON_READ = frozenset({
    "path", "text", "tree", "_lines", "_ast_lines", "_load_counts", "_all_nodes", "_statement_nodes",
    "_attribute_nodes", "_mutated_in", "imports", "module_scope", "calls", "statements", "scope_of_def",
    "_cli_options", "_args_keywords",
    # the index walk's results and the tree's lookups, made on first use (``sources.python``)
    "_walked", "_attrs", "_names", "_module_scope", "_calls", "_statements", "_scope_of_def",
    "_by_attr", "_by_call_name", "_call_pos", "_name_nodes", "_nfkc",
})
# Indexes of the tree alone that a Python file builds on first use (statements by type, the
# version guards by ``id`` of their function, the string statements and classes by position).
# Every other cache (what ``trainlint.consumers`` finds while linking: the parser uses, the
# patchers) is walked with the rest.
PYTHON_CACHES = frozenset({"_by_type", "_stmts_by_type", "_guard_calls", "_text_regions"})

_PLAIN = frozenset({str, int, float, complex, bool, type(None), bytes})


class Unknown(Exception):
    """The walk met an object it cannot describe: the setup has no digest."""


class _Digest:
    """One child process's digests: of texts by path, and of documents by object (the setups'
    digests are all made right after linking, before any rule runs, so no object changes
    between them)."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self.text_digests: dict[str, str] = {}
        self.docs: dict[int, Any] = {}  # id -> (digest, documents it reaches); line indexes -> digest
        self._keep: list[Any] = []  # the documents digested (their ids stay theirs)

    def text_of(self, path: str) -> str:
        d = self.text_digests.get(path)
        if d is None:
            text = self.texts.get(path)
            d = "-" if text is None else self.digest_text(text)
            self.text_digests[path] = d
        return d

    def index_digest(self, index: Any) -> str:
        d = self.docs.get(id(index))
        if d is None:
            d = self.docs[id(index)] = self.digest_text(index.text)
            self._keep.append(index)
        return d

    def digest_text(self, text: str) -> str:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()

    def setup(self, setup: Any, rule_codes: tuple[str, ...]) -> str | None:
        out: list[str] = [",".join(rule_codes)]
        try:
            walk = _Walk(self, out)
            walk.setup(setup)
            # every document the setup reaches, and those they reach, each by its own digest
            queue = list(walk.reached.values())
            seen = {id(doc) for doc in queue}
            for doc in queue:  # grows while it is read
                digest, refs = self.document(doc)
                out.append(digest)
                for other in refs:
                    if id(other) not in seen:
                        seen.add(id(other))
                        queue.append(other)
        except Exception:  # noqa: BLE001 - Unknown, RecursionError, anything odd: its rules run
            return None
        return hashlib.blake2b("\x00".join(out).encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()

    def document(self, doc: Any) -> tuple[str, tuple[Any, ...]]:
        """The digest of a document's own attributes (a document it holds stands there by its
        path and text; it is returned among the documents it reaches)."""
        found = self.docs.get(id(doc))
        if found is None:
            out: list[str] = []
            walk = _Walk(self, out)
            try:
                walk.document(doc)
            except BaseException:
                self.docs[id(doc)] = _FAILED  # every setup that reaches it has no digest
                raise
            digest = hashlib.blake2b("\x00".join(out).encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()
            found = self.docs[id(doc)] = (digest, tuple(d for i, d in walk.reached.items() if i != id(doc)))
            self._keep.append(doc)
        if found is _FAILED:
            raise Unknown(f"document {doc.path!r}")
        return found


_FAILED = ("\x00failed", ())


def _is_document_type(t: type) -> bool:
    """A reader's document (the workspace holds its text): one of ``_DOCUMENT_TYPES`` or a JSON
    or YAML text (``sources.tree.Document``)."""
    from trainlint.sources.tree import Document

    return issubclass(t, Document) or (t.__name__ in _DOCUMENT_TYPES and t.__module__.startswith("trainlint.sources."))


# The readers' documents (``ParsedFile.doc`` of each kind), walked once per process each.
_DOCUMENT_TYPES = frozenset({
    "PythonFile", "Notebook", "MarkdownDoc", "ShellScript", "AccelerateConfig", "ArgsFile", "DeepSpeedConfig",
})
_DOCUMENT_READ = frozenset({"text", "index"})  # the text itself (digested) and its line index


class _Walk:
    def __init__(self, digest: _Digest, out: list[str]) -> None:
        self.d = digest
        self.out = out
        self.seen: dict[int, int] = {}  # id -> order of first visit (shared objects, cycles)
        self.reached: dict[int, Any] = {}  # the documents met, in order

    def setup(self, setup: Any) -> None:
        sites = getattr(setup, "all_sites", [])
        index = {id(s): i for i, s in enumerate(sites)}
        items = {n: getattr(setup, n) for n in _slots(type(setup)) if hasattr(setup, n)}
        items.update(vars(setup) if hasattr(setup, "__dict__") else {})
        if not items:
            raise Unknown(type(setup).__name__)
        for name, value in sorted(items.items()):
            self.out.append(name)
            if name == "files" and isinstance(value, list):  # each file's text too
                self.out.extend(f"{p!r}:{self.d.text_of(p)}" if type(p) is str else repr(p) for p in value)
                continue
            if name == "extra" and isinstance(value, dict):
                for k, v in value.items():
                    self.out.append(f"x:{k}")
                    if k == "site_refs" and isinstance(v, dict):
                        # keyed by ``id(site)``: the site's place among the setup's sites instead
                        for site_id, ref in v.items():
                            self.out.append(f"site#{index.get(site_id, -1)}")
                            self.value(ref)
                    else:
                        self.value(v)
                continue
            self.value(value)

    def document(self, doc: Any) -> None:
        path = doc.path
        self.out.append(f"doc:{type(doc).__name__}:{path}:{self.d.text_of(path)}")
        python = type(doc).__name__ == "PythonFile"
        items = {n: getattr(doc, n) for n in _slots(type(doc)) if hasattr(doc, n)}
        items.update(vars(doc) if hasattr(doc, "__dict__") else {})
        for name, value in sorted(items.items()):
            if name in _DOCUMENT_READ or python and (name in PYTHON_READ or name in PYTHON_CACHES):
                continue
            self.field(name, value)

    def value(self, o: Any) -> None:
        t = type(o)
        if t in _PLAIN:
            self.out.append(repr(o))  # repr tells 1, 1.0, True and "1" apart
            return
        kind = _KINDS.get(t)
        if kind is None:
            kind = _KINDS[t] = _kind(t)
        if kind == "span":  # the most common object: one token
            self.out.append(f"@{o.path!r}:{self.d.text_of(o.path)}:{o.line}:{o.column}-{o.end_line}:{o.end_column}")
            return
        if kind == "enum":
            self.out.append(f"enum:{o!r}")
            return
        if kind == "ast":
            self.out.append(_position(o))
            return
        if kind == "purepath":
            self.out.append(f"path:{o}")
            return
        if kind == "type":
            self.out.append(f"type:{o.__module__}.{o.__qualname__}")
            return
        i = id(o)
        if i in self.seen:
            self.out.append(f"ref:{self.seen[i]}")
            return
        self.seen[i] = len(self.seen)
        if kind == "document" and isinstance(getattr(o, "path", None), str):  # by its path and text; its digest follows
            self.reached.setdefault(i, o)
            self.out.append(f"doc:{t.__name__}:{o.path!r}:{self.d.text_of(o.path)}")
        elif kind == "sequence":
            out = self.out
            out.append(f"{t.__name__}[{len(o)}")
            for x in o:
                if type(x) in _PLAIN:  # the most common items: no call
                    out.append(repr(x))
                else:
                    self.value(x)
            out.append("]")
        elif kind == "dict":
            out = self.out
            out.append(f"{t.__name__}{{{len(o)}")
            for k, v in o.items():
                if type(k) in _PLAIN:
                    out.append(repr(k))
                else:
                    self.value(k)
                if type(v) in _PLAIN:
                    out.append(repr(v))
                else:
                    self.value(v)
            out.append("}")
        elif kind == "set":
            if not all(type(x) in _PLAIN for x in o):
                raise Unknown(t.__name__)
            self.out.append(f"{t.__name__}{{{sorted(repr(x) for x in o)}}}")
        elif kind == "tree":  # a value of a JSON/YAML text: its place in the document
            path = getattr(o.doc, "path", "")
            self.out.append(f"{t.__name__}:{path!r}:{self.d.text_of(path)}:{o.kind}:{o.start}-{o.end}:{o.key!r}")
        elif kind == "lines":  # a text's line index: made from the text by its reader
            self.out.append(f"LineIndex:{self.d.index_digest(o)}:{o.path!r}:{o.line_offset}")
        elif kind == "index":  # a scope or binding of a Python file's index (its reader's, never changed)
            node = getattr(o, "node", None)
            self.out.append(f"{t.__name__}:{getattr(o, 'kind', '')}:{getattr(o, 'name', '')}:"
                            f"{_position(node) if isinstance(node, ast.AST) else ''}")
        elif kind == "object" or kind == "document":
            out = self.out
            out.append(f"{t.__module__}.{t.__name__}(")
            own = getattr(o, "__dict__", None)
            if own:
                for k, v in sorted(own.items()):
                    self.field(k, v)
            for k in _slots(t):
                try:
                    v = getattr(o, k)
                except AttributeError:
                    continue
                if type(v) in _PLAIN and k != "path":  # ``field`` without the call
                    out.append(k)
                    out.append(repr(v))
                else:
                    self.field(k, v)
            out.append(")")
        else:
            raise Unknown(f"{t.__module__}.{t.__name__}")

    def field(self, name: str, value: Any) -> None:
        self.out.append(name)
        if name == "path" and type(value) is str:  # a site, a launch line: its file's text too
            self.out.append(f"{value!r}:{self.d.text_of(value)}")
            return
        self.value(value)


_KINDS: dict[type, str] = {}


def _kind(t: type) -> str:
    """How the walk describes an object of type ``t``."""
    from trainlint.diagnostics import Span
    from trainlint.sources.errors import LineIndex
    from trainlint.sources.tree import TreeNode

    if issubclass(t, Span):
        return "span"
    if issubclass(t, enum.Enum):
        return "enum"
    if issubclass(t, ast.AST):
        return "ast"
    if issubclass(t, PurePath):
        return "purepath"
    if issubclass(t, type):
        return "type"
    if t is list or t is tuple or issubclass(t, tuple):  # NamedTuple records (``CallSite``) too
        return "sequence"
    if issubclass(t, dict):
        return "dict"
    if issubclass(t, (set, frozenset)):
        return "set"
    if issubclass(t, TreeNode):
        return "tree"
    if issubclass(t, LineIndex):
        return "lines"
    if not t.__module__.startswith("trainlint."):
        return "unknown"
    if t.__module__ == "trainlint.sources.python" and t.__name__ in ("Scope", "Binding"):
        return "index"
    if _is_document_type(t):
        return "document"
    return "object"


def _position(node: ast.AST) -> str:
    return (f"{type(node).__name__}@{getattr(node, 'lineno', '')}:{getattr(node, 'col_offset', '')}-"
            f"{getattr(node, 'end_lineno', '')}:{getattr(node, 'end_col_offset', '')}")


_SLOTS: dict[type, tuple[str, ...]] = {}


def _slots(t: type) -> tuple[str, ...]:
    found = _SLOTS.get(t)
    if found is None:
        names: list[str] = []
        for cls in t.__mro__:
            s = cls.__dict__.get("__slots__", ())
            for n in (s,) if isinstance(s, str) else s:
                if n not in ("__dict__", "__weakref__") and n not in names:
                    names.append(n)
        found = _SLOTS[t] = tuple(names)
    return found


class SetupMemo:
    """Findings by setup digest, across the passes of one ``fix`` (``checking.Reuse`` keeps
    it; each pass's child adds what it computed, ``added``)."""

    def __init__(self) -> None:
        self.entries: dict[str, tuple[list[Any], frozenset[str]]] = {}
        self.added: dict[str, tuple[list[Any], frozenset[str]]] = {}
        self.hits = 0
        self._digest: _Digest | None = None
        self._changed: frozenset[str] = frozenset()

    def start(self, ws: Any) -> None:
        """A new check of ``ws`` (its texts are the ones digested)."""
        self._digest = _Digest({p: f.text.text for p, f in ws.files.items()})
        self._changed = frozenset(ws.overlay)

    def key(self, setup: Any, rule_codes: tuple[str, ...]) -> str | None:
        assert self._digest is not None
        return self._digest.setup(setup, rule_codes)

    def get(self, key: str | None) -> list[Any] | None:
        if key is None:
            return None
        hit = self.entries.get(key) or self.added.get(key)
        if hit is None:
            return None
        found, seen = hit
        if any(p in self._changed or os.path.normpath(p) in self._changed for p in seen):
            return None  # its rules read a file whose text a fix changed
        for p in seen:
            reads.note(p)
        self.hits += 1
        return found

    def put(self, key: str | None, found: list[Any], seen: set[str]) -> None:
        if key is not None:
            self.added[key] = (list(found), frozenset(seen))

    def merge(self, added: dict[str, tuple[list[Any], frozenset[str]]]) -> None:
        self.entries.update(added)
