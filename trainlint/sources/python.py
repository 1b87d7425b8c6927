"""Reading a Python training script without running it.

The check path reads Python with the standard library's ``ast`` (exact start and end positions,
~10x faster than a libcst parse on this project's CI machine, see shared/perf-anchors.md); libcst
is used only when a fix is written. This module answers the questions every rule asks:

* which local names are which library objects (``import transformers as tf``,
  ``from transformers import TrainingArguments as TA``, ``from trl import SFTConfig``), plus
  classes defined in the file that subclass them;
* which calls build TrainingArguments-like objects and Trainer-like objects, with each keyword's
  value resolved through literals, module constants, names bound once, ``**{...}``,
  ``**dict(...)`` and ``dict(..., **other)``;
* what a name was bound to, in which scope, and in what order statements run.

A value that cannot be resolved is ``UNKNOWN``: never guessed.
"""

from __future__ import annotations

import _symtable
import ast
import bisect
import operator
import re
import sys
from typing import Any, Container, Iterable, Iterator

from trainlint.lazyre import lazy
from trainlint.diagnostics import Span
from trainlint.record import Record, Row
from trainlint.sources import pruning
from trainlint.setup import PYTHON, UNKNOWN, ArgsSite, Value

# --- what the libraries export -------------------------------------------------------------

TRAINING_ARGS_CLASSES = {
    "TrainingArguments",
    "Seq2SeqTrainingArguments",
}
TRL_CONFIG_CLASSES = {
    "SFTConfig", "DPOConfig", "GRPOConfig", "RewardConfig", "PPOConfig", "KTOConfig",
    "ORPOConfig", "CPOConfig", "OnlineDPOConfig", "RLOOConfig", "GKDConfig", "PRMConfig",
    "BCOConfig", "NashMDConfig", "XPOConfig", "IterativeSFTConfig",
}
TRAINER_CLASSES = {"Trainer", "Seq2SeqTrainer"}
TRL_TRAINER_CLASSES = {
    "SFTTrainer", "DPOTrainer", "GRPOTrainer", "RewardTrainer", "PPOTrainer", "KTOTrainer",
    "ORPOTrainer", "CPOTrainer", "OnlineDPOTrainer", "RLOOTrainer", "GKDTrainer", "PRMTrainer",
    "BCOTrainer", "NashMDTrainer", "XPOTrainer", "IterativeSFTTrainer",
}
# Names that, when not bound in the file at all, still mean the library class (snippets,
# notebooks exported without their import cell).
_CANONICAL_UNBOUND = TRAINING_ARGS_CLASSES | TRL_CONFIG_CLASSES | TRAINER_CLASSES | TRL_TRAINER_CLASSES
# a part every one of those names holds (``_may_call_library_class`` finds them by it)
_CANONICAL_WORDS = ("Trainer", "Arguments", "Config")
# what may stand between a called name and its ``(``: spaces and line breaks, comments,
# backslash continuations, the ``)`` of a parenthesized name (``(SFTTrainer)(...)``)
_CALL_TAIL = lazy(r"(?:[\s)]|\\\r?\n|#[^\r\n]*(?=[\r\n]|\Z))*\(")


def _is_ident_char(c: str) -> bool:
    return c.isalnum() or c == "_" or (not c.isascii() and ("a" + c).isidentifier())


def _call_hits(text: str, words: Iterable[str], names: Container[str]) -> Iterator[tuple[int, int]]:
    """The (start, end) of each identifier of ``names`` that holds one of ``words`` and stands
    in ``text`` before a ``(`` (``_CALL_TAIL`` between): the whole identifier around each
    occurrence of a word is asked (the libraries' names by the words they hold; other names by
    themselves). By word, then by position."""
    n = len(text)
    tail = _CALL_TAIL.match
    for word in words:
        i = text.find(word)
        while i >= 0:
            start, end = i, i + len(word)
            while start and _is_ident_char(text[start - 1]):
                start -= 1
            while end < n and _is_ident_char(text[end]):
                end += 1
            if text[start:end] in names and tail(text, end):
                yield start, end
            i = text.find(word, end)


# Every TRL config's name is a head and ``Config``: ``_holds_trl_config`` finds them by it.
_TRL_CONFIG_HEADS = tuple(sorted(n[:-len("Config")] for n in TRL_CONFIG_CLASSES))
assert all(h + "Config" in TRL_CONFIG_CLASSES for h in _TRL_CONFIG_HEADS) and len(_TRL_CONFIG_HEADS) == len(TRL_CONFIG_CLASSES)


def may_name_library_class(text: str) -> bool:
    """Whether ``text`` holds the name of a TrainingArguments-like or Trainer-like class (every
    TRL config's name holds ``Config``, every trainer's ``Trainer``): without one, no class of a
    file of that text derives from one and no call builds one (before ``link_repository``)."""
    return "Trainer" in text or "TrainingArguments" in text or _holds_trl_config(text)


def _holds_trl_config(text: str) -> bool:
    """``any(name in text for name in TRL_CONFIG_CLASSES)`` in one pass over ``text``: each
    ``Config`` in it is asked whether one of the names' heads stands right before it (not
    one scan of the whole text per name)."""
    i = text.find("Config")
    while i >= 0:
        if text.endswith(_TRL_CONFIG_HEADS, 0, i):
            return True
        i = text.find("Config", i + 6)
    return False


def _lib_class(qualname: str) -> tuple[str, str] | None:
    """``transformers.training_args.TrainingArguments`` -> ("args", "TrainingArguments")."""
    head, _, last = qualname.rpartition(".")
    root = head.split(".", 1)[0] if head else ""
    if root == "transformers":
        if last in TRAINING_ARGS_CLASSES:
            return ("args", last)
        if last in TRAINER_CLASSES:
            return ("trainer", last)
    elif root == "trl":
        if last in TRL_CONFIG_CLASSES:
            return ("args", last)
        if last in TRL_TRAINER_CLASSES:
            return ("trainer", last)
    return None


# --- scopes and bindings -------------------------------------------------------------------


_AST_LINE = lazy(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
# the line breaks of ``str.splitlines`` that ast does not break lines at: without them in a
# text, both splits are the same list
_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # one ``in`` each: no pattern to compile


def _other_break_in(text: str) -> bool:
    return any(c in text for c in _OTHER_BREAKS)


_AST = ast.AST
# Leaf singletons (Load/Store, operators): nothing under them, never asked about.
_LEAF_TYPES = frozenset(c for base in (ast.expr_context, ast.operator, ast.boolop, ast.cmpop, ast.unaryop)
                        for c in base.__subclasses__())
_Name, _Constant = ast.Name, ast.Constant
_EMPTY: list = []  # what the indexes of ``PythonFile`` give for a name they do not hold (never mutated)


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))`` without the context/operator leaves, several times
    faster (the stdlib version is three nested generators; this is the hottest loop)."""
    t = type(node)
    if t is _Name or t is _Constant:
        return []
    out: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if type(value) is list:
            for x in value:
                if isinstance(x, _AST) and type(x) not in _LEAF_TYPES:
                    out.append(x)
        elif isinstance(value, _AST) and type(value) not in _LEAF_TYPES:
            out.append(value)
    return out


def walk_nodes(root: ast.AST) -> list[ast.AST]:
    """Every node under ``root`` in ``ast.walk`` order (breadth first), without the
    context/operator leaves."""
    out = [root]
    i = 0
    while i < len(out):
        out.extend(child_nodes(out[i]))
        i += 1
    return out


# The nodes that hold statements, and the fields they hold them in: the statements are reached
# without walking an expression (none holds a statement).
_STRUCTURAL = (ast.stmt, ast.excepthandler, ast.match_case)
_BODY_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})
_BODIES: dict[type, tuple[str, ...]] = {}


def _concrete(base: type) -> set[type]:
    out = set()
    todo = [base]
    while todo:
        t = todo.pop()
        out.add(t)
        todo.extend(t.__subclasses__())
    return out


# the exact types a body list holds (the filter below is asked only of a list with another)
_STRUCTURAL_TYPES = frozenset(t for base in _STRUCTURAL for t in _concrete(base))


def statement_nodes(root: ast.AST) -> list[ast.AST]:
    """``root`` and the statements under it (with their ``except`` handlers and ``case``
    clauses), in ``walk_nodes`` order: the order of a breadth-first walk is the same on the
    part of the tree that holds them."""
    out = [root]
    bodies = _BODIES
    structural = _STRUCTURAL_TYPES.issuperset
    for node in out:  # the list grows while it is read: breadth first
        t = type(node)
        fields = bodies.get(t)
        if fields is None:
            fields = bodies[t] = tuple(f for f in t._fields if f in _BODY_FIELDS)
        if not fields:  # most statements: no body
            continue
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list and value:
                if structural(map(type, value)):
                    out.extend(value)
                else:
                    out.extend([x for x in value if isinstance(x, _STRUCTURAL)])
    return out


# What the index walk (``PythonFile._walk_index``) does with a node, by its exact type.
_K_LEAF, _K_NAME, _K_CTX, _K_CALL, _K_ATTR, _K_STMT, _K_DEF, _K_CLASS, _K_ENTER, _K_LAMBDA, _K_NAMED, _K_NODE = range(12)
_INDEX_KIND: dict[type, int] = {}
# The fields the index walk looks under, by type: every field but names, numbers, strings and
# the Load/Store/operator leaves (``child_nodes``'s children, without the ones that never hold
# what the index notes: aliases, the names of ``global``).
_NOT_UNDER = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "name", "module", "level", "kind", "type_comment",
                        "conversion", "is_async", "simple", "tag", "lineno", "kwd_attrs", "rest"})
_INDEX_FIELDS: dict[type, Any] = {}


def _note_header(nodes: list[ast.AST], attrs: list[ast.Attribute], names: list[ast.Name]) -> None:
    """The ``x.y`` and names among ``nodes`` (the top of a decorator, a default, a base; every
    node of an annotation), which the index walk does not visit."""
    for n in nodes:
        t = type(n)
        if t is ast.Attribute:
            attrs.append(n)  # type: ignore[arg-type]
        elif t is _Name:
            names.append(n)  # type: ignore[arg-type]


class _Enter:
    """On the index walk's stack: the body of a function or class, entered after its header."""

    __slots__ = ("node", "kind")

    def __init__(self, node: ast.AST, kind: str) -> None:
        self.node = node
        self.kind = kind


def _index_kind(t: type) -> int:
    if t is tuple:
        k = _K_CTX
    elif t is _Enter:
        k = _K_ENTER
    elif t is _Name:
        k = _K_NAME
    elif not issubclass(t, _AST) or t is _Constant or t in _LEAF_TYPES:
        k = _K_LEAF
    elif t is ast.FunctionDef or t is ast.AsyncFunctionDef:
        k = _K_DEF
    elif t is ast.ClassDef:
        k = _K_CLASS
    elif issubclass(t, ast.stmt):
        k = _K_STMT
    else:
        k = {ast.Call: _K_CALL, ast.Attribute: _K_ATTR, ast.Lambda: _K_LAMBDA,
             ast.NamedExpr: _K_NAMED}.get(t, _K_NODE)
    _INDEX_KIND[t] = k
    return k


def _fields_under(t: type) -> tuple[str, ...]:
    """The fields of ``t`` the index walk looks under, last to first (pushed in that order, so
    that the first field's nodes are visited first)."""
    if t in (ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom, ast.MatchSingleton):
        return ()
    return tuple(f for f in t._fields if f not in _NOT_UNDER)[::-1]


def _index_fields(t: type) -> Any:
    """What gives the values of ``_fields_under(t)`` of a node: the field's name when there is
    one (``Expr``, ``Return``, ``keyword``, ``Starred``: read with ``getattr``), else what
    reads them all as a tuple in one call."""
    fields = _fields_under(t)
    if len(fields) == 1:
        get: Any = fields[0]
    elif fields:
        get = operator.attrgetter(*fields)
    else:
        get = lambda node: ()  # noqa: E731
    _INDEX_FIELDS[t] = get
    return get


# The statements that bind names (``PythonFile._bind_stmt``), by exact type.
_BINDS: dict[type, str] = {
    ast.Assign: "assign", ast.AnnAssign: "annassign", ast.AugAssign: "augassign", ast.For: "for",
    ast.AsyncFor: "for", ast.With: "with", ast.AsyncWith: "with", ast.FunctionDef: "def",
    ast.AsyncFunctionDef: "def", ast.ClassDef: "class", ast.Import: "import", ast.ImportFrom: "import",
    ast.Global: "global", ast.Try: "try",
}


class Binding(Row):  # a row (trainlint.record): cheaper to define than a NamedTuple
    """One place where a name is bound in a scope."""

    __slots__ = ()
    _fields = ("name", "node", "value", "kind")
    name: str
    node: ast.AST  # the statement or target that binds
    value: ast.expr | None  # the assigned expression, when it is a plain ``name = value``
    kind: str  # assign, annassign, augassign, for, with, import, def, class, param, other

    def __new__(_cls, name: str, node: ast.AST, value: ast.expr | None, kind: str) -> Binding:
        return tuple.__new__(_cls, (name, node, value, kind))


class Scope(Record):
    """A module, function, class, lambda or comprehension scope and its bindings."""

    __slots__ = ("node", "parent", "kind", "bindings", "globals_", "__dict__")
    node: ast.AST
    parent: Scope | None
    kind: str  # module, function, class, lambda, comprehension
    bindings: dict[str, list[Binding]]
    globals_: set[str]

    def __init__(self, node: ast.AST, parent: Scope | None, kind: str, bindings: dict[str, list[Binding]] | None = None,
                 globals_: set[str] | None = None) -> None:
        self.node = node
        self.parent = parent
        self.kind = kind
        self.bindings = {} if bindings is None else bindings
        self.globals_ = set() if globals_ is None else globals_

    def bind(self, b: Binding) -> None:
        if b.name in self.globals_ and self.parent is not None:
            self.module().bind(b)
            return
        self.bindings.setdefault(b.name, []).append(b)

    def module(self) -> Scope:
        s = self
        while s.parent is not None:
            s = s.parent
        return s

    def lookup(self, name: str) -> tuple[Scope, list[Binding]] | None:
        """Python's rules: local, then enclosing functions (class bodies skipped), then module."""
        s: Scope | None = self
        first = True
        while s is not None:
            if (first or s.kind != "class") and name in s.bindings:
                return s, s.bindings[name]
            first = False
            s = s.parent
        return None


class CallSite(Row):  # a row (trainlint.record): cheaper to define than a NamedTuple
    """A call expression with where it sits: its scope and the statement that contains it."""

    __slots__ = ()
    _fields = ("node", "scope", "stmt", "in_lambda", "in_def")
    node: ast.Call
    scope: Scope
    stmt: ast.stmt
    in_lambda: bool
    in_def: ast.AST | None  # the innermost function containing it

    def __new__(_cls, node: ast.Call, scope: Scope, stmt: ast.stmt, in_lambda: bool = False,
                in_def: ast.AST | None = None) -> CallSite:
        return tuple.__new__(_cls, (node, scope, stmt, in_lambda, in_def))


class TrainingArgsCall(Record):
    """``TrainingArguments(...)`` (or a subclass, Seq2Seq, TRL config) in the script."""

    __slots__ = ("site", "class_name", "args", "bound_to", "__dict__")
    site: CallSite
    class_name: str
    args: ArgsSite
    bound_to: str | None  # the name it is assigned to, if any

    def __init__(self, site: CallSite, class_name: str, args: ArgsSite, bound_to: str | None = None) -> None:
        self.site = site
        self.class_name = class_name
        self.args = args
        self.bound_to = bound_to


class TrainerCall(Record):
    """A Trainer (or TRL trainer) construction and the arguments it receives."""

    __slots__ = ("site", "class_name", "keywords", "args_call", "__dict__")
    site: CallSite
    class_name: str
    keywords: dict[str, ast.expr]  # keyword (or positional mapped to its name) -> expression
    args_call: TrainingArgsCall | None

    def __init__(self, site: CallSite, class_name: str, keywords: dict[str, ast.expr],
                 args_call: TrainingArgsCall | None = None) -> None:
        self.site = site
        self.class_name = class_name
        self.keywords = keywords
        self.args_call = args_call


_TRAINER_POSITIONAL = ("model", "args", "data_collator", "train_dataset", "eval_dataset")


class CliOption(Record):
    """One ``parser.add_argument(...)`` of an argparse parser."""

    __slots__ = ("dest", "names", "default", "call", "parser", "has_no_default", "action", "__dict__")
    dest: str
    names: list[str]  # option strings as written: ["--deepspeed"]
    default: ast.expr | None  # the default expression (a synthetic constant for store_true/false)
    call: ast.Call
    parser: str  # the parser variable's name
    has_no_default: bool  # no default= and not a store_true/false: argparse gives None
    action: str | None

    def __init__(self, dest: str, names: list[str], default: ast.expr | None, call: ast.Call, parser: str,
                 has_no_default: bool = False, action: str | None = None) -> None:
        self.dest = dest
        self.names = names
        self.default = default
        self.call = call
        self.parser = parser
        self.has_no_default = has_no_default
        self.action = action


class _Resolved:
    __slots__ = ("value", "node", "shared")

    def __init__(self, value: Any, node: ast.AST | None, shared: bool = False) -> None:
        self.value = value
        self.node = node
        self.shared = shared


class PythonFile:
    """One parsed Python file and everything rules ask of it."""

    def __init__(self, path: str, text: str, tree: ast.Module) -> None:
        self.path = path
        self.text = text
        self.tree = tree
        self._lines: list[str] | None = None
        self._ast_lines: list[str] | None = None
        self._load_counts: dict[str, int] | None = None
        self._all_nodes: list[ast.AST] | None = None  # ``nodes``, walked on first use
        self._statement_nodes: list[ast.AST] = []
        # What the index walk gives (``_walk_index``), walked on first use of any of them (the
        # properties below): a file that names no library class and that no rule asks about (a
        # repository module linking read to follow an import) is never walked.
        self._walked = False
        self._attrs: list[ast.Attribute] = []  # every ``x.y``, in the order the index walk meets them
        self._names: list[ast.Name] = []  # every name (any context), in the order the index walk meets them
        self._module_scope = Scope(tree, None, "module")
        self._calls: list[CallSite] = []
        self._statements: list[tuple[ast.stmt, Scope]] = []
        self._scope_of_def: dict[ast.AST, Scope] = {}
        self._mutated_in: dict[int, set[str]] = {}
        self.imports: dict[str, str] = {}  # local name -> qualified name
        self.local_classes: dict[str, tuple[str, str]] = {}  # name -> (kind, base library class)
        self._cli_options: dict[str, CliOption] | None = None
        # Filled by ``trainlint.modules`` from the repository's other modules (never installed
        # packages): local name -> (class defined elsewhere, its file); qualified name of an
        # attribute (``helpers.CustomTrainer``) -> library class kind; local name -> an
        # imported TrainingArguments-like object built in another module.
        self.external_defs: dict[str, tuple[PythonFile, ast.ClassDef]] = {}
        self.external_qualified: dict[str, tuple[str, str]] = {}
        self.external_args: dict[str, TrainingArgsCall] = {}
        self._args_keywords = False
        self._index()
        self.args_calls: list[TrainingArgsCall] = []
        self.trainer_calls: list[TrainerCall] = []
        self._find_training_calls()

    # -- positions ----------------------------------------------------------------------

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            if self._ast_lines is not None and not _other_break_in(self.text):
                self._lines = self._ast_lines  # the same split: one list, not two
            else:
                self._lines = self.text.splitlines(keepends=True)
        return self._lines

    def _char_col(self, line: int, byte_col: int) -> int:
        """ast columns are UTF-8 byte offsets; diagnostics count characters."""
        if line - 1 >= len(self.lines):
            return byte_col
        text = self.lines[line - 1]
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST, end: ast.AST | None = None) -> Span:
        end = end or node
        line, col = node.lineno, node.col_offset  # type: ignore[attr-defined]
        eline, ecol = end.end_lineno, end.end_col_offset  # type: ignore[attr-defined]
        return Span(
            path=self.path,
            line=line,
            column=self._char_col(line, col) + 1,
            end_line=eline,
            end_column=self._char_col(eline, ecol) + 1,
        )

    def keyword_name_span(self, kw: ast.keyword) -> Span:
        """The span of ``name`` in ``name=value``."""
        sp = self.span(kw)
        assert kw.arg is not None
        return Span(path=self.path, line=sp.line, column=sp.column, end_line=sp.line,
                    end_column=sp.column + len(kw.arg))

    def source_of(self, node: ast.AST) -> str:
        """``ast.get_source_segment(self.text, node) or ""``, without re-splitting the whole
        file on every call (that made it the hottest function of a run)."""
        try:
            first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined,operator]
            col, end_col = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            return ""
        if end_col is None:
            return ""
        if self._ast_lines is None:  # the line split ast uses: \r\n, \r, \n
            if self._lines is not None and not _other_break_in(self.text):
                self._ast_lines = self._lines  # ``lines`` split the same: one list, not two
            else:
                self._ast_lines = _AST_LINE.findall(self.text)
        lines = self._ast_lines
        if first < 0 or last >= len(lines) or first > last:
            return ast.get_source_segment(self.text, node) or ""
        if first == last:
            return lines[first].encode("utf-8")[col:end_col].decode("utf-8", "replace")
        head = lines[first].encode("utf-8")[col:].decode("utf-8", "replace")
        tail = lines[last].encode("utf-8")[:end_col].decode("utf-8", "replace")
        return head + "".join(lines[first + 1:last]) + tail

    @property
    def nodes(self) -> list[ast.AST]:
        """Every node of the file in ``ast.walk`` order, without the Load/Store/operator
        leaves: walked once per file, so use it instead of ``ast.walk(pf.tree)`` (do not
        mutate)."""
        if self._all_nodes is None:
            self._all_nodes = walk_nodes(self.tree)
        return self._all_nodes

    def of_type(self, kind: type) -> list[ast.AST]:
        """The nodes of exactly type ``kind`` (``ast.Attribute``, ``ast.ImportFrom``), in
        ``nodes`` order: one pass over the file for every question of every rule (do not
        mutate). A statement type is answered without walking the expressions."""
        structural = issubclass(kind, _STRUCTURAL)
        key = "_stmts_by_type" if structural else "_by_type"
        index = self.__dict__.get(key)
        if index is None:
            index = {}
            for n in (self._statement_nodes if structural else self.nodes):
                t = type(n)
                bucket = index.get(t)
                if bucket is None:
                    index[t] = [n]
                else:
                    bucket.append(n)
            self.__dict__[key] = index
        return index.get(kind, _EMPTY)

    def attribute_nodes(self) -> list[ast.Attribute]:
        """Every ``x.y`` node of the file (any context), without a walk of the file: in the
        order the file was indexed in, not ``nodes`` order (do not mutate)."""
        return self._attribute_nodes

    def attributes(self, attr: str) -> list[ast.Attribute]:
        """The ``x.<attr>`` nodes of the file (any context), in ``attribute_nodes`` order (do
        not mutate)."""
        index = self.__dict__.get("_by_attr")
        if index is None:
            index = {}
            for n in self._attribute_nodes:
                index.setdefault(n.attr, []).append(n)
            self._by_attr = index
        return index.get(attr, _EMPTY)

    def calls_named(self, *names: str) -> list[CallSite]:
        """The calls whose function is written ``name(...)`` or ``<expr>.name(...)`` for one
        of ``names``, in ``calls`` order (do not mutate)."""
        index = self.__dict__.get("_by_call_name")
        if index is None:
            if not self._walked and not self.may_call(*names):
                return _EMPTY  # no call of one (and no walk of the file)
            index = {}
            for cs in self.calls:
                f = cs.node.func
                key = f.id if type(f) is _Name else f.attr if type(f) is ast.Attribute else None
                if key is not None:
                    index.setdefault(key, []).append(cs)
            self._by_call_name = index
        if len(names) == 1:
            return index.get(names[0], _EMPTY)
        found = [cs for n in dict.fromkeys(names) for cs in index.get(n, ())]
        if len(found) > 1:
            pos = self.__dict__.get("_call_pos")
            if pos is None:
                pos = self._call_pos = {id(cs): i for i, cs in enumerate(self.calls)}
            found.sort(key=lambda cs: pos[id(cs)])
        return found

    def may_name(self, *names: str) -> bool:
        """Whether an identifier, attribute or keyword of the file can be one of ``names``: false
        only when neither the text nor, for a non-ASCII text, its NFKC form holds one (the
        parser NFKC-normalizes identifiers, so ``ｆrom_pretrained`` is ``from_pretrained``). Asked
        before a walk, so that a file that cannot hold a name is never walked for it."""
        text = self.text
        if any(n in text for n in names):
            return True
        normal = self.identifier_text()
        return normal is not text and any(n in normal for n in names)

    def identifier_text(self) -> str:
        """The text as the parser sees its identifiers: the text itself when it is ASCII or
        already in NFKC form (most non-ASCII texts: an accent, a dash in a string), else its
        NFKC normal form. A name not in it is no identifier, attribute or keyword of the file."""
        normal = self.__dict__.get("_nfkc")
        if normal is None:
            text = self.text
            if text.isascii():
                normal = text
            else:
                import unicodedata

                normal = text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)
            self._nfkc = normal
        return normal

    # -- indexing -----------------------------------------------------------------------

    def _walk(self) -> None:
        if not self._walked:
            self._walked = True
            self._walk_index()

    @property
    def module_scope(self) -> Scope:
        if not self._walked:
            self._walk()
        return self._module_scope

    @property
    def calls(self) -> list[CallSite]:
        """Every call of the file with where it sits, in the order of a recursive visit (do
        not mutate)."""
        if not self._walked:
            self._walk()
        return self._calls

    @property
    def statements(self) -> list[tuple[ast.stmt, Scope]]:
        """Every statement with its scope, in the order of a recursive visit (do not mutate)."""
        if not self._walked:
            self._walk()
        return self._statements

    @property
    def scope_of_def(self) -> dict[ast.AST, Scope]:
        if not self._walked:
            self._walk()
        return self._scope_of_def

    @property
    def _attribute_nodes(self) -> list[ast.Attribute]:
        if not self._walked:
            self._walk()
        return self._attrs

    @property
    def _name_nodes(self) -> list[ast.Name]:
        if not self._walked:
            self._walk()
        return self._names

    def _may_name_library_class(self) -> bool:
        """``may_name_library_class`` of the file's text."""
        return may_name_library_class(self.text)

    def _may_be_library_base(self, base: ast.AST, own: set[str]) -> bool:
        """Whether ``library_class`` can name a library class for the class base ``base`` before
        the file is linked to the repository: a name that is one of the libraries' names, a
        local alias of one, or another class of the file; ``x.Name`` with such a name; nothing
        else (a subscript, a call, ``nn.Module``)."""
        t = type(base)
        if t is _Name:
            name = base.id  # type: ignore[attr-defined]
            if name in _CANONICAL_UNBOUND or name in own:
                return True
            qualified = self.imports.get(name)
            return qualified is not None and qualified.rpartition(".")[2] in _CANONICAL_UNBOUND
        return t is ast.Attribute and base.attr in _CANONICAL_UNBOUND  # type: ignore[attr-defined]

    def _may_call_library_class(self) -> bool:
        """Whether a call of the file can build a TrainingArguments-like or Trainer-like class
        (what ``_library_calls`` looks for): false only when no name such a call can have (one
        of the libraries' names, a class of the file or of the repository that derives from
        one, a local alias of either) stands in the text, as a whole identifier, before a ``(``
        with only spaces, line breaks, comments, continuations or ``)`` between. A name in a
        docstring or a comment (``SFTTrainer`` in most of TRL's modules) is no call, and the
        file is not walked for one."""
        if not self.local_classes and not self.external_qualified and not self._may_name_library_class():
            return False
        if self._walked:
            return True  # the calls are at hand: asking them costs less than the scan
        if self._calls_in_text(_CANONICAL_WORDS, _CANONICAL_UNBOUND):
            return True
        external = self.external_qualified
        names = set(self.local_classes)
        names.update(q.rpartition(".")[2] for q in external)
        names.update(local for local, qualified in self.imports.items()
                     if qualified in external or qualified.rpartition(".")[2] in _CANONICAL_UNBOUND)
        return self._calls_in_text(names, names)

    def may_call(self, *names: str) -> bool:
        """Whether a call of the file can be written ``name(...)`` or ``<expr>.name(...)`` for
        one of ``names`` (what ``calls_named`` gives): ``may_name``, and one of them stands as
        a whole identifier before a ``(`` (``_call_hits``) outside the file's string
        statements (docstrings) and class names (``class SFTConfig(...)``). Asked before a walk,
        so that a file that names one only in a docstring, an ``import`` or ``__all__`` is never
        walked for its calls."""
        return self.may_name(*names) and self._calls_in_text(names, names)

    def _calls_in_text(self, words: Iterable[str], names: Container[str]) -> bool:
        """Whether a ``_call_hits`` of the file's identifier text can be a call: one that lies
        in a string statement (a docstring; no call stands in a string), after a comment mark
        or is the name of a ``class`` statement is not. The text's positions are the tree's
        when the identifier text is the text itself (no NFKC change), its only line breaks
        are ``\\n`` and no piece of it was left out of the tree (``pruning``); otherwise every
        hit counts."""
        text = self.identifier_text()
        hits = _call_hits(text, words, names)
        if text is not self.text or "\r" in text or text.startswith("\ufeff") \
                or len(text) >= pruning.LARGE_MODULE_CHARS:
            return next(hits, None) is not None
        at, line = 0, 1  # the line of ``at``: counted on from the last hit (hits of a word ascend)
        for start, end in hits:
            line_start = text.rfind("\n", 0, start) + 1
            if line_start < at:
                at, line = 0, 1
            line += text.count("\n", at, line_start)
            at = line_start
            if not self._no_call_at(start, end, line, line_start):
                return True
        return False

    def _no_call_at(self, start: int, end: int, line: int, line_start: int) -> bool:
        """Whether the identifier at ``start:end`` of the text (``\\n`` its only line break; on
        ``line``, which starts at ``line_start``) lies in a string statement's constant or in a
        comment, or is the name of a ``class`` statement."""
        text = self.text
        head = text[line_start:start]
        if "#" in head and '"' not in head and "'" not in head:
            # after a ``#`` with no quote before it on its line: in a comment, or (when the line
            # starts inside a string that runs on from the lines above) still in that string
            return True
        col = len(head) if head.isascii() else len(head.encode("utf-8"))  # ast's columns: UTF-8 bytes
        found = self.__dict__.get("_text_regions")
        if found is None:
            found = self._text_regions = self._find_text_regions()
        starts, strings, classes = found
        if line in classes and head.isascii():  # ``class NAME(``: ``class`` and blanks before the name
            name = text[start:end]
            for cd in classes[line]:
                keyword = head[cd.col_offset:]
                if cd.name == name and len(keyword) > 5 and keyword.startswith("class") \
                        and not keyword[5:].strip(" \t"):
                    return True
        i = bisect.bisect_right(starts, (line, col)) - 1
        if i >= 0:
            c = strings[i]
            return (line, col) < (c.end_lineno, c.end_col_offset)
        return False

    def _find_text_regions(self) -> tuple[list[tuple[int, int]], list[ast.Constant], dict[int, list[ast.ClassDef]]]:
        """The constants of the file's string statements (docstrings, bare strings) by their
        start, and its ``class`` statements by their line."""
        strings: list[ast.Constant] = []
        classes: dict[int, list[ast.ClassDef]] = {}
        nodes = self._statement_nodes or statement_nodes(self.tree)
        for n in nodes:
            t = type(n)
            if t is ast.Expr:
                v = n.value  # type: ignore[attr-defined]
                if type(v) is _Constant:
                    strings.append(v)
            elif t is ast.ClassDef:
                classes.setdefault(n.lineno, []).append(n)  # type: ignore[arg-type]
        strings.sort(key=lambda c: (c.lineno, c.col_offset))
        return [(c.lineno, c.col_offset) for c in strings], strings, classes

    def _index(self) -> None:
        # the statements in ``nodes`` order (imports and classes: the first binding of a name wins)
        self._statement_nodes = statement_nodes(self.tree)
        for node in self._statement_nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.imports[a.asname] = a.name
                    else:
                        top = a.name.split(".", 1)[0]
                        self.imports.setdefault(top, top)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    if a.name != "*":
                        self.imports[a.asname or a.name] = f"{node.module}.{a.name}"
        if not self._may_name_library_class():
            return  # no class derives from a library class; the walk waits for a question
        class_defs = [n for n in self._statement_nodes if isinstance(n, ast.ClassDef) and n.bases]
        own = {cd.name for cd in class_defs}
        if not any(self._may_be_library_base(b, own) for cd in class_defs for b in cd.bases):
            return  # no base can name a library class (``library_class`` would find none)
        # classes in the file that subclass a library class (to a fixed point: A(B), B(TA));
        # ``library_class`` walks the file only for a bare library name that no top-level
        # import, def or class binds (``_bound_in_module``): most bases are imported
        changed = True
        while changed:
            changed = False
            for cd in class_defs:
                if cd.name in self.local_classes:
                    continue
                for base in cd.bases:
                    lib = self.library_class(base)
                    if lib is not None:
                        self.local_classes[cd.name] = lib
                        changed = True
                        break

    def _walk_index(self) -> None:
        """One pass over the file, in the order of a recursive visit (each node before what is
        under it, children in field order): the statements with their scopes, the bindings,
        the scopes of functions, classes and lambdas, every call with where it sits and every
        ``x.y``. An explicit stack instead of three Python calls per node; a tuple on the
        stack sets the context (scope, statement, function, in a lambda) back when what is
        under a node is done. What a function's or class's header holds is visited as the
        recursive visit did: decorators, defaults, bases and keywords below their top node
        (their top-level ``x.y`` noted), annotations only noted."""
        calls = self._calls
        attrs = self._attrs
        names = self._names
        statements = self._statements
        bind_stmt = self._bind_stmt
        kinds = _INDEX_KIND
        fields_of = _INDEX_FIELDS
        scope: Scope = self._module_scope
        stmt: Any = None
        fn: Any = None
        lam = False
        stack: list[Any] = self.tree.body[::-1]
        pop = stack.pop
        push = stack.append
        binds = _BINDS
        new_row = tuple.__new__
        call_site = CallSite
        binding = Binding
        assign = ast.Assign
        # the kinds are tested by how often they occur (trl's files: contexts 24 K, statements
        # 22 K, other expressions 22 K, ``x.y`` 21 K, names 18 K, calls 15 K, leaves 10 K, then
        # functions, classes, lambdas; a name or constant that is an ``x.y``'s value, a call's
        # function or keyword or a lone field is noted or skipped, not pushed)
        while stack:
            node = pop()
            t = type(node)
            try:
                k = kinds[t]
            except KeyError:
                k = _index_kind(t)
            if k == _K_CTX:
                scope, stmt, fn, lam = node
                continue
            if k == _K_NODE:
                pass
            elif k == _K_STMT:
                statements.append((node, scope))
                if t is assign:  # ``_bind_stmt``'s most common case, ``name = value``, here
                    targets = node.targets
                    if len(targets) == 1 and type(targets[0]) is _Name:
                        scope.bind(new_row(binding, (targets[0].id, node, node.value, "assign")))
                    else:
                        bind_stmt(node, scope)
                elif t in binds:
                    bind_stmt(node, scope)
                push((scope, stmt, fn, lam))
                stmt = node
            elif k == _K_ATTR:  # ``x.y``: only its value is under it
                attrs.append(node)
                value = node.value
                if type(value) is _Name:
                    names.append(value)
                else:
                    push(value)
                continue
            elif k == _K_NAME:
                names.append(node)
                continue
            elif k == _K_CALL:  # its function, arguments and keywords' values, in that order
                calls.append(new_row(call_site, (node, scope, stmt, lam, fn)))
                for kw in node.keywords[::-1]:
                    value = kw.value
                    if type(value) is _Name:
                        names.append(value)
                    elif type(value) is not _Constant:
                        push(value)
                if node.args:
                    stack.extend(node.args[::-1])
                value = node.func
                if type(value) is _Name:
                    names.append(value)
                else:
                    push(value)
                continue
            elif k == _K_LEAF:
                continue
            elif k == _K_DEF:
                statements.append((node, scope))
                scope.bind(new_row(binding, (node.name, node, None, "def")))  # ``_bind_stmt``'s
                a = node.args
                defaults = a.defaults + [d for d in a.kw_defaults if d is not None]
                _note_header(node.decorator_list + defaults, attrs, names)
                for p in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
                    ann = p.annotation
                    if ann is not None:
                        if type(ann) is _Name:  # most annotations (what ``walk_nodes`` gives)
                            names.append(ann)
                        elif type(ann) is not _Constant:
                            _note_header(walk_nodes(ann), attrs, names)
                ann = node.returns
                if ann is not None:
                    if type(ann) is _Name:
                        names.append(ann)
                    elif type(ann) is not _Constant:
                        _note_header(walk_nodes(ann), attrs, names)
                push((scope, stmt, fn, lam))
                push(_Enter(node, "function"))
                for d in reversed(node.decorator_list + defaults):
                    stack.extend(child_nodes(d)[::-1])
                stmt = node
                continue
            elif k == _K_CLASS:
                statements.append((node, scope))
                scope.bind(new_row(binding, (node.name, node, None, "class")))  # ``_bind_stmt``'s
                header = node.bases + node.decorator_list + [kw.value for kw in node.keywords]
                _note_header(header, attrs, names)
                push((scope, stmt, fn, lam))
                push(_Enter(node, "class"))
                for b in reversed(header):
                    stack.extend(child_nodes(b)[::-1])
                stmt = node
                continue
            elif k == _K_ENTER:  # the body of a function or class, after its header
                owner = node.node
                inner = Scope(owner, scope, node.kind)
                self._scope_of_def[owner] = inner
                if node.kind == "function":
                    a = owner.args
                    for p in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
                        inner.bind(new_row(binding, (p.arg, p, None, "param")))
                    fn = owner
                    lam = False
                scope = inner
                stack.extend(owner.body[::-1])
                continue
            elif k == _K_LAMBDA:
                inner = Scope(node, scope, "lambda")
                self._scope_of_def[node] = inner
                a = node.args
                for p in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]:
                    inner.bind(new_row(binding, (p.arg, p, None, "param")))
                push((scope, stmt, fn, lam))
                push(node.body)
                push((inner, stmt, node, True))
                stack.extend([d for d in a.defaults + a.kw_defaults if d is not None][::-1])
                continue
            elif k == _K_NAMED:
                self._bind_target(node.target, scope, stmt, node.value, "assign")
            # what is under the node, first field first: a name is noted (not pushed), a
            # constant or a missing field skipped
            get = fields_of.get(t)
            if get is None:
                get = _index_fields(t)
            if type(get) is str:  # one field
                value = getattr(node, get, None)
                tv = type(value)
                if tv is list:
                    stack.extend(value[::-1])
                elif tv is _Name:
                    names.append(value)
                elif value is not None and tv is not _Constant:
                    push(value)
                continue
            try:
                values = get(node)
            except AttributeError:  # a node made without some field (never one ``ast.parse`` gives)
                values = tuple(getattr(node, f, None) for f in _fields_under(t))
            for value in values:
                tv = type(value)
                if tv is list:
                    stack.extend(value[::-1])
                elif tv is _Name:
                    names.append(value)
                elif value is not None and tv is not _Constant:
                    push(value)

    def _bind_target(self, target: ast.expr, scope: Scope, stmt: ast.AST, value: ast.expr | None, kind: str) -> None:
        if type(target) is _Name or isinstance(target, ast.Name):
            scope.bind(tuple.__new__(Binding, (target.id, stmt, value, kind)))
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) else None
            for i, t in enumerate(target.elts):
                self._bind_target(t, scope, stmt, values[i] if values else None, kind if values else "other")
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, scope, stmt, None, "other")

    def _bind_stmt(self, stmt: ast.stmt, scope: Scope) -> None:
        k = _BINDS.get(type(stmt))
        if k is None:  # binds nothing (most statements)
            return
        if k == "assign":
            targets = stmt.targets  # type: ignore[attr-defined]
            for t in targets:
                self._bind_target(t, scope, stmt, stmt.value if len(targets) == 1 else None,  # type: ignore[attr-defined]
                                  "assign" if len(targets) == 1 else "other")
        elif k == "annassign":
            self._bind_target(stmt.target, scope, stmt, stmt.value,  # type: ignore[attr-defined]
                              "annassign" if stmt.value else "other")  # type: ignore[attr-defined]
        elif k == "augassign":
            self._bind_target(stmt.target, scope, stmt, None, "augassign")  # type: ignore[attr-defined]
        elif k == "for":
            self._bind_target(stmt.target, scope, stmt, None, "for")  # type: ignore[attr-defined]
        elif k == "with":
            for item in stmt.items:  # type: ignore[attr-defined]
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, scope, stmt, None, "with")
        elif k == "def" or k == "class":
            scope.bind(Binding(stmt.name, stmt, None, k))  # type: ignore[attr-defined]
        elif k == "import":
            for a in stmt.names:  # type: ignore[attr-defined]
                name = a.asname or a.name.split(".", 1)[0]
                if name != "*":
                    scope.bind(tuple.__new__(Binding, (name, stmt, None, "import")))
        elif k == "global":
            scope.globals_.update(stmt.names)  # type: ignore[attr-defined]
        else:  # try
            for h in stmt.handlers:  # type: ignore[attr-defined]
                if h.name:
                    scope.bind(Binding(h.name, h, None, "other"))

    # -- names --------------------------------------------------------------------------

    def qualname(self, expr: ast.AST) -> str | None:
        """``tf.TrainingArguments`` -> ``transformers.TrainingArguments`` (import-aware)."""
        if isinstance(expr, ast.Name):
            return self.imports.get(expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.qualname(expr.value)
            return f"{base}.{expr.attr}" if base else None
        return None

    def library_class(self, expr: ast.AST) -> tuple[str, str] | None:
        """("args"|"trainer", class name) when ``expr`` names a TrainingArguments-like or
        Trainer-like class, directly, through an import alias or a local subclass."""
        if isinstance(expr, ast.Name):
            if expr.id in self.local_classes:
                return self.local_classes[expr.id]
            if expr.id not in self.imports and expr.id in _CANONICAL_UNBOUND \
                    and not self._bound_in_module(expr.id):
                name = expr.id
                kind = "args" if (name in TRAINING_ARGS_CLASSES or name in TRL_CONFIG_CLASSES) else "trainer"
                return (kind, name)
        elif type(expr) is ast.Attribute and expr.attr not in _CANONICAL_UNBOUND and not self.external_qualified:
            return None  # ``x.y.attr``: a library class by its own name, or the repository's (below)
        qn = self.qualname(expr)
        if qn and qn in self.external_qualified:
            return self.external_qualified[qn]
        return _lib_class(qn) if qn else None

    def _bound_in_module(self, name: str) -> bool:
        """Whether ``name`` is bound in the module's scope (``module_scope.bindings``). A name
        that a top-level import, ``def`` or ``class`` binds is known to be without the index
        walk (``from ..trainer import SFTTrainer``, a relative import ``imports`` leaves out):
        a class base is then derived without walking the file; only another name (bound, if
        at all, by an assignment, a loop, a ``global``...) needs the walk's scopes."""
        if self._walked:
            return name in self._module_scope.bindings
        top = self.__dict__.get("_top_bound")
        if top is None:
            top = self._top_bound = _top_level_names(self.tree)
        return name in top or name in self.module_scope.bindings

    def link_repository(self, classes: dict[str, tuple[tuple[str, str], PythonFile, ast.ClassDef]],
                        qualified: dict[str, tuple[str, str]], objects: dict[str, TrainingArgsCall]) -> None:
        """What the repository's other modules define (``trainlint.modules``): imported classes
        that subclass a library class (by local name and by qualified attribute name) and
        imported TrainingArguments-like objects; the training calls are found again with
        them."""
        for name, (lib, other, cd) in classes.items():
            self.local_classes.setdefault(name, lib)
            self.external_defs[name] = (other, cd)
        self.external_qualified.update(qualified)
        self.external_args.update(objects)
        for attr in ("_model_flows", "_parser_uses", "_consumers_set"):
            if hasattr(self, attr):
                delattr(self, attr)
        self.args_calls = []
        self.trainer_calls = []
        self._find_training_calls()

    def class_def(self, name: str) -> tuple[PythonFile, ast.ClassDef] | None:
        """The class ``name`` names in this file: defined at module level here, or imported
        from another module of the repository."""
        defs = [n for n in self.tree.body if isinstance(n, ast.ClassDef) and n.name == name]
        if len(defs) == 1:
            return self, defs[0]
        return self.external_defs.get(name)

    def is_module(self, expr: ast.AST, module: str) -> bool:
        qn = self.qualname(expr)
        return qn == module

    def binding_of(self, name: str, scope: Scope) -> Binding | None:
        """The single binding of ``name`` visible from ``scope``, or None if it is bound more
        than once (or not at all, or by something other than a plain assignment)."""
        found = scope.lookup(name)
        if found is None:
            return None
        _, bindings = found
        if len(bindings) != 1:
            return None
        return bindings[0]

    def bindings_of(self, name: str, scope: Scope) -> list[Binding]:
        found = scope.lookup(name)
        return list(found[1]) if found else []

    def scope_at(self, node: ast.AST) -> Scope:
        return self.scope_of_def.get(node, self.module_scope)

    def name_uses(self, name: str) -> int:
        """How often ``name`` is read anywhere in the file (cheap over-approximation)."""
        if self._load_counts is None:
            counts: dict[str, int] = {}
            for n in self._name_nodes:  # every name of the file, without a walk of every node
                if isinstance(n.ctx, ast.Load):
                    counts[n.id] = counts.get(n.id, 0) + 1
            self._load_counts = counts
        return self._load_counts.get(name, 0)

    def is_mutated(self, name: str, scope: Scope) -> bool:
        """Whether a dict/list bound to ``name`` is changed in place somewhere in its scope."""
        target_scope = scope.lookup(name)
        owner = target_scope[0] if target_scope else scope
        mutated = self._mutated_in.get(id(owner.node))
        if mutated is None:  # one walk per scope, not one per question
            mutated = set()
            for node in (self.nodes if owner.node is self.tree else walk_nodes(owner.node)):
                if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
                    if isinstance(node.value, ast.Name):
                        mutated.add(node.value.id)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and isinstance(node.func.value, ast.Name) \
                        and node.func.attr in {"update", "setdefault", "pop", "popitem", "clear", "append",
                                               "extend", "insert", "remove", "__setitem__"}:
                    mutated.add(node.func.value.id)
            self._mutated_in[id(owner.node)] = mutated
        return name in mutated

    # -- value resolution ---------------------------------------------------------------

    def resolve(self, expr: ast.AST | None, scope: Scope, _depth: int = 0) -> _Resolved:
        """The constant value of ``expr``, or UNKNOWN. ``node`` is where the literal is written."""
        if expr is None or _depth > 20:
            return _Resolved(UNKNOWN, expr)
        if isinstance(expr, ast.Constant):
            return _Resolved(expr.value, expr)
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd, ast.Not)):
            inner = self.resolve(expr.operand, scope, _depth + 1)
            if isinstance(inner.value, (int, float)) and not isinstance(inner.value, bool) \
                    and not isinstance(expr.op, ast.Not):
                return _Resolved(-inner.value if isinstance(expr.op, ast.USub) else inner.value, expr, inner.shared)
            if isinstance(expr.op, ast.Not) and inner.value is not UNKNOWN:
                return _Resolved(not inner.value, expr, inner.shared)
            return _Resolved(UNKNOWN, expr)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Mult, ast.Add, ast.Sub, ast.Div, ast.FloorDiv, ast.Pow)):
            left = self.resolve(expr.left, scope, _depth + 1).value
            right = self.resolve(expr.right, scope, _depth + 1).value
            if _is_number(left) and _is_number(right):
                try:
                    value = {
                        ast.Mult: lambda a, b: a * b, ast.Add: lambda a, b: a + b,
                        ast.Sub: lambda a, b: a - b, ast.Div: lambda a, b: a / b,
                        ast.FloorDiv: lambda a, b: a // b, ast.Pow: lambda a, b: a ** b,
                    }[type(expr.op)](left, right)
                except (ZeroDivisionError, OverflowError):
                    return _Resolved(UNKNOWN, expr)
                return _Resolved(value, expr)
            return _Resolved(UNKNOWN, expr)
        if isinstance(expr, (ast.Tuple, ast.List)):
            items = [self.resolve(e, scope, _depth + 1).value for e in expr.elts]
            if any(v is UNKNOWN for v in items):
                return _Resolved(UNKNOWN, expr)
            return _Resolved(tuple(items) if isinstance(expr, ast.Tuple) else list(items), expr)
        if isinstance(expr, ast.Name):
            if expr.id in ("True", "False", "None"):
                return _Resolved({"True": True, "False": False, "None": None}[expr.id], expr)
            b = self.binding_of(expr.id, scope)
            if b is None or b.kind not in ("assign", "annassign") or b.value is None:
                return _Resolved(UNKNOWN, expr)
            owner = scope.lookup(expr.id)
            inner = self.resolve(b.value, owner[0] if owner else scope, _depth + 1)
            shared = inner.shared or self.name_uses(expr.id) > 1
            return _Resolved(inner.value, inner.node, shared)
        if isinstance(expr, ast.Attribute):
            # enum members written as attributes: IntervalStrategy.STEPS, PaddingStrategy.MAX_LENGTH
            qn = self.qualname(expr)
            if qn and qn.startswith("transformers.") and expr.attr.isupper():
                return _Resolved(expr.attr.lower(), expr)
            opt = self.cli_option(expr, scope)
            if opt is not None:
                # ``args.X`` of ``args = parser.parse_args()``: the add_argument default (a launch
                # flag may override it: trainlint.linking does that per launch line)
                if opt.default is None:  # no default: it comes from the command line, unknown here
                    return _Resolved(UNKNOWN, expr)
                inner = self.resolve(opt.default, self.module_scope, _depth + 1)
                return _Resolved(inner.value, inner.node, inner.shared)
            dc = self.dataclass_option(expr, scope) if self._args_keywords else None
            if dc is not None and dc.default is not None:
                # ``script_args.log_every`` of a dataclass parsed by HfArgumentParser: its
                # default (a launch flag or args file may override it: linking does that)
                owner = getattr(dc, "owner", self)
                if owner is self:
                    inner = self.resolve(dc.default, self.module_scope, _depth + 1)
                    return _Resolved(inner.value, inner.node, inner.shared)
                inner = owner.resolve(dc.default, owner.module_scope, _depth + 1)
                return _Resolved(inner.value, expr, True)  # the literal is in another file
            return _Resolved(UNKNOWN, expr)
        return _Resolved(UNKNOWN, expr)

    # -- dataclasses parsed by HfArgumentParser -------------------------------------------

    _PARSE_METHODS = ("parse_args_into_dataclasses", "parse_args_and_config", "parse_yaml_file",
                      "parse_json_file", "parse_dict")

    def dataclass_option(self, expr: ast.AST, scope: Scope) -> CliOption | None:
        """The field read by ``script_args.log_every`` when ``script_args`` is one of the
        dataclasses an ``HfArgumentParser``/``TrlParser`` returns (``a, b = parser.parse_args_into_dataclasses()``):
        an option named ``--log_every`` whose default is the field's (None when it has none)."""
        if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)):
            return None
        b = self.binding_of(expr.value.id, scope)
        if b is None or not isinstance(b.node, (ast.Assign, ast.AnnAssign)):
            return None
        stmt = b.node
        value = stmt.value
        index = 0
        if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) \
                and isinstance(value.slice.value, int):
            index = value.slice.value
            value = value.value
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and value.func.attr in self._PARSE_METHODS):
            return None
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if len(targets) != 1:
            return None
        t = targets[0]
        if isinstance(t, (ast.Tuple, ast.List)):
            names = [e.id if isinstance(e, ast.Name) else None for e in t.elts]
            if expr.value.id not in names:
                return None
            index = names.index(expr.value.id)
        elif not isinstance(t, ast.Name):
            return None
        classes = self._parser_dataclasses(value.func.value, scope)
        if classes is None or index >= len(classes):
            return None
        cls = classes[index]
        if not isinstance(cls, ast.Name) or self.library_class(cls) is not None:
            return None  # the library class itself: its defaults are the data's
        found = self.class_def(cls.id)
        if found is None:
            return None
        owner, cd = found
        default = _field_default(owner, cd, expr.attr)
        if default is _NO_FIELD:
            return None
        opt = CliOption(dest=expr.attr, names=[f"--{expr.attr}"], default=default, call=value,
                        parser=cls.id, has_no_default=default is None)
        opt.owner = owner  # type: ignore[attr-defined]
        return opt

    def _parser_dataclasses(self, parser_expr: ast.AST, scope: Scope) -> list[ast.expr] | None:
        call = parser_expr
        if isinstance(parser_expr, ast.Name):
            pb = self.binding_of(parser_expr.id, scope)
            if pb is None or pb.value is None:
                return None
            call = pb.value
        if not isinstance(call, ast.Call):
            return None
        fname = call.func.id if isinstance(call.func, ast.Name) else call.func.attr \
            if isinstance(call.func, ast.Attribute) else ""
        if fname not in ("HfArgumentParser", "TrlParser") or not call.args:
            return None
        first = call.args[0]
        if isinstance(first, ast.Name):
            fb = self.binding_of(first.id, self.module_scope)
            if fb is not None and fb.kind in ("assign", "annassign") and isinstance(fb.value, (ast.Tuple, ast.List)):
                first = fb.value
        return list(first.elts) if isinstance(first, (ast.Tuple, ast.List)) else [first]

    # -- argparse -----------------------------------------------------------------------

    def argparse_options(self) -> dict[str, CliOption]:
        """Options declared with ``parser.add_argument(...)`` on an ``argparse.ArgumentParser``
        (by dest). Cached."""
        if self._cli_options is not None:
            return self._cli_options
        found: dict[str, CliOption] = {}
        for cs in self.calls:
            f = cs.node.func
            if not (isinstance(f, ast.Attribute) and f.attr == "add_argument" and isinstance(f.value, ast.Name)):
                continue
            b = self.binding_of(f.value.id, cs.scope)
            if b is None or not isinstance(b.value, ast.Call) or self.qualname(b.value.func) != "argparse.ArgumentParser":
                continue
            names = [a.value for a in cs.node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            if len(names) != len(cs.node.args) or not names:
                continue
            kws = {kw.arg: kw.value for kw in cs.node.keywords if kw.arg}
            dest_node = kws.get("dest")
            if isinstance(dest_node, ast.Constant) and isinstance(dest_node.value, str):
                dest = dest_node.value
            else:
                longs = [n for n in names if n.startswith("--")]
                dest = (longs[0] if longs else names[0]).lstrip("-").replace("-", "_")
            action = kws.get("action")
            action_name = action.value if isinstance(action, ast.Constant) else None
            default = kws.get("default")
            no_default = default is None and action_name not in ("store_true", "store_false")
            if default is None and action_name in ("store_true", "store_false"):
                default = ast.copy_location(ast.Constant(action_name == "store_false"), cs.node)
            found[dest] = CliOption(dest=dest, names=names, default=default, call=cs.node,
                                    parser=f.value.id, has_no_default=no_default, action=action_name)
        self._cli_options = found
        return found

    def cli_option(self, expr: ast.AST, scope: Scope) -> CliOption | None:
        """The option read by ``args.X`` when ``args = parser.parse_args()`` (bound once)."""
        if not (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)):
            return None
        b = self.binding_of(expr.value.id, scope)
        if b is None or not isinstance(b.value, ast.Call):
            return None
        f = b.value.func
        if not (isinstance(f, ast.Attribute) and f.attr == "parse_args" and isinstance(f.value, ast.Name)):
            return None
        opt = self.argparse_options().get(expr.attr)
        if opt is None or opt.parser != f.value.id:
            return None
        return opt

    def resolve_dict(self, expr: ast.AST, scope: Scope, _depth: int = 0
                     ) -> list[tuple[str, ast.AST, ast.AST | None, bool]] | None:
        """Entries of a dict written as ``{...}``, ``dict(...)`` or a name bound once to one:
        (key, key node, value node, shared). None when it is not statically known."""
        if _depth > 10:
            return None
        shared = False
        if isinstance(expr, ast.Name):
            b = self.binding_of(expr.id, scope)
            if b is None or b.kind not in ("assign", "annassign") or b.value is None:
                return None
            if self.is_mutated(expr.id, scope):
                return None
            owner = scope.lookup(expr.id)
            shared = self.name_uses(expr.id) > 1
            entries = self.resolve_dict(b.value, owner[0] if owner else scope, _depth + 1)
            if entries is None:
                return None
            return [(k, kn, vn, s or shared) for (k, kn, vn, s) in entries]
        if isinstance(expr, ast.Dict):
            out: list[tuple[str, ast.AST, ast.AST | None, bool]] = []
            for k, v in zip(expr.keys, expr.values):
                if k is None:  # {**other}
                    inner = self.resolve_dict(v, scope, _depth + 1)
                    if inner is None:
                        return None
                    out.extend(inner)
                elif isinstance(k, ast.Constant) and isinstance(k.value, str):
                    out.append((k.value, k, v, False))
                else:
                    return None
            return out
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "dict" \
                and "dict" not in self.module_scope.bindings:
            out = []
            for a in expr.args:
                inner = self.resolve_dict(a, scope, _depth + 1)
                if inner is None:
                    return None
                out.extend(inner)
            for kw in expr.keywords:
                if kw.arg is None:
                    inner = self.resolve_dict(kw.value, scope, _depth + 1)
                    if inner is None:
                        return None
                    out.extend(inner)
                else:
                    out.append((kw.arg, kw, kw.value, False))
            return out
        return None

    def value_of(self, name: str, key_node: ast.AST, value_node: ast.AST | None, scope: Scope,
                 shared: bool = False) -> Value:
        """A ``Value`` with provenance for ``name=<value_node>`` written at ``key_node``."""
        r = self.resolve(value_node, scope)
        key_span = self.keyword_name_span(key_node) if isinstance(key_node, ast.keyword) and key_node.arg \
            else self.span(key_node)
        use_span = self.span(value_node) if value_node is not None else None
        lit_span = use_span if r.node is value_node else \
            self.span(r.node) if r.node is not None and r.value is not UNKNOWN else use_span
        key_text = key_node.arg if isinstance(key_node, ast.keyword) and key_node.arg else self.source_of(key_node)
        return Value(value=r.value, origin=PYTHON, span=lit_span, key_span=key_span, name=name,
                     use_span=use_span, shared=shared or r.shared, key_text=key_text or name)

    def call_keywords(self, call: ast.Call, scope: Scope) -> tuple[dict[str, Value], bool]:
        """Keyword values of a call; the flag says an unresolved ``**x`` may set any other."""
        values: dict[str, Value] = {}
        open_ended = False
        for kw in call.keywords:
            if kw.arg is not None:
                values[kw.arg] = self.value_of(kw.arg, kw, kw.value, scope)
                continue
            entries = self.resolve_dict(kw.value, scope)
            if entries is None:
                open_ended = True
                continue
            for key, key_node, value_node, shared in entries:
                values[key] = self.value_of(key, key_node, value_node, scope, shared)
        if any(isinstance(a, ast.Starred) for a in call.args):
            open_ended = True
        return values, open_ended

    # -- training calls -----------------------------------------------------------------

    def _library_calls(self) -> list[tuple[CallSite, tuple[str, str]]]:
        """The calls of a TrainingArguments-like or Trainer-like class (``library_class`` of
        the function), in ``calls`` order; a call whose function cannot name one (a name that
        is no such class, imported or local, nor one of the libraries' names; ``x.y`` without
        a library name and with no repository classes) is not asked."""
        names = set(self.local_classes) | _CANONICAL_UNBOUND
        external = self.external_qualified
        for local, qualified in self.imports.items():
            if qualified in external or qualified.rpartition(".")[2] in _CANONICAL_UNBOUND:
                names.add(local)
        out = []
        for cs in self.calls:
            f = cs.node.func
            t = type(f)
            if t is _Name:
                if f.id not in names:  # type: ignore[attr-defined]
                    continue
            elif t is not ast.Attribute or (not external and f.attr not in _CANONICAL_UNBOUND):  # type: ignore[attr-defined]
                continue
            lib = self.library_class(f)
            if lib is not None:
                out.append((cs, lib))
        return out

    def _find_training_calls(self) -> None:
        if not self._may_call_library_class():
            return  # no call can build a library class (``_library_calls`` would find none)
        by_name: dict[tuple[int, str], TrainingArgsCall] = {}
        found = self._library_calls()
        for cs, lib in found:
            kind, cls = lib
            if kind == "args":
                # parsed dataclasses' defaults count for TrainingArguments values only (a
                # ``model_name_or_path`` default elsewhere is a placeholder the command line sets)
                self._args_keywords = True
                try:
                    values, open_ended = self.call_keywords(cs.node, cs.scope)
                finally:
                    self._args_keywords = False
                if cs.node.args and not isinstance(cs.node.args[0], ast.Starred) and "output_dir" not in values:
                    values["output_dir"] = self.value_of("output_dir", cs.node.args[0], cs.node.args[0], cs.scope)
                site = ArgsSite(path=self.path, class_name=cls, values=values, open_ended=open_ended,
                                span=self.span(cs.node))
                tac = TrainingArgsCall(cs, cls, site)
                site.call = tac
                stmt = cs.stmt
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and getattr(stmt, "value", None) is cs.node:
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    if len(targets) == 1 and isinstance(targets[0], ast.Name):
                        tac.bound_to = targets[0].id
                        by_name[(id(cs.scope), targets[0].id)] = tac
                self.args_calls.append(tac)
        for cs, lib in found:
            if lib[0] != "trainer":
                continue
            kws: dict[str, ast.expr] = {}
            for i, a in enumerate(cs.node.args):
                if isinstance(a, ast.Starred):
                    break
                if i < len(_TRAINER_POSITIONAL):
                    kws[_TRAINER_POSITIONAL[i]] = a
            for kw in cs.node.keywords:
                if kw.arg:
                    kws[kw.arg] = kw.value
            tc = TrainerCall(cs, lib[1], kws)
            a = kws.get("args")
            if isinstance(a, ast.Call):
                tc.args_call = next((t for t in self.args_calls if t.site.node is a), None)
            elif isinstance(a, ast.Name):
                found = cs.scope.lookup(a.id)
                if found is not None:
                    tc.args_call = by_name.get((id(found[0]), a.id))
                    if tc.args_call is None and found[0] is self.module_scope:
                        tc.args_call = self.external_args.get(a.id)  # from config import training_args
            self.trainer_calls.append(tc)

    @property
    def sites(self) -> list[ArgsSite]:
        return [t.args for t in self.args_calls]

    # -- helpers for rules --------------------------------------------------------------

    def keyword(self, call: ast.Call, name: str) -> ast.keyword | None:
        for kw in call.keywords:
            if kw.arg == name:
                return kw
        return None

    def iter_calls(self) -> Iterator[CallSite]:
        return iter(self.calls)

    def statement_index(self, stmt: ast.stmt) -> int:
        """Position of a statement in source order (for "happens before" questions)."""
        return (stmt.lineno, stmt.col_offset)  # type: ignore[return-value]

    def uses_module(self, module: str) -> bool:
        return any(q == module or q.startswith(module + ".") for q in self.imports.values())


_NO_FIELD: Any = object()


def _field_default(pf: PythonFile, cd: ast.ClassDef, name: str, _depth: int = 0) -> ast.expr | None | Any:
    """The default expression of dataclass field ``name`` of ``cd`` (``x: int = 1``,
    ``x: int = field(default=1)``), searching the file's base classes too; None when the field
    has no default (or a ``default_factory``), ``_NO_FIELD`` when there is no such field."""
    for stmt in cd.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
            v = stmt.value
            if v is None:
                return None
            if isinstance(v, ast.Call) and (getattr(v.func, "id", None) == "field" or getattr(v.func, "attr", None) == "field"):
                d = next((k.value for k in v.keywords if k.arg == "default"), None)
                return d
            return v
    if _depth > 5:
        return _NO_FIELD
    for base in cd.bases:
        if isinstance(base, ast.Name):
            found = pf.class_def(base.id)
            if found is not None:
                got = _field_default(found[0], found[1], name, _depth + 1)
                if got is not _NO_FIELD:
                    return got
    return _NO_FIELD


def _top_level_names(tree: ast.Module) -> frozenset[str]:
    """The names the module's own top-level imports, functions and classes bind (what the
    index walk binds for them in the module's scope: ``import a.b`` binds ``a``)."""
    out: set[str] = set()
    for node in tree.body:
        t = type(node)
        if t is ast.Import or t is ast.ImportFrom:
            for a in node.names:  # type: ignore[attr-defined]
                name = a.asname or a.name.split(".", 1)[0]
                if name != "*":
                    out.add(name)
        elif t is ast.FunctionDef or t is ast.AsyncFunctionDef or t is ast.ClassDef:
            out.add(node.name)  # type: ignore[attr-defined]
    return frozenset(out)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def parses_by_table(text: str, path: str) -> bool:
    """True when ``text`` is known to parse without building its syntax tree: its symbol
    table (``_symtable``) builds. The table is built from the same parse, 1.6-1.7x faster than
    the tree of Python objects, and it succeeds only where the parse does; it refuses more
    (``nonlocal`` at the top, a duplicate argument, a top-level ``await``), and False then
    means "build the tree to know" (its error is the one to report). Only for a text shorter
    than the recursion limit: no tree of it can be deep enough for the tree's construction to
    fail where the table's succeeds (both stop at the same depth, three times the limit, and
    each level takes a character). Shared by the syntax check of walked scripts
    (``workspace``) and of notebook programs (``notebook``)."""
    if len(text) < sys.getrecursionlimit():
        try:
            _symtable.symtable(text, path, "exec")
            return True
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pass
    return False


def parse_python(path: str, text: str, triggers: tuple[str, ...] | None = None) -> PythonFile:
    """Parse ``text``; raises SyntaxError (with lineno/offset) on invalid Python. A very large
    module is parsed in pieces and, given ``triggers`` (the names the selected rules trigger
    on), without the top-level statements that cannot matter (``trainlint.sources.pruning``)."""
    if len(text) >= pruning.LARGE_MODULE_CHARS:
        tree = pruning.parse_module(text, triggers, path)
    else:
        tree = ast.parse(text, filename=path)
    return PythonFile(path, text, tree)
