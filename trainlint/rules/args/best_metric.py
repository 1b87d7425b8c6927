"""TL232: ``metric_for_best_model`` names a metric the evaluation never produces."""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import trainer_contexts
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup
from trainlint.sources.python import PythonFile

# What Trainer.evaluate reports besides compute_metrics' keys (eval_loss when the model
# returns a loss; the speed metrics of trainer_utils.speed_metrics).
ALWAYS = {"loss", "runtime", "samples_per_second", "steps_per_second", "model_preparation_time"}

SCRIPT = """
from transformers import Trainer, TrainingArguments
def compute_metrics(eval_pred):
    logits, labels = eval_pred
    return {{"accuracy": (logits.argmax(-1) == labels).mean()}}
args = TrainingArguments(output_dir="o", eval_strategy="epoch", save_strategy="epoch",
                         load_best_model_at_end=True, metric_for_best_model="{metric}")
Trainer(model=model, args=args, compute_metrics={cm})
"""


class MetricNotComputed(Rule):
    """
    ## What it does
    Flags `metric_for_best_model` when the `Trainer` / `Seq2SeqTrainer` it configures cannot
    produce that metric: the `compute_metrics` function passed to it returns only dict
    displays and none has the key (`"f1"` or `"eval_f1"` both mean key `f1`), or no
    `compute_metrics` is passed and the metric is not the loss. A `compute_metrics` that returns
    anything else (a variable, `metric.compute(...)`), or a local Trainer subclass (it may add
    metrics), is not judged.

    ## Why is this bad?
    The Trainer looks the metric up as `eval_<name>` in the evaluation results when it saves a
    checkpoint: `KeyError: The metric_for_best_model training argument is set to 'eval_f1',
    which is not found in the evaluation metrics`, after the first evaluation (a whole epoch of
    training in, with `eval_strategy="epoch"`).

    ## Example
    ```python
    def compute_metrics(p):
        return {"accuracy": ...}
    args = TrainingArguments(..., metric_for_best_model="f1")
    ```

    ## Use instead
    ```python
    args = TrainingArguments(..., metric_for_best_model="accuracy")
    ```

    ## Fix safety
    No automatic fix: which metric should pick the best checkpoint is the user's choice.

    ## References
      transformers `Trainer._determine_best_metric` (5.x), `Trainer._save_checkpoint` (4.x)
    - https://github.com/huggingface/transformers/issues/33420
    """

    code = "TL232"
    name = "metric-not-computed"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("metric_for_best_model",)
    summary = "metric_for_best_model that compute_metrics never returns"
    cases = [
        Case(SCRIPT.format(metric="f1", cm="compute_metrics")),
        Case(SCRIPT.format(metric="eval_f1", cm="compute_metrics")),
        Case(SCRIPT.format(metric="accuracy", cm="None"), note="no compute_metrics"),
        # must not flag
        Case(SCRIPT.format(metric="accuracy", cm="compute_metrics"), flags=False),
        Case(SCRIPT.format(metric="eval_accuracy", cm="compute_metrics"), flags=False),
        Case(SCRIPT.format(metric="loss", cm="None"), flags=False),
        Case(SCRIPT.format(metric="accuracy", cm="compute_metrics").replace('{"accuracy"', '{"eval_accuracy"'),
             flags=False, note="already prefixed"),
        Case(SCRIPT.format(metric="f1", cm="compute_metrics").replace(
            'return {"accuracy": (logits.argmax(-1) == labels).mean()}', "return metric.compute(predictions=logits)"),
            flags=False, note="keys not known"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for ctx in trainer_contexts(setup):
            pf, tc = ctx.pf, ctx.trainer
            if tc.class_name not in ("Trainer", "Seq2SeqTrainer") or not ctx.sites:
                continue
            if any(k.arg is None for k in tc.site.node.keywords):
                continue  # **kwargs may pass compute_metrics
            for site in ctx.sites:
                v = site.get("metric_for_best_model")
                if v is None or not isinstance(v.value, str) or (v.span or v.key_span) is None:
                    continue
                name = v.value[len("eval_"):] if v.value.startswith("eval_") else v.value
                if name in ALWAYS:
                    continue
                found = _metric_keys(pf, tc.keywords.get("compute_metrics"), tc.site.scope)
                if found is None:
                    continue
                keys, where = found
                if name in keys:
                    continue
                produced = ", ".join(sorted(f"eval_{k}" for k in keys | {"loss"}))
                yield self.diagnostic(
                    v.span or v.key_span,  # type: ignore[arg-type]
                    f"metric_for_best_model={v.value!r} is looked up as 'eval_{name}', which {where} does not "
                    f"produce (the evaluation reports {produced} and timings): the Trainer raises KeyError when "
                    f"it saves the first checkpoint after an evaluation",
                    related=[pf.span(tc.site.node.func).related("the Trainer it configures")])


def _metric_keys(pf: PythonFile, node: ast.expr | None, scope) -> tuple[set[str], str] | None:
    """(the keys compute_metrics returns, how to name it) when every return of the function is
    a dict display with string keys; ``(set(), ...)`` with no compute_metrics; None when not
    known."""
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return set(), "the Trainer, given no compute_metrics,"
    if not isinstance(node, ast.Name):
        return None
    b = pf.binding_of(node.id, scope)
    fn = b.node if b is not None else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    keys: set[str] = set()
    returns = 0
    stack: list[ast.AST] = list(fn.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue  # their returns are not compute_metrics'
        if isinstance(n, ast.Return):
            d = n.value
            if not isinstance(d, ast.Dict) or any(
                    k is None or not (isinstance(k, ast.Constant) and isinstance(k.value, str)) for k in d.keys):
                return None
            # the Trainer prefixes keys with "eval_" unless they already have it
            keys.update(k.value[len("eval_"):] if k.value.startswith("eval_") else k.value  # type: ignore[union-attr]
                        for k in d.keys)
            returns += 1
        stack.extend(ast.iter_child_nodes(n))
    if not returns:
        return None
    return keys, f"{node.id}()"
