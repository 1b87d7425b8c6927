"""Helpers shared by the rules split out of `gradient_checkpointing`: Gradient checkpointing combinations: TL108 peft-checkpointing-no-input-grads, TL109"""

from __future__ import annotations

import ast
import json
from typing import Any

from trainlint import reads
from trainlint.analysis import (
    KBIT_PREPARE,
    TrainerContext,
    keyword_nodes,
    site_is_closed,
    site_node,
)
from trainlint.diagnostics import Edit, Span
from trainlint.fixing.python_edits import add_keyword
from trainlint.record import Row
from trainlint.setup import PYTHON, UNKNOWN, ArgsSite

GC_ARGS = ("gradient_checkpointing", "activation_checkpointing")


GC_KWARGS = ("gradient_checkpointing_kwargs", "activation_checkpointing_kwargs")


GC_METHODS = ("gradient_checkpointing_enable", "activation_checkpointing_enable")
# what ``checkpointing_sources`` finds a source in: a written argument, a method call, a k-bit
# preparation (which turns checkpointing on by default); a rule that needs a source can report
# only where one of these words occurs (``Rule.fires_on``)
CHECKPOINTING_WORDS = tuple(sorted(set(GC_ARGS + GC_METHODS) | KBIT_PREPARE))


PLAIN_TRAINERS = ("Trainer", "Seq2SeqTrainer")


class Source(Row):  # a row (trainlint.record): cheaper to define than a NamedTuple
    """One place that turns gradient checkpointing on."""

    __slots__ = ()
    _fields = ("span", "via", "reentrant", "site", "call", "kwargs_written")
    span: Span
    via: str  # args, call, kbit
    reentrant: Any  # True/False written, None when not written, UNKNOWN when not resolvable
    site: ArgsSite | None
    call: ast.Call | None
    kwargs_written: bool

    def __new__(_cls, span: Span, via: str, reentrant: Any, site: ArgsSite | None = None,
                call: ast.Call | None = None, kwargs_written: bool = False) -> Source:
        return tuple.__new__(_cls, (span, via, reentrant, site, call, kwargs_written))


def _reentrant_from_node(ctx: TrainerContext, node: ast.AST | None, scope) -> Any:
    if node is None:
        return None
    pf = ctx.pf
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    entries = pf.resolve_dict(node, scope)
    if entries is None:
        return UNKNOWN
    for key, _kn, vn, _s in entries:
        if key == "use_reentrant":
            v = pf.resolve(vn, scope).value
            return v if isinstance(v, bool) else UNKNOWN
    return None


def checkpointing_sources(ctx: TrainerContext) -> list[Source]:
    """The places that turn gradient checkpointing on for the Trainer of ``ctx``: worked out
    once per check for each context (``reads.kept``; seven rules ask of every setup's)."""
    return list(reads.kept(("_checkpointing_sources", _Same(ctx)), lambda: _checkpointing_sources(ctx)))


class _Same:
    """A key that is its object, compared by identity (a context holds lists: no hash), and
    keeps it alive while the answer is kept, so its id is not reused."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return type(other) is _Same and other.obj is self.obj  # type: ignore[attr-defined]


def _checkpointing_sources(ctx: TrainerContext) -> list[Source]:
    pf, flow = ctx.pf, ctx.flow
    out: list[Source] = []
    for site in ctx.sites or []:
        on = next((site.get(n) for n in GC_ARGS if site.get(n) is not None), None)
        if on is None or on.value is not True:
            continue
        kv = next((site.get(n) for n in GC_KWARGS if site.get(n) is not None), None)
        reentrant: Any = None
        if kv is not None:
            if kv.origin == PYTHON and site.call is not None:
                node = site_node(pf, site, kv.name)
                reentrant = _reentrant_from_node(ctx, node, site.call.site.scope)
            elif isinstance(kv.value, dict):
                reentrant = kv.value.get("use_reentrant")
            elif isinstance(kv.value, str):
                try:
                    reentrant = json.loads(kv.value).get("use_reentrant")
                except (ValueError, AttributeError):
                    reentrant = UNKNOWN
            else:
                reentrant = UNKNOWN
        elif not site_is_closed(pf, site):
            reentrant = UNKNOWN
        out.append(Source(on.key_span or on.span, "args", reentrant, site=site,  # type: ignore[arg-type]
                          kwargs_written=kv is not None))
    if flow is None:
        return out
    for c in flow.called(*GC_METHODS):
        if "." in c.receiver or not c.receiver:
            continue
        nodes = keyword_nodes(pf, c.site.node, c.site.scope)
        node = next((nodes[n] for n in GC_KWARGS if n in nodes), None)
        if node is None and c.site.node.args:
            node = c.site.node.args[0]
        open_kw = any(k.arg is None for k in c.site.node.keywords) and node is None
        out.append(Source(pf.span(c.site.node), "call",
                          UNKNOWN if open_kw else _reentrant_from_node(ctx, node, c.site.scope),
                          call=c.site.node, kwargs_written=node is not None))
    kbit_calls = [s.call for s in flow.step("kbit")] + [c.site.node for c in flow.called(
        "prepare_model_for_kbit_training", "prepare_model_for_int8_training") if not c.receiver]
    for call in kbit_calls:
        scope = next((cs.scope for cs in pf.calls if cs.node is call), pf.module_scope)
        nodes = keyword_nodes(pf, call, scope)
        if "use_gradient_checkpointing" in nodes and pf.resolve(nodes["use_gradient_checkpointing"], scope).value \
                is not True:
            continue
        node = nodes.get("gradient_checkpointing_kwargs")
        out.append(Source(pf.span(call), "kbit", _reentrant_from_node(ctx, node, scope), call=call,
                          kwargs_written=node is not None))
    return out


def _gc_related(sources: list[Source]) -> list:
    return [sources[0].span.related("gradient checkpointing is turned on here")]


def peft_with_zero3(setup: Any, ctx: TrainerContext) -> bool:
    """A PEFT model trained under DeepSpeed ZeRO-3: there non-reentrant checkpointing raises
    ``torch.utils.checkpoint.CheckpointError`` on the empty parameter shards, and TRL's trainers
    force ``use_reentrant=True`` (trl ``trainer/sft_trainer.py``)."""
    flow = ctx.flow
    if flow is None or not flow.peft_wrapped:
        return False
    from trainlint.rules.script.zero3_init_order import zero_stage

    return any(zero_stage(setup, ctx.pf, site)[0] == 3 for site in ctx.sites or [])


def add_reentrant_kwarg(ctx: TrainerContext, src: Source, value: bool = False) -> list[Edit] | None:
    if src.via == "args" and src.site is not None and src.site.call is not None and site_is_closed(ctx.pf, src.site):
        name = "activation_checkpointing_kwargs" if src.site.get("activation_checkpointing") is not None \
            and src.site.get("gradient_checkpointing") is None else "gradient_checkpointing_kwargs"
        return [add_keyword(ctx.pf, src.site.call.site.node, f'{name}={{"use_reentrant": {value}}}')]
    if src.via in ("call", "kbit") and src.call is not None and not src.call.args \
            and not any(k.arg is None for k in src.call.keywords):
        name = "activation_checkpointing_kwargs" if isinstance(src.call.func, ast.Attribute) \
            and src.call.func.attr == "activation_checkpointing_enable" else "gradient_checkpointing_kwargs"
        return [add_keyword(ctx.pf, src.call, f'{name}={{"use_reentrant": {value}}}')]
    return None

