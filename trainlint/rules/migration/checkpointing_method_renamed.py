"""TL609 checkpointing-method-renamed: gradient_checkpointing_enable() and friends: activation_checkpointing_* since 5.23"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable

from trainlint.diagnostics import Diagnostic, Severity, replace
from trainlint.fixing.python_edits import rewrite_node
from trainlint.rules._triggers import CHECKPOINTING_NAMES
from trainlint.rules._versioned import (
    older_support,
    target,
    target_text,
)
from trainlint.rules.base import Case, Facts, ScriptRule
from trainlint.rules.migration._migration_common import (
    V524,
)

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.sources.python import PythonFile

# The cheap guard: the rule reads the method data only for a file that contains one of these
# (the deprecated names and their replacements come from data/model_api.json).
_GUARD = ("checkpointing_enable", "checkpointing_disable", "is_gradient_checkpointing")


def _common_prefix_swap(old: str, new: str) -> tuple[str, str]:
    """``gradient_checkpointing_enable`` / ``activation_checkpointing_enable`` ->
    (``gradient_checkpointing``, ``activation_checkpointing``): what the rename changed."""
    i = 0
    while i < min(len(old), len(new)) and old[-1 - i] == new[-1 - i]:
        i += 1
    return old[:len(old) - i].rstrip("_"), new[:len(new) - i].rstrip("_")


class CheckpointingMethodRenamed(ScriptRule):
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

    The deprecated names, the methods they hand over to and the releases come from the
    `PreTrainedModel` methods of every released wheel (data/model_api.json), so the rule follows
    new releases when the data is regenerated.

    ## References
    - transformers 5.23 `PreTrainedModel.gradient_checkpointing_enable` ("is deprecated and will
      be removed in v6"), read in the released wheels
    """

    code = "TL609"
    name = "checkpointing-method-renamed"
    severity = Severity.INFO
    triggers = CHECKPOINTING_NAMES
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
            from transformers import AutoModelForCausalLM
            def patch(model, enable):
                if enable is not None:
                    setattr(model, "gradient_checkpointing_enable", enable)
                model.gradient_checkpointing_enable()
            """, options=V524, flags=False, note="replaced by setattr in a function"),
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

    def check_script(self, pf: PythonFile, facts: Facts) -> Iterable[Diagnostic]:
        if not any(g in pf.text for g in _GUARD) \
                or not any(pf.uses_module(m) for m in ("transformers", "peft", "trl")):
            return
        from trainlint.knowledge import model_api  # behind the guard: the data is read from here on

        tf = facts.ask(target)[0]
        renames = {}
        for node in pf.attribute_nodes():
            if "checkpointing" in node.attr and node.attr not in renames:
                m = model_api.method(node.attr, tf)
                if m is not None and m.deprecated and m.alias_of and model_api.method(m.alias_of, tf):
                    renames[node.attr] = m
        if not renames:
            return
        if any(n.name in renames for n in pf.of_type(ast.FunctionDef) + pf.of_type(ast.AsyncFunctionDef)):
            return
        overridden = _overridden_names(pf, set(renames))
        calls = {id(c.node.func): c.node for c in pf.calls_named(*renames)}  # ``x.<renamed>(...)``
        for node in pf.attribute_nodes():
            if not (node.attr in renames and isinstance(node.ctx, ast.Load)) \
                    or node.attr in overridden:
                continue
            m = renames[node.attr]
            call = calls.get(id(node))
            if m.kind == "method" and call is None:
                continue  # a probe or an alias (inspect.signature(m.x), y = m.x): not a call
            new = m.alias_of
            new_m = model_api.method(new, tf)
            since = model_api.method_history(node.attr)[1]
            sp = pf.span(node)
            attr_span = replace(sp, line=sp.end_line, column=sp.end_column - len(node.attr))
            edits: list | None = [attr_span.edit(new)]
            why = ""
            if call is not None:
                edits, why = _renamed_call(pf, call, attr_span, node.attr, new, new_m, tf)
            applicability, note = facts.ask(older_support, since, new, pf.path) if edits and since \
                else ("safe", "")
            yield self.diagnostic(
                attr_span, f"{node.attr} is deprecated since transformers {since} "
                           f"({facts.ask(target_text)}; it warns on every call): use {new}{why}{note}",
                edits=edits, fix_message=f"rename to {new}", applicability=applicability)  # type: ignore[arg-type]


def _overridden_names(pf, names: set[str]) -> set[str]:
    """Names set on an object in this file (``model.x = MethodType(...)``, ``self.x = other.x``,
    ``setattr(model, "x", ...)``): calls of them are calls of that replacement, not of the
    library method."""
    out: set[str] = set()
    for n in pf.attribute_nodes():
        if isinstance(n.ctx, (ast.Store, ast.Del)) and n.attr in names:
            out.add(n.attr)
    for cs in pf.calls_named("setattr"):
        n = cs.node
        if isinstance(n.func, ast.Name) and n.func.id == "setattr" \
                and len(n.args) >= 2 and isinstance(n.args[1], ast.Constant) and n.args[1].value in names:
            out.add(n.args[1].value)
    return out


def _renamed_call(pf, call: ast.Call, attr_span, old: str, new: str, new_m, version: str
                  ) -> tuple[list | None, str]:
    """The edits renaming the call to ``new`` (one edit over the whole call, so a fix that adds
    a keyword to the same call is computed again on the renamed call), or (None, why) when the
    new method would not accept what the call passes: its parameters at the target version
    come from ``knowledge/data/model_api.json`` (generated from the released signatures)."""
    if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return None, " (no fix: the call passes **kwargs/*args the new method may not accept)"
    params = tuple(new_m.params)
    if len(call.args) > len(params):
        return None, f" (no fix: {new} takes at most {len(params)} positional arguments)"
    old_part, new_part = _common_prefix_swap(old, new)
    edits = [attr_span.edit(new)]
    taken = set(params[:len(call.args)])
    bad = []
    for kw in call.keywords:
        name = kw.arg
        if name not in params and name.startswith(old_part) and old_part:
            name = new_part + name[len(old_part):]
        if name in taken or (name not in params and not new_m.varkw):
            bad.append(kw.arg)
            continue
        if name != kw.arg:
            edits.append(pf.keyword_name_span(kw).edit(name))
    if bad:
        return None, f" (no fix: {new} does not take keyword {', '.join(bad)} on transformers {version})"
    return [rewrite_node(pf, call, edits)], ""
