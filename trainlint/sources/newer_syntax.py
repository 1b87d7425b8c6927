"""Syntax the interpreter that runs trainlint is too old for.

trainlint parses scripts with the running interpreter's ``ast``. On Python 3.11 a file that
uses Python 3.12 f-strings (PEP 701: ``f"{row["question"]}"``, the same quotes inside the
braces) is a ``SyntaxError`` although the project runs it fine on 3.12 (Colab, a
``requires-python >= 3.12``). Such a file is not broken: the finding says that trainlint could
not analyse it on this interpreter, as info, instead of calling the code invalid.
"""

from __future__ import annotations

import ast
import re
import sys
import unicodedata

NEWER = "3.12"


def valid_on_newer_python(text: str, error: BaseException) -> str | None:
    """``"3.12"`` when the interpreter is older than 3.12, ``error`` is a ``SyntaxError`` of a
    text with f-strings, and ``text`` is valid with Python 3.12's f-strings
    (``parses_with_pep701``); else None. Not only an error that says "f-string": on 3.11
    ``f"{"\\n".join(lines)}"`` is "unexpected character after line continuation character"."""
    if sys.version_info >= (3, 12) or not isinstance(error, SyntaxError):
        return None
    if not (error.msg or "").startswith("f-string") and _FSTRING_START.search(text) is None:
        return None
    return NEWER if parses_with_pep701(text) else None


_FSTRING_START = re.compile(r"""(?<![A-Za-z0-9_])(?:[fF][rR]?|[rR][fF])['"]""")


def parses_with_pep701(text: str) -> bool:
    """Whether ``text`` parses when its f-strings are read as Python 3.12 reads them (PEP 701):
    inside a replacement field any string may stand, with any quotes (``f"{row["q"]}"``),
    f-strings nested to any depth, backslashes, comments and newlines. Every f-string of the
    text is cut out (``""`` in its place) and its fields' expressions are parsed on their own,
    in parentheses, with this interpreter's ``ast``; the text without them is parsed too.

    It stands in for libcst's Python 3.12 grammar, whose import alone (0.3 s) was most of a
    check of a notebook collection with one such notebook; ``tests/test_newer_syntax.py``
    compares the two on many texts. Syntax new in 3.12 other than f-strings (``type X = ...``,
    ``def f[T]()``) is not read: such a text is invalid here."""
    try:
        rest, expressions = _cut_fstrings(text)
        ast.parse(rest)
        for e in expressions:
            if not _expression(e):
                return False
    except (SyntaxError, ValueError, KeyError, RecursionError, _Invalid):
        return False
    return True


def _expression(e: str) -> bool:
    """Whether ``e`` is a replacement field's expression (Python 3.12's ``annotated_rhs``: an
    expression, a tuple without parentheses, ``*a``, ``yield``; not a bare generator
    ``x for x in y``), parsed in brackets so that it may span lines."""
    if not e.strip():
        return False  # f"{}" / f"{ }"
    try:
        node = ast.parse("(" + e + "\n)", mode="eval").body
        comprehension = ast.GeneratorExp
    except SyntaxError:  # `*a`, `*a, b`: in a list
        node = ast.parse("[" + e + "\n]", mode="eval").body
        comprehension = ast.ListComp
    # the brackets made the comprehension: `f"{x for x in y}"` is invalid
    return not (isinstance(node, comprehension) and node.col_offset == 0)


class _Invalid(Exception):
    """A text whose f-strings Python 3.12 cannot read either."""


_PREFIXES = frozenset({"", "r", "u", "f", "b", "br", "rb", "fr", "rf"})
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_CODE_STOP = re.compile(r"""[#"'\\]""")  # what the code around the strings is read up to
_FIELD_STOP = re.compile(r"""[#"'\\()\[\]{}!:=<>\n]""")  # ... inside a replacement field


def _prefix_start(text: str, quote_at: int) -> int:
    """Where the string literal whose quote is at ``quote_at`` starts: before its prefix
    (``rb``, ``f``) when the name characters before the quote are one."""
    j = quote_at
    while j and text[j - 1] in _NAME_CHARS:
        j -= 1
    return j if text[j:quote_at].lower() in _PREFIXES else quote_at


def _cut_fstrings(text: str) -> tuple[str, list[str]]:
    """``text`` with each f-string replaced by ``""``, and every replacement field's
    expression (the nested f-strings cut out of them the same way)."""
    out: list[str] = []
    expressions: list[str] = []
    last = i = 0
    n = len(text)
    while True:
        m = _CODE_STOP.search(text, i)
        if m is None:
            break
        c, at = m.group(), m.start()
        if c == "#":
            j = text.find("\n", at)
            i = n if j == -1 else j
            continue
        if c == "\\":
            i = at + 2
            continue
        i, last = _take_string(text, at, expressions, out, last)
    out.append(text[last:])
    return "".join(out), expressions


# what ends a string that is no f-string, or is escaped in it, by its closing quote
_STRING_STOP = {'"': re.compile(r'[\\\n"]'), "'": re.compile(r"[\\\n']"),
                '"""': re.compile(r'\\|"""'), "'''": re.compile(r"\\|'''")}


def _take_string(text: str, at: int, expressions: list[str], out: list[str], last: int) -> tuple[int, int]:
    """Read the string literal whose quote is at ``at``: where it ends, and where the text still
    to copy to ``out`` starts (an f-string's own text is not copied: its placeholder is)."""
    start = _prefix_start(text, at)
    end, is_f = _string(text, start, at, expressions)
    if not is_f:
        return end, last
    out.append(text[last:start])
    out.append(_placeholder(text, start))
    return end, end


def _placeholder(text: str, start: int) -> str:
    '''What stands for the f-string at ``start``: an empty string, spaced from a string before
    and after it (two empty strings side by side would open a triple-quoted one; a space at a
    line's start would be an indent).'''
    return ' "" ' if start and text[start - 1] in "\"'" else '"" '


def _string(text: str, start: int, quote_at: int, expressions: list[str]) -> tuple[int, bool]:
    """Read the string literal at ``start`` (prefix) / ``quote_at`` (its quote): where it ends,
    and whether it is an f-string (its fields' expressions appended to ``expressions``)."""
    prefix = text[start:quote_at].lower()
    q = text[quote_at]
    triple = text.startswith(q * 3, quote_at)
    close = q * 3 if triple else q
    i = quote_at + len(close)
    raw = "r" in prefix
    n = len(text)
    if "f" not in prefix:
        stop = _STRING_STOP[close]
        while True:
            m = stop.search(text, i)
            if m is None:
                raise _Invalid("unterminated string")
            if m.group() == "\\":
                i = m.end() + 1
            elif m.group() == "\n":
                raise _Invalid("newline in a string")
            else:
                return m.end(), False
    # an f-string: literal text, {{ and }}, and fields
    while i < n:
        c = text[i]
        if c == "\\":
            i = _escape_end(text, i, raw, q)
        elif text.startswith(close, i):
            return i + len(close), True
        elif c == "\n" and not triple:
            raise _Invalid("newline in an f-string")
        elif c == "{":
            if text.startswith("{", i + 1):
                i += 2
            else:
                i = _field(text, i + 1, expressions, close, raw)
        elif c == "}":
            if not text.startswith("}", i + 1):
                raise _Invalid("single '}' in an f-string")
            i += 2
        else:
            i += 1
    raise _Invalid("unterminated f-string")


_HEX = frozenset("0123456789abcdefABCDEF")
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}


def _escape_end(text: str, i: int, raw: bool, q: str) -> int:
    """Past the backslash at ``i`` in an f-string's text (or format spec) and what it escapes:
    in a raw one only a quote or backslash; ``\\{`` and ``\\}`` escape nothing (the brace
    stays a brace); ``\\N{name}``, ``\\x``, ``\\u``, ``\\U`` must name a character."""
    nxt = text[i + 1:i + 2]
    if raw:
        return i + 2 if nxt in (q, "\\") else i + 1
    if nxt in ("{", "}"):
        return i + 1
    if nxt == "N" and text.startswith("{", i + 2):
        j = text.find("}", i + 3)
        if j == -1:
            raise _Invalid("unterminated \\N{...}")
        unicodedata.lookup(text[i + 3:j])  # KeyError: no such character
        return j + 1
    size = _HEX_DIGITS.get(nxt)
    if size is not None:
        digits = text[i + 2:i + 2 + size]
        if len(digits) < size or not _HEX.issuperset(digits) or int(digits, 16) > 0x10FFFF:
            raise _Invalid("truncated or illegal \\x, \\u or \\U escape")
        return i + 2 + size
    return i + 2


def _check_escapes(text: str, q: str) -> None:
    """Raise ``_Invalid`` if a backslash escape in ``text`` names no character."""
    k = text.find("\\")
    while k != -1:
        k = text.find("\\", _escape_end(text, k, False, q))


def _field(text: str, i: int, expressions: list[str], close: str, raw: bool) -> int:
    """Read the replacement field whose expression starts at ``i`` (after its ``{``) in an
    f-string that ``close`` ends: its expression to ``expressions``, a conversion, a format
    spec with its own fields; where it ends (after its ``}``)."""
    n = len(text)
    parts: list[str] = []
    depth = 0
    last = begin = i
    while True:
        m = _FIELD_STOP.search(text, i)
        if m is None:
            raise _Invalid("unterminated replacement field")
        c, at = m.group(), m.start()
        i = at + 1
        if c in "\"'":
            i, last = _take_string(text, at, expressions, parts, last)
        elif c == "#":
            parts.append(text[last:at])
            j = text.find("\n", at)
            if j == -1:
                raise _Invalid("a comment to the end of the text")
            i = last = j
        elif c == "\\":
            i = at + 2
        elif c in "([{":
            depth += 1
        elif c in ")]":
            depth -= 1
            if depth < 0:
                raise _Invalid("a closing bracket that opens nothing")
        elif c == "}":
            if depth:
                depth -= 1
                continue
            parts.append(text[last:at])
            expressions.append("".join(parts))
            return at + 1
        elif depth:
            continue
        elif c in "!<>=" and text.startswith("=", at + 1):
            i = at + 2  # an operator: != <= >= ==
        elif c == "=":  # f"{x=}": the expression, then its text, shown before the value
            j = _blank_end(text, at + 1)
            if j < n and text[j] in "}!:":
                if not raw:  # the expression's text is shown, read as the f-string's text is
                    _check_escapes(text[begin:j], close[0])
                parts.append(text[last:at])
                last = i = j
                expressions.append("".join(parts))
                return _after_expression(text, j, expressions, close, raw)
        elif c in "!:":
            parts.append(text[last:at])
            expressions.append("".join(parts))
            return _after_expression(text, at, expressions, close, raw)


def _blank_end(text: str, i: int) -> int:
    """Past the blanks, newlines and comments at ``i`` (inside a field, before its ``}``)."""
    n = len(text)
    while i < n:
        if text[i] in " \t\n\r\f":
            i += 1
        elif text[i] == "#":
            j = text.find("\n", i)
            i = n if j == -1 else j
        else:
            break
    return i


def _after_expression(text: str, i: int, expressions: list[str], close: str, raw: bool) -> int:
    """A field's ``!conversion``, ``:format spec`` and ``}`` at ``i``; where it ends. The
    spec is text (a newline only in a triple-quoted f-string; never its closing quote) and
    fields."""
    n = len(text)
    if text.startswith("!", i):
        j = i + 1
        while j < n and text[j] in _NAME_CHARS:
            j += 1
        if text[i + 1:j] not in ("s", "r", "a"):
            raise _Invalid("f-string: invalid conversion character")
        i = _blank_end(text, j)  # f"{x!r }"
    if text.startswith("}", i):
        return i + 1
    if not text.startswith(":", i):
        raise _Invalid("f-string: expecting '}'")
    i += 1
    while i < n:  # the format spec: text and nested fields
        c = text[i]
        if c == "{":
            i = _field(text, i + 1, expressions, close, raw)
        elif c == "}":
            return i + 1
        elif c == "\\":
            i = _escape_end(text, i, raw, close[0])
        elif c == "\n" and len(close) == 1:
            raise _Invalid("newline in a format spec")
        elif text.startswith(close, i):
            raise _Invalid("f-string: expecting '}'")
        else:
            i += 1
    raise _Invalid("unterminated format spec")


def message(error: SyntaxError, newer: str) -> str:
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    return (f"cannot parse Python on Python {running}, which runs trainlint ({error.msg}); the code is valid "
            f"from Python {newer} (PEP 701 f-strings), so it is not checked: run trainlint on Python {newer} "
            f"or newer to check it")


DATABRICKS_HEADER = "# Databricks notebook source"


def notebook_export(text: str, error: BaseException) -> str | None:
    """The finding's message when ``text`` is a Databricks notebook exported as ``.py`` (its
    first line ``# Databricks notebook source``, cells split by ``# COMMAND ----------``) and the
    line that does not parse is an IPython shell or magic line (``!deepspeed ...``, ``%pip``),
    which the notebook runs; else None. databrickslabs/dolly's ``train_dolly.py`` is one."""
    if not isinstance(error, SyntaxError) or not text.lstrip("\ufeff").startswith(DATABRICKS_HEADER):
        return None
    lines = text.splitlines()
    n = error.lineno or 0
    # the error may be reported on a continuation line of a `!cmd \` command: walk back to its start
    while 1 < n <= len(lines) and lines[n - 2].rstrip().endswith("\\") and not lines[n - 1].lstrip().startswith(("!", "%")):
        n -= 1
    line = lines[n - 1].lstrip() if 0 < n <= len(lines) else ""
    if not line.startswith(("!", "%")):
        return None
    shown = line.split()[0][:40]
    return (f"a Databricks notebook exported as .py ({DATABRICKS_HEADER!r}) with an IPython line "
            f"({shown} ...) at line {n}, which the notebook runs but Python cannot parse: the file is not "
            f"checked; export it as .ipynb (trainlint reads IPython syntax there) to check it")
