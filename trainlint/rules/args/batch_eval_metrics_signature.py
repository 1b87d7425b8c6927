"""TL222 batch-eval-metrics-signature: batch_eval_metrics with a compute_metrics that lacks compute_result"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.args._args_checks_common import (
    _kw_span,
    _trainer_calls,
)
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup


class BatchEvalMetricsSignature(Rule):
    """
    ## What it does
    Flags `batch_eval_metrics=True` when the `compute_metrics` function passed to the Trainer
    (a `def` in the same file) has no `compute_result` parameter (and no `**kwargs`).

    ## Why is this bad?
    `ValueError: When using batch_eval_metrics, your compute_metrics function must take a
    compute_result boolean argument`, at Trainer construction.

    ## Example
    ```python
    def compute_metrics(eval_pred): ...
    Trainer(..., args=TrainingArguments(output_dir="o", batch_eval_metrics=True),
            compute_metrics=compute_metrics)
    ```

    ## Use instead
    ```python
    def compute_metrics(eval_pred, compute_result=False): ...
    ```

    ## Fix safety
    No automatic fix (the function must accumulate batches).

    ## References
    - transformers 4.57.1 / 5.24 `Trainer.__init__`
    """

    code = "TL222"
    name = "batch-eval-metrics-signature"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("batch_eval_metrics",)
    summary = "batch_eval_metrics with a compute_metrics that lacks compute_result"
    cases = [
        Case("from transformers import Trainer, TrainingArguments\ndef cm(p):\n    return {}\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', batch_eval_metrics=True), "
             "compute_metrics=cm)\n"),
        Case("from transformers import Trainer, TrainingArguments\ndef cm(p, compute_result=False):\n    return {}\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', batch_eval_metrics=True), "
             "compute_metrics=cm)\n", flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf, tc in _trainer_calls(setup):
            if tc.args_call is None or tc.args_call.args.known("batch_eval_metrics") is not True:
                continue
            cm = tc.keywords.get("compute_metrics")
            if not isinstance(cm, ast.Name):
                continue
            b = pf.binding_of(cm.id, tc.site.scope)
            if b is None or b.kind != "def" or not isinstance(b.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            a = b.node.args
            names = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
            if "compute_result" in names or a.kwarg is not None:
                continue
            yield self.diagnostic(_kw_span(pf, tc, "compute_metrics"),
                                  f"batch_eval_metrics=True but {cm.id}() has no compute_result parameter: "
                                  "Trainer raises ValueError",
                                  related=[pf.span(b.node).related(f"{cm.id} defined here")])

