"""TL136 train-called-twice: trainer.train() called twice on the same Trainer (or in a loop)"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Facts, ScriptRule
from trainlint.sources.python import PythonFile

HEAD = "from transformers import Trainer\n"
BODY_FIELDS = ("body", "orelse", "finalbody")


def _blocks(tree: ast.AST) -> dict[int, tuple[int, bool]]:
    """Statement id -> (id of the block it is in, whether the block is a loop body)."""
    out: dict[int, tuple[int, bool]] = {}
    todo: list[tuple[ast.AST, bool]] = [(tree, False)]
    while todo:
        node, in_loop = todo.pop()
        for name in BODY_FIELDS:
            body = getattr(node, name, None)
            if not isinstance(body, list):
                continue
            loop = isinstance(node, (ast.For, ast.While, ast.AsyncFor)) and name == "body"
            for stmt in body:
                if isinstance(stmt, ast.stmt):
                    out[id(stmt)] = (id(body), loop)
                    todo.append((stmt, loop))
        for h in getattr(node, "handlers", []) or []:
            todo.append((h, in_loop))
    return out


def _in_a_loop(pf: PythonFile, stmt: ast.stmt) -> bool:
    """Whether ``stmt`` lies within the lines of a ``for``/``while`` of the file (a statement of
    a loop's body does)."""
    line = stmt.lineno
    for kind in (ast.For, ast.While, ast.AsyncFor):
        for loop in pf.of_type(kind):
            if loop.lineno <= line <= (loop.end_lineno or loop.lineno):
                return True
    return False


def _statement_of(pf: PythonFile, call: ast.Call):
    return next((cs for cs in pf.calls if cs.node is call), None)


class TrainCalledTwice(ScriptRule):
    """
    ## What it does
    Flags a second `trainer.train()` on the same Trainer object in the same block, and a
    `trainer.train()` inside a loop when the Trainer is built outside it.

    ## Why is this bad?
    A Trainer keeps its state: the second call trains the already trained model again, from a
    fresh optimizer and schedule (or resumes, with `resume_from_checkpoint`), doubling the cost
    and usually the epochs; a copy-pasted cell or a leftover line is the usual cause.

    ## Example
    ```python
    trainer = Trainer(model=model, args=args, train_dataset=ds)
    trainer.train()
    trainer.evaluate()
    trainer.train()
    ```

    ## Use instead
    ```python
    trainer = Trainer(model=model, args=args, train_dataset=ds)
    trainer.train()
    trainer.evaluate()
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `Trainer.train` (it starts a new optimization on the current model state)
    """

    code = "TL136"
    name = "train-called-twice"
    severity = Severity.WARNING
    summary = "trainer.train() called twice on the same Trainer (or in a loop)"
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("train",)
    cases = [
        Case(HEAD + "trainer = Trainer(model=m, args=a)\ntrainer.train()\ntrainer.evaluate()\ntrainer.train()\n"),
        Case(HEAD + "trainer = Trainer(model=m, args=a)\nfor fold in range(5):\n    trainer.train()\n"),
        Case(HEAD + "def run(m, a, folds):\n    trainer = Trainer(model=m, args=a)\n    while folds:\n"
                    "        trainer.train()\n        folds -= 1\n",
             note="one call, in a while loop of a function"),
        Case(HEAD + "trainer = Trainer(model=m, args=a)\nif resume:\n    trainer.train(resume_from_checkpoint=True)\n"
                    "else:\n    trainer.train()\n", flags=False),
        Case(HEAD + "for fold in range(5):\n    trainer = Trainer(model=m, args=a)\n    trainer.train()\n", flags=False),
        Case(HEAD + "trainer = Trainer(model=m, args=a)\ntrainer.train()\ntrainer = Trainer(model=m2, args=a)\n"
                    "trainer.train()\n", flags=False, note="two Trainers under one name"),
    ]

    def check_script(self, pf: PythonFile, facts: Facts) -> Iterable[Diagnostic]:
        if pf.text.count(".train(") < 1 or not pf.trainer_calls:
            return
        blocks = None
        for tc in pf.trainer_calls:
            stmt = tc.site.stmt
            if not (isinstance(stmt, ast.Assign) and stmt.value is tc.site.node and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Name)):
                continue
            name = stmt.targets[0].id
            if len(pf.bindings_of(name, tc.site.scope)) != 1:
                continue
            calls = [cs for cs in pf.calls_named("train") if isinstance(cs.node.func, ast.Attribute)
                     and isinstance(cs.node.func.value, ast.Name) and cs.node.func.value.id == name
                     and cs.scope is tc.site.scope and isinstance(cs.stmt, ast.Expr) and cs.stmt.value is cs.node]
            if not calls:
                continue
            if len(calls) == 1 and not _in_a_loop(pf, calls[0].stmt):
                continue  # one call, in no loop's lines: neither a second call nor one in a loop
            blocks = blocks or _blocks(pf.tree)
            made_in = blocks.get(id(stmt))
            seen_blocks: dict[int, ast.Call] = {}
            for cs in calls:
                where = blocks.get(id(cs.stmt))
                if where is None:
                    continue
                block, loop = where
                if loop and made_in is not None and made_in[0] != block:
                    yield self.diagnostic(pf.span(cs.node), f"{name}.train() runs inside a loop but {name} is built "
                                                            "once outside it: each pass trains the already trained "
                                                            "model again; build the Trainer inside the loop")
                    break
                if block in seen_blocks:
                    yield self.diagnostic(pf.span(cs.node),
                                          f"{name}.train() is called a second time on the same Trainer: it trains the "
                                          "already trained model again from a new optimizer and schedule (double "
                                          "the cost); drop one call",
                                          related=[pf.span(seen_blocks[block]).related("the first train() call")])
                    break
                seen_blocks[block] = cs.node
