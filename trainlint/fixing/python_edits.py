"""Minimal text edits on Python source, computed from ``ast`` positions.

Every helper returns ``Edit`` objects that touch only the characters that must change, so the
rest of the file (comments, layout, quotes) stays as written. The fixer re-parses every result
before anything is written (``trainlint.fixing.apply``).
"""

from __future__ import annotations

import ast
import re

from trainlint.diagnostics import Edit, Span
from trainlint.sources.python import PythonFile


def replace(span: Span, content: str) -> Edit:
    return span.edit(content)


def _text_between(pf: PythonFile, a: Span, b: Span) -> str:
    """Text from the end of ``a`` to the start of ``b`` (same file)."""
    lines = pf.lines
    if a.end_line == b.line:
        return lines[a.end_line - 1][a.end_column - 1:b.column - 1]
    parts = [lines[a.end_line - 1][a.end_column - 1:]]
    parts.extend(lines[a.end_line:b.line - 1])
    parts.append(lines[b.line - 1][:b.column - 1])
    return "".join(parts)


def _ordered_args(call: ast.Call) -> list[ast.AST]:
    items: list[ast.AST] = [*call.args, *call.keywords]
    items.sort(key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]
    return items


def remove_argument(pf: PythonFile, call: ast.Call, arg: ast.AST) -> Edit:
    """Delete one argument (positional or keyword) of a call, with one separating comma."""
    items = _ordered_args(call)
    spans = [pf.span(n) for n in items]
    return remove_item(pf, spans, next(k for k, n in enumerate(items) if n is arg))


def remove_dict_entry(pf: PythonFile, d: ast.Dict, key: ast.AST) -> Edit:
    """Delete one ``key: value`` entry of a dict display, with one separating comma."""
    spans = []
    index = 0
    for i, (k, v) in enumerate(zip(d.keys, d.values)):
        start = pf.span(k) if k is not None else pf.span(v)
        end = pf.span(v)
        if k is None:  # **other: include the ``**``
            start = Span(path=pf.path, line=start.line, column=max(1, start.column - 2), end_line=start.line,
                         end_column=start.column)
        spans.append(Span(path=pf.path, line=start.line, column=start.column, end_line=end.end_line,
                          end_column=end.end_column))
        if k is key:
            index = i
    return remove_item(pf, spans, index)


def remove_item(pf: PythonFile, spans: list[Span], i: int) -> Edit:
    """Delete item ``i`` of a comma-separated list (call arguments, dict entries) and exactly
    one separating comma: ``f(a, b=1, c)`` -> ``f(a, c)``. When the item sits alone on its
    line(s) in a multi-line list, its whole lines go (a comment there belongs to it)."""
    sp = spans[i]
    line_text = pf.lines[sp.line - 1]
    alone_before = line_text[:sp.column - 1].strip() == ""
    after = pf.lines[sp.end_line - 1][sp.end_column - 1:]
    after_code = after.split("#", 1)[0].strip()
    alone = alone_before and after_code in ("", ",")
    if i + 1 < len(spans):
        nxt = spans[i + 1]
        if alone and nxt.line > sp.end_line:
            return Edit(path=pf.path, line=sp.line, column=1, end_line=sp.end_line + 1, end_column=1, content="")
        return Edit(path=pf.path, line=sp.line, column=sp.column, end_line=nxt.line, end_column=nxt.column,
                    content="")
    # the last item
    if i > 0:
        prev = spans[i - 1]
        if alone and prev.end_line < sp.line:
            gap = _text_between(pf, prev, sp)
            if "," in gap.split("#", 1)[0] and after_code == ",":
                # the previous item keeps its comma; the list keeps its trailing-comma style
                return Edit(path=pf.path, line=sp.line, column=1, end_line=sp.end_line + 1, end_column=1,
                            content="")
        return Edit(path=pf.path, line=prev.end_line, column=prev.end_column, end_line=sp.end_line,
                    end_column=sp.end_column, content="")
    end_col = sp.end_column
    if after.lstrip().startswith(","):
        end_col = sp.end_column + (len(after) - len(after.lstrip())) + 1
    return Edit(path=pf.path, line=sp.line, column=sp.column, end_line=sp.end_line, end_column=end_col, content="")


def rename_keyword(pf: PythonFile, kw: ast.keyword, new_name: str) -> Edit:
    return pf.keyword_name_span(kw).edit(new_name)


def add_keyword(pf: PythonFile, call: ast.Call, text: str) -> Edit:
    """Append ``text`` (``name=value``) as the call's last argument, matching its layout:
    one argument per line stays one per line, with the same indentation and trailing comma."""
    items = _ordered_args(call)
    call_sp = pf.span(call)
    if not items:
        # f() -> f(text)
        return Edit(path=pf.path, line=call_sp.end_line, column=call_sp.end_column - 1,
                    end_line=call_sp.end_line, end_column=call_sp.end_column - 1, content=text)
    last = pf.span(items[-1])
    line_text = pf.lines[last.line - 1]
    multiline = last.line > pf.span(call.func).end_line and line_text[:last.column - 1].strip() == ""
    after = pf.lines[last.end_line - 1][last.end_column - 1:]
    has_trailing_comma = after.lstrip().startswith(",")
    if multiline:
        indent = line_text[:last.column - 1]
        if has_trailing_comma:
            comma_col = last.end_column + (len(after) - len(after.lstrip()))
            # insert a new line after the comma's line
            return Edit(path=pf.path, line=last.end_line + 1, column=1, end_line=last.end_line + 1, end_column=1,
                        content=f"{indent}{text},\n") if _rest_is_comment_or_empty(after, comma_col - last.end_column) \
                else Edit(path=pf.path, line=last.end_line, column=comma_col + 1, end_line=last.end_line,
                          end_column=comma_col + 1, content=f" {text},")
        return Edit(path=pf.path, line=last.end_line, column=last.end_column, end_line=last.end_line,
                    end_column=last.end_column, content=f",\n{indent}{text}")
    if has_trailing_comma:
        comma_col = last.end_column + (len(after) - len(after.lstrip()))
        return Edit(path=pf.path, line=last.end_line, column=comma_col + 1, end_line=last.end_line,
                    end_column=comma_col + 1, content=f" {text},")
    return Edit(path=pf.path, line=last.end_line, column=last.end_column, end_line=last.end_line,
                end_column=last.end_column, content=f", {text}")


def _rest_is_comment_or_empty(after: str, comma_offset: int) -> bool:
    rest = after[comma_offset + 1:].strip()
    return rest == "" or rest.startswith("#")


def delete_statement(pf: PythonFile, stmt: ast.stmt) -> Edit:
    """Delete a simple statement. Alone on its line(s): the whole lines go, with a trailing
    comment. Sharing a line with ``;``: only it and its separator. The only statement of a
    block: replaced by ``pass`` so the block stays valid."""
    sp = pf.span(stmt)
    first = pf.lines[sp.line - 1]
    last = pf.lines[sp.end_line - 1]
    before = first[:sp.column - 1]
    after = last[sp.end_column - 1:]
    after_code = after.split("#", 1)[0].strip() if not after.lstrip().startswith(("'", '"')) else after.strip()
    if before.strip() == "" and (after_code == "" ):
        if _only_statement_in_block(pf, stmt):
            return Edit(path=pf.path, line=sp.line, column=sp.column, end_line=sp.end_line,
                        end_column=len(last.rstrip("\r\n")) + 1, content="pass")
        end_line = sp.end_line + 1
        if end_line > len(pf.lines):
            # last line of the file (maybe without newline)
            return Edit(path=pf.path, line=sp.line, column=1, end_line=sp.end_line,
                        end_column=len(last) + 1, content="")
        return Edit(path=pf.path, line=sp.line, column=1, end_line=end_line, end_column=1, content="")
    if after.lstrip().startswith(";"):
        skip = len(after) - len(after.lstrip()) + 1
        rest = after[skip:]
        skip += len(rest) - len(rest.lstrip(" \t"))
        return Edit(path=pf.path, line=sp.line, column=sp.column, end_line=sp.end_line,
                    end_column=sp.end_column + skip, content="")
    m = re.search(r";\s*$", before)
    if m:
        return Edit(path=pf.path, line=sp.line, column=m.start() + 1, end_line=sp.end_line,
                    end_column=sp.end_column, content="")
    return Edit(path=pf.path, line=sp.line, column=sp.column, end_line=sp.end_line, end_column=sp.end_column,
                content="pass")


def _only_statement_in_block(pf: PythonFile, stmt: ast.stmt) -> bool:
    for node in ast.walk(pf.tree):
        for fname in ("body", "orelse", "finalbody"):
            block = getattr(node, fname, None)
            if isinstance(block, list) and block and any(s is stmt for s in block):
                return len(block) == 1 and not isinstance(node, ast.Module)
        if isinstance(node, ast.Try):
            for h in node.handlers:
                if any(s is stmt for s in h.body):
                    return len(h.body) == 1
    return False


def ensure_import(pf: PythonFile, module: str, name: str) -> Edit | None:
    """Make ``name`` importable from ``module`` in the file: nothing if it already is; else add
    it to an existing ``from module import (...)`` or a new line after the last top-level
    import."""
    for local, qn in pf.imports.items():
        if local == name and qn in (f"{module}.{name}", name):
            return None
    if name in pf.module_scope.bindings and pf.imports.get(name) is None:
        return None
    top_imports = [s for s in pf.tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    for stmt in top_imports:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == module and stmt.level == 0 \
                and not any(a.name == "*" for a in stmt.names):
            names = sorted(stmt.names, key=lambda a: (a.lineno, a.col_offset))
            last = names[-1]
            lsp = pf.span(last)
            line_text = pf.lines[lsp.line - 1]
            multiline = stmt.lineno != lsp.line and line_text[:lsp.column - 1].strip() == ""
            after = line_text[lsp.end_column - 1:]
            trailing = after.lstrip().startswith(",")
            if multiline:
                indent = line_text[:lsp.column - 1]
                if trailing:
                    return Edit(path=pf.path, line=lsp.line + 1, column=1, end_line=lsp.line + 1, end_column=1,
                                content=f"{indent}{name},\n")
                return Edit(path=pf.path, line=lsp.line, column=lsp.end_column, end_line=lsp.line,
                            end_column=lsp.end_column, content=f",\n{indent}{name}")
            return Edit(path=pf.path, line=lsp.line, column=lsp.end_column, end_line=lsp.line,
                        end_column=lsp.end_column, content=f", {name}")
    if top_imports:
        last_stmt = top_imports[-1]
        sp = pf.span(last_stmt)
        return Edit(path=pf.path, line=sp.end_line + 1, column=1, end_line=sp.end_line + 1, end_column=1,
                    content=f"from {module} import {name}\n")
    # no imports: after a module docstring, else at the top
    line = 1
    body = pf.tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        line = body[0].end_lineno + 1  # type: ignore[operator]
    return Edit(path=pf.path, line=line, column=1, end_line=line, end_column=1,
                content=f"from {module} import {name}\n")


def python_literal(value: object, like: str | None = None) -> str:
    """Source text for a number as a person writes it: ``1e-4``, ``2e-5``, ``3.5e-6`` for
    small and large floats, ``0.01``/``10.0`` otherwise, never ``0.0001e0``. ``like`` is how the
    file already writes the number being replaced: a decimal (``0.00002``) is answered with a
    decimal, an exponent (``2E-5``) with an exponent in the same case. At most 6 significant
    digits."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return repr(value)
        like = (like or "").strip().lstrip("+-")
        exponent_style = "e" in like.lower() if like else (value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e6))
        if like and not exponent_style and "." not in like and value != int(value):
            exponent_style = abs(value) < 1e-3  # an integer was written: a decimal unless tiny
        if exponent_style and value != 0:
            mant, exp = f"{value:.5e}".split("e")
            mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
            letter = "E" if "E" in like else "e"
            return f"{mant}{letter}{int(exp)}"
        text = f"{value:.6g}"
        if "e" in text:  # a decimal was asked for but %g chose an exponent
            text = f"{value:.15f}".rstrip("0")
            digits = len(text.split(".")[1]) if "." in text else 0
            text = f"{round(value, max(digits, 1)):.{min(max(digits, 1), 15)}f}"
        if "." not in text and "e" not in text and "inf" not in text and "nan" not in text:
            text += ".0"
        return text
    return repr(value)


def rewrite_node(pf: PythonFile, node: ast.AST, edits: list[Edit]) -> Edit:
    """One edit that replaces all of ``node``'s text with ``edits`` (all inside it) applied.

    A fix whose edits only make sense together with the rest of a call (renaming the method
    changes which keywords are valid) claims the whole call this way: any other fix that edits
    the same call overlaps it, waits for the next pass and is computed again on the renamed
    call (``trainlint.fixing.apply``: overlapping fixes never apply in the same pass)."""
    sp = pf.span(node)
    lines = pf.lines[sp.line - 1:sp.end_line]
    local = "".join(lines)
    shift = sp.column - 1

    def rel(e: Edit) -> Edit:
        # whole lines are kept, so only the line numbers move
        return Edit(path=e.path, line=e.line - sp.line + 1, column=e.column,
                    end_line=e.end_line - sp.line + 1, end_column=e.end_column, content=e.content)

    from trainlint.fixing.text_edits import apply_edits

    rewritten = apply_edits(local, [rel(e) for e in edits])
    # the node's own text: from its start column on the first line to its end on the last
    tail = len(lines[-1]) - (sp.end_column - 1)
    body = rewritten[shift:len(rewritten) - tail if tail else None]
    return sp.edit(body)
