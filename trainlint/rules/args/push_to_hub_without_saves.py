"""TL237 push-to-hub-without-saves: push_to_hub with save_strategy="no" and no explicit push or save"""

from __future__ import annotations

import ast

from trainlint.diagnostics import Severity
from trainlint.rules._spellings import spelled_cases
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import SiteRule, strategy
from trainlint.rules.args._args_checks_common import _related, _span
from trainlint.rules.base import Case

EXPLICIT = ("push_to_hub", "save_model")


def _pushes_explicitly(setup) -> bool:
    """A ``<x>.push_to_hub(...)`` or ``<x>.save_model(...)`` call in one of the setup's scripts
    (``Trainer.save_model`` pushes when ``args.push_to_hub`` is set)."""
    for pf in setup.scripts:
        for cs in pf.calls:
            f = cs.node.func
            if isinstance(f, ast.Attribute) and f.attr in EXPLICIT:
                return True
    return False


class PushToHubWithoutSaves(SiteRule):
    """
    ## What it does
    Flags `push_to_hub=True` with `save_strategy="no"` when the setup's scripts never call
    `trainer.push_to_hub()` or `trainer.save_model()` themselves. An args file that no script of
    the setup reads is not judged (the script that reads it may push at the end).

    ## Why is this bad?
    The Trainer pushes to the Hub when it saves a checkpoint (and in `save_model`). With no
    checkpoint saves and no explicit call, nothing is ever pushed: the run finishes and the Hub
    repository stays empty. axolotl warns about this combination at start-up.

    ## Example
    ```python
    args = TrainingArguments(output_dir="o", push_to_hub=True, save_strategy="no")
    trainer = Trainer(model=model, args=args, train_dataset=ds)
    trainer.train()
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="o", push_to_hub=True, save_strategy="no")
    trainer = Trainer(model=model, args=args, train_dataset=ds)
    trainer.train()
    trainer.push_to_hub()
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `Trainer._save_checkpoint` / `Trainer.save_model` (the only places that push
      during and after training)
    - axolotl `utils/schemas/validation.py` (`hub_model_id` with `save_strategy: no`)
    """

    code = "TL237"
    name = "push-to-hub-without-saves"
    severity = Severity.WARNING
    summary = 'push_to_hub with save_strategy="no" and no explicit push or save'
    triggers = SETUP_NAMES
    fires_on = ("push_to_hub",)
    cases = [
        *spelled_cases({"push_to_hub": True, "save_strategy": "no"}),
        *spelled_cases({"push_to_hub": True, "save_strategy": "no"}, flags=False, only=("keyword",),
                       extra="trainer = Trainer(model=m, args=args)\ntrainer.train()\ntrainer.push_to_hub()\n"),
        *spelled_cases({"push_to_hub": True, "save_strategy": "no"}, flags=False, only=("keyword",),
                       extra="trainer = Trainer(model=m, args=args)\ntrainer.train()\ntrainer.save_model()\n"),
        *spelled_cases({"push_to_hub": True, "save_strategy": "epoch"}, flags=False, only=("keyword", "flag")),
        Case(files={"args.yaml": "output_dir: o\npush_to_hub: true\nsave_strategy: 'no'\nlearning_rate: 1.0e-5\n"},
             flags=False, note="no script reads it here"),
    ]

    def site_check(self, setup, site):
        push = site.get("push_to_hub")
        if push is None or push.value is not True:
            return
        if strategy(self.eff(setup, site, "save_strategy")) != "no":
            return
        if not setup.scripts:
            return  # an args file on its own: the script that reads it may push at the end
        if _pushes_explicitly(setup):
            return
        yield self.diagnostic(_span(site, "push_to_hub"),
                              'push_to_hub=True but save_strategy="no": the Trainer pushes only when it saves, so '
                              "nothing reaches the Hub; set a save_strategy or call trainer.push_to_hub() after "
                              "training", related=_related(site, "save_strategy"))
