"""Intra-file data flow for rules: which variables hold the model (and the datasets, the
tokenizer) that reach a Trainer, and which calls touch them before it.

Built once per file and cached on the ``PythonFile``; rules query it instead of walking the
tree themselves.
"""

from __future__ import annotations

import ast

from trainlint.diagnostics import Span
from trainlint.record import Record, Row
from trainlint.setup import ArgsSite, Setup, Value
from trainlint.sources.python import Binding, CallSite, PythonFile, Scope, TrainerCall

TORCH_DTYPES = {
    "float16", "half", "bfloat16", "float32", "float", "float64", "double", "int8", "uint8", "int32",
    "int64", "long", "bool", "complex64", "float8_e4m3fn", "float8_e5m2",
}
ACCEL_PREFIXES = ("cuda", "mps", "xpu", "npu", "hpu", "mlu", "musa")
# device_map values that spread one model over every visible GPU of one process (naive model
# parallelism), as accelerate's infer_auto_device_map / dispatch read them
SPREADING_DEVICE_MAPS = frozenset({"auto", "balanced", "balanced_low_0", "sequential"})


def may_name(pf: PythonFile, *names: str) -> bool:
    """``pf.may_name(*names)``: whether an identifier, attribute or keyword of ``pf`` can be one
    of ``names`` (its text or, for a non-ASCII text, its NFKC form holds one). A rule asks this
    of the names it needs before it asks for the file's calls or attributes, so a file that
    cannot hold its finding is never walked for it."""
    return pf.may_name(*names)


def spreading_loads(pf: PythonFile):
    """``(call site, device_map keyword, value)`` of each ``*.from_pretrained(...,
    device_map=...)`` in ``pf`` whose device map resolves to a spreading value."""
    if not may_name(pf, "device_map"):
        return  # no such keyword (and no walk of the file)
    for cs in pf.calls_named("from_pretrained"):
        f = cs.node.func
        if not (isinstance(f, ast.Attribute) and f.attr == "from_pretrained"):
            continue
        kw = pf.keyword(cs.node, "device_map")
        if kw is None:
            continue
        value = pf.resolve(kw.value, cs.scope).value
        if isinstance(value, str) and value in SPREADING_DEVICE_MAPS:
            yield cs, kw, value


class DeviceMove(Row):  # a row (trainlint.record): cheaper to define than a NamedTuple
    """``<receiver>.to(<device>)`` or ``<receiver>.cuda()`` on a model that reaches a Trainer."""

    __slots__ = ()
    _fields = ("call", "receiver", "stmt", "scope", "only_device", "how")
    call: ast.Call
    receiver: ast.expr
    stmt: ast.stmt
    scope: Scope
    only_device: bool  # no dtype or other argument rides along (safe to remove)
    how: str  # source text of the call, for messages

    def __new__(_cls, call: ast.Call, receiver: ast.expr, stmt: ast.stmt, scope: Scope, only_device: bool,
                how: str) -> DeviceMove:
        return tuple.__new__(_cls, (call, receiver, stmt, scope, only_device, how))


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


_MOVE_METHODS = frozenset({"cuda", "to"})  # the methods ``device_move`` reads


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


# --- the model that reaches each Trainer ---------------------------------------------------

PEFT_WRAPPERS = {"get_peft_model", "get_peft_model_state_dict_wrapper"}
KBIT_PREPARE = {"prepare_model_for_kbit_training", "prepare_model_for_int8_training"}
OTHER_WRAPPERS = {"DataParallel", "DistributedDataParallel"}
LOAD_METHODS = {"from_pretrained", "from_config", "_from_config"}
DTYPE_CASTS = {"half": "float16", "float": "float32", "bfloat16": "bfloat16", "double": "float64"}
NON_BNB_QUANT_CONFIGS = {
    "GPTQConfig", "AwqConfig", "AqlmConfig", "QuantoConfig", "EetqConfig", "HqqConfig", "FbgemmFp8Config",
    "CompressedTensorsConfig", "TorchAoConfig", "BitNetQuantConfig", "HiggsConfig", "VptqConfig",
    "SpQRConfig", "FineGrainedFP8Config", "QuarkConfig", "Mxfp4Config", "FPQuantConfig",
}


class LoadCall(Row):  # a row (trainlint.record): cheaper to define than a NamedTuple
    """``Auto*.from_pretrained(...)`` / ``from_config(...)`` that creates a model reaching a
    Trainer, with its keywords resolved (``**kwargs`` dicts included)."""

    __slots__ = ()
    _fields = ("site", "cls", "method", "model_id", "kwargs", "nodes", "open_ended", "quant", "quant_span",
               "adapters", "outer")
    site: CallSite
    cls: str  # the class the method is called on, as written (last part): AutoModelForCausalLM
    method: str  # from_pretrained, from_config
    model_id: Value | None  # the checkpoint (first positional or pretrained_model_name_or_path)
    kwargs: dict[str, Value]
    nodes: dict[str, ast.expr]  # keyword -> its value expression (for dtype/quantization checks)
    open_ended: bool
    quant: str | None  # "4bit" / "8bit" (bitsandbytes), "other" (GPTQ, AWQ, ...), None
    quant_span: Span | None
    adapters: bool  # AutoPeftModel*/PeftModel load: comes with trainable adapters
    outer: str | None  # what wraps it on the way to the Trainer: "peft", "merged", None

    def __new__(_cls, site: CallSite, cls: str, method: str, model_id: Value | None,
                kwargs: dict[str, Value], nodes: dict[str, ast.expr], open_ended: bool,
                quant: str | None = None, quant_span: Span | None = None, adapters: bool = False,
                outer: str | None = None) -> LoadCall:
        return tuple.__new__(_cls, (site, cls, method, model_id, kwargs, nodes, open_ended, quant,
                                  quant_span, adapters, outer))

    @property
    def call(self) -> ast.Call:
        return self.site.node

    def kw(self, *names: str) -> Value | None:
        for n in names:
            if n in self.kwargs:
                return self.kwargs[n]
        return None

    @property
    def bnb(self) -> bool:
        return self.quant in ("4bit", "8bit")

    def dtype(self, pf: PythonFile) -> str | None:
        """float16 / bfloat16 / float32 / auto / "unknown"; None when not written."""
        for n in ("dtype", "torch_dtype"):
            if n in self.nodes:
                return dtype_of(pf, self.nodes[n], self.site.scope)
        if self.open_ended:
            return "unknown"
        return None

    def model_id_text(self) -> str | None:
        if self.model_id is not None and isinstance(self.model_id.value, str):
            return self.model_id.value
        return None


class FlowStep(Row):  # a row (trainlint.record): cheaper to define than a NamedTuple
    """A call on the model's way to the Trainer: peft (get_peft_model, PeftModel.from_pretrained),
    kbit (prepare_model_for_kbit_training), merge (merge_and_unload), compile (torch.compile),
    cast (.half(), .to(torch.float16)), custom (an ``nn.Module`` class of the file)."""

    __slots__ = ()
    _fields = ("kind", "call", "scope", "stmt", "detail")
    kind: str
    call: ast.Call
    scope: Scope
    stmt: ast.stmt
    detail: str  # dtype of a cast, the function name of a wrapper

    def __new__(_cls, kind: str, call: ast.Call, scope: Scope, stmt: ast.stmt, detail: str = "") -> FlowStep:
        return tuple.__new__(_cls, (kind, call, scope, stmt, detail))


class ModelCall(Row):  # a row (trainlint.record): cheaper to define than a NamedTuple
    """A statement-level call on a model variable (``model.gradient_checkpointing_enable()``,
    ``model.half()``) or a call that takes it first (``prepare_model_for_kbit_training(model)``),
    made before the Trainer is built."""

    __slots__ = ()
    _fields = ("site", "name", "receiver")
    site: CallSite
    name: str  # the method or function name
    receiver: str  # dotted receiver as written ("model", "model.config"), "" for functions

    def __new__(_cls, site: CallSite, name: str, receiver: str) -> ModelCall:
        return tuple.__new__(_cls, (site, name, receiver))


class ModelFlow(Record):
    """Where the model a Trainer receives comes from: its names, loads, device moves and the calls made on it."""

    __slots__ = ("trainer", "names", "bindings", "moves", "loads", "steps", "calls", "attr_sets",
                 "custom_classes", "unknown_origin", "__dict__")
    trainer: TrainerCall
    names: set[tuple[int, str]]  # (id(scope), name)
    bindings: list[tuple[Binding, Scope]]
    moves: list[DeviceMove]
    loads: list[LoadCall]
    steps: list[FlowStep]
    calls: list[ModelCall]
    attr_sets: list[tuple[ast.stmt, str, ast.expr]]  # model.config.use_cache = x
    custom_classes: list[ast.ClassDef]
    unknown_origin: bool  # some path ends in something not understood (parameter, call)

    def __init__(self, trainer: TrainerCall, names: set[tuple[int, str]] | None = None,
                 bindings: list[tuple[Binding, Scope]] | None = None, moves: list[DeviceMove] | None = None,
                 loads: list[LoadCall] | None = None, steps: list[FlowStep] | None = None,
                 calls: list[ModelCall] | None = None, attr_sets: list[tuple[ast.stmt, str,
                 ast.expr]] | None = None, custom_classes: list[ast.ClassDef] | None = None,
                 unknown_origin: bool = False) -> None:
        self.trainer = trainer
        self.names = set() if names is None else names
        self.bindings = [] if bindings is None else bindings
        self.moves = [] if moves is None else moves
        self.loads = [] if loads is None else loads
        self.steps = [] if steps is None else steps
        self.calls = [] if calls is None else calls
        self.attr_sets = [] if attr_sets is None else attr_sets
        self.custom_classes = [] if custom_classes is None else custom_classes
        self.unknown_origin = unknown_origin

    def step(self, kind: str) -> list[FlowStep]:
        return [s for s in self.steps if s.kind == kind]

    def called(self, *names: str) -> list[ModelCall]:
        return [c for c in self.calls if c.name in names]

    @property
    def trainer_peft_config(self) -> ast.expr | None:
        """TRL trainers' ``peft_config=`` (they wrap the model themselves)."""
        v = self.trainer.keywords.get("peft_config")
        if v is None or (isinstance(v, ast.Constant) and v.value is None):
            return None
        return v

    @property
    def has_adapters(self) -> bool:
        """The model reaching the Trainer carries trainable adapters (get_peft_model,
        PeftModel, AutoPeftModel, add_adapter/load_adapter, TRL ``peft_config=``)."""
        if self.trainer_peft_config is not None or self.called("add_adapter", "load_adapter"):
            return True
        return any(ld.outer == "peft" or ld.adapters for ld in self.loads) or \
            (bool(self.step("peft")) and not self.loads)

    @property
    def peft_wrapped(self) -> bool:
        """Adapters through the PEFT library (get_peft_model / PeftModel), not the transformers
        integration (add_adapter sets ``_hf_peft_config_loaded``)."""
        return bool(self.step("peft")) or any(ld.adapters for ld in self.loads) \
            or self.trainer_peft_config is not None


def dtype_of(pf: PythonFile, expr: ast.AST, scope: Scope, _depth: int = 0) -> str:
    """``torch.float16`` -> "float16"; "auto"; a name bound to one; else "unknown"."""
    if _depth > 5:
        return "unknown"
    if isinstance(expr, ast.Attribute):
        return {"float16": "float16", "half": "float16", "bfloat16": "bfloat16", "float32": "float32",
                "float": "float32"}.get(expr.attr, "unknown")
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        v = expr.value.lower()
        return {"fp16": "float16", "half": "float16", "bf16": "bfloat16", "fp32": "float32"}.get(v, v)
    if isinstance(expr, ast.Constant) and expr.value is None:
        return "float32"
    if isinstance(expr, ast.IfExp):
        a = dtype_of(pf, expr.body, scope, _depth + 1)
        b = dtype_of(pf, expr.orelse, scope, _depth + 1)
        return a if a == b else "unknown"
    if isinstance(expr, ast.Name):
        b = pf.binding_of(expr.id, scope)
        if b is not None and b.value is not None and b.kind in ("assign", "annassign"):
            owner = scope.lookup(expr.id)
            return dtype_of(pf, b.value, owner[0] if owner else scope, _depth + 1)
    return "unknown"


def keyword_nodes(pf: PythonFile, call: ast.Call, scope: Scope) -> dict[str, ast.expr]:
    """keyword -> value expression, through ``**{...}`` / ``**dict(...)`` / a dict name."""
    out: dict[str, ast.expr] = {}
    for kw in call.keywords:
        if kw.arg is not None:
            out[kw.arg] = kw.value
            continue
        for key, _kn, vn, _shared in pf.resolve_dict(kw.value, scope) or []:
            if isinstance(vn, ast.expr):
                out[key] = vn
    return out


def _call_through(pf: PythonFile, expr: ast.AST, scope: Scope, _depth: int = 0) -> tuple[ast.Call, Scope] | None:
    """The call an expression is (directly or through a name bound once)."""
    if _depth > 5:
        return None
    if isinstance(expr, ast.Call):
        return expr, scope
    if isinstance(expr, ast.Name):
        b = pf.binding_of(expr.id, scope)
        if b is not None and b.value is not None and b.kind in ("assign", "annassign"):
            owner = scope.lookup(expr.id)
            return _call_through(pf, b.value, owner[0] if owner else scope, _depth + 1)
    return None


def quantization_of(pf: PythonFile, nodes: dict[str, ast.expr], scope: Scope) -> tuple[str | None, ast.AST | None]:
    """("4bit"|"8bit"|"other"|None, where it is written) for a from_pretrained call's keywords."""
    for flag, kind in (("load_in_4bit", "4bit"), ("load_in_8bit", "8bit")):
        if flag in nodes and pf.resolve(nodes[flag], scope).value is True:
            return kind, nodes[flag]
    qc = nodes.get("quantization_config")
    if qc is None:
        return None, None
    found = _call_through(pf, qc, scope)
    entries = None
    where: ast.AST = qc
    if found is not None:
        call, cscope = found
        name = _dotted(call.func).split(".")[-1]
        if name in NON_BNB_QUANT_CONFIGS:
            return "other", qc
        if name != "BitsAndBytesConfig":
            return None, None
        kws = keyword_nodes(pf, call, cscope)
        for flag, kind in (("load_in_4bit", "4bit"), ("load_in_8bit", "8bit")):
            if flag in kws and pf.resolve(kws[flag], cscope).value is True:
                return kind, call
        return None, None
    entries = pf.resolve_dict(qc, scope)
    for key, _kn, vn, _s in entries or []:
        if key in ("load_in_4bit", "load_in_8bit") and pf.resolve(vn, scope).value is True:
            return ("4bit" if "4" in key else "8bit"), where
    return None, None


def _pos(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _block_ids(scope: Scope) -> set[int]:
    body = getattr(scope.node, "body", None)
    return {id(s) for s in body} if isinstance(body, list) else set()


def _block_ids_of(pf: PythonFile, scope: Scope) -> set[int]:
    """``_block_ids`` once per scope of the file (a file with thousands of Trainer calls asks
    for the module's block once per traced name)."""
    cache = pf.__dict__.setdefault("_block_ids", {})
    found = cache.get(id(scope))
    if found is None:
        found = cache[id(scope)] = _block_ids(scope)
    return found


def reaching_bindings(pf: PythonFile, name: str, scope: Scope, use: ast.AST | None
                      ) -> tuple[Scope, list[Binding]] | None:
    """The bindings of ``name`` that can reach a use at statement ``use``: in straight-line code
    of one scope, the last unconditional assignment before it and any conditional ones after
    that; from another scope (a closure), all of them."""
    found = scope.lookup(name)
    if found is None:
        return None
    owner, bindings = found
    if owner is not scope or use is None:
        return owner, list(bindings)
    upos = _pos(use)
    before = [b for b in bindings if _pos(b.node) < upos]
    if not before:
        return owner, list(bindings)
    top = _block_ids_of(pf, owner)
    uncond = [b for b in before if id(b.node) in top]
    if uncond:
        last = max(uncond, key=lambda b: _pos(b.node))
        before = [b for b in before if _pos(b.node) >= _pos(last.node)]
    return owner, before


class _FlowBuilder:
    def __init__(self, pf: PythonFile, flow: ModelFlow) -> None:
        self.pf = pf
        self.flow = flow
        self.seen: set[tuple[int, str | None]] = set()

    def trace(self, expr: ast.AST, scope: Scope, stmt: ast.stmt, outer: str | None, depth: int = 0) -> None:
        pf, flow = self.pf, self.flow
        if depth > 30:
            flow.unknown_origin = True
            return
        if isinstance(expr, ast.Name):
            found = reaching_bindings(pf, expr.id, scope, stmt)
            if found is None:
                flow.unknown_origin = True
                return
            owner, bindings = found
            flow.names.add((id(owner), expr.id))
            for b in bindings:
                key = (id(b.node), outer)
                if key in self.seen:
                    continue
                self.seen.add(key)
                flow.bindings.append((b, owner))
                if b.value is None:
                    flow.unknown_origin = True
                    continue
                bstmt = b.node if isinstance(b.node, ast.stmt) else stmt
                self.trace(b.value, owner, bstmt, outer, depth + 1)
            return
        if not isinstance(expr, ast.Call):
            flow.unknown_origin = True
            return
        call = expr
        func = call.func
        mv = device_move(pf, call, scope)
        if mv is not None:
            flow.moves.append(DeviceMove(call, mv[0], stmt, scope, mv[1], pf.source_of(func).split(".")[-1]))
            self.trace(mv[0], scope, stmt, outer, depth + 1)
            return
        fname = _dotted(func)
        last = fname.split(".")[-1]
        if isinstance(func, ast.Attribute):
            if func.attr in DTYPE_CASTS and not call.args and not call.keywords:
                flow.steps.append(FlowStep("cast", call, scope, stmt, DTYPE_CASTS[func.attr]))
                self.trace(func.value, scope, stmt, outer, depth + 1)
                return
            if func.attr == "to":
                dt = next((a for a in call.args if is_dtype_expr(pf, a, scope)), None) or \
                    next((k.value for k in call.keywords if k.arg == "dtype"), None)
                if dt is not None:
                    flow.steps.append(FlowStep("cast", call, scope, stmt, dtype_of(pf, dt, scope)))
                    self.trace(func.value, scope, stmt, outer, depth + 1)
                    return
            if func.attr in ("merge_and_unload", "unload"):
                flow.steps.append(FlowStep("merge", call, scope, stmt, func.attr))
                self.trace(func.value, scope, stmt, outer or "merged", depth + 1)
                return
            if func.attr in ("train", "eval", "requires_grad_", "float32") and not call.args:
                self.trace(func.value, scope, stmt, outer, depth + 1)
                return
        first = call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else \
            next((k.value for k in call.keywords if k.arg == "model"), None)
        if last in LOAD_METHODS and isinstance(func, ast.Attribute):
            owner_name = _dotted(func.value).split(".")[-1]
            if "Peft" in owner_name and not owner_name.startswith("AutoPeft"):
                # PeftModel.from_pretrained(base_model, adapter_path)
                flow.steps.append(FlowStep("peft", call, scope, stmt, fname))
                if first is not None:
                    self.trace(first, scope, stmt, outer or "peft", depth + 1)
                return
            self._load(call, scope, stmt, owner_name, last, outer)
            return
        if last in PEFT_WRAPPERS:
            flow.steps.append(FlowStep("peft", call, scope, stmt, last))
            if first is not None:
                self.trace(first, scope, stmt, outer or "peft", depth + 1)
            return
        if last in KBIT_PREPARE:
            flow.steps.append(FlowStep("kbit", call, scope, stmt, last))
            if first is not None:
                self.trace(first, scope, stmt, outer, depth + 1)
            return
        if fname in ("torch.compile", "compile") or pf.qualname(func) == "torch.compile":
            flow.steps.append(FlowStep("compile", call, scope, stmt, fname))
            if first is not None:
                self.trace(first, scope, stmt, outer, depth + 1)
            return
        if last in OTHER_WRAPPERS and first is not None:
            self.trace(first, scope, stmt, outer, depth + 1)
            return
        if isinstance(func, ast.Name):
            fb = pf.binding_of(func.id, scope)
            if fb is not None and fb.kind == "def":
                inner = pf.scope_at(fb.node)
                returns = [n for n in ast.walk(fb.node) if isinstance(n, ast.Return) and n.value is not None
                           and _owning_def(fb.node, n)]
                if not returns:
                    flow.unknown_origin = True
                for r in returns:
                    self.trace(r.value, inner, r, outer, depth + 1)  # type: ignore[arg-type]
                return
            if fb is not None and fb.kind == "class":
                flow.steps.append(FlowStep("custom", call, scope, stmt, func.id))
                flow.custom_classes.append(fb.node)  # type: ignore[arg-type]
                return
        flow.unknown_origin = True

    def _load(self, call: ast.Call, scope: Scope, stmt: ast.stmt, owner_name: str, method: str,
              outer: str | None) -> None:
        pf = self.pf
        values, open_ended = pf.call_keywords(call, scope)
        nodes = keyword_nodes(pf, call, scope)
        model_id = None
        if call.args and not isinstance(call.args[0], ast.Starred):
            model_id = pf.value_of("pretrained_model_name_or_path", call.args[0], call.args[0], scope)
        elif "pretrained_model_name_or_path" in values:
            model_id = values["pretrained_model_name_or_path"]
        quant, qnode = quantization_of(pf, nodes, scope)
        cs = call_site_of(pf, call) or CallSite(call, scope, stmt)
        self.flow.loads.append(LoadCall(
            site=cs, cls=owner_name, method=method, model_id=model_id, kwargs=values, nodes=nodes,
            open_ended=open_ended, quant=quant, quant_span=pf.span(qnode) if qnode is not None else None,
            adapters=owner_name.startswith("AutoPeft"), outer=outer))


def _owning_def(fn: ast.AST, node: ast.AST) -> bool:
    """``node`` belongs to ``fn`` itself, not to a function nested in it."""
    for child in ast.walk(fn):
        if child is not fn and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if any(n is node for n in ast.walk(child)):
                return False
    return True


def _root_name(expr: ast.AST) -> ast.Name | None:
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return expr if isinstance(expr, ast.Name) else None


def _flow_index(pf: PythonFile) -> tuple[dict[str, list[int]], list, dict[str, list[int]]]:
    """Once per file, for ``model_flows``: the calls by the names they could act on (the root
    of a method call, a first positional argument, the object of a device move), each call's
    device move, and the assignments to attributes by their root name."""
    cached = pf.__dict__.get("_flow_index")
    if cached is not None:
        return cached
    by_name: dict[str, list[int]] = {}
    moves: list = []
    attribute, name, subscript, assign = ast.Attribute, ast.Name, ast.Subscript, ast.Assign
    for i, cs in enumerate(pf.calls):
        node = cs.node
        func = node.func
        root = mv = None
        if isinstance(func, attribute):
            r = func.value  # ``_root_name(func.value)``, inline: asked of every method call
            while isinstance(r, (attribute, subscript)):
                r = r.value
            if isinstance(r, name):
                root = r.id
            if func.attr in _MOVE_METHODS:  # ``device_move`` is None for any other call
                mv = device_move(pf, node, cs.scope)
        moves.append(mv)
        if root is not None:
            by_name.setdefault(root, []).append(i)
        args = node.args
        first = args[0].id if args and isinstance(args[0], name) else None
        if first is not None and first != root:
            by_name.setdefault(first, []).append(i)
        if mv is not None:
            moved = mv[0].id if isinstance(mv[0], name) else None
            if moved is not None and moved != root and moved != first:
                by_name.setdefault(moved, []).append(i)
    assigns: dict[str, list[int]] = {}
    for j, (stmt, _) in enumerate(pf.statements):
        if isinstance(stmt, assign):
            for t in stmt.targets:
                root = _root_name(t) if isinstance(t, ast.Attribute) else None
                if root is not None and (not assigns.get(root.id) or assigns[root.id][-1] != j):
                    assigns.setdefault(root.id, []).append(j)
    pf.__dict__["_flow_index"] = (by_name, moves, assigns)
    return by_name, moves, assigns


def _bound_index(pf: PythonFile, by_name: dict[str, list[int]], names: set[str]) -> dict[tuple[int, str], list[int]]:
    """For ``model_flows``: the calls of ``_flow_index``'s ``names`` by (id of the scope that
    binds the name where the call is, name), in ``calls`` order; each name looked up once per
    file, whichever Trainer's model it is."""
    cached = pf.__dict__.get("_flow_bound")
    if cached is None:
        cached = pf.__dict__["_flow_bound"] = ({}, set())
    out, done = cached
    calls = pf.calls
    for n in names - done:
        for i in by_name.get(n, ()):
            found = calls[i].scope.lookup(n)
            if found is not None:
                out.setdefault((id(found[0]), n), []).append(i)
        done.add(n)
    return out


def model_flows(pf: PythonFile) -> list[ModelFlow]:
    """For each Trainer call: the model that reaches it, how it was created and changed."""
    cached = getattr(pf, "_model_flows", None)
    if cached is not None:
        return cached
    flows: list[ModelFlow] = []
    stmt_scope: dict[int, Scope] | None = None  # once a Trainer has a model (no walk of a file without one)
    for tc in pf.trainer_calls:
        model = tc.keywords.get("model")
        if model is None:
            continue
        if stmt_scope is None:
            stmt_scope = {id(s): sc for s, sc in pf.statements}
        flow = ModelFlow(tc)
        _FlowBuilder(pf, flow).trace(model, tc.site.scope, tc.site.stmt, None)
        tpos = _pos(tc.site.stmt)

        def before_trainer(stmt: ast.stmt) -> bool:
            return not (stmt_scope.get(id(stmt)) is tc.site.scope and _pos(stmt) > tpos)

        def on_model(name: ast.Name, scope: Scope) -> bool:
            found = scope.lookup(name.id)
            return found is not None and (id(found[0]), name.id) in flow.names

        by_name, moves, assigns = _flow_index(pf)
        names = {n for _, n in flow.names}
        bound = _bound_index(pf, by_name, names)
        # only a call one of whose names (receiver root, first argument, moved object) is bound
        # where one of the model's names is can be on the model (``on_model``)
        for i in sorted({i for key in flow.names for i in bound.get(key, ())}):
            cs = pf.calls[i]
            if cs.node is model or not before_trainer(cs.stmt):
                continue
            func = cs.node.func
            if isinstance(func, ast.Attribute):
                root = _root_name(func.value)
                if root is not None and on_model(root, cs.scope):
                    flow.calls.append(ModelCall(cs, func.attr, _dotted(func.value)))
            first = cs.node.args[0] if cs.node.args else None
            if isinstance(first, ast.Name) and on_model(first, cs.scope):
                froot = _root_name(func)
                if froot is None or not on_model(froot, cs.scope):
                    flow.calls.append(ModelCall(cs, _dotted(func).split(".")[-1], ""))
            # statement-level device moves: ``model.to(device)``, ``model = model.cuda()``
            mv = moves[i]
            if mv is None or not isinstance(mv[0], ast.Name) or not on_model(mv[0], cs.scope):
                continue
            if any(m.call is cs.node for m in flow.moves):
                continue
            if isinstance(cs.stmt, ast.Expr) and cs.stmt.value is cs.node or _is_self_assign(cs.stmt, cs.node):
                flow.moves.append(DeviceMove(cs.node, mv[0], cs.stmt, cs.scope, mv[1],
                                             pf.source_of(cs.node.func).split(".")[-1]))
        for j in sorted({j for n in names for j in assigns.get(n, ())}):
            stmt, scope = pf.statements[j]
            if not isinstance(stmt, ast.Assign) or not before_trainer(stmt):
                continue
            for t in stmt.targets:  # type: ignore[attr-defined]
                if isinstance(t, ast.Attribute):
                    root = _root_name(t)
                    if root is not None and on_model(root, scope):
                        flow.attr_sets.append((stmt, _dotted(t), stmt.value))  # type: ignore[attr-defined]
        flows.append(flow)
    pf._model_flows = flows  # type: ignore[attr-defined]
    pf._model_flow_of = {id(f.trainer): f for f in flows}  # type: ignore[attr-defined]
    return flows


def flow_for(pf: PythonFile, tc: TrainerCall) -> ModelFlow | None:
    flows = model_flows(pf)
    by_trainer = pf.__dict__.get("_flow_by_trainer")
    if by_trainer is None or by_trainer[0] is not flows:
        by_trainer = pf.__dict__["_flow_by_trainer"] = (flows, {id(f.trainer): f for f in reversed(flows)})
    return by_trainer[1].get(id(tc))


# --- what else reaches the Trainer ---------------------------------------------------------


def trainer_sites(setup: Setup, pf: PythonFile, tc: TrainerCall) -> list[ArgsSite] | None:
    """The TrainingArguments-like sites that configure ``tc``: its Python call; the launch-line
    or args-file sites of the setup when the script parses them (HfArgumentParser); an empty
    site (all defaults) for a transformers Trainer built without ``args``. None: not known."""
    if tc.args_call is not None:
        return [tc.args_call.args] if setup.judges(tc.args_call.args) else None
    if "args" not in tc.keywords:
        if tc.class_name in ("Trainer", "Seq2SeqTrainer") or pf.local_classes.get(tc.class_name, ("", ""))[1] \
                in ("Trainer", "Seq2SeqTrainer"):
            return [ArgsSite(path=pf.path, class_name="TrainingArguments")]
        return None
    others = [s for s in setup.sites if s.call is None]
    return others or None


def site_is_closed(pf: PythonFile, site: ArgsSite) -> bool:
    """Every field of the site is known to be written there or left at its default: no
    unresolved ``**kwargs`` and no later ``args.x = ...`` on the object."""
    if site.open_ended:
        return False
    call = site.call
    if call is not None and call.bound_to and pf.is_mutated(call.bound_to, call.site.scope):
        return False
    return True


def site_value(site: ArgsSite, *names: str) -> Value | None:
    for n in names:
        v = site.get(n)
        if v is not None:
            return v
    return None


def site_node(pf: PythonFile, site: ArgsSite, name: str) -> ast.expr | None:
    """The expression written for ``name`` in a Python TrainingArguments call."""
    if site.call is None:
        return None
    return keyword_nodes(pf, site.call.site.node, site.call.site.scope).get(name)


def base_trainer_class(pf: PythonFile, tc: TrainerCall) -> str:
    """``Trainer``/``Seq2SeqTrainer``/``SFTTrainer``... behind a local subclass."""
    local = pf.local_classes.get(tc.class_name)
    return local[1] if local else tc.class_name


def local_trainer_class(pf: PythonFile, tc: TrainerCall) -> ast.ClassDef | None:
    func = tc.site.node.func
    if isinstance(func, ast.Name) and func.id in pf.local_classes:
        b = pf.binding_of(func.id, pf.module_scope)
        if b is not None and isinstance(b.node, ast.ClassDef):
            return b.node
    return None


def class_method(pf: PythonFile, cls: ast.ClassDef, name: str, _depth: int = 0) -> ast.FunctionDef | None:
    """A method defined in ``cls`` or a local base class of it."""
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
            return stmt  # type: ignore[return-value]
    if _depth > 5:
        return None
    for base in cls.bases:
        if isinstance(base, ast.Name):
            b = pf.binding_of(base.id, pf.module_scope)
            if b is not None and isinstance(b.node, ast.ClassDef):
                found = class_method(pf, b.node, name, _depth + 1)
                if found is not None:
                    return found
    return None


def collator_call(pf: PythonFile, tc: TrainerCall) -> tuple[ast.Call, Scope] | None:
    expr = tc.keywords.get("data_collator")
    if expr is None:
        return None
    return _call_through(pf, expr, tc.site.scope)


def _is_self_assign(stmt: ast.stmt, call: ast.Call) -> bool:
    """``model = model.to(device)``."""
    return isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1 \
        and isinstance(stmt.targets[0], ast.Name) and isinstance(call.func, ast.Attribute) \
        and isinstance(call.func.value, ast.Name) and call.func.value.id == stmt.targets[0].id


def call_site_of(pf: PythonFile, call: ast.Call) -> CallSite | None:
    return next((c for c in pf.calls if c.node is call), None)


class TrainerContext(Row):  # a row (trainlint.record): cheaper to define than a NamedTuple
    """One Trainer call with its file, model flow and TrainingArguments sites."""

    __slots__ = ()
    _fields = ("pf", "trainer", "flow", "sites")
    pf: PythonFile
    trainer: TrainerCall
    flow: ModelFlow | None
    sites: list[ArgsSite] | None  # None: the arguments are not known

    def __new__(_cls, pf: PythonFile, trainer: TrainerCall, flow: ModelFlow | None,
                sites: list[ArgsSite] | None) -> TrainerContext:
        return tuple.__new__(_cls, (pf, trainer, flow, sites))


def trainer_contexts(setup: Setup) -> list[TrainerContext]:
    """Every Trainer call of the setup's scripts with its model flow and argument sites
    (worked out once per setup: some twenty rules ask)."""
    found = setup.extra.get("_trainer_contexts")
    if found is None:
        found = []
        for pf in setup.scripts:
            for tc in pf.trainer_calls:
                found.append(TrainerContext(pf, tc, flow_for(pf, tc), trainer_sites(setup, pf, tc)))
        setup.extra["_trainer_contexts"] = found
    return list(found)


def multi_process(setup: Setup, sites: list[ArgsSite] | None) -> str | None:
    """Why the run is multi-process (for messages), or None when it is single-process or not
    known: a world size above 1 (launch line, accelerate config, ``--gpus``) or a DeepSpeed
    config given to TrainingArguments (the DeepSpeed engine runs distributed)."""
    n = setup.world_size_value
    if n is not None and n > 1:
        return f"{n} processes ({setup.world_size.where()})" if setup.world_size is not None else f"{n} processes"
    if n == 1:
        return None
    for site in sites or []:
        ds = site.get("deepspeed")
        if ds is not None and ds.known and ds.value not in (None, "", False):
            return f"DeepSpeed ({ds.describe()})"
    return None
