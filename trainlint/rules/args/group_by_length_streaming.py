"""TL240 group-by-length-streaming: group_by_length with a streaming (iterable) train_dataset"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import effective
from trainlint.rules.args._args_checks_common import _kw_span, _related, _trainer_calls
from trainlint.rules.args.streaming_without_max_steps import _streaming_source
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

HEAD = ("from datasets import load_dataset\nfrom transformers import Trainer, TrainingArguments\n"
        "ds = load_dataset('c4', split='train', streaming=True)\n")


class GroupByLengthStreaming(Rule):
    """
    ## What it does
    Flags `group_by_length=True` when the Trainer's `train_dataset` is a streaming dataset
    (`load_dataset(..., streaming=True)`, an `IterableDataset`, or a `map`/`filter`/`shuffle`
    of one).

    ## Why is this bad?
    Grouping by length needs a sampler over a dataset with a length; the Trainer builds no
    sampler for an iterable dataset (`_get_train_sampler` returns `None` when the dataset has
    no `__len__`), so `group_by_length` is silently ignored and batches are padded as they
    come. (axolotl warns about it because its own samplers would measure the whole stream.)

    ## Example
    ```python
    ds = load_dataset("c4", split="train", streaming=True)
    Trainer(model=m, args=TrainingArguments(output_dir="o", group_by_length=True, max_steps=1000),
            train_dataset=ds)
    ```

    ## Use instead
    ```python
    Trainer(model=m, args=TrainingArguments(output_dir="o", max_steps=1000), train_dataset=ds)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `Trainer._get_train_sampler` (no sampler for a dataset without a length)
    - axolotl `utils/schemas/validation.py` (`group_by_length` with streaming datasets)
    """

    code = "TL240"
    name = "group-by-length-streaming"
    severity = Severity.WARNING
    summary = "group_by_length with a streaming (iterable) train_dataset"
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("group_by_length",)
    cases = [
        Case(HEAD + "t = Trainer(model=m, args=TrainingArguments(output_dir='o', max_steps=9, group_by_length=True), "
                    "train_dataset=ds.map(f))\n", options={"transformers_version": "4.57.1"}),
        Case(HEAD + "CFG = {'group_by_length': True, 'max_steps': 9}\nargs = TrainingArguments(output_dir='o', **CFG)\n"
                    "t = Trainer(model=m, args=args, train_dataset=ds)\n", options={"transformers_version": "4.57.1"}),
        Case(HEAD.replace(", streaming=True", "") +
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', group_by_length=True), train_dataset=ds)\n",
             flags=False, options={"transformers_version": "4.57.1"}),
        Case(HEAD + "t = Trainer(model=m, args=TrainingArguments(output_dir='o', max_steps=9), train_dataset=ds)\n",
             flags=False, options={"transformers_version": "4.57.1"}),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf, tc in _trainer_calls(setup):
            train = tc.keywords.get("train_dataset")
            if train is None or tc.args_call is None:
                continue
            site = tc.args_call.args
            if effective(setup, site, "group_by_length") is not True:
                continue
            src = _streaming_source(pf, train, tc.site.scope)
            if src is None:
                continue
            yield self.diagnostic(_kw_span(pf, tc, "train_dataset"),
                                  "group_by_length=True has no effect on a streaming train_dataset: the Trainer builds no "
                                  "length-grouped sampler for a dataset without a length; drop group_by_length",
                                  related=[pf.span(src).related("streaming dataset created here"),
                                           *_related(site, "group_by_length")])
