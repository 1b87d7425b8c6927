"""TL128 reentrant-checkpointing-frozen-input: reentrant checkpointing with frozen embeddings or first layers"""

from __future__ import annotations

import ast
import re
from typing import Iterable

from trainlint.analysis import trainer_contexts
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import CHECKPOINTING_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._gradient_checkpointing_common import CHECKPOINTING_WORDS, checkpointing_sources
from trainlint.setup import Setup

# module paths that feed the first checkpointed layer: embeddings, or the first decoder layers
FRONT = re.compile(r"(embed|wte\b|wpe\b|word_embeddings|\bshared\b|\bembeddings\b)|(layers|\bh|blocks?|layer)\s*\[\s*(0|:)")
HEAD = ("from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained('m')\n")
TAIL = ("args = TrainingArguments(output_dir='o', gradient_checkpointing=True{kw})\n"
        "Trainer(model=model, args=args).train()\n")
V4 = {"transformers_version": "4.57.1"}


def _freezes(body: list[ast.stmt]) -> bool:
    """``p.requires_grad = False`` or ``p.requires_grad_(False)`` in a loop body."""
    for node in (n for s in body for n in ast.walk(s)):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "requires_grad"
                                                for t in node.targets):
            if isinstance(node.value, ast.Constant) and node.value.value is False:
                return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_" \
                and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value is False:
            return True
    return False


class ReentrantCheckpointingFrozenInput(Rule):
    """
    ## What it does
    Flags reentrant gradient checkpointing (`use_reentrant=True`, or unset on transformers 4.x
    where it is the default) on a fully fine-tuned model whose embeddings or first layers are
    frozen before the Trainer (`model.model.embed_tokens.requires_grad_(False)`, `for p in
    model.transformer.wte.parameters(): p.requires_grad = False`, `model.layers[:4]`...),
    unless `model.enable_input_require_grads()` is called. (PEFT models are TL108's.)

    ## Why is this bad?
    Reentrant checkpointing backpropagates into a checkpointed segment only if one of its
    *inputs* requires a gradient. With the embeddings (or the layers before) frozen, the hidden
    states entering the first checkpointed layer do not, so no gradient reaches any trainable
    layer behind it: the loss does not move (transformers#21381). axolotl refuses this config.

    ## Example
    ```python
    model.model.embed_tokens.requires_grad_(False)
    args = TrainingArguments(output_dir="o", gradient_checkpointing=True)   # transformers 4.x
    ```

    ## Use instead
    ```python
    model.model.embed_tokens.requires_grad_(False)
    args = TrainingArguments(output_dir="o", gradient_checkpointing=True,
                             gradient_checkpointing_kwargs={"use_reentrant": False})
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - https://github.com/huggingface/transformers/issues/21381
    - torch `utils/checkpoint.py` ("None of the inputs have requires_grad=True")
    """

    code = "TL128"
    name = "reentrant-checkpointing-frozen-input"
    severity = Severity.ERROR
    summary = "reentrant checkpointing with frozen embeddings or first layers"
    triggers = CHECKPOINTING_NAMES
    needs_training = True
    fires_on = CHECKPOINTING_WORDS
    cases = [
        Case(HEAD + "model.model.embed_tokens.requires_grad_(False)\n" + TAIL.format(kw=""), options=V4),
        Case(HEAD + "for p in model.transformer.wte.parameters():\n    p.requires_grad = False\n" +
             TAIL.format(kw=', gradient_checkpointing_kwargs={"use_reentrant": True}')),
        Case(HEAD + "for layer in model.model.layers[:4]:\n    for p in layer.parameters():\n"
                    "        p.requires_grad = False\n" + TAIL.format(kw=""), options=V4),
        Case(HEAD + "model.model.embed_tokens.requires_grad_(False)\n" +
             TAIL.format(kw=', gradient_checkpointing_kwargs={"use_reentrant": False}'), options=V4, flags=False),
        Case(HEAD + "model.model.embed_tokens.requires_grad_(False)\nmodel.enable_input_require_grads()\n" +
             TAIL.format(kw=""), options=V4, flags=False),
        Case(HEAD + "model.model.embed_tokens.requires_grad_(False)\n" + TAIL.format(kw=""), flags=False,
             note="transformers 5 defaults to use_reentrant=False"),
        Case(HEAD + "model.lm_head.requires_grad_(False)\n" + TAIL.format(kw=""), options=V4, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        major = setup.transformers_tuple()[0]
        for ctx in trainer_contexts(setup):
            flow = ctx.flow
            if flow is None or flow.has_adapters or flow.called("enable_input_require_grads"):
                continue
            frozen = self._frozen_front(ctx)
            if frozen is None:
                continue
            for src in checkpointing_sources(ctx):
                reentrant = src.reentrant
                if reentrant is None:
                    reentrant = major < 5
                if reentrant is not True:
                    continue
                yield self.diagnostic(src.span, f"reentrant gradient checkpointing with {frozen} frozen: the hidden "
                                                "states entering the first checkpointed layer need no gradient, so no "
                                                "gradient reaches the trainable layers; use "
                                                "gradient_checkpointing_kwargs={\"use_reentrant\": False} or call "
                                                "model.enable_input_require_grads()",
                                      related=[ctx.pf.span(flow.trainer.site.node.func).related("the Trainer")])
                break

    @staticmethod
    def _frozen_front(ctx) -> str | None:
        pf = ctx.pf
        for c in ctx.flow.calls:
            call = c.site.node
            if c.name == "requires_grad_" and call.args and isinstance(call.args[0], ast.Constant) \
                    and call.args[0].value is False and FRONT.search(pf.source_of(call.func.value)):
                return pf.source_of(call.func.value)
            if c.name in ("parameters", "named_parameters", "modules", "children") and FRONT.search(pf.source_of(call.func.value)):
                stmt = c.site.stmt
                if isinstance(stmt, ast.For) and _freezes(stmt.body):
                    return pf.source_of(call.func.value)
            if isinstance(c.site.stmt, ast.For) and c.site.stmt.iter is not call and FRONT.search(
                    pf.source_of(c.site.stmt.iter)) and _freezes(c.site.stmt.body):
                return pf.source_of(c.site.stmt.iter)
        loops = getattr(pf, "_frozen_front_loops", None)
        if loops is None:  # the same for every Trainer of the file: found once
            loops = pf._frozen_front_loops = []
            for stmt, scope in pf.statements:
                if isinstance(stmt, ast.For) and isinstance(stmt.iter, ast.Subscript) and FRONT.search(
                        pf.source_of(stmt.iter)) and _freezes(stmt.body):
                    root = stmt.iter
                    while isinstance(root, (ast.Attribute, ast.Subscript)):
                        root = root.value
                    if isinstance(root, ast.Name):
                        loops.append((stmt, scope, root.id))
        for stmt, scope, name in loops:
            found = scope.lookup(name)
            if found is not None and (id(found[0]), name) in ctx.flow.names:
                return pf.source_of(stmt.iter)
        return None
