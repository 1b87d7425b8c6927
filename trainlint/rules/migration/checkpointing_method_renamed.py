"""TL609 checkpointing-method-renamed: gradient_checkpointing_enable() and friends: activation_checkpointing_* since 5.23"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity, replace
from trainlint.fixing.python_edits import rewrite_node
from trainlint.knowledge import methods
from trainlint.rules._versioned import (
    older_support,
    target,
    target_text,
    transformers_at_least,
)
from trainlint.rules.base import Case, Rule
from trainlint.rules.migration._migration_common import (
    V524,
)
from trainlint.setup import Setup

CHECKPOINTING_RENAMED_IN = "5.23.0"  # modeling_utils.py: activation_checkpointing_* (5.22.0: absent)


_CHECKPOINTING_RENAMES = {
    "gradient_checkpointing_enable": "activation_checkpointing_enable",
    "gradient_checkpointing_disable": "activation_checkpointing_disable",
    "is_gradient_checkpointing": "is_activation_checkpointing",
}



class CheckpointingMethodRenamed(Rule):
    """
    ## What it does
    Flags, for transformers 5.23 and later, calls of `model.gradient_checkpointing_enable()`
    / `model.gradient_checkpointing_disable()` and reads of `model.is_gradient_checkpointing`
    in a script that imports transformers, peft or trl. A file that defines a method of one of
    these names (a custom model overriding it) is left alone.

    ## Why is this bad?
    5.23 renamed them to `activation_checkpointing_enable` / `_disable` /
    `is_activation_checkpointing` (the TrainingArguments field became
    `activation_checkpointing`, see `deprecated-argument`, TL603). The old names still work but
    warn "is deprecated and will be removed in v6" on every call.

    ## Example
    ```python
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    ```

    ## Use instead
    ```python
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    ```

    ## Fix safety
    Safe: the old methods are aliases that call the new ones (the keyword
    `gradient_checkpointing_kwargs=` is renamed with them). Only calls are renamed, and only
    when the new method takes every keyword the call passes at the target version (read from
    the released signatures: `activation_checkpointing_enable` takes
    `activation_checkpointing_kwargs`, `every_n_layers`, `offload`, not the old `**kwargs`).
    Feature probes (`inspect.signature(model.gradient_checkpointing_enable)`, `hasattr`,
    `getattr`), aliases (`self.f = model.gradient_checkpointing_enable`) and files that replace
    the method on an instance (`model.gradient_checkpointing_enable = MethodType(...)`) are
    left alone: those are not calls of the library method. The fix claims the whole call, so
    another fix of the same call (TL110 adding `use_reentrant`) is computed on the renamed call.
    The fix is unsafe when the project declares support (its requirements or
    pyproject.toml) for a transformers older than the one that added the new name: it would
    break the project there.

    ## References
    - pitfalls catalog R21; transformers 5.23 `PreTrainedModel.gradient_checkpointing_enable`
      (read in the 5.22.0 and 5.23.0 wheels)
    """

    code = "TL609"
    name = "checkpointing-method-renamed"
    severity = Severity.INFO
    fix_safety = "safe"
    summary = "gradient_checkpointing_enable() and friends: activation_checkpointing_* since 5.23"

    cases = [
        Case("""
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            print(model.is_gradient_checkpointing)
            """, options=V524,
             fixed="from transformers import AutoModelForCausalLM\n"
                   "model = AutoModelForCausalLM.from_pretrained(\"gpt2\")\n"
                   "model.activation_checkpointing_enable(activation_checkpointing_kwargs={\"use_reentrant\": False})\n"
                   "print(model.is_activation_checkpointing)\n"),
        Case("""
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            model.gradient_checkpointing_enable(use_cache=False)
            """, options=V524, fixed=None,
             note="flagged, no fix: activation_checkpointing_enable takes no use_cache"),
        Case("""
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            opts = {"use_reentrant": False}
            model.gradient_checkpointing_enable(**opts)
            """, options=V524, note="flagged, no fix: **kwargs"),
        # must not flag
        Case("""
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            model.gradient_checkpointing_enable()
            """, options={"transformers_version": "5.22.0"}, flags=False),
        Case("""
            import inspect
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            if "gradient_checkpointing_kwargs" in inspect.signature(model.gradient_checkpointing_enable).parameters:
                pass
            if hasattr(model, "gradient_checkpointing_enable"):
                getattr(model, "gradient_checkpointing_enable")()
            """, options=V524, flags=False, note="feature probes"),
        Case("""
            from types import MethodType
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            def enable(self, **kw):
                self.base.gradient_checkpointing_enable(**kw)
            model.gradient_checkpointing_enable = MethodType(enable, model)
            model.gradient_checkpointing_enable()
            """, options=V524, flags=False, note="an instance-level override is called"),
        Case("""
            from transformers import PreTrainedModel
            class Wrapper:
                def __init__(self, pretrained):
                    self.gradient_checkpointing_enable = pretrained.gradient_checkpointing_enable
            """, options=V524, flags=False, note="an attribute alias"),
        Case("""
            import torch
            class Net(torch.nn.Module):
                def gradient_checkpointing_enable(self):
                    self.ckpt = True
            Net().gradient_checkpointing_enable()
            """, options=V524, flags=False, note="not a transformers script; its own method"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        if not transformers_at_least(setup, CHECKPOINTING_RENAMED_IN):
            return
        version = target(setup)[0]
        for pf in setup.scripts:
            if not any(pf.uses_module(m) for m in ("transformers", "peft", "trl")) \
                    or not any(old in pf.text for old in _CHECKPOINTING_RENAMES):
                continue
            if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in _CHECKPOINTING_RENAMES
                   for n in pf.nodes):
                continue
            overridden = _overridden_names(pf)
            calls = {id(c.node.func): c.node for c in pf.calls}
            for node in pf.nodes:
                if not (isinstance(node, ast.Attribute) and node.attr in _CHECKPOINTING_RENAMES
                        and isinstance(node.ctx, ast.Load)) or node.attr in overridden:
                    continue
                call = calls.get(id(node))
                if node.attr in _METHODS and call is None:
                    continue  # a probe or an alias (inspect.signature(m.x), y = m.x): not a call
                new = _CHECKPOINTING_RENAMES[node.attr]
                sp = pf.span(node)
                attr_span = replace(sp, line=sp.end_line, column=sp.end_column - len(node.attr))
                edits: list | None = [attr_span.edit(new)]
                why = ""
                if call is not None:
                    edits, why = _renamed_call(pf, call, attr_span, node.attr, new, version)
                applicability, note = older_support(setup, CHECKPOINTING_RENAMED_IN, new, pf.path) \
                    if edits else ("safe", "")
                yield self.diagnostic(
                    attr_span, f"{node.attr} is deprecated since transformers {CHECKPOINTING_RENAMED_IN} "
                               f"({target_text(setup)}; removed in v6): use {new}{why}{note}",
                    edits=edits, fix_message=f"rename to {new}", applicability=applicability)  # type: ignore[arg-type]


_METHODS = ("gradient_checkpointing_enable", "gradient_checkpointing_disable")
_KWARG_RENAMES = {"gradient_checkpointing_kwargs": "activation_checkpointing_kwargs"}


def _overridden_names(pf) -> set[str]:
    """Names set on an object in this file (``model.x = MethodType(...)``, ``self.x = other.x``,
    ``setattr(model, "x", ...)``): calls of them are calls of that replacement, not of the
    library method."""
    out: set[str] = set()
    for n in pf.nodes:
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, (ast.Store, ast.Del)) and n.attr in _CHECKPOINTING_RENAMES:
            out.add(n.attr)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "setattr" \
                and len(n.args) >= 2 and isinstance(n.args[1], ast.Constant) and n.args[1].value in _CHECKPOINTING_RENAMES:
            out.add(n.args[1].value)
    return out


def _renamed_call(pf, call: ast.Call, attr_span, old: str, new: str, version: str) -> tuple[list | None, str]:
    """The edits renaming the call to ``new`` (one edit over the whole call, so a fix that adds
    a keyword to the same call is computed again on the renamed call), or (None, why) when the
    new method would not accept what the call passes (from the signatures of the target
    version, ``knowledge/data/model_methods.json``)."""
    if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return None, " (no fix: the call passes **kwargs/*args the new method may not accept)"
    edits = [attr_span.edit(new)]
    names = []
    for kw in call.keywords:
        name = _KWARG_RENAMES.get(kw.arg, kw.arg) if old == "gradient_checkpointing_enable" else kw.arg
        names.append(name)
        if name != kw.arg:
            edits.append(pf.keyword_name_span(kw).edit(name))
    ok = methods.accepts(version, new, len(call.args), names)
    if ok is not True:
        bad = [n for n in names if methods.accepts(version, new, 0, [n]) is False]
        what = f"keyword {', '.join(bad)}" if bad else "these arguments"
        return None, f" (no fix: {new} does not take {what} on transformers {version})" if ok is False \
            else f" (no fix: the signature of {new} on transformers {version} is not known)"
    return [rewrite_node(pf, call, edits)], ""
