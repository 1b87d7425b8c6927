"""Very large Python modules: parsed in pieces, and only the top-level statements that can matter.

A syntax tree costs about 120 bytes per byte of source, so a 10 MB script held whole is more
than a gigabyte before any rule runs. Two things bound that:

* ``module_pieces`` cuts a module between top-level statements, found by a cheap scan (a line
  that starts in column 0 with code, not ``else``/``except``/... and not a closing bracket),
  and parses each piece of about ``PIECE_CHARS`` on its own: a cut inside a string, a bracket
  or a continued line leaves a piece that does not parse, and the piece grows to the next cut.
  Only one piece's tree is alive at a time.
* ``relevant_text`` keeps, of a module of at least ``LARGE_MODULE_CHARS``, the top-level
  statements a finding can come from or depend on, and blanks the others' lines (so every line
  and column stays where it was): a statement is kept when it names a trigger of a selected rule
  (the names the pre-filter looks for), imports anything, or is the module's first statement
  (its docstring); then, to a fixed point, every statement that shares a name with a kept one,
  where the name is one the module binds somewhere (an assignment, a ``def``, a ``class``, an
  import, a loop or ``with`` target): a helper that builds the ``TrainingArguments`` names it
  itself, the constant a kept call reads and the statement that mutates a kept object share a
  name with it. Names are words of the statement's text, so a word in a string or a comment
  keeps a statement too (more is kept, never less). A module whose kept part is nearly all of
  it is read as it is.

The findings on a module read this way are those of the whole module (a test compares both on
the rule cases, the examples and generated files).
"""

from __future__ import annotations

import ast
import bisect
import re
from array import array
from typing import Iterator

from trainlint.lazyre import lazy

LARGE_MODULE_CHARS = 1_000_000  # below this a module is parsed whole, as it is
PIECE_CHARS = 64 * 1024
KEEP_ALL_ABOVE = 0.9  # kept lines above this share of the module: read it as it is

_LINE_END = lazy(r"\r\n|\r|\n")
# a line where a top-level statement can start: code in column 0 that does not continue the
# statement before it (a clause of a compound statement, a closing bracket)
_CUT = lazy(r"^(?![\s#)\]}])(?!(?:else|elif|except|finally)\b)", re.M)
_WORD = lazy(r"[^\W\d]\w*")
_ALWAYS = ("import", "__name__", "__all__")


def _line_starts(text: str) -> array:
    starts = array("q", [0])
    starts.extend(m.end() for m in _LINE_END.finditer(text))
    return starts


def module_pieces(text: str, piece_chars: int | None = None, pad: bool = False
                  ) -> Iterator[tuple[int, ast.Module, str]]:
    """(line offset, tree, text) of consecutive pieces of ``text`` cut between top-level statements,
    each parsed on its own (a statement at line ``n`` of a piece is at line ``offset + n`` of
    the module; ``pad``: each piece is parsed after as many empty lines as come before it, so
    its tree has the module's lines, and the offset is 0). Raises what ``ast.parse`` raises when the last piece does not parse (a
    ``SyntaxError`` with the module's line); ``ValueError`` when a ``__future__``
    import sits beyond the first piece (only a whole parse tells whether it is allowed)."""
    piece_chars = piece_chars or PIECE_CHARS
    starts = _line_starts(text)
    n = len(text)
    cut_offsets = array("q", (m.start() for m in _CUT.finditer(text)))
    start = 0  # offset where the current piece starts
    line0 = 0  # its line offset
    i = 0
    want = piece_chars
    first = True
    while start < n:
        # the next cut at least ``want`` characters on
        i = bisect.bisect_left(cut_offsets, start + want, i)
        end = cut_offsets[i] if i < len(cut_offsets) else n
        piece = text[start:end]
        if not first and "__future__" in piece:
            raise ValueError("__future__ import beyond the first piece")
        try:
            tree = ast.parse("\n" * line0 + piece if pad else piece)
        except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
            if end >= n:
                if isinstance(e, SyntaxError) and e.lineno is not None and not pad:  # the module's line
                    e.lineno += line0
                    if e.end_lineno is not None:
                        e.end_lineno += line0
                raise
            want = max(want * 2, end - start + 1)  # grow: a string or a bracket spans the cut
            continue
        yield 0 if pad else line0, tree, piece
        del tree, piece
        first = False
        line0 = bisect.bisect_right(starts, end) - 1 if end < n else line0
        start = end
        want = piece_chars


def statement_lines(text: str) -> list[int]:
    """The first line (its first decorator's) of every top-level statement of ``text``, from
    its pieces (a ``SyntaxError`` carries the line of the module); a module that cannot be
    judged piece by piece (a late ``__future__`` import) is parsed whole."""
    out: list[int] = []
    try:
        for offset, tree, _ in module_pieces(text):
            out.extend(offset + min([s.lineno] + [d.lineno for d in getattr(s, "decorator_list", ())])
                       for s in tree.body)
            del tree
    except ValueError:
        tree = ast.parse(text)
        return [min([s.lineno] + [d.lineno for d in getattr(s, "decorator_list", ())]) for s in tree.body]
    return out


def parse_module(text: str, triggers: tuple[str, ...] | None, filename: str = "<unknown>") -> ast.Module:
    """The syntax tree of a module of at least ``LARGE_MODULE_CHARS`` (see the module's
    documentation): its relevant statements, parsed piece by piece (a whole parse holds its
    parser's memory and the tree at once, about twice the tree) into one module whose nodes
    have the positions of a whole parse. What does not parse is parsed whole, for its error."""
    kept = relevant_text(text, triggers)
    body: list[ast.stmt] = []
    try:
        for _, tree, _ in module_pieces(kept, pad=True):
            body.extend(tree.body)
            del tree
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        del body
        return ast.parse(text, filename=filename)
    return ast.Module(body=body, type_ignores=[])


def _bound_names(tree: ast.Module, text: str) -> set[str]:
    """Every name the piece binds anywhere (over-approximated: any depth, any scope), found
    from the statements (expressions bind only through ``:=``, looked for when the piece has
    one)."""
    out: set[str] = set()
    todo: list = list(tree.body)
    while todo:
        node = todo.pop()
        t = type(node)
        if t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            out.add(node.name)
        elif t in (ast.Assign, ast.Delete):
            for target in node.targets:
                _target_names(target, out)
        elif t in (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor):
            _target_names(node.target, out)
        elif t in (ast.With, ast.AsyncWith):
            for item in node.items:
                if item.optional_vars is not None:
                    _target_names(item.optional_vars, out)
        elif t in (ast.Import, ast.ImportFrom):
            for a in node.names:
                out.add(a.asname or a.name.split(".", 1)[0])
        elif t in (ast.Global, ast.Nonlocal):
            out.update(node.names)
        elif t is ast.ExceptHandler:
            if node.name:
                out.add(node.name)
        elif t is ast.Match:
            for case in node.cases:
                for p in ast.walk(case.pattern):
                    name = getattr(p, "name", None) or getattr(p, "rest", None)
                    if isinstance(name, str):
                        out.add(name)
                todo.extend(case.body)
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if type(block) is list:
                todo.extend(block)
    if ":=" in text:
        for node in ast.walk(tree):
            if type(node) is ast.NamedExpr:
                _target_names(node.target, out)
    return out


def _target_names(target: ast.AST, out: set[str]) -> None:
    t = type(target)
    if t is ast.Name:
        out.add(target.id)  # type: ignore[attr-defined]
    elif t in (ast.Tuple, ast.List):
        for e in target.elts:  # type: ignore[attr-defined]
            _target_names(e, out)
    elif t is ast.Starred:
        _target_names(target.value, out)  # type: ignore[attr-defined]


def relevant_text(text: str, triggers: tuple[str, ...] | None) -> str:
    """``text`` with the lines of the top-level statements that cannot matter blanked (see the
    module's documentation); ``text`` itself when it is small, when ``triggers`` is None (a
    selected rule declares none), when nearly everything is kept, or when it cannot be cut into
    pieces (it does not parse: the whole parse reports that)."""
    if triggers is None or len(text) < LARGE_MODULE_CHARS:
        return text
    try:
        return _relevant_text(text, triggers)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return text


def _relevant_text(text: str, triggers: tuple[str, ...]) -> str:
    starts = _line_starts(text)
    n_lines = len(starts)
    # units: top-level statements, those that share a line merged; (first line, last line), 1-based
    firsts: list[int] = []
    lasts: list[int] = []
    bound: set[str] = set()
    for offset, tree, piece in module_pieces(text):
        for stmt in tree.body:
            first = offset + min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
            last = offset + (stmt.end_lineno or stmt.lineno)
            if lasts and first <= lasts[-1]:
                lasts[-1] = max(lasts[-1], last)
            else:
                firsts.append(first)
                lasts.append(last)
        bound |= _bound_names(tree, piece)
        del tree, piece
    if not firsts:
        return text

    def span(k: int) -> tuple[int, int]:
        a = starts[firsts[k] - 1]
        b = starts[lasts[k]] if lasts[k] < n_lines else len(text)
        return a, b

    seed_rx = re.compile("|".join(re.escape(t) for t in sorted({*triggers, *_ALWAYS}, key=len, reverse=True)))
    kept = bytearray(len(firsts))
    kept[0] = 1  # the module docstring, and what a fix inserts before the first statement
    names: list[tuple[str, ...]] = []
    by_name: dict[str, list[int]] = {}
    for k in range(len(firsts)):
        a, b = span(k)
        if seed_rx.search(text, a, b):
            kept[k] = 1
        words = tuple({w for w in _WORD.findall(text, a, b)} & bound)
        names.append(words)
        for w in words:
            by_name.setdefault(w, []).append(k)
    marked: set[str] = set()
    todo = [k for k in range(len(firsts)) if kept[k]]
    while todo:
        k = todo.pop()
        for w in names[k]:
            if w in marked:
                continue
            marked.add(w)
            for j in by_name[w]:
                if not kept[j]:
                    kept[j] = 1
                    todo.append(j)
    kept_lines = sum(lasts[k] - firsts[k] + 1 for k in range(len(firsts)) if kept[k])
    if kept_lines >= KEEP_ALL_ABOVE * n_lines:
        return text
    out: list[str] = []
    pos = 0
    for k in range(len(firsts)):
        if kept[k]:
            continue
        a, b = span(k)
        out.append(text[pos:a])
        out.append("\n" * (lasts[k] - firsts[k] + (1 if lasts[k] < n_lines else 0)))
        pos = b
    out.append(text[pos:])
    return "".join(out)
