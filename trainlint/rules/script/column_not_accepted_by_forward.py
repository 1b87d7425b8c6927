"""TL137 column-not-accepted-by-forward: a dataset column the model's forward does not take, kept by remove_unused_columns=False"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import base_trainer_class, flow_for, trainer_sites
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import effective, target, target_text
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

HEAD = ("from datasets import Dataset\n"
        "from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments\n"
        "model = AutoModelForSequenceClassification.from_pretrained('bert-base-uncased')\n")
V4 = {"transformers_version": "4.57.1"}


def _columns(pf, expr, scope, depth: int = 0) -> tuple[list[str], ast.AST] | None:
    """The column names of ``Dataset.from_dict({...})`` (through a name bound once)."""
    if depth > 4:
        return None
    if isinstance(expr, ast.Name):
        b = pf.binding_of(expr.id, scope)
        if b is None or b.value is None or b.kind not in ("assign", "annassign"):
            return None
        return _columns(pf, b.value, scope, depth + 1)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "from_dict" \
            and (pf.qualname(expr.func.value) or "").startswith("datasets") and expr.args:
        entries = pf.resolve_dict(expr.args[0], scope)
        if entries is None:
            return None
        return [k for k, *_ in entries], expr
    return None


class ColumnNotAcceptedByForward(Rule):
    """
    ## What it does
    Flags a plain `Trainer` with `remove_unused_columns=False` and the default data collator
    whose `train_dataset` is built with `Dataset.from_dict({...})` with a column that the
    model class's `forward` does not accept, when the model is loaded from a checkpoint the model
    table knows and that `forward` takes no `**kwargs` (transformers 4.x; the signatures come
    from data generated from the released wheels).

    ## Why is this bad?
    With `remove_unused_columns=False` every column reaches `model(**batch)`: the first step
    raises `TypeError: forward() got an unexpected keyword argument 'text'`, after the model is
    loaded and the data prepared.

    ## Example
    ```python
    ds = Dataset.from_dict({"input_ids": ids, "labels": y, "text": texts})
    Trainer(model=model, args=TrainingArguments(output_dir="o", remove_unused_columns=False), train_dataset=ds)
    ```

    ## Use instead
    ```python
    ds = ds.remove_columns(["text"])   # or leave remove_unused_columns at True
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `Trainer._remove_unused_columns` and the model's `forward` signature
    """

    code = "TL137"
    name = "column-not-accepted-by-forward"
    severity = Severity.ERROR
    summary = "a dataset column the model's forward does not take, kept by remove_unused_columns=False"
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("from_dict",)
    cases = [
        Case(HEAD + "ds = Dataset.from_dict({'input_ids': [[1]], 'labels': [0], 'text': ['a']})\n"
                    "Trainer(model=model, args=TrainingArguments(output_dir='o', remove_unused_columns=False), "
                    "train_dataset=ds)\n", options=V4),
        Case(HEAD + "ds = Dataset.from_dict({'input_ids': [[1]], 'labels': [0], 'text': ['a']})\n"
                    "Trainer(model=model, args=TrainingArguments(output_dir='o'), train_dataset=ds)\n",
             options=V4, flags=False, note="the Trainer drops the column"),
        Case(HEAD + "ds = Dataset.from_dict({'input_ids': [[1]], 'labels': [0], 'attention_mask': [[1]]})\n"
                    "Trainer(model=model, args=TrainingArguments(output_dir='o', remove_unused_columns=False), "
                    "train_dataset=ds)\n", options=V4, flags=False),
        Case(HEAD + "ds = Dataset.from_dict({'input_ids': [[1]], 'labels': [0], 'text': ['a']})\n"
                    "Trainer(model=model, args=TrainingArguments(output_dir='o', remove_unused_columns=False), "
                    "train_dataset=ds, data_collator=collate)\n", options=V4, flags=False, note="a custom collator"),
        Case(HEAD + "ds = Dataset.from_dict({'input_ids': [[1]], 'labels': [0], 'text': ['a']})\n"
                    "Trainer(model=model, args=TrainingArguments(output_dir='o', remove_unused_columns=False), "
                    "train_dataset=ds)\n", flags=False, note="5.x forward takes **kwargs"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf in setup.scripts:
            if "from_dict" not in pf.text or "remove_unused_columns" not in pf.text:
                continue  # the cheap guard: no model data read otherwise
            for tc in pf.trainer_calls:
                if base_trainer_class(pf, tc) != "Trainer" or "data_collator" in tc.keywords:
                    continue
                sites = trainer_sites(setup, pf, tc) or []
                if not sites or any(effective(setup, s, "remove_unused_columns") is not False for s in sites):
                    continue
                found = _columns(pf, tc.keywords.get("train_dataset"), tc.site.scope)
                flow = flow_for(pf, tc)
                if found is None or flow is None or len(flow.loads) != 1:
                    continue
                fwd = self._forward(flow.loads[0], target(setup)[0])
                if fwd is None or fwd.varkw:
                    continue
                bad = [c for c in found[0] if not fwd.accepts(c)]
                if not bad:
                    continue
                yield self.diagnostic(pf.span(found[1]),
                                      f"columns {bad} reach {fwd.cls}.forward, which does not take them "
                                      f"(remove_unused_columns=False keeps every column): the first step raises "
                                      f"TypeError ({target_text(setup)}); remove the columns or keep "
                                      "remove_unused_columns=True")

    @staticmethod
    def _forward(ld, version: str):
        from trainlint.knowledge import model_api
        from trainlint.knowledge.models import lookup_model

        info = lookup_model(ld.model_id_text() or "")
        mt = getattr(info, "model_type", None) if info is not None else None
        if not mt:
            return None
        if ld.cls.startswith("Auto"):
            suffix = ld.cls[len("AutoModel"):]
            if not suffix:
                return None
            names = [c for c in model_api.forward_classes() if c.endswith(suffix)]
        else:
            names = [ld.cls]
        for c in names:
            f = model_api.forward(c, version)
            if f is not None and f.model_type.replace("-", "_") == mt.replace("-", "_"):
                return f
        return None
