"""TL230: label smoothing on a multi-label classifier."""

from __future__ import annotations

from typing import Iterable

from trainlint.analysis import trainer_contexts
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    is_num,
    remove_edit,
    behaviour_holds,
    target_text,
)
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

# The release that added the check that turns label smoothing off for multi-label
# classification: the behaviour marker "label_smoothing_off_for_multi_label" (trainer.py).
MARKER = "label_smoothing_off_for_multi_label"


def _first(marker: str) -> str:
    from trainlint.knowledge import behaviour

    return behaviour.first_version(marker) or "a later release"
MULTI_LABEL = "multi_label_classification"

SCRIPT = """
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=5{kw})
{extra}args = TrainingArguments(output_dir="o", label_smoothing_factor={lsf})
Trainer(model=model, args=args)
"""


def _script(lsf: str = "0.1", kw: str = ', problem_type="multi_label_classification"', extra: str = "") -> str:
    return SCRIPT.format(lsf=lsf, kw=kw, extra=extra)


class LabelSmoothingMultiLabel(Rule):
    """
    ## What it does
    Flags `label_smoothing_factor` other than 0 when the Trainer's model is a multi-label
    classifier: loaded with `problem_type="multi_label_classification"`, or given it with
    `model.config.problem_type = "multi_label_classification"` before the Trainer.

    ## Why is this bad?
    The Trainer's label smoother is a cross-entropy over one class per example; multi-label
    targets are multi-hot floats for a BCE loss. Since transformers 4.56 the Trainer notices and
    turns label smoothing off with a UserWarning, so the setting does nothing. Before 4.56 it is
    applied anyway: `LabelSmoother` gathers the log-probabilities with the float labels as
    indices, and the first training step fails with `RuntimeError: gather(): Expected dtype
    int64 for index`.

    ## Example
    ```python
    model = AutoModelForSequenceClassification.from_pretrained(
        "bert-base-uncased", num_labels=5, problem_type="multi_label_classification")
    args = TrainingArguments(output_dir="out", label_smoothing_factor=0.1)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out")  # smooth the multi-hot targets in the data instead
    ```

    ## Fix safety
    Safe: removing the argument changes nothing that trains (it is switched off, or training
    cannot start).

    ## References
    - transformers `Trainer.__init__` (the check, 4.56.0 and later),
      `trainer_pt_utils.LabelSmoother`
    """

    code = "TL230"
    name = "label-smoothing-multi-label"
    severity = Severity.INFO
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("label_smoothing_factor",)
    fix_safety = "safe"
    summary = "label_smoothing_factor on a multi-label classifier (ignored; fails before 4.56)"
    cases = [
        Case(_script(), fixed=_script().replace(", label_smoothing_factor=0.1", "").lstrip("\n")),
        Case(_script(kw="", extra='model.config.problem_type = "multi_label_classification"\n'),
             note="set on the config before the Trainer"),
        Case(_script(kw=", problem_type=PROBLEM", extra="").replace(
            "from transformers import", 'PROBLEM = "multi_label_classification"\nfrom transformers import'),
            note="through a constant"),
        Case(_script(), options={"transformers_version": "4.51.0"}, note="error before 4.56"),
        # must not flag
        Case(_script(kw=""), flags=False, note="single-label classification"),
        Case(_script(lsf="0.0"), flags=False),
        Case(_script(kw=', problem_type="single_label_classification"'), flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        disabled = behaviour_holds(setup, MARKER)
        for ctx in trainer_contexts(setup):
            flow = ctx.flow
            if flow is None or not ctx.sites:
                continue
            where = _multi_label(ctx.pf, flow)
            if where is None:
                continue
            for site in ctx.sites:
                v = site.get("label_smoothing_factor")
                if v is None or not is_num(v.value) or v.value == 0:
                    continue
                span = v.key_span or v.span
                if span is None:
                    continue
                edit = remove_edit(setup, site, v)
                consequence = (f"the Trainer turns label smoothing off with a warning ({target_text(setup)})"
                               if disabled else
                               f"the first training step fails: the label smoother indexes with the float "
                               f"multi-hot labels (RuntimeError in gather; {target_text(setup)}, the Trainer "
                               f"only checks from {_first(MARKER)})")
                yield self.diagnostic(
                    span, f"label_smoothing_factor={v.value!r} on a multi-label classifier ({where}): {consequence}; "
                          f"remove it",
                    edits=[edit] if edit else None, fix_message="remove label_smoothing_factor",
                    related=[ctx.pf.span(flow.trainer.site.node).related("the Trainer")],
                    severity=Severity.INFO if disabled else Severity.ERROR)


def _multi_label(pf, flow) -> str | None:
    """How the model is made multi-label, or None."""
    for ld in flow.loads:
        v = ld.kw("problem_type")
        if v is not None and v.value == MULTI_LABEL:
            return "problem_type in from_pretrained"
    for _stmt, target_name, value in flow.attr_sets:
        if target_name.endswith("config.problem_type") \
                and pf.resolve(value, flow.trainer.site.scope).value == MULTI_LABEL:
            return "model.config.problem_type"
    return None
