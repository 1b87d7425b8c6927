"""What a notebook's Python cells pass on to its shell lines, as IPython runs them.

* **Process state.** ``os.environ["X"] = "1"``, ``os.environ.setdefault(...)``,
  ``os.environ.update(...)`` and ``os.chdir(...)`` in a Python cell change the kernel's
  process, so every later ``!`` line and ``%%bash`` cell sees them (as ``%env`` and ``%cd``
  do). Each becomes shell text at the end of its statement's last virtual line (``X=1;export
  X``, ``cd dir``), past the cell line's own columns, so no edit of the cell can touch it. A
  value that is not a known literal is unknown (``"$___"``), never the text of the code; one
  set inside a block (``if``, ``for``, ``with``) may not run and is unknown too.
* **Variable expansion.** IPython expands ``{expr}`` and ``$name`` in a ``!`` line (and in
  line magics such as ``%cd``) from the Python namespace before the shell sees it
  (``IPython.core.interactiveshell.InteractiveShell.var_expand`` with its ``DollarFormatter``):
  ``$$`` is a literal ``$``, ``{{``/``}}`` literal braces, ``$name`` inside single quotes is
  left alone, and when any field cannot be evaluated (an undefined name, a syntax error) the
  whole line is passed on untransformed. A field whose value is a known literal at that point
  of the notebook (an assignment of a literal, or of an expression over known literals, at the
  top level of an earlier cell) is written into the shell text; any other field becomes an
  unknown value (``$___``), so no finding is ever about the placeholder's text. The virtual
  line keeps where each replaced field was (``VLine.subs``) to place findings in the cell.
"""

from __future__ import annotations

import ast
import builtins
import re
from typing import Any

from trainlint.sources.python import child_nodes, statement_nodes

__all__ = ["apply_flow"]

UNKNOWN: Any = object()  # bound in Python, but to no value known statically
_UNDEFINED: Any = object()  # not bound at all: IPython's eval fails, the line is not expanded
_DOLLAR = re.compile(r"(.*?)\$(\$?[\w\.]+)(?=([^']*'[^']*')*[^']*$)")
_SIMPLE = re.compile(r"[\w./:,@%+=-]+")
_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match) \
    if hasattr(ast, "Match") else (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)


class _Fail(Exception):
    """A field IPython could not evaluate: the line stays as written."""


def apply_flow(nb: Any, tree: ast.Module) -> None:
    """Rewrite the shell text of ``nb`` (its builder's lines) with what its Python passes on."""
    b = nb._builder
    # Nothing to do (most notebooks): no shell line with an IPython field to expand, and no
    # ``environ``/``chdir`` in the program (``os.environ``, ``os.chdir``, ``from os import
    # environ``: each names one of the two words), so no statement can change the process.
    text = nb.python_text
    effects_possible = "environ" in text or "chdir" in text
    fielded = [i for i, start, _ in b.sites if _has_fields(b.disp[i][start:])] + [i for i, _ in b.env_sites]
    if not effects_possible and not fielded:
        return
    aliases = _aliases(tree) if effects_possible else {"os": set(), "environ": set(), "chdir": set()}
    if not (aliases["os"] or aliases["environ"] or aliases["chdir"]):
        effects_possible = False
    lines = text.split("\n") if effects_possible else []
    # ``os.environ``/``os.chdir`` name the words; ``from os import environ as env`` its alias
    words = ("environ", "chdir", *aliases["environ"], *aliases["chdir"])

    def may_affect(stmt: ast.stmt) -> bool:  # its lines name one of the words
        return effects_possible and any(w in ln for ln in lines[stmt.lineno - 1:stmt.end_lineno or stmt.lineno]
                                        for w in words)

    # past the last shell line with a field and the last statement that may change the
    # process, nothing a statement binds or does can change any shell text
    last = max((i + 1 for i in fielded), default=0)
    if effects_possible:
        last = max([last, *((stmt.end_lineno or stmt.lineno) for stmt in tree.body if may_affect(stmt))])
    # the shell lines in order: ! commands, then %env lines (kind 1)
    sites = sorted([(s[0], 0, s) for s in b.sites] + [(e[0], 1, e) for e in b.env_sites], key=lambda s: s[0])
    k = 0
    state: dict[str, Any] = {}
    changed = False
    for stmt in tree.body:
        if stmt.lineno > last:
            break
        # the shell lines before this statement, then those inside it (its names unknown there)
        while k < len(sites) and sites[k][0] + 1 < stmt.lineno:
            changed |= _run(nb, b, sites[k], state)
            k += 1
        inside = []
        while k < len(sites) and sites[k][0] + 1 <= (stmt.end_lineno or stmt.lineno):
            inside.append(sites[k])
            k += 1
        if inside:
            scoped = dict(state)
            for name in _bound(stmt):
                scoped[name] = UNKNOWN
            for site in inside:
                changed |= _run(nb, b, site, scoped)
        effects = _effects(stmt, aliases, state) if may_affect(stmt) else []
        if effects:
            _append_shell(nb, b, (stmt.end_lineno or stmt.lineno) - 1, effects)
            changed = True
        _bind(stmt, state)
    while k < len(sites):
        changed |= _run(nb, b, sites[k], state)
        k += 1
    if changed:
        from trainlint.sources.notebook import _join

        nb.shell_text = _join(b.sh)


# -- Python values --------------------------------------------------------------------------


def _bound(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds (not inside the functions and classes it defines)."""
    out: set[str] = set()
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                out.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        todo.extend(child_nodes(node))  # (``ast.iter_child_nodes`` but the context leaves: a set either way)
    return out


def _bind(stmt: ast.stmt, state: dict[str, Any]) -> None:
    value: Any = UNKNOWN
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
        value = _value(stmt.value, state)
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        targets = [stmt.target]
        value = _value(stmt.value, state)
    names = _bound(stmt)
    for name in names:
        state[name] = UNKNOWN
    if value is not UNKNOWN and all(isinstance(t, ast.Name) for t in targets):
        for t in targets:
            state[t.id] = value  # type: ignore[attr-defined]


def _value(node: ast.expr, state: dict[str, Any]) -> Any:
    try:
        v = _eval(node, state)
    except _Fail:
        return UNKNOWN
    return v if isinstance(v, (str, int, float, bool)) or v is None else UNKNOWN


_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}


def _eval(node: ast.expr, state: dict[str, Any]) -> Any:
    """The value of a small expression over known values; ``UNKNOWN`` when it depends on one
    that is not known; ``_Fail`` when IPython itself could not evaluate it."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in state:
            return state[node.id]
        if hasattr(builtins, node.id):
            return UNKNOWN
        raise _Fail(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, state)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
        return UNKNOWN
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _eval(node.left, state), _eval(node.right, state)
        if a is UNKNOWN or b is UNKNOWN:
            return UNKNOWN
        ok = (isinstance(a, str) and isinstance(b, str) and isinstance(node.op, ast.Add)) or (
            isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool)
            and not isinstance(b, bool))
        if not ok:
            return UNKNOWN
        try:
            return _BINOPS[type(node.op)](a, b)
        except (ArithmeticError, ValueError):
            return UNKNOWN
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
                continue
            assert isinstance(v, ast.FormattedValue)
            x = _eval(v.value, state)
            spec = _eval(v.format_spec, state) if v.format_spec is not None else ""
            if x is UNKNOWN or spec is UNKNOWN:
                return UNKNOWN
            s = _format(x, chr(v.conversion) if v.conversion > 0 else None, spec)
            if s is None:
                return UNKNOWN
            parts.append(s)
        return "".join(parts)
    # attribute access, calls, subscripts...: a value only the running kernel knows (names that
    # are not bound still make IPython's evaluation fail)
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in state \
                and not hasattr(builtins, sub.id) and not _local_name(node, sub.id):
            raise _Fail(sub.id)
    return UNKNOWN


def _local_name(node: ast.expr, name: str) -> bool:
    """Whether ``name`` is bound inside ``node`` (a comprehension variable, a lambda argument)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id == name:
            return True
        if isinstance(sub, ast.arg) and sub.arg == name:
            return True
    return False


def _format(value: Any, conversion: str | None, spec: Any) -> str | None:
    if not isinstance(spec, str):
        return None
    if conversion == "r":
        value = repr(value)
    elif conversion == "s":
        value = str(value)
    elif conversion == "a":
        value = ascii(value)
    try:
        return format(value, spec)
    except (ValueError, TypeError):
        return None


# -- process state: os.environ and os.chdir ---------------------------------------------------


def _aliases(tree: ast.Module) -> dict[str, set[str]]:
    """The names the notebook gives ``os``, ``os.environ`` and ``os.chdir``."""
    out: dict[str, set[str]] = {"os": set(), "environ": set(), "chdir": set()}
    for node in statement_nodes(tree):  # an import is a statement: no walk of the expressions
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "os":
                    out["os"].add(a.asname or "os")
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and not node.level:
            for a in node.names:
                if a.name in ("environ", "chdir"):
                    out[a.name].add(a.asname or a.name)
    return out


def _is_environ(node: ast.expr, aliases: dict[str, set[str]]) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "environ":
        return isinstance(node.value, ast.Name) and node.value.id in aliases["os"]
    return isinstance(node, ast.Name) and node.id in aliases["environ"]


def _is_chdir(node: ast.expr, aliases: dict[str, set[str]]) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "chdir":
        return isinstance(node.value, ast.Name) and node.value.id in aliases["os"]
    return isinstance(node, ast.Name) and node.id in aliases["chdir"]


def _effects(stmt: ast.stmt, aliases: dict[str, set[str]], state: dict[str, Any]) -> list[str]:
    """Shell text for what the statement does to the process (in order)."""
    if not (aliases["os"] or aliases["environ"] or aliases["chdir"]):
        return []
    out: list[str] = []
    top = not isinstance(stmt, _BLOCKS)
    todo: list[ast.AST] = [stmt]
    found: list[tuple[int, int, list[str]]] = []
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        texts = _effect(node, aliases, state, certain=top)
        if texts:
            found.append((getattr(node, "lineno", 0), getattr(node, "col_offset", 0), texts))
        todo.extend(ast.iter_child_nodes(node))
    for _, _, texts in sorted(found, key=lambda f: (f[0], f[1])):
        out.extend(texts)
    return out


def _effect(node: ast.AST, aliases: dict[str, set[str]], state: dict[str, Any], certain: bool) -> list[str]:
    def lit(expr: ast.expr | None) -> Any:
        if expr is None or not certain:
            return UNKNOWN
        v = _value(expr, state)
        return v if isinstance(v, str) else UNKNOWN

    def key(expr: ast.expr) -> str | None:
        k = _value(expr, state)
        return k if isinstance(k, str) and re.fullmatch(r"[A-Za-z_]\w*", k) else None

    if isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        out = []
        for t in targets:
            if isinstance(t, ast.Subscript) and _is_environ(t.value, aliases):
                name = key(t.slice)
                if name:
                    out.append(_export(name, lit(node.value) if isinstance(node, ast.Assign) else UNKNOWN))
        return out
    if isinstance(node, ast.Delete):
        return [_export(n, UNKNOWN) for t in node.targets
                if isinstance(t, ast.Subscript) and _is_environ(t.value, aliases) and (n := key(t.slice))]
    if not isinstance(node, ast.Call):
        return []
    f = node.func
    if _is_chdir(f, aliases) and node.args:
        v = lit(node.args[0])
        return ["cd " + (_shell_word(v) if v is not UNKNOWN else '"$___"')]
    if isinstance(f, ast.Attribute) and _is_environ(f.value, aliases):
        if f.attr == "setdefault" and node.args:
            name = key(node.args[0])
            if name:
                v = lit(node.args[1]) if len(node.args) > 1 else UNKNOWN
                return [f"{name}=${{{name}:-{_shell_word(v) if v is not UNKNOWN else '$___'}}};export {name}"]
        elif f.attr == "update":
            out = []
            for a in node.args:
                if isinstance(a, ast.Dict):
                    for kk, vv in zip(a.keys, a.values):
                        name = key(kk) if kk is not None else None
                        if name:
                            out.append(_export(name, lit(vv)))
            for kw in node.keywords:
                if kw.arg:
                    out.append(_export(kw.arg, lit(kw.value)))
            return out
        elif f.attr == "pop" and node.args:
            name = key(node.args[0])
            if name:
                return [_export(name, UNKNOWN)]
    return []


def _shell_word(value: str) -> str:
    if value and _SIMPLE.fullmatch(value):
        return value
    return "'" + value.replace("'", "'\"'\"'") + "'"


def _export(name: str, value: Any) -> str:
    return f"{name}={_shell_word(value) if value is not UNKNOWN else chr(34) + '$___' + chr(34)};export {name}"


def _append_shell(nb: Any, b: Any, i: int, texts: list[str]) -> None:
    """Shell text after the end of virtual line ``i`` (a Python line: its own shell text is
    blank), in columns no cell text has."""
    if not 0 <= i < len(b.sh) or b.sh[i].strip():
        return
    length = len(b.disp[i])
    b.sh[i] = " " * (length + 1) + ";".join(texts)
    b.shell_any = True
    v = nb.vline(i)
    v.opaque = list(v.opaque) + [(length + 2, len(b.sh[i]) + 2)]


# -- {expr} and $name in ! lines ----------------------------------------------------------------


def _fields(body: str) -> list[tuple[int, int, str, str]] | None:
    """IPython's fields in ``body``: (start, end, kind, text) with kind ``{`` (``{expr}``),
    ``$`` (``$name``), ``$$`` and ``{{``/``}}`` (escapes); None when the line is no valid format
    string (then IPython passes it on as it is)."""
    out: list[tuple[int, int, str, str]] = []
    chunks: list[tuple[int, int]] = []
    i, n, lit = 0, len(body), 0
    while i < n:
        c = body[i]
        if c == "{":
            chunks.append((lit, i))
            if body.startswith("{{", i):
                out.append((i, i + 2, "{{", "{"))
                i += 2
                lit = i
                continue
            depth, j = 1, i + 1
            while j < n and depth:
                if body[j] == "{":
                    depth += 1
                elif body[j] == "}":
                    depth -= 1
                j += 1
            if depth:
                return None
            out.append((i, j, "{", body[i + 1:j - 1]))
            i = lit = j
            continue
        if c == "}":
            chunks.append((lit, i))
            if not body.startswith("}}", i):
                return None
            out.append((i, i + 2, "}}", "}"))
            i += 2
            lit = i
            continue
        i += 1
    chunks.append((lit, n))
    for a, z in chunks:
        if "$" not in body[a:z]:
            continue
        for m in _DOLLAR.finditer(body, a, z):
            s = m.start(2) - 1
            if m.group(2).startswith("$"):
                out.append((s, s + 1, "$$", ""))
            else:
                out.append((s, m.end(2), "$", m.group(2)))
    return sorted(out)


def _field_value(kind: str, text: str, state: dict[str, Any]) -> Any:
    """The text a field expands to, ``UNKNOWN``, or raises ``_Fail``."""
    expr, conversion, spec = text, None, ""
    if kind == "{":
        m = re.match(r"((?:[^!:\[]|\[[^\]]*\])*)(?:!([rsa]))?(?::(.*))?\Z", text, re.S)
        if m is None:
            raise _Fail(text)
        expr, conversion, spec = m.group(1), m.group(2), m.group(3) or ""
        if "{" in spec:
            return UNKNOWN
    try:
        node = ast.parse(expr.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise _Fail(text) from None
    v = _eval(node, state)
    if v is UNKNOWN:
        return UNKNOWN
    s = _format(v, conversion, spec)
    if s is None or "\n" in s or "\r" in s:
        return UNKNOWN
    return s


def _run(nb: Any, b: Any, item: tuple[int, int, Any], state: dict[str, Any]) -> bool:
    return _expand(nb, b, item[2], state) if item[1] == 0 else _expand_env(nb, b, item[2], state)


def _expand_env(nb: Any, b: Any, site: tuple[int, int], state: dict[str, Any]) -> bool:
    """A ``%env`` line with ``$name``/``{expr}``: IPython expands its parameters (as any line
    magic's, ``InteractiveShell.run_line_magic`` -> ``var_expand``) before ``%env`` splits
    them. A known literal becomes the value; a field only the kernel knows makes the value
    unknown (or, in the name, sets nothing known); a line IPython cannot expand is set as
    written."""
    from trainlint.sources.notebook import env_setting, env_shell

    i, params_at = site
    params = b.disp[i].rstrip()[params_at:]
    fields = _fields(params) or []
    values: list[Any] = []
    try:
        for _a, _z, kind, text in fields:
            values.append(_field_value(kind, text, state) if kind in ("{", "$") else text)
    except _Fail:
        fields, values = [], []
    # the expanded parameters, and for each piece (expanded start, expanded end, cell start)
    pieces: list[tuple[int, int, int, bool]] = []  # (exp start, exp end, raw start, literal)
    out: list[str] = []
    pos = n = 0
    for (a, z, _kind, _text), v in zip(fields, values):
        out.append(params[pos:a])
        pieces.append((n, n + a - pos, pos, True))
        n += a - pos
        rep = "\x00" if v is UNKNOWN else v
        out.append(rep)
        pieces.append((n, n + len(rep), a, False))
        n += len(rep)
        pos = z
    out.append(params[pos:])
    pieces.append((n, n + len(params) - pos, pos, True))
    expanded = "".join(out)

    def raw_at(o: int) -> int:
        for es, ee, rs, literal in pieces:
            if es <= o < ee:
                return rs + (o - es if literal else 0)
        return len(params)

    setting = env_setting(expanded)
    built = None
    if setting is not None and "\x00" not in expanded[setting[0]:setting[1]]:
        ns, ne, vs, ve = setting
        value = expanded[vs:ve]
        built = env_shell(params_at + raw_at(ns), expanded[ns:ne], None if "\x00" in value else value,
                          params_at + raw_at(vs))
    v = nb.vline(i)
    if built is None:  # sets nothing, or a variable only the kernel can name
        b.sh[i] = ""
        v.opaque, v.shift = [(1, len(b.disp[i]) + 2)], None
        return True
    b.sh[i], v.opaque, v.shift = built
    return True


def _has_fields(body: str) -> bool:
    return ("{" in body or "}" in body or "$" in body) and bool(_fields(body))


def _expand(nb: Any, b: Any, site: tuple[int, int, list[tuple[int, int]]], state: dict[str, Any]) -> bool:
    """Expand the fields of one shell line as IPython would; True when its text changed."""
    i, start, base_opaque = site
    raw = b.disp[i]
    body = raw[start:]
    fields = _fields(body) if ("{" in body or "}" in body or "$" in body) else []
    if not fields:
        return False
    values: list[Any] = []
    try:
        for _a, _z, kind, text in fields:
            if kind in ("{", "$"):
                values.append(_field_value(kind, text, state))
            else:
                values.append(text)  # an escape: the character it stands for
    except _Fail:
        return False  # IPython runs the line as written (its {expr} stay unknown)
    pieces: list[str] = []
    subs: list[tuple[int, int, int, int]] = []
    opaque = list(base_opaque)
    pos = 0
    out_len = start
    for (a, z, _kind, text), v in zip(fields, values):
        pieces.append(body[pos:a])
        out_len += a - pos
        rep = v if v is not UNKNOWN else ("$" + "_" * (z - a - 1) if z - a > 1 else "$")
        ds = out_len + 1
        pieces.append(rep)
        out_len += len(rep)
        de = out_len + 1
        subs.append((ds, de, start + a + 1, start + z + 1))
        opaque.append((ds, max(de, ds + 1)))
        pos = z
    pieces.append(body[pos:])
    b.sh[i] = " " * start + "".join(pieces)
    if i in b.joined:  # a continued ! line: its backslash after a space (IPython's join)
        b.sh[i] = b.sh[i][:-1] + " \\"
    v = nb.vline(i)
    v.opaque = opaque
    v.subs = subs if any(s[1] - s[0] != s[3] - s[2] for s in subs) else None
    return True
