"""TL220 streaming-without-max-steps: a streaming/iterable train_dataset without max_steps"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    effective,
    is_num,
)
from trainlint.rules.args._args_checks_common import (
    _kw_span,
    _trainer_calls,
)
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup
from trainlint.sources.python import PythonFile


def _streaming_source(pf: PythonFile, expr: ast.AST, scope, depth: int = 0) -> ast.Call | None:
    """The ``load_dataset(..., streaming=True)`` (or ``IterableDataset.from_*``) call that
    ``expr`` is derived from through names, ``ds["train"]`` and ``.map/.filter/.shuffle``."""
    if depth > 8 or expr is None:
        return None
    if isinstance(expr, ast.Subscript):
        return _streaming_source(pf, expr.value, scope, depth + 1)
    if isinstance(expr, ast.Call):
        f = expr.func
        qn = pf.qualname(f) or ""
        if qn.endswith("load_dataset") and qn.startswith("datasets"):
            for k in expr.keywords:
                if k.arg == "streaming" and pf.resolve(k.value, scope).value is True:
                    return expr
            return None
        if qn.startswith("datasets.") and ".IterableDataset." in qn + ".":
            return expr
        if isinstance(f, ast.Attribute) and f.attr in ("map", "filter", "shuffle", "select_columns",
                                                         "remove_columns", "rename_column", "with_format", "take",
                                                         "skip"):
            return _streaming_source(pf, f.value, scope, depth + 1)
        return None
    if isinstance(expr, ast.Name):
        b = pf.binding_of(expr.id, scope)
        if b is None or b.value is None or b.kind not in ("assign", "annassign"):
            return None
        owner = scope.lookup(expr.id)
        return _streaming_source(pf, b.value, owner[0] if owner else scope, depth + 1)
    return None



class StreamingWithoutMaxSteps(Rule):
    """
    ## What it does
    Flags a Trainer whose `train_dataset` comes from `load_dataset(..., streaming=True)` (or an
    `IterableDataset`) while its arguments leave `max_steps` unset (or <= 0).

    ## Why is this bad?
    An iterable dataset has no length: `ValueError: The train_dataset does not implement
    __len__, max_steps has to be specified`, at Trainer construction.

    ## Example
    ```python
    ds = load_dataset("c4", "en", split="train", streaming=True)
    Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds)
    ```

    ## Use instead
    ```python
    Trainer(model=model, args=TrainingArguments(output_dir="o", max_steps=10_000), train_dataset=ds)
    ```

    ## Fix safety
    No automatic fix: `max_steps` defines the training length.

    ## References
    - transformers `Trainer.__init__` (4.40 to 5.24)
    """

    code = "TL220"
    name = "streaming-without-max-steps"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("streaming", "IterableDataset")
    summary = "a streaming/iterable train_dataset without max_steps"
    cases = [
        Case("from datasets import load_dataset\nfrom transformers import Trainer, TrainingArguments\n"
             "ds = load_dataset('c4', split='train', streaming=True)\n"
             "tok = ds.map(f)\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o'), train_dataset=tok)\n"),
        Case("from datasets import load_dataset\nfrom transformers import Trainer, TrainingArguments\n"
             "ds = load_dataset('c4', split='train', streaming=True)\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', max_steps=100), train_dataset=ds)\n",
             flags=False),
        Case("from datasets import load_dataset\nfrom transformers import Trainer, TrainingArguments\n"
             "ds = load_dataset('imdb', split='train')\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o'), train_dataset=ds)\n", flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf, tc in _trainer_calls(setup):
            train = tc.keywords.get("train_dataset")
            if train is None or tc.args_call is None:
                continue
            src = _streaming_source(pf, train, tc.site.scope)
            if src is None:
                continue
            ms = effective(setup, tc.args_call.args, "max_steps")
            if not is_num(ms) or ms > 0:
                continue
            yield self.diagnostic(_kw_span(pf, tc, "train_dataset"),
                                  "the train_dataset is a streaming (iterable) dataset without a length and max_steps "
                                  "is not set: Trainer raises ValueError",
                                  related=[pf.span(src).related("streaming dataset created here")])

