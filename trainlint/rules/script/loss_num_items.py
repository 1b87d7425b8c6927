"""TL118 compute-loss-ignores-num-items."""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import (
    TrainerContext,
    base_trainer_class,
    class_method,
    local_trainer_class,
    trainer_contexts,
)
from trainlint.diagnostics import Diagnostic, Severity, Span
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

FuncNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def uses_num_items(fn: FuncNode) -> bool:
    """The function reads ``num_items_in_batch`` (or passes its ``**kwargs`` on)."""
    a = fn.args
    names = {"num_items_in_batch"}
    if a.kwarg is not None:
        names.add(a.kwarg.arg)
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names:
                return True
    return False


def _sets_scaled_flag(cls: ast.ClassDef) -> bool:
    for n in ast.walk(cls):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
        for t in targets:
            if isinstance(t, ast.Name) and t.id == "loss_is_scaled_for_ga":
                return True
            if isinstance(t, ast.Attribute) and t.attr in ("loss_is_scaled_for_ga", "model_accepts_loss_kwargs"):
                return True
    return False


def model_takes_loss_kwargs(ctx: TrainerContext) -> bool | None:
    """Whether the Trainer will see ``model_accepts_loss_kwargs``: True for a transformers model
    (their forwards take ``**kwargs``), a local module whose forward takes ``**kwargs``; False
    for a local module without; None when the model is not known."""
    flow = ctx.flow
    if flow is None or flow.unknown_origin:
        return None
    if flow.custom_classes:
        for cls in flow.custom_classes:
            fwd = class_method(ctx.pf, cls, "forward")
            if fwd is None:
                return None
            if fwd.args.kwarg is None:
                return False
        return True
    return True if flow.loads else None


class ComputeLossIgnoresNumItems(Rule):
    """
    ## What it does
    Flags a custom loss that never uses `num_items_in_batch` while
    `gradient_accumulation_steps` is known to be above 1 (transformers 4.46 and newer):

    * a `compute_loss` method of a `Trainer` / `Seq2SeqTrainer` subclass that neither reads a
      `num_items_in_batch` parameter nor passes its `**kwargs` on, when the model takes loss
      keyword arguments (a transformers model, or a local module whose `forward` takes
      `**kwargs`) and the class does not set `loss_is_scaled_for_ga`;
    * a `compute_loss_func=` function that ignores its `num_items_in_batch` argument.

    ## Why is this bad?
    Since 4.46 the Trainer counts the label tokens of the whole accumulated batch and passes the
    count as `num_items_in_batch`; when the model accepts loss kwargs, or a `compute_loss_func`
    is given, it treats the returned loss as already normalised by that count and does not
    divide it by the number of accumulation steps (5.24 `Trainer.training_step`). A loss that
    is a per-micro-batch mean is then summed over the accumulation steps: the gradients are
    `gradient_accumulation_steps` times too large, and the token weighting depends on how the
    batch is split.

    ## Example
    ```python
    class MyTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
            outputs = model(**inputs)
            loss = my_loss(outputs.logits, inputs["labels"])  # mean over this micro-batch
            return (loss, outputs) if return_outputs else loss

    args = TrainingArguments(output_dir="out", gradient_accumulation_steps=8)
    ```

    ## Use instead
    ```python
    class MyTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            outputs = model(**inputs)
            loss = my_loss(outputs.logits, inputs["labels"], reduction="sum")
            loss = loss / num_items_in_batch if num_items_in_batch is not None else loss / inputs["labels"].ne(-100).sum()
            return (loss, outputs) if return_outputs else loss
    ```

    ## Fix safety
    No automatic fix: normalising the loss changes the gradient scale, and how depends on the
    loss.

    ## References
    - https://github.com/huggingface/transformers/pull/34191 (and issues #37766, #35438, #35207)
    - https://github.com/huggingface/blog/pull/2414 ("Fixing Gradient Accumulation")
    - transformers 5.24 `Trainer.training_step` (`loss_is_scaled_for_ga`), `Trainer._get_num_items_in_batch`
    """

    code = "TL118"
    name = "compute-loss-ignores-num-items"
    severity = Severity.WARNING
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("gradient_accumulation_steps",)
    fix_safety = "none"
    summary = "a custom loss that ignores num_items_in_batch with gradient accumulation"

    cases = [
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            class WeightedTrainer(Trainer):
                def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
                    outputs = model(**inputs)
                    loss = outputs.loss * 2.0
                    return (loss, outputs) if return_outputs else loss
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            args = TrainingArguments(output_dir="o", gradient_accumulation_steps=8)
            WeightedTrainer(model=model, args=args).train()
            """,
        ),
        Case(
            """
            from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
            import torch.nn.functional as F
            def my_loss(outputs, labels, num_items_in_batch=None):
                return F.cross_entropy(outputs.logits, labels)
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
            args = TrainingArguments(output_dir="o", gradient_accumulation_steps=4)
            Trainer(model=model, args=args, compute_loss_func=my_loss).train()
            """,
            note="compute_loss_func that ignores its third argument",
        ),
        # must not flag
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            class WeightedTrainer(Trainer):
                def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
                    outputs = model(**inputs)
                    loss = outputs.logits.sum()
                    if num_items_in_batch is not None:
                        loss = loss / num_items_in_batch
                    return (loss, outputs) if return_outputs else loss
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            args = TrainingArguments(output_dir="o", gradient_accumulation_steps=8)
            WeightedTrainer(model=model, args=args).train()
            """,
            flags=False,
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            class WeightedTrainer(Trainer):
                def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
                    outputs = model(**inputs)
                    return (outputs.loss, outputs) if return_outputs else outputs.loss
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            args = TrainingArguments(output_dir="o", gradient_accumulation_steps=1)
            WeightedTrainer(model=model, args=args).train()
            """,
            flags=False, note="no gradient accumulation",
        ),
        Case(
            """
            from transformers import Trainer, TrainingArguments
            import torch.nn as nn
            class Net(nn.Module):
                def forward(self, x, labels=None):
                    return {"loss": self.lin(x).mean()}
            class MyTrainer(Trainer):
                def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
                    return model(**inputs)["loss"]
            args = TrainingArguments(output_dir="o", gradient_accumulation_steps=4)
            MyTrainer(model=Net(), args=args).train()
            """,
            flags=False, note="forward without **kwargs: the Trainer divides by the accumulation steps itself",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            class MyTrainer(Trainer):
                def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
                    return super().compute_loss(model, inputs, return_outputs, **kwargs)
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            args = TrainingArguments(output_dir="o", gradient_accumulation_steps=4)
            MyTrainer(model=model, args=args).train()
            """,
            flags=False, note="kwargs passed on",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            class WeightedTrainer(Trainer):
                def compute_loss(self, model, inputs, return_outputs=False):
                    return model(**inputs).loss
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            args = TrainingArguments(output_dir="o", gradient_accumulation_steps=8)
            WeightedTrainer(model=model, args=args).train()
            """,
            flags=False, options={"transformers-version": "4.45.2"}, note="before num_items_in_batch existed",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        if setup.transformers_tuple() < (4, 46):
            return
        for ctx in trainer_contexts(setup):
            pf, tc = ctx.pf, ctx.trainer
            if base_trainer_class(pf, tc) not in ("Trainer", "Seq2SeqTrainer"):
                continue
            ga = None
            for site in ctx.sites or []:
                v = site.get("gradient_accumulation_steps")
                if v is not None and isinstance(v.value, int) and not isinstance(v.value, bool) and v.value > 1:
                    ga = v
            if ga is None:
                continue
            cls = local_trainer_class(pf, tc)
            if cls is not None:
                fn = class_method(pf, cls, "compute_loss")
                if fn is not None and not uses_num_items(fn) and not _sets_scaled_flag(cls) \
                        and model_takes_loss_kwargs(ctx) is True:
                    yield self._report(pf, fn, ga, "compute_loss", tc.site.node)
                    continue
            expr = tc.keywords.get("compute_loss_func")
            fn2: FuncNode | None = None
            if isinstance(expr, ast.Lambda):
                fn2 = expr
            elif isinstance(expr, ast.Name):
                b = pf.binding_of(expr.id, tc.site.scope)
                if b is not None and b.kind == "def" and isinstance(b.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    fn2 = b.node
            if fn2 is not None and not uses_num_items(fn2):
                yield self._report(pf, fn2, ga, "compute_loss_func", tc.site.node)

    def _report(self, pf, fn: FuncNode, ga, what: str, trainer_call: ast.Call) -> Diagnostic:
        n = ga.value
        span = pf.span(fn) if isinstance(fn, ast.Lambda) else _def_line_span(pf, fn)
        return self.diagnostic(
            span,
            f"{what} never uses num_items_in_batch while gradient_accumulation_steps={n}: the Trainer treats the "
            f"returned loss as normalised over the whole accumulated batch and does not divide it by {n}, so a "
            f"per-micro-batch mean gives gradients {n}x too large; sum the loss and divide it by num_items_in_batch "
            f"when it is given",
            related=[ga.span.related("gradient accumulation is set here")] if ga.span is not None else [])


def _def_line_span(pf, fn: ast.FunctionDef | ast.AsyncFunctionDef):
    """The ``def name(...)`` header, not the whole body."""
    sp = pf.span(fn)
    end = fn.body[0] if fn.body else fn
    line = sp.line
    text = pf.lines[line - 1].rstrip("\n")
    return Span(path=sp.path, line=line, column=sp.column, end_line=line,
                end_column=len(text) + 1 if getattr(end, "lineno", line) > line else sp.end_column)
