"""Intra-file data flow for rules: which variables hold the model (and the datasets, the
tokenizer) that reach a Trainer, and which calls touch them before it.

Built once per file and cached on the ``PythonFile``; rules query it instead of walking the
tree themselves.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from trainlint.sources.python import Binding, CallSite, PythonFile, Scope, TrainerCall

# calls that wrap a model and return the wrapped model (first positional argument is the model)
MODEL_WRAPPERS = {
    "get_peft_model", "prepare_model_for_kbit_training", "prepare_model_for_int8_training",
    "PeftModel.from_pretrained", "compile", "torch.compile", "DataParallel", "DistributedDataParallel",
}
TORCH_DTYPES = {
    "float16", "half", "bfloat16", "float32", "float", "float64", "double", "int8", "uint8", "int32",
    "int64", "long", "bool", "complex64", "float8_e4m3fn", "float8_e5m2",
}
ACCEL_PREFIXES = ("cuda", "mps", "xpu", "npu", "hpu", "mlu", "musa")


@dataclass
class DeviceMove:
    """``<receiver>.to(<device>)`` or ``<receiver>.cuda()`` on a model that reaches a Trainer."""

    call: ast.Call
    receiver: ast.expr
    stmt: ast.stmt
    scope: Scope
    only_device: bool  # no dtype or other argument rides along (safe to remove)
    how: str  # source text of the call, for messages


@dataclass
class ModelFlow:
    trainer: TrainerCall
    names: set[tuple[int, str]] = field(default_factory=set)  # (id(scope), name)
    bindings: list[tuple[Binding, Scope]] = field(default_factory=list)
    moves: list[DeviceMove] = field(default_factory=list)


def _dotted(expr: ast.AST) -> str:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        inner = _dotted(expr.value)
        return f"{inner}.{expr.attr}" if inner else ""
    return ""


def is_dtype_expr(pf: PythonFile, expr: ast.AST, scope: Scope) -> bool:
    if isinstance(expr, ast.Attribute) and expr.attr in TORCH_DTYPES:
        return True
    if isinstance(expr, ast.Name):
        b = pf.binding_of(expr.id, scope)
        if b is not None and b.value is not None and b.value is not expr:
            return is_dtype_expr(pf, b.value, scope)
    return False


def is_device_expr(pf: PythonFile, expr: ast.AST, scope: Scope, _depth: int = 0) -> bool:
    """True when ``expr`` is (very likely) an accelerator device: "cuda", "cuda:0", 0,
    torch.device("cuda"), ``device`` bound to one of those, ``accelerator.device``,
    ``local_rank``."""
    if _depth > 5:
        return False
    if isinstance(expr, ast.Constant):
        if isinstance(expr.value, str):
            return expr.value.lower().startswith(ACCEL_PREFIXES)
        return isinstance(expr.value, int) and not isinstance(expr.value, bool)
    if isinstance(expr, ast.IfExp):
        return is_device_expr(pf, expr.body, scope, _depth + 1) or is_device_expr(pf, expr.orelse, scope, _depth + 1)
    if isinstance(expr, ast.JoinedStr):
        return any(isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.startswith(ACCEL_PREFIXES)
                   for v in expr.values)
    if isinstance(expr, ast.Call):
        name = _dotted(expr.func)
        if name.endswith("device") and expr.args:
            return is_device_expr(pf, expr.args[0], scope, _depth + 1)
        if name.endswith("device"):
            return True
        if name.endswith(("current_device", "get_device")):
            return True
        return False
    if isinstance(expr, ast.Attribute):
        if expr.attr in TORCH_DTYPES:
            return False
        return expr.attr in ("device", "local_rank", "local_process_index", "process_index") \
            or "device" in expr.attr
    if isinstance(expr, ast.Name):
        if expr.id in ("True", "False", "None"):
            return False
        b = pf.binding_of(expr.id, scope)
        if b is not None and b.value is not None:
            if is_dtype_expr(pf, b.value, scope):
                return False
            if is_device_expr(pf, b.value, scope, _depth + 1):
                return True
        low = expr.id.lower()
        return "device" in low or low in ("local_rank", "rank", "gpu", "gpu_id", "dev")
    return False


def device_move(pf: PythonFile, call: ast.Call, scope: Scope) -> tuple[ast.expr, bool] | None:
    """(receiver, only_device) when ``call`` moves its receiver to an accelerator."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "cuda":
        return func.value, not call.keywords and len(call.args) <= 1
    if func.attr != "to":
        return None
    device_kw = next((k for k in call.keywords if k.arg == "device"), None)
    if device_kw is not None:
        if not is_device_expr(pf, device_kw.value, scope) and not _is_plain_name(device_kw.value):
            return None
        return func.value, len(call.keywords) == 1 and not call.args
    if not call.args:
        return None
    first = call.args[0]
    if isinstance(first, ast.Starred) or is_dtype_expr(pf, first, scope):
        return None
    if not is_device_expr(pf, first, scope):
        return None
    return func.value, len(call.args) == 1 and not call.keywords


def _is_plain_name(expr: ast.AST) -> bool:
    return isinstance(expr, (ast.Name, ast.Attribute))


def _strip_moves(pf: PythonFile, expr: ast.expr, scope: Scope, stmt: ast.stmt, flow: ModelFlow) -> ast.expr:
    """Record device moves chained on ``expr`` and return the innermost receiver."""
    while isinstance(expr, ast.Call):
        mv = device_move(pf, expr, scope)
        if mv is None:
            break
        flow.moves.append(DeviceMove(expr, mv[0], stmt, scope, mv[1], pf.source_of(expr.func).split(".")[-1]))
        expr = mv[0]
    return expr


def model_flows(pf: PythonFile) -> list[ModelFlow]:
    cached = getattr(pf, "_model_flows", None)
    if cached is not None:
        return cached
    flows: list[ModelFlow] = []
    stmt_scope = {id(s): sc for s, sc in pf.statements}
    for tc in pf.trainer_calls:
        model = tc.keywords.get("model")
        if model is None:
            continue
        flow = ModelFlow(tc)
        scope = tc.site.scope
        model = _strip_moves(pf, model, scope, tc.site.stmt, flow)
        work: list[tuple[Scope, str]] = []
        if isinstance(model, ast.Name):
            work.append((scope, model.id))
        seen: set[tuple[int, str]] = set()
        while work:
            sc, name = work.pop()
            found = sc.lookup(name)
            if found is None:
                continue
            owner, bindings = found
            key = (id(owner), name)
            if key in seen:
                continue
            seen.add(key)
            flow.names.add(key)
            for b in bindings:
                flow.bindings.append((b, owner))
                if b.value is None:
                    continue
                value = _strip_moves(pf, b.value, owner, b.node if isinstance(b.node, ast.stmt) else tc.site.stmt, flow)
                if isinstance(value, ast.Name):
                    work.append((owner, value.id))
                elif isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Name):
                    fname = _dotted(value.func)
                    if fname in MODEL_WRAPPERS or fname.split(".")[-1] in MODEL_WRAPPERS:
                        work.append((owner, value.args[0].id))
                elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                    # a helper defined in the file that returns the model
                    fb = pf.binding_of(value.func.id, owner)
                    if fb is not None and fb.kind == "def":
                        inner = pf.scope_at(fb.node)
                        for node in ast.walk(fb.node):
                            if isinstance(node, ast.Return) and node.value is not None:
                                rv = _strip_moves(pf, node.value, inner, node, flow)
                                if isinstance(rv, ast.Name):
                                    work.append((inner, rv.id))
        # statements like ``model.to(device)`` / ``model.cuda()`` on a model name
        for cs in pf.calls:
            if cs.node is model:
                continue
            mv = device_move(pf, cs.node, cs.scope)
            if mv is None or not isinstance(mv[0], ast.Name):
                continue
            found = cs.scope.lookup(mv[0].id)
            if found is None or (id(found[0]), mv[0].id) not in flow.names:
                continue
            if any(m.call is cs.node for m in flow.moves):
                continue
            if stmt_scope.get(id(cs.stmt)) is tc.site.scope and \
                    (cs.stmt.lineno, cs.stmt.col_offset) > (tc.site.stmt.lineno, tc.site.stmt.col_offset):
                continue  # after the Trainer was built: e.g. inference after training
            if isinstance(cs.stmt, ast.Expr) and cs.stmt.value is cs.node or _is_self_assign(cs.stmt, cs.node):
                flow.moves.append(DeviceMove(cs.node, mv[0], cs.stmt, cs.scope, mv[1],
                                             pf.source_of(cs.node.func).split(".")[-1]))
        flows.append(flow)
    pf._model_flows = flows  # type: ignore[attr-defined]
    return flows


def _is_self_assign(stmt: ast.stmt, call: ast.Call) -> bool:
    """``model = model.to(device)``."""
    return isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1 \
        and isinstance(stmt.targets[0], ast.Name) and isinstance(call.func, ast.Attribute) \
        and isinstance(call.func.value, ast.Name) and call.func.value.id == stmt.targets[0].id


def call_site_of(pf: PythonFile, call: ast.Call) -> CallSite | None:
    return next((c for c in pf.calls if c.node is call), None)
