"""TL134 left-padding-in-training: padding_side="left" on the tokenizer of a causal LM being trained"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import base_trainer_class, trainer_contexts
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

# trainers that learn from fixed sequences (no generation inside the training loop)
OFFLINE = frozenset({"Trainer", "SFTTrainer"})
HEAD = ("from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer\n"
        "model = AutoModelForCausalLM.from_pretrained('m')\n")


def _left_padding(pf) -> ast.AST | None:
    for node in pf.nodes:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "padding_side"
                                                for t in node.targets):
            if isinstance(node.value, ast.Constant) and node.value.value == "left":
                return node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "from_pretrained":
            kw = pf.keyword(node, "padding_side")
            if kw is not None and isinstance(kw.value, ast.Constant) and kw.value.value == "left":
                return kw
    return None


class LeftPaddingInTraining(Rule):
    """
    ## What it does
    Flags `tokenizer.padding_side = "left"` (or `from_pretrained(..., padding_side="left")`) in
    a script that trains a causal language model with `Trainer` or `SFTTrainer`, when the script
    does not generate (`.generate(` appears nowhere in it). Online RL trainers (PPO, GRPO,
    online DPO, ...) generate inside the training loop and need left padding: not flagged.

    ## Why is this bad?
    Left padding is what batched *generation* needs. For training, most chat templates and
    collators assume right padding: with left padding the real tokens of short samples start at
    a later position, so models that number positions from the start of the row see shifted
    position ids, and with `pad_token = eos_token` the masked padding sits where the sequence
    begins. It rarely fails loudly; it is advice.

    ## Example
    ```python
    tokenizer.padding_side = "left"
    Trainer(model=model, args=args, processing_class=tokenizer, train_dataset=ds).train()
    ```

    ## Use instead
    ```python
    tokenizer.padding_side = "right"   # switch to "left" only for generation
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - https://huggingface.co/docs/transformers/llm_tutorial#wrong-padding-side
    """

    code = "TL134"
    name = "left-padding-in-training"
    severity = Severity.INFO
    summary = 'padding_side="left" on the tokenizer of a causal LM being trained'
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("padding_side",)
    cases = [
        Case(HEAD + "tok = AutoTokenizer.from_pretrained('m')\ntok.padding_side = 'left'\n"
                    "Trainer(model=model, args=args, train_dataset=ds).train()\n"),
        Case(HEAD + "tok = AutoTokenizer.from_pretrained('m', padding_side='left')\n"
                    "Trainer(model=model, args=args, train_dataset=ds).train()\n"),
        Case(HEAD + "tok = AutoTokenizer.from_pretrained('m')\ntok.padding_side = 'right'\n"
                    "Trainer(model=model, args=args, train_dataset=ds).train()\n", flags=False),
        Case(HEAD + "tok = AutoTokenizer.from_pretrained('m')\ntok.padding_side = 'left'\n"
                    "Trainer(model=model, args=args, train_dataset=ds).train()\nmodel.generate(**batch)\n",
             flags=False, note="the script also generates"),
        Case("from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer\n"
             "model = AutoModelForSequenceClassification.from_pretrained('m')\n"
             "tok = AutoTokenizer.from_pretrained('m', padding_side='left')\nTrainer(model=model).train()\n",
             flags=False, note="not a causal LM"),
        Case("from transformers import AutoModelForCausalLM, AutoTokenizer\nfrom trl import GRPOTrainer\n"
             "model = AutoModelForCausalLM.from_pretrained('m')\n"
             "tok = AutoTokenizer.from_pretrained('m', padding_side='left')\nGRPOTrainer(model=model).train()\n",
             flags=False, note="online RL generates"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf in setup.scripts:
            if "padding_side" not in pf.text or ".generate(" in pf.text:
                continue
            contexts = [ctx for ctx in trainer_contexts(setup) if ctx.pf is pf]  # before the walk: cheaper
            if any(base_trainer_class(pf, ctx.trainer) not in OFFLINE for ctx in contexts):
                continue  # online RL trainers (PPO, GRPO, online DPO...) generate: they need left padding
            causal = any(ctx.flow is not None and any("CausalLM" in ld.cls for ld in ctx.flow.loads)
                         for ctx in contexts)
            if not causal:
                continue
            node = _left_padding(pf)
            if node is None:
                continue
            yield self.diagnostic(pf.span(node), 'padding_side="left" for training a causal LM: left padding is for '
                                                 "batched generation; training collators and chat templates expect "
                                                 'right padding (shifted positions otherwise); use "right" here')
