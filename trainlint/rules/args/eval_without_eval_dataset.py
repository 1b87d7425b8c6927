"""TL215 eval-without-eval-dataset: evaluation enabled but the Trainer has no eval_dataset"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import trainer_sites
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    effective,
    strategy,
    target_text,
    behaviour_holds,
)
from trainlint.rules.args._args_checks_common import (
    V440,
    V524,
    _call_span,
    _related,
    _trainer_calls,
)
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup
from trainlint.sources.python import TrainerCall


def _open_call(tc: TrainerCall) -> bool:
    return any(k.arg is None for k in tc.site.node.keywords) or any(
        isinstance(a, ast.Starred) for a in tc.site.node.args)



class EvalWithoutEvalDataset(Rule):
    """
    ## What it does
    Flags a `Trainer`/`Seq2SeqTrainer` whose arguments evaluate (`eval_strategy` other than
    `"no"`) while the call passes no `eval_dataset` (transformers 4.57 and later; the check is
    not in 4.40). The evaluation may be turned on in the script's `TrainingArguments(...)` or,
    for a script that parses its arguments with `HfArgumentParser`, by the launch line's
    `--eval_strategy` or the args file.

    ## Why is this bad?
    `ValueError: You have set args.eval_strategy to ... but you didn't pass an eval_dataset
    to Trainer`, at Trainer construction.

    ## Example
    ```python
    args = TrainingArguments(output_dir="o", eval_strategy="epoch")
    trainer = Trainer(model=model, args=args, train_dataset=train)
    ```

    ## Use instead
    ```python
    trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=val)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers 4.57.1 / 5.24 `Trainer.__init__`
    """

    code = "TL215"
    name = "eval-without-eval-dataset"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("eval_strategy", "evaluation_strategy")
    summary = "evaluation enabled but the Trainer has no eval_dataset"
    cases = [
        Case("from transformers import Trainer, TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', eval_strategy='epoch')\n"
             "t = Trainer(model=m, args=args, train_dataset=d)\n", options=V524),
        Case("from transformers import Trainer, TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', eval_strategy='epoch')\n"
             "t = Trainer(model=m, args=args, train_dataset=d, eval_dataset=e)\n", options=V524, flags=False),
        Case("from transformers import Trainer, TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', evaluation_strategy='epoch')\n"
             "t = Trainer(model=m, args=args, train_dataset=d)\n", options=V440, flags=False),
        Case(files={"run.sh": "python train.py --output_dir o --eval_strategy steps --eval_steps 50\n",
                    "train.py": "from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
                                "(args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()\n"
                                "t = Trainer(model=m, args=args, train_dataset=d)\n"}, options=V524,
             note="the launch line turns evaluation on"),
        Case(files={"run.sh": "python train.py --output_dir o --eval_strategy steps --eval_steps 50\n",
                    "train.py": "from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
                                "(args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()\n"
                                "t = Trainer(model=m, args=args, train_dataset=d, eval_dataset=e)\n"},
             options=V524, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        if not behaviour_holds(setup, "trainer_rejects_eval_strategy_without_eval_dataset"):
            return
        for pf, tc in _trainer_calls(setup):
            if "eval_dataset" in tc.keywords or _open_call(tc):
                continue
            if tc.args_call is not None:
                sites = [tc.args_call.args]
            elif "args" in tc.keywords:
                # the script parses its TrainingArguments (HfArgumentParser): the launch-line flags or
                # the args file of this setup configure this Trainer
                sites = [s for s in trainer_sites(setup, pf, tc) or [] if s.call is None]
            else:
                continue
            for site in sites:
                ev = strategy(effective(setup, site, "eval_strategy"))
                if not isinstance(ev, str) or ev == "no":
                    continue
                yield self.diagnostic(_call_span(pf, tc),
                                      f'{tc.class_name} gets eval_strategy="{ev}" but no eval_dataset: Trainer raises '
                                      f"ValueError ({target_text(setup)})",
                                      related=_related(site, "eval_strategy", "evaluation_strategy"))
                break

