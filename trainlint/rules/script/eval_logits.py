"""TL116 compute-metrics-full-logits."""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import (
    TrainerContext,
    base_trainer_class,
    class_method,
    local_trainer_class,
    site_is_closed,
    trainer_contexts,
)
from trainlint.diagnostics import Diagnostic, Edit, Severity
from trainlint.fixing.python_edits import add_keyword
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup
from trainlint.sources.python import PythonFile

LM_HEADS = ("CausalLM", "MaskedLM", "Seq2SeqLM", "LMHead", "ConditionalGeneration", "ImageTextToText")
SEQ2SEQ_HEADS = ("Seq2SeqLM", "ConditionalGeneration")
PREPROCESS = "preprocess_logits_for_metrics=lambda logits, labels: logits.argmax(-1)"


def lm_kind(ctx: TrainerContext) -> str | None:
    """The LM head class every path of the model comes from, when all of them are one."""
    flow = ctx.flow
    if flow is None or flow.unknown_origin or flow.custom_classes or not flow.loads:
        return None
    kinds = {ld.cls for ld in flow.loads}
    if not all(any(h in k for h in LM_HEADS) for k in kinds):
        return None
    return sorted(kinds)[0]


def _is_argmax_last(node: ast.AST) -> ast.expr | None:
    """The array of ``np.argmax(x, axis=-1)`` / ``x.argmax(-1)`` / ``x.argmax(axis=-1)``
    (axis 2 counts: LM logits are 3-D), else None."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Attribute, ast.Name)):
        return None
    fname = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
    if fname != "argmax":
        return None
    args = list(node.args)
    kws = {k.arg: k.value for k in node.keywords}
    if None in kws:
        return None
    if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
            and node.func.value.id in ("np", "numpy", "torch"):
        if not args:
            return None
        array, rest = args[0], args[1:]
    elif isinstance(node.func, ast.Attribute):
        array, rest = node.func.value, args
    else:
        return None
    axis = rest[0] if rest else kws.get("axis", kws.get("dim"))
    if len(rest) > 1 or set(kws) - {"axis", "dim"}:
        return None
    if axis is None:
        return None
    val = axis.value if isinstance(axis, ast.Constant) else None
    if isinstance(axis, ast.UnaryOp) and isinstance(axis.op, ast.USub) and isinstance(axis.operand, ast.Constant):
        val = -axis.operand.value
    return array if val in (-1, 2) else None


def _same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a) == ast.dump(b)


def argmax_fix(pf: PythonFile, ctx: TrainerContext) -> list[Edit] | None:
    """Edits that move the argmax from ``compute_metrics`` into ``preprocess_logits_for_metrics``,
    when ``compute_metrics`` is a function of the file used only here whose predictions are
    used only through ``argmax`` over the last axis."""
    expr = ctx.trainer.keywords.get("compute_metrics")
    if not isinstance(expr, ast.Name) or pf.name_uses(expr.id) != 1:
        return None
    b = pf.binding_of(expr.id, ctx.trainer.site.scope)
    if b is None or b.kind != "def" or not isinstance(b.node, ast.FunctionDef):
        return None
    fn = b.node
    if len(fn.args.args) != 1 or fn.args.vararg or fn.args.kwarg:
        return None
    param = fn.args.args[0].arg
    # the predictions: `preds, labels = p`, `preds = p.predictions`, `preds = p[0]`, or used in place
    pred_exprs: list[ast.expr] = [
        ast.Attribute(value=ast.Name(id=param, ctx=ast.Load()), attr="predictions", ctx=ast.Load()),
        ast.Subscript(value=ast.Name(id=param, ctx=ast.Load()), slice=ast.Constant(value=0), ctx=ast.Load()),
    ]
    pred_name = None
    stores: dict[str, int] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
    for stmt in fn.body:
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        t, v = stmt.targets[0], stmt.value
        if isinstance(t, ast.Tuple) and len(t.elts) == 2 and isinstance(v, ast.Name) and v.id == param \
                and isinstance(t.elts[0], ast.Name):
            pred_name = t.elts[0].id
        elif isinstance(t, ast.Name) and any(_same(v, p) for p in pred_exprs):
            pred_name = t.id
    if pred_name is not None:
        if stores.get(pred_name, 0) != 1:
            return None
        pred_exprs.append(ast.Name(id=pred_name, ctx=ast.Load()))
    # every use of the predictions is the array of a last-axis argmax
    argmaxes: list[tuple[ast.Call, ast.expr]] = []
    inside: set[int] = set()
    for n in ast.walk(fn):
        arr = _is_argmax_last(n)
        if arr is not None and any(_same(arr, p) for p in pred_exprs):
            argmaxes.append((n, arr))  # type: ignore[arg-type]
            inside.update(id(x) for x in ast.walk(arr))
    if not argmaxes:
        return None
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in inside:
            if pred_name is not None and n.id == pred_name:
                return None
            if n.id == param and not _param_use_ok(fn, n, pred_name):
                return None
    edits = [pf.span(call).edit(pf.source_of(arr)) for call, arr in argmaxes]
    edits.append(add_keyword(pf, ctx.trainer.site.node, PREPROCESS))
    return edits


def _param_use_ok(fn: ast.FunctionDef, use: ast.Name, pred_name: str | None) -> bool:
    """A use of the EvalPrediction parameter that does not read the predictions: the tuple
    unpack that names them, or ``p.label_ids`` / ``p[1]``."""
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and n.value is use and pred_name is not None:
            return True
        if isinstance(n, ast.Attribute) and n.value is use and n.attr in ("label_ids", "inputs"):
            return True
        if isinstance(n, ast.Subscript) and n.value is use and isinstance(n.slice, ast.Constant) and n.slice.value == 1:
            return True
    return False


class ComputeMetricsFullLogits(Rule):
    """
    ## What it does
    Flags a `Trainer` / `Seq2SeqTrainer` given `compute_metrics` for a language model whose
    logits span the vocabulary (`*ForCausalLM`, `*ForMaskedLM`, `*ForSeq2SeqLM`,
    `*ForConditionalGeneration`, `*LMHeadModel`) with neither `preprocess_logits_for_metrics`
    nor `eval_accumulation_steps`. A `Seq2SeqTrainer` with `predict_with_generate=True`
    collects generated ids, not logits, and is not flagged; nor are models the rule cannot
    trace to an LM head (local modules, models from other functions' parameters).

    ## Why is this bad?
    The Trainer gathers the logits of every evaluation batch, `[examples, sequence, vocab]`,
    and keeps them on the GPU until the end of evaluation (or every `eval_accumulation_steps`
    steps): 1,000 examples of 512 tokens with a 128k vocabulary are 250 GB in fp32. Evaluation
    runs out of memory, although training fits.

    ## Example
    ```python
    def compute_metrics(eval_pred):
        logits, labels = eval_pred
        preds = np.argmax(logits, axis=-1)
        return metric.compute(predictions=preds.flatten(), references=labels.flatten())

    Trainer(model=AutoModelForCausalLM.from_pretrained("gpt2"), args=args, compute_metrics=compute_metrics)
    ```

    ## Use instead
    ```python
    def compute_metrics(eval_pred):
        logits, labels = eval_pred
        preds = logits  # already the argmax
        return metric.compute(predictions=preds.flatten(), references=labels.flatten())

    Trainer(model=model, args=args, compute_metrics=compute_metrics,
            preprocess_logits_for_metrics=lambda logits, labels: logits.argmax(-1))
    ```

    ## Fix safety
    Unsafe, offered only when `compute_metrics` is a function of the file, used by this Trainer
    only, and reads the predictions only through an argmax over the last axis
    (`np.argmax(logits, axis=-1)`, `logits.argmax(-1)`): the fix adds
    `preprocess_logits_for_metrics=lambda logits, labels: logits.argmax(-1)` and replaces that
    argmax by its argument. The metrics see the same token ids at every real position, but not
    at the padding the Trainer adds when it concatenates evaluation batches of different
    lengths (`padding_index=-100`): there the original argmax of padded logits was `0`, the
    fixed prediction is `-100`. A metric that drops `labels == -100` positions gives the same
    value; one that does not (or decodes the predictions) changes. Otherwise there is no fix
    (set `eval_accumulation_steps`, or reduce the logits yourself).

    ## References
    - https://github.com/huggingface/transformers/issues/12878, #18947; #15466 (added `preprocess_logits_for_metrics`)
    - https://github.com/hiyouga/LlamaFactory/issues/1595
    - transformers `examples/pytorch/language-modeling/run_clm.py` (`preprocess_logits_for_metrics`)
    """

    code = "TL116"
    name = "compute-metrics-full-logits"
    severity = Severity.WARNING
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("compute_metrics",)
    fix_safety = "unsafe"
    summary = "compute_metrics on a language model's full logits without preprocess_logits_for_metrics"

    cases = [
        Case(
            """
            import numpy as np
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            def compute_metrics(eval_pred):
                logits, labels = eval_pred
                preds = np.argmax(logits, axis=-1)
                return {"acc": float((preds == labels).mean())}
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            args = TrainingArguments(output_dir="o", eval_strategy="epoch")
            Trainer(model=model, args=args, compute_metrics=compute_metrics)
            """,
            unsafe=True,
            fixed=(
                "import numpy as np\n"
                "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                "def compute_metrics(eval_pred):\n"
                "    logits, labels = eval_pred\n"
                "    preds = logits\n"
                '    return {"acc": float((preds == labels).mean())}\n'
                'model = AutoModelForCausalLM.from_pretrained("gpt2")\n'
                'args = TrainingArguments(output_dir="o", eval_strategy="epoch")\n'
                "Trainer(model=model, args=args, compute_metrics=compute_metrics, "
                "preprocess_logits_for_metrics=lambda logits, labels: logits.argmax(-1))\n"
            ),
        ),
        Case(
            """
            from transformers import AutoModelForMaskedLM, Trainer, TrainingArguments
            from peft import get_peft_model
            def compute_metrics(p):
                preds = p.predictions
                if isinstance(preds, tuple):
                    preds = preds[0]
                return {"acc": (preds.argmax(-1) == p.label_ids).mean()}
            model = get_peft_model(AutoModelForMaskedLM.from_pretrained("roberta-base"), cfg)
            Trainer(model=model, args=TrainingArguments(output_dir="o"), compute_metrics=compute_metrics)
            """,
            note="no fix: the predictions are also used outside the argmax",
        ),
        Case(
            """
            from transformers import AutoModelForSeq2SeqLM, Seq2SeqTrainer, Seq2SeqTrainingArguments
            model = AutoModelForSeq2SeqLM.from_pretrained("t5-small")
            args = Seq2SeqTrainingArguments(output_dir="o", predict_with_generate=False)
            Seq2SeqTrainer(model=model, args=args, compute_metrics=rouge_metrics)
            """,
            note="seq2seq without generation: logits",
        ),
        # must not flag
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            args = TrainingArguments(output_dir="o", eval_accumulation_steps=8)
            Trainer(model=model, args=args, compute_metrics=compute_metrics)
            """,
            flags=False,
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            Trainer(model=model, args=TrainingArguments(output_dir="o"), compute_metrics=compute_metrics,
                    preprocess_logits_for_metrics=lambda l, _: l.argmax(-1))
            """,
            flags=False,
        ),
        Case(
            """
            from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
            Trainer(model=model, args=TrainingArguments(output_dir="o"), compute_metrics=compute_metrics)
            """,
            flags=False, note="classification logits are small",
        ),
        Case(
            """
            from transformers import AutoModelForSeq2SeqLM, Seq2SeqTrainer, Seq2SeqTrainingArguments
            model = AutoModelForSeq2SeqLM.from_pretrained("t5-small")
            args = Seq2SeqTrainingArguments(output_dir="o", predict_with_generate=True)
            Seq2SeqTrainer(model=model, args=args, compute_metrics=rouge_metrics)
            """,
            flags=False, note="generated ids, not logits",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            Trainer(model=model, args=TrainingArguments(output_dir="o"))
            """,
            flags=False, note="no compute_metrics",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for ctx in trainer_contexts(setup):
            pf, tc = ctx.pf, ctx.trainer
            cm = tc.keywords.get("compute_metrics")
            if cm is None or (isinstance(cm, ast.Constant) and cm.value is None):
                continue
            if "preprocess_logits_for_metrics" in tc.keywords or any(k.arg is None for k in tc.site.node.keywords):
                continue
            if base_trainer_class(pf, tc) not in ("Trainer", "Seq2SeqTrainer"):
                continue
            cls = local_trainer_class(pf, tc)
            if cls is not None and any(class_method(pf, cls, m) is not None
                                       for m in ("prediction_step", "evaluation_loop", "evaluate", "__init__")):
                continue
            kind = lm_kind(ctx)
            if kind is None or ctx.sites is None:
                continue
            if any(not site_is_closed(pf, s) or s.get("eval_accumulation_steps") is not None for s in ctx.sites):
                continue
            if any(h in kind for h in SEQ2SEQ_HEADS) and base_trainer_class(pf, tc) == "Seq2SeqTrainer":
                gen = [s.get("predict_with_generate") for s in ctx.sites]
                if any(g is not None and g.value is not False for g in gen):
                    continue  # generating (or not known)
            edits = argmax_fix(pf, ctx)
            yield self.diagnostic(
                pf.span(cm),
                f"compute_metrics on a {kind} model without preprocess_logits_for_metrics or eval_accumulation_steps: "
                f"the Trainer keeps the logits of the whole evaluation set ([examples, sequence, vocab]) on the GPU "
                f"until it ends and runs out of memory; reduce them with preprocess_logits_for_metrics "
                f"(logits.argmax(-1)) or set eval_accumulation_steps",
                edits=edits, fix_message="move the argmax into preprocess_logits_for_metrics", applicability="unsafe")
