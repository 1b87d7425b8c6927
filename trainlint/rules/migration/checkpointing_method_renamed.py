"""TL609 checkpointing-method-renamed: gradient_checkpointing_enable() and friends: activation_checkpointing_* since 5.23"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity, replace
from trainlint.rules._versioned import (
    target,
    target_text,
)
from trainlint.rules.base import Case, Rule
from trainlint.rules.migration._migration_common import (
    V524,
)
from trainlint.setup import Setup

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
    `gradient_checkpointing_kwargs=` is renamed with them).

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
        # must not flag
        Case("""
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            model.gradient_checkpointing_enable()
            """, options={"transformers_version": "5.22.0"}, flags=False),
        Case("""
            import torch
            class Net(torch.nn.Module):
                def gradient_checkpointing_enable(self):
                    self.ckpt = True
            Net().gradient_checkpointing_enable()
            """, options=V524, flags=False, note="not a transformers script; its own method"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        tf = target(setup)[0]
        for pf in setup.scripts:
            if not any(g in pf.text for g in _GUARD) \
                    or not any(pf.uses_module(m) for m in ("transformers", "peft", "trl")):
                continue
            from trainlint.knowledge import model_api  # behind the guard: the data is read from here on

            renames = {}
            for node in pf.nodes:
                if isinstance(node, ast.Attribute) and "checkpointing" in node.attr and node.attr not in renames:
                    m = model_api.method(node.attr, tf)
                    if m is not None and m.deprecated and m.alias_of and model_api.method(m.alias_of, tf):
                        renames[node.attr] = m
            if not renames:
                continue
            if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in renames for n in pf.nodes):
                continue
            for node in pf.nodes:
                if not (isinstance(node, ast.Attribute) and node.attr in renames and isinstance(node.ctx, ast.Load)):
                    continue
                m = renames[node.attr]
                new = m.alias_of
                new_m = model_api.method(new, tf)
                since = model_api.method_history(node.attr)[1]
                sp = pf.span(node)
                attr_span = replace(sp, line=sp.end_line, column=sp.end_column - len(node.attr))
                edits = [attr_span.edit(new)]
                call = next((c.node for c in pf.calls if c.node.func is node), None)
                if call is not None:
                    old_part, new_part = _common_prefix_swap(node.attr, new)
                    for kw in call.keywords:
                        if kw.arg and kw.arg not in new_m.params and kw.arg.startswith(old_part):
                            renamed = new_part + kw.arg[len(old_part):]
                            if renamed not in new_m.params:
                                edits = None  # a keyword the new method does not take: no blind rename
                                break
                            edits.append(pf.keyword_name_span(kw).edit(renamed))
                yield self.diagnostic(
                    attr_span, f"{node.attr} is deprecated since transformers {since} "
                               f"({target_text(setup)}; it warns on every call): use {new}",
                    edits=edits, fix_message=f"rename to {new}")
