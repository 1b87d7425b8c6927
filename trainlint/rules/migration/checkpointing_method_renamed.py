"""TL609 checkpointing-method-renamed: gradient_checkpointing_enable() and friends: activation_checkpointing_* since 5.23"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity, replace
from trainlint.rules._triggers import CHECKPOINTING_NAMES
from trainlint.rules._versioned import (
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
    `gradient_checkpointing_kwargs=` is renamed with them).

    ## References
    - pitfalls catalog R21; transformers 5.23 `PreTrainedModel.gradient_checkpointing_enable`
      (read in the 5.22.0 and 5.23.0 wheels)
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
        if not transformers_at_least(setup, CHECKPOINTING_RENAMED_IN):
            return
        for pf in setup.scripts:
            if not any(pf.uses_module(m) for m in ("transformers", "peft", "trl")) \
                    or not any(old in pf.text for old in _CHECKPOINTING_RENAMES):
                continue
            if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in _CHECKPOINTING_RENAMES
                   for n in pf.nodes):
                continue
            for node in pf.nodes:
                if not (isinstance(node, ast.Attribute) and node.attr in _CHECKPOINTING_RENAMES
                        and isinstance(node.ctx, ast.Load)):
                    continue
                new = _CHECKPOINTING_RENAMES[node.attr]
                sp = pf.span(node)
                attr_span = replace(sp, line=sp.end_line, column=sp.end_column - len(node.attr))
                edits = [attr_span.edit(new)]
                call = next((c.node for c in pf.calls if c.node.func is node), None)
                kw = pf.keyword(call, "gradient_checkpointing_kwargs") if call is not None else None
                if kw is not None:
                    edits.append(pf.keyword_name_span(kw).edit("activation_checkpointing_kwargs"))
                yield self.diagnostic(
                    attr_span, f"{node.attr} is deprecated since transformers {CHECKPOINTING_RENAMED_IN} "
                               f"({target_text(setup)}; removed in v6): use {new}",
                    edits=edits, fix_message=f"rename to {new}")

