"""When a fix cannot change libcst's verdict on a file, so ``import libcst`` (about 0.3 s, paid
by every ``fix`` that edits Python) can be skipped.

``trainlint.fixing.apply`` asks libcst to parse the statements a fix changed: a fixed file must
stay readable by the formatting-preserving parser that codemods read it with. Two shapes of
change are shown here, from the two texts alone, to leave libcst's verdict on those statements
exactly what it was on the user's own text (so a fix of that shape never makes a file
unreadable to libcst that was readable before):

* **token substitutions**: the token streams of the old and new text have the same length and
  the same token types, the same text between tokens, and differ only where a plain name
  replaces a plain name (ASCII identifiers, neither keywords nor soft keywords), a plain number
  a plain number, or a plain string a plain string (no f-string, no backslash). libcst's
  grammar reads a token by its type; its validation of those atoms (a non-empty name, a
  number or quoted string of the usual form) holds for both. Renamed keywords
  (``torch_dtype=`` -> ``dtype=``), renamed methods and attributes, replaced values.
* **one keyword argument added to a call**: the new stream is the old one with one run
  ``, name=value`` or ``name=value,`` inserted inside the parentheses of a call, the new syntax
  tree holds that keyword in an ``ast.Call`` there, and the value is a literal display
  (constants, names, attributes, dicts, lists, tuples and sets of those). The arguments of a
  call may hold a keyword anywhere the ``ast`` grammar allows it (which the new text passed),
  and libcst's argument validation accepts a keyword in every state of its argument state
  machine; whitespace and newlines inside the parentheses are free in both grammars.

Anything else (a new statement, a comment, an indentation change, several insertions, a
lambda or an f-string as the value, a ``\\r`` line end or a form feed, a module parsed in
pieces) answers False, and libcst parses the changed statements as before. The comparison is
confined to the top-level statements that hold the change (cut where a statement starts at
column 0 after the previous one ended: the tokenizer's state is the same clean one there in
both texts, their text before it being the same).
"""

from __future__ import annotations

import ast
import bisect
import io
import keyword
import re
import tokenize

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NUMBER = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\Z")
_STRING = re.compile(r"(?:[rRbBuU]|[bB][rR]|[rR][bB])?(?:\"[^\"\\\n\r]*\"|'[^'\\\n\r]*')\Z")
_RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)

MAX_CHARS = 1_000_000  # larger modules are parsed in pieces (``sources.pruning``): not shown here


def _plain(tok_type: int, text: str) -> bool:
    if tok_type == tokenize.NAME:
        return _NAME.match(text) is not None and text not in _RESERVED
    if tok_type == tokenize.NUMBER:
        return _NUMBER.match(text) is not None
    if tok_type == tokenize.STRING:
        return _STRING.match(text) is not None
    return False


def keeps_libcst_verdict(before: str, after: str, tree: ast.Module | None = None) -> bool:
    """Whether ``after`` differs from ``before`` (both Python modules; ``after`` parses with
    ``ast``, ``tree`` is its tree when the caller has it) only by changes that cannot change
    what libcst accepts (see the module's documentation)."""
    if before == after:
        return True
    if len(after) >= MAX_CHARS or len(before) >= MAX_CHARS or "\x0c" in before or "\x0c" in after:
        return False
    if before.count("\r") != before.count("\r\n") or after.count("\r") != after.count("\r\n"):
        return False
    try:
        if tree is None:
            tree = ast.parse(after)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    # the changed region: what lies between the common prefix and the common suffix
    n = min(len(before), len(after))
    i = 0
    while i < n and before[i:i + 4096] == after[i:i + 4096]:
        i += 4096
    i = min(i, n)
    while i > 0 and before[i - 1] != after[i - 1]:  # the last block compared may hold the change
        i -= 1
    while i < n and before[i] == after[i]:
        i += 1
    limit = n - i  # the suffix does not reach into the prefix of the shorter text
    j = 0
    lb, la = len(before), len(after)
    while j + 4096 <= limit and before[lb - j - 4096:lb - j] == after[la - j - 4096:la - j]:
        j += 4096
    while j < limit and before[lb - 1 - j] == after[la - 1 - j]:
        j += 1
    segment = _segment(after, tree, i, len(after) - j)
    if segment is None:
        return False
    start, end_new, stmts = segment
    end_old = end_new - (len(after) - len(before))
    if end_old < i or before[end_old:] != after[end_new:]:
        return False
    old = _tokens(before[start:end_old])
    new = _tokens(after[start:end_new])
    if old is None or new is None:
        return False
    if len(old) == len(new):
        return _substitutions(before[start:end_old], after[start:end_new], old, new)
    if len(new) > len(old):
        return _keyword_added(before[start:end_old], after, start, end_new, old, new, stmts)
    return False


def _segment(text: str, tree: ast.Module, lo: int, hi: int) -> tuple[int, int, list[ast.stmt]] | None:
    """(start, end, statements): offsets in ``text`` of clean top-level statement boundaries
    around ``[lo, hi)`` (the file's start and end count), and the statements between."""
    starts = [0]
    starts.extend(m.end() for m in re.finditer(r"\n", text))
    clean = [0]  # offsets where a top-level statement starts at column 0 after the previous ended
    info: list[tuple[int, ast.stmt]] = []
    prev_end = 0
    for s in tree.body:
        first = min([s.lineno] + [d.lineno for d in getattr(s, "decorator_list", [])])
        at_margin = first - 1 < len(starts) and text[starts[first - 1]:starts[first - 1] + 1] not in ("", " ", "\t")
        if at_margin and first > prev_end:
            clean.append(starts[first - 1])
        info.append((starts[first - 1] if first - 1 < len(starts) else len(text), s))
        prev_end = max(prev_end, s.end_lineno or s.lineno)
    clean.append(len(text))
    k = bisect.bisect_right(clean, lo) - 1
    start = clean[max(k, 0)]
    k = bisect.bisect_left(clean, hi)  # the first boundary in the common suffix
    if k >= len(clean):
        return None
    end = clean[k]
    stmts = [s for off, s in info if start <= off < end]
    return start, end, stmts


def _tokens(text: str) -> list[tokenize.TokenInfo] | None:
    """The tokens of ``text`` (a run of top-level statements), without the NL tokens of blank
    lines and of newlines inside brackets; None when it does not tokenize."""
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    if any(t.type == tokenize.ERRORTOKEN for t in toks):
        return None
    return [t for t in toks if t.type != tokenize.NL]


def _offsets(text: str) -> list[int]:
    starts = [0]
    starts.extend(m.end() for m in re.finditer(r"\n", text))
    return starts


def _substitutions(old_text: str, new_text: str, old: list[tokenize.TokenInfo],
                   new: list[tokenize.TokenInfo]) -> bool:
    """Same types everywhere, plain atoms for plain atoms where the strings differ, and the
    same text around them: ``new_text`` is ``old_text`` with those token strings replaced."""
    starts = _offsets(old_text)
    out: list[str] = []
    pos = 0
    for a, b in zip(old, new):
        if a.type != b.type:
            return False
        if a.string == b.string:
            continue
        if not (_plain(a.type, a.string) and _plain(b.type, b.string)):
            return False
        s = starts[a.start[0] - 1] + a.start[1]
        e = starts[a.end[0] - 1] + a.end[1]
        out.append(old_text[pos:s])
        out.append(b.string)
        pos = e
    out.append(old_text[pos:])
    return "".join(out) == new_text


def _keyword_added(before_seg: str, after: str, start: int, end: int, old: list[tokenize.TokenInfo],
                   new: list[tokenize.TokenInfo], stmts: list[ast.stmt]) -> bool:
    """``new`` is ``old`` with one run ``, name=value`` / ``name=value,`` inserted in a call's
    parentheses, where the new tree has that keyword with a literal value."""
    k = len(new) - len(old)

    def same(a: tokenize.TokenInfo, b: tokenize.TokenInfo) -> bool:
        return a.type == b.type and a.string == b.string

    p = 0
    while p < len(old) and same(old[p], new[p]):
        p += 1
    if any(not same(a, b) for a, b in zip(old[p:], new[p + k:])):
        return False
    run = new[p:p + k]
    if p == 0 or p >= len(old) or any(t.type == tokenize.COMMENT for t in run):
        return False
    # the innermost open bracket before the run: a call's ``(``
    depth: list[int] = []
    for idx in range(p):
        s = old[idx].string
        if old[idx].type == tokenize.OP and s in "([{":
            depth.append(idx)
        elif old[idx].type == tokenize.OP and s in ")]}" and depth:
            depth.pop()
    if not depth or old[depth[-1]].string != "(":
        return False
    if run[0].type == tokenize.OP and run[0].string == ",":
        core, name_at = run[1:], 1
    elif run[-1].type == tokenize.OP and run[-1].string == ",":
        core, name_at = run[:-1], 0
    else:
        return False
    if len(core) < 3 or core[0].type != tokenize.NAME or not _plain(tokenize.NAME, core[0].string) \
            or core[1].type != tokenize.OP or core[1].string != "=":
        return False
    if any(t.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER) for t in core):
        return False
    # the text around the run is the old text: only whitespace inside the brackets moved
    name_tok = run[name_at]
    last = core[-1]
    starts = _offsets(after[start:])
    lines = after[start:].split("\n")

    def pos(row: int, col: int) -> tuple[int, int]:  # (line in the file, UTF-8 column), as ast counts
        line = lines[row - 1] if row - 1 < len(lines) else ""
        return row + after.count("\n", 0, start), len(line[:col].encode("utf-8"))

    if p + k >= len(new):
        return False

    def off(starts_: list[int], at: tuple[int, int]) -> int:
        return starts_[at[0] - 1] + at[1]

    old_text = before_seg
    old_starts = _offsets(old_text)
    new_text = after[start:]
    # the text outside the inserted run is the old text, but for whitespace at the insertion
    cut_a, cut_b = off(starts, new[p - 1].end), off(starts, new[p + k].start)
    old_a, old_b = off(old_starts, old[p - 1].end), off(old_starts, old[p].start)
    around = [new[p - 1], *run, new[p + k]]
    for a, b in zip(around, around[1:]):  # between the inserted tokens: spaces and newlines only
        gap = new_text[off(starts, a.end):off(starts, b.start)]
        if gap.strip() or "\\" in gap:
            return False
    if old_text[old_a:old_b].strip():
        return False
    if new_text[:cut_a] != old_text[:old_a] or new_text[cut_b:end - start] != old_text[old_b:]:
        return False
    want_name = pos(*name_tok.start)
    want_end = pos(*last.end)
    for stmt in stmts:
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Call):
                continue
            for kw in node.keywords:
                if kw.arg == name_tok.string and (kw.lineno, kw.col_offset) == want_name \
                        and (kw.value.end_lineno, kw.value.end_col_offset) == want_end:
                    return _literal(kw.value)
    return False


def _literal(node: ast.AST) -> bool:
    """A literal display: constants (no f-string), names, attributes of names, and dicts,
    lists, tuples and sets of those; a signed number."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _literal(node.value) and isinstance(node.value, (ast.Name, ast.Attribute))
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_literal(e) and not isinstance(e, ast.Starred) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _literal(k) for k in node.keys) and all(_literal(v) for v in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float))
    return False
