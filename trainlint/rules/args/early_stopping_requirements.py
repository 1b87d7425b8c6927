"""TL242 early-stopping-requirements: EarlyStoppingCallback without evaluation, load_best_model_at_end or a metric"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import trainer_sites
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._spellings import HF_PARSER_SCRIPT
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import effective, strategy, target, target_text
from trainlint.rules.args._args_checks_common import _related
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup
from trainlint.sources.python import PythonFile

HEAD = "from transformers import EarlyStoppingCallback, Trainer, TrainingArguments\n"
CB = "callbacks=[EarlyStoppingCallback(early_stopping_patience=3)]"


def _is_es(pf: PythonFile, func: ast.AST) -> bool:
    qn = pf.qualname(func) or ""
    if qn.startswith("transformers") and qn.endswith(".EarlyStoppingCallback"):
        return True
    return isinstance(func, ast.Name) and func.id == "EarlyStoppingCallback" and func.id not in pf.imports \
        and func.id not in pf.module_scope.bindings


def _es_calls(pf: PythonFile) -> list[ast.Call]:
    if "EarlyStoppingCallback" not in pf.text:  # every spelling names it (an import alias too)
        return []
    return [cs.node for cs in pf.calls if _is_es(pf, cs.node.func)]


class EarlyStoppingRequirements(Rule):
    """
    ## What it does
    Flags an `EarlyStoppingCallback` given to a Trainer (`callbacks=[...]` or
    `trainer.add_callback(...)`) whose TrainingArguments have `eval_strategy="no"`, or neither
    `load_best_model_at_end=True` nor `metric_for_best_model`, or (a warning) a metric but no
    `load_best_model_at_end`.

    ## Why is this bad?
    The callback checks its arguments only when training starts, after the model is loaded:
    `assert args.eval_strategy != IntervalStrategy.NO` and `assert args.metric_for_best_model is
    not None` (the metric defaults to the loss only with `load_best_model_at_end=True`). Without
    `load_best_model_at_end`, it stops early but the model at the end is the last one, not the
    best: releases up to 4.48 assert it too, later ones only warn (the version range comes from
    data generated from the released wheels).

    ## Example
    ```python
    args = TrainingArguments(output_dir="o", eval_strategy="epoch")
    Trainer(model=m, args=args, callbacks=[EarlyStoppingCallback(early_stopping_patience=3)])
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="o", eval_strategy="epoch", save_strategy="epoch",
                             load_best_model_at_end=True, metric_for_best_model="eval_loss")
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `trainer_callback.py` (`EarlyStoppingCallback.on_train_begin`)
    - https://github.com/axolotl-ai-cloud/axolotl/issues/1286
    """

    code = "TL242"
    name = "early-stopping-requirements"
    severity = Severity.ERROR
    summary = "EarlyStoppingCallback without evaluation, load_best_model_at_end or a metric"
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("EarlyStoppingCallback",)
    cases = [
        Case(HEAD + f"args = TrainingArguments(output_dir='o')\nt = Trainer(model=m, args=args, {CB})\n"),
        Case(HEAD + "args = TrainingArguments(output_dir='o', eval_strategy='epoch')\n"
                    "t = Trainer(model=m, args=args)\nt.add_callback(EarlyStoppingCallback())\n",
             note="no metric: assert"),
        Case(HEAD + "args = TrainingArguments(output_dir='o', eval_strategy='epoch', metric_for_best_model='acc')\n"
                    f"t = Trainer(model=m, args=args, {CB})\n", note="warning: the best model is not loaded"),
        Case(HEAD + "args = TrainingArguments(output_dir='o', eval_strategy='epoch', metric_for_best_model='acc')\n"
                    f"t = Trainer(model=m, args=args, {CB})\n", options={"transformers_version": "4.45.0"},
             note="an assert on 4.45"),
        Case(files={"run.sh": "python train.py --output_dir o --eval_strategy no\n",
                    "train.py": HF_PARSER_SCRIPT + "from transformers import EarlyStoppingCallback, Trainer\n"
                                f"t = Trainer(model=m, args=args, {CB})\n"}),
        Case(HEAD + "args = TrainingArguments(output_dir='o', eval_strategy='epoch', save_strategy='epoch', "
                    f"load_best_model_at_end=True)\nt = Trainer(model=m, args=args, {CB})\n", flags=False),
        Case(HEAD + "args = TrainingArguments(output_dir='o')\nt = Trainer(model=m, args=args)\n", flags=False),
        Case(HEAD + "args = TrainingArguments(output_dir='o', **cfg)\nt = Trainer(model=m, args=args, "
                    f"{CB})\n", flags=False, note="the arguments are not known"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf in setup.scripts:
            es = _es_calls(pf)
            if not es:
                continue
            for tc in pf.trainer_calls:
                if "callbacks" not in tc.keywords and not any(
                        isinstance(cs.node.func, ast.Attribute) and cs.node.func.attr == "add_callback"
                        for cs in pf.calls):
                    continue
                sites = trainer_sites(setup, pf, tc)
                span = pf.span(es[0])
                for site in sites or []:
                    ev = strategy(effective(setup, site, "eval_strategy"))
                    lb = effective(setup, site, "load_best_model_at_end")
                    metric = effective(setup, site, "metric_for_best_model")
                    if ev == "no":
                        yield self.diagnostic(span, 'EarlyStoppingCallback with eval_strategy="no": the callback '
                                              "asserts an evaluation strategy when training starts (it stops on "
                                              'evaluation metrics); set eval_strategy="steps" or "epoch"',
                                              related=_related(site, "eval_strategy"))
                    elif lb is False and metric is None:
                        yield self.diagnostic(span, "EarlyStoppingCallback without metric_for_best_model or "
                                              "load_best_model_at_end=True: the callback asserts a metric when training "
                                              "starts; set load_best_model_at_end=True (metric: the loss) or "
                                              "metric_for_best_model", related=_related(site, "eval_strategy"))
                    elif lb is False and isinstance(metric, str):
                        from trainlint.knowledge import behaviour

                        if behaviour.holds("early_stopping_asserts_load_best", target(setup)[0]):
                            yield self.diagnostic(span, "EarlyStoppingCallback without load_best_model_at_end=True: the "
                                                  f"callback asserts it when training starts ({target_text(setup)}); set "
                                                  "load_best_model_at_end=True (with matching save and eval strategies)",
                                                  related=_related(site, "metric_for_best_model"))
                            continue
                        yield self.diagnostic(span, "EarlyStoppingCallback without load_best_model_at_end=True: it "
                                              "stops early but the model kept at the end is the last one, not the best; "
                                              "set load_best_model_at_end=True (with matching save and eval strategies)",
                                              severity=Severity.WARNING,
                                              related=_related(site, "metric_for_best_model"))
                break
