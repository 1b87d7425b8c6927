"""TL122 peft-loss-metric-without-label-names."""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import (
    _call_through,
    _dotted,
    base_trainer_class,
    keyword_nodes,
    site_is_closed,
    trainer_contexts,
)
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.fixing.python_edits import add_keyword
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

# peft's MODEL_TYPE_TO_PEFT_MODEL_MAPPING: these task types give a class whose forward takes labels
LABELLED_TASKS = {"SEQ_CLS", "SEQ_2_SEQ_LM", "CAUSAL_LM", "TOKEN_CLS", "QUESTION_ANS"}
FIXED_IN = (4, 55)


def _task_type(pf, call: ast.Call, scope) -> str | None:
    """The task type of a peft config call: "" when not given (or None), the name when
    resolved, None when not known."""
    nodes = keyword_nodes(pf, call, scope)
    if any(k.arg is None for k in call.keywords) and "task_type" not in nodes:
        if pf.resolve_dict(next(k.value for k in call.keywords if k.arg is None), scope) is None:
            return None
    node = nodes.get("task_type")
    if node is None:
        return ""
    if isinstance(node, ast.Attribute):
        return node.attr
    v = pf.resolve(node, scope).value
    if v is None:
        return ""
    return v.upper() if isinstance(v, str) else None


class PeftLossMetricWithoutLabelNames(Rule):
    """
    ## What it does
    Flags, for transformers before 4.55, a `get_peft_model(model, config)` model trained by
    `Trainer` / `Seq2SeqTrainer` that selects the best checkpoint by the evaluation loss
    (`metric_for_best_model="loss"` / `"eval_loss"`, or unset with
    `load_best_model_at_end=True`) without `label_names`, when the peft config provably has no
    task type (or `FEATURE_EXTRACTION`). With a task type (`CAUSAL_LM`, `SEQ_CLS`, ...) the
    peft class's forward takes `labels` and nothing goes wrong; adapters loaded with
    `PeftModel.from_pretrained` take their task type from the saved config, which the rule does
    not read.

    transformers 4.55 and newer read the label names from the model inside the peft wrapper
    (`unwrap_peft_model`), so the rule is silent for them (checked in the 4.55.0, 4.57.1 and
    5.24 sources).

    ## Why is this bad?
    Before 4.55 the Trainer takes its label names from the forward signature of the model it
    is given. Without a task type, `get_peft_model` returns a plain `PeftModel`, whose forward is
    `forward(*args, **kwargs)`: no label names, so evaluation computes no loss and
    `eval_loss` is missing. Saving the first checkpoint then fails with
    "KeyError: The `metric_for_best_model` training argument is set to 'eval_loss', which is
    not found in the evaluation metrics".

    ## Example
    ```python
    model = get_peft_model(AutoModelForCausalLM.from_pretrained("gpt2"), LoraConfig(r=8))
    args = TrainingArguments(output_dir="out", eval_strategy="steps", load_best_model_at_end=True)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", eval_strategy="steps", load_best_model_at_end=True,
                             label_names=["labels"])
    ```

    ## Fix safety
    Safe: transformers' collators and models name the labels `labels`; the fix adds
    `label_names=["labels"]` to the TrainingArguments call.

    ## References
    - transformers 4.54.1 `Trainer.__init__` (`find_labels(self.model.__class__)`); 4.55.0 (`find_labels(model_to_inspect.__class__)`)
    - peft `get_peft_model` (no task type: `PeftModel`, `forward(*args, **kwargs)`)
    - https://github.com/huggingface/transformers/issues/33420, #38130, #40217
    """

    code = "TL122"
    name = "peft-loss-metric-without-label-names"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fix_safety = "safe"
    summary = "best-model selection by eval_loss on a task-less PEFT model without label_names (before 4.55)"

    cases = [
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import LoraConfig, get_peft_model
            model = get_peft_model(AutoModelForCausalLM.from_pretrained("gpt2"), LoraConfig(r=8))
            args = TrainingArguments(output_dir="o", eval_strategy="steps", load_best_model_at_end=True)
            Trainer(model=model, args=args)
            """,
            options={"transformers-version": "4.46.0"},
            fixed=(
                "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                "from peft import LoraConfig, get_peft_model\n"
                'model = get_peft_model(AutoModelForCausalLM.from_pretrained("gpt2"), LoraConfig(r=8))\n'
                'args = TrainingArguments(output_dir="o", eval_strategy="steps", load_best_model_at_end=True, '
                'label_names=["labels"])\n'
                "Trainer(model=model, args=args)\n"
            ),
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import LoraConfig, get_peft_model
            lora = LoraConfig(r=8, lora_alpha=16, task_type=None)
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            model = get_peft_model(model, lora)
            args = TrainingArguments(output_dir="o", eval_strategy="epoch", metric_for_best_model="eval_loss")
            Trainer(model=model, args=args)
            """,
            options={"transformers-version": "4.54.1"},
        ),
        # must not flag
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import LoraConfig, get_peft_model
            model = get_peft_model(AutoModelForCausalLM.from_pretrained("gpt2"), LoraConfig(r=8))
            args = TrainingArguments(output_dir="o", eval_strategy="steps", load_best_model_at_end=True)
            Trainer(model=model, args=args)
            """,
            flags=False, options={"transformers-version": "4.57.1"}, note="4.55+ unwraps the peft model",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import LoraConfig, TaskType, get_peft_model
            model = get_peft_model(AutoModelForCausalLM.from_pretrained("gpt2"), LoraConfig(r=8, task_type=TaskType.CAUSAL_LM))
            args = TrainingArguments(output_dir="o", eval_strategy="steps", load_best_model_at_end=True)
            Trainer(model=model, args=args)
            """,
            flags=False, options={"transformers-version": "4.46.0"}, note="PeftModelForCausalLM.forward takes labels",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import LoraConfig, get_peft_model
            model = get_peft_model(AutoModelForCausalLM.from_pretrained("gpt2"), LoraConfig(r=8))
            args = TrainingArguments(output_dir="o", eval_strategy="steps", load_best_model_at_end=True,
                                     label_names=["labels"])
            Trainer(model=model, args=args)
            """,
            flags=False, options={"transformers-version": "4.46.0"},
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import LoraConfig, get_peft_model
            model = get_peft_model(AutoModelForCausalLM.from_pretrained("gpt2"), LoraConfig(r=8))
            args = TrainingArguments(output_dir="o", eval_strategy="steps", load_best_model_at_end=True,
                                     metric_for_best_model="accuracy")
            Trainer(model=model, args=args, compute_metrics=acc)
            """,
            flags=False, options={"transformers-version": "4.46.0"}, note="not the loss",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        if setup.transformers_tuple() >= FIXED_IN:
            return
        for ctx in trainer_contexts(setup):
            pf, tc, flow = ctx.pf, ctx.trainer, ctx.flow
            if flow is None or base_trainer_class(pf, tc) not in ("Trainer", "Seq2SeqTrainer") or not ctx.sites:
                continue
            peft = flow.step("peft")
            if len(peft) != 1 or peft[0].detail.split(".")[-1] != "get_peft_model":
                continue
            step = peft[0]
            cfg = step.call.args[1] if len(step.call.args) > 1 else next(
                (k.value for k in step.call.keywords if k.arg == "peft_config"), None)
            if cfg is None:
                continue
            found = _call_through(pf, cfg, step.scope)
            if found is None or not _dotted(found[0].func).endswith("Config"):
                continue
            task = _task_type(pf, found[0], found[1])
            if task is None or task in LABELLED_TASKS:
                continue
            for site in ctx.sites:
                if not site_is_closed(pf, site) or site.get("label_names") is not None:
                    continue
                metric = site.get("metric_for_best_model")
                best = site.get("load_best_model_at_end")
                if metric is not None:
                    if metric.value not in ("loss", "eval_loss"):
                        continue
                    strategy = site.get("eval_strategy") or site.get("evaluation_strategy")
                    evaluates = strategy is not None and isinstance(strategy.value, str) and strategy.value != "no"
                    if not evaluates and not (best is not None and best.value is True):
                        continue  # no evaluation: no metrics to look the loss up in
                    anchor = metric
                elif best is not None and best.value is True:
                    anchor = best
                else:
                    continue
                edits = [add_keyword(pf, site.call.site.node, 'label_names=["labels"]')] if site.call else None
                yield self.diagnostic(
                    anchor.key_span or anchor.span,  # type: ignore[arg-type]
                    f"the best checkpoint is chosen by eval_loss, but the model is a PEFT model without a task type "
                    f"and label_names is not set: transformers before 4.55 reads the label names from "
                    f"PeftModel.forward(*args, **kwargs), finds none, computes no evaluation loss, and the first "
                    f"checkpoint save raises KeyError 'eval_loss'; set label_names=[\"labels\"] (or a task_type)",
                    edits=edits, fix_message='add label_names=["labels"]',
                    related=[pf.span(step.call).related("the PEFT model is built here")])
