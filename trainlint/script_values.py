"""Values a script gives without running it, for the estimate and the rules' run context: an
expression resolved through argparse and dataclass defaults, a TrainingArguments value with
those defaults, and the sequence length of the script's tokenizer calls.

Split out of ``estimate`` so that a rule asking for the sequence length (``rules._context``)
does not import the memory model.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainlint.setup import UNKNOWN

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.setup import ArgsSite
    from trainlint.sources.python import PythonFile, Scope

_TOKENIZER_CLASSES = ("Tokenizer", "TokenizerFast", "Processor")


def _where(pf: PythonFile, node: ast.AST) -> str:
    return f"{Path(pf.path).name}:{getattr(node, 'lineno', 1)}"


def _argparse_default(pf: PythonFile, attr: str) -> tuple[Any, str] | None:
    """``default=`` of ``parser.add_argument("--attr", ...)`` (or ``dest="attr"``), or a
    dataclass field's default (HfArgumentParser)."""
    spellings = {f"--{attr}", f"--{attr.replace('_', '-')}", attr}
    for cs in pf.calls:
        f = cs.node.func
        if not (isinstance(f, ast.Attribute) and f.attr == "add_argument"):
            continue
        names = {a.value for a in cs.node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
        dest = pf.keyword(cs.node, "dest")
        if not (names & spellings or (dest is not None and isinstance(dest.value, ast.Constant)
                                       and dest.value.value == attr)):
            continue
        d = pf.keyword(cs.node, "default")
        if d is None:
            return None
        value, where = resolve_expr(pf, d.value, cs.scope)
        return (value, where) if value is not UNKNOWN else None
    for node in ast.walk(pf.tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == attr \
                    and stmt.value is not None:
                v = stmt.value
                if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "field":
                    d = pf.keyword(v, "default")
                    if d is None:
                        return None
                    v = d.value
                value, where = resolve_expr(pf, v, pf.module_scope)
                return (value, where) if value is not UNKNOWN else None
    return None


def resolve_expr(pf: PythonFile, expr: ast.AST | None, scope: Scope) -> tuple[Any, str]:
    """The value of ``expr`` and where it is written; argparse/dataclass defaults for
    ``args.name``. (UNKNOWN, "") when not static."""
    if expr is None:
        return UNKNOWN, ""
    r = pf.resolve(expr, scope)
    if r.value is not UNKNOWN:
        return r.value, _where(pf, r.node or expr)
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        found = _argparse_default(pf, expr.attr)
        if found is not None:
            return found[0], f"default of --{expr.attr} ({found[1]})"
    if isinstance(expr, ast.Call) and pf.qualname(expr.func) in ("os.environ.get", "os.getenv") \
            and expr.args and isinstance(expr.args[0], ast.Constant) and isinstance(expr.args[0].value, str):
        # what the run would see: the variable as set here, else its default
        import os

        var = expr.args[0].value
        if var in os.environ:
            return os.environ[var], f"${var}"
        if len(expr.args) > 1:
            value, where = resolve_expr(pf, expr.args[1], scope)
            return value, f"{where}, ${var} unset" if where else ""
        return UNKNOWN, ""
    if isinstance(expr, ast.Name):
        b = pf.binding_of(expr.id, scope)
        if b is not None and b.kind in ("assign", "annassign") and isinstance(b.value, ast.Attribute):
            return resolve_expr(pf, b.value, scope)
    return UNKNOWN, ""


def _site_value(site: ArgsSite, name: str, pfs: dict[str, PythonFile] | None = None) -> tuple[Any, str]:
    """A TrainingArguments value, with argparse defaults for ``name=args.x``; (None, "") when
    not written, (UNKNOWN, "") when written but not static."""
    v = site.get(name)
    if v is None:
        return None, ""
    if v.known:
        return v.value, v.describe()
    call = site.call
    pf = (pfs or {}).get(site.path)
    if call is not None and pf is not None:
        kw = pf.keyword(call.site.node, name)
        if kw is not None:
            val, where = resolve_expr(pf, kw.value, call.site.scope)
            if val is not UNKNOWN:
                return val, f"{name}={val!r} ({where})"
    return UNKNOWN, ""


def _receiver_class(pf: PythonFile, call: ast.Call) -> str | None:
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr == "from_pretrained"):
        return None
    qn = pf.qualname(f.value)
    if qn is None and isinstance(f.value, ast.Name):
        qn = f.value.id
    return qn


def _tokenizer_names(pf: PythonFile) -> set[str]:
    cached = getattr(pf, "_tokenizer_names", None)
    if cached is not None:
        return cached
    names = set()
    for stmt, _scope in pf.statements:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            qn = _receiver_class(pf, stmt.value)
            if qn and any(qn.endswith(s) for s in _TOKENIZER_CLASSES):
                names.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    pf._tokenizer_names = names = names or {"tokenizer"}  # type: ignore[attr-defined]
    return names


def _sequence_length(pf: PythonFile, sites: list[ArgsSite], pfs: dict[str, PythonFile]
                     ) -> tuple[int | None, str, bool]:
    """(explicit max_length, where, truncates/pads to model_max_length)."""
    for site in sites:
        for name in ("max_length", "max_seq_length"):
            if site.class_name.startswith("Seq2Seq"):
                break
            v, where = _site_value(site, name, pfs)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v, where, False
    cached = getattr(pf, "_tokenizer_length", None)
    if cached is None:  # the same for every setup of the file: found once
        cached = pf._tokenizer_length = _tokenizer_length(pf)  # type: ignore[attr-defined]
    return cached


def _tokenizer_length(pf: PythonFile) -> tuple[int | None, str, bool]:
    """(the largest max_length of the file's tokenizer calls, where, whether they truncate or
    pad to model_max_length)."""
    tok = _tokenizer_names(pf)
    best: tuple[int, str] | None = None
    to_model_max = False
    for cs in pf.calls:
        f = cs.node.func
        target = f.id if isinstance(f, ast.Name) else (f.value.id if isinstance(f, ast.Attribute) and isinstance(
            f.value, ast.Name) and f.attr in ("__call__", "encode", "encode_plus", "batch_encode_plus") else None)
        if target not in tok:
            continue
        kw = pf.keyword(cs.node, "max_length")
        if kw is not None:
            v, where = resolve_expr(pf, kw.value, cs.scope)
            if isinstance(v, int) and not isinstance(v, bool) and (best is None or v > best[0]):
                best = (v, f"max_length={v} ({where})")
            continue
        trunc = pf.keyword(cs.node, "truncation")
        pad = pf.keyword(cs.node, "padding")
        if trunc is not None and resolve_expr(pf, trunc.value, cs.scope)[0] not in (False, None, UNKNOWN):
            to_model_max = True
        if pad is not None and resolve_expr(pf, pad.value, cs.scope)[0] == "max_length":
            to_model_max = True
    if best is not None:
        return best[0], best[1], False
    return None, "", to_model_max
