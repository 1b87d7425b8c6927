"""Helpers of the PEFT rules (TL131, TL132): the ``LoraConfig(...)`` calls that reach a model
(``get_peft_model(model, cfg)``, a TRL trainer's ``peft_config=cfg``) with that model's load."""

from __future__ import annotations

import ast
from typing import Iterator

from trainlint import reads
from trainlint.analysis import LoadCall, flow_for
from trainlint.record import Record
from trainlint.setup import Setup
from trainlint.sources.python import CallSite, PythonFile

PEFT_CONFIGS = ("LoraConfig", "AdaLoraConfig", "LoHaConfig", "LoKrConfig", "IA3Config", "VeraConfig", "BOFTConfig",
                "OFTConfig", "FourierFTConfig", "HRAConfig", "BoneConfig", "RandLoraConfig", "ShiraConfig")


class PeftUse(Record):
    __slots__ = ("pf", "config", "use", "loads", "__dict__")
    pf: PythonFile
    config: CallSite  # the LoraConfig(...) call
    use: ast.Call  # get_peft_model(...) or the trainer call
    loads: list[LoadCall]  # the model's from_pretrained calls (may be empty)

    def __init__(self, pf: PythonFile, config: CallSite, use: ast.Call, loads: list[LoadCall]) -> None:
        self.pf = pf
        self.config = config
        self.use = use
        self.loads = loads


def _config_call(pf: PythonFile, expr: ast.AST | None, scope) -> CallSite | None:
    if expr is None:
        return None
    if isinstance(expr, ast.Name):
        b = pf.binding_of(expr.id, scope)
        if b is None or b.value is None or b.kind not in ("assign", "annassign"):
            return None
        expr = b.value
    if not isinstance(expr, ast.Call):
        return None
    qn = pf.qualname(expr.func) or ""
    name = qn.rsplit(".", 1)[-1] if qn else (expr.func.id if isinstance(expr.func, ast.Name) else "")
    if name not in PEFT_CONFIGS or (qn and not qn.startswith("peft")):
        return None
    return next((cs for cs in pf.calls if cs.node is expr), None)


def peft_uses(setup: Setup) -> Iterator[PeftUse]:
    for pf in setup.scripts:
        if "peft" not in pf.text:
            continue
        # a function of the script alone: worked out once per check (``reads.kept``) for the
        # rules that ask and every setup that holds it
        yield from reads.kept(("_peft_uses", pf), lambda: list(_file_peft_uses(pf)))  # noqa: B023 - called here


def _file_peft_uses(pf: PythonFile) -> Iterator[PeftUse]:
    for tc in pf.trainer_calls:
        flow = flow_for(pf, tc)
        loads = list(flow.loads) if flow is not None else []
        cfg = _config_call(pf, tc.keywords.get("peft_config"), tc.site.scope)
        if cfg is not None:
            yield PeftUse(pf, cfg, tc.site.node, loads)
        if flow is None:
            continue
        for st in flow.step("peft"):
            call = st.call
            if st.detail != "get_peft_model":
                continue
            arg = call.args[1] if len(call.args) > 1 else next(
                (k.value for k in call.keywords if k.arg == "peft_config"), None)
            cfg = _config_call(pf, arg, st.scope)
            if cfg is not None:
                yield PeftUse(pf, cfg, call, loads)
