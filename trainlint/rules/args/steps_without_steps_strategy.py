"""TL233 steps-without-steps-strategy: eval_steps/save_steps/logging_steps set while the matching strategy is not "steps" """

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._spellings import spelled_cases
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import SiteRule, is_num, strategy
from trainlint.rules.args._args_checks_common import _related, _span
from trainlint.rules.base import Case

STRATEGIES = ("no", "steps", "epoch", "best")
# (the step count, the strategy that reads it)
PAIRS = (("eval_steps", "eval_strategy"), ("save_steps", "save_strategy"), ("logging_steps", "logging_strategy"))


class StepsWithoutStepsStrategy(SiteRule):
    """
    ## What it does
    Flags `eval_steps`, `save_steps` or `logging_steps` written while the matching strategy
    (`eval_strategy`, `save_strategy`, `logging_strategy`) is not `"steps"`: for example
    `eval_steps=200` with the default `eval_strategy="no"`, or `--save_steps 25 --save_strategy
    epoch`. `logging_steps` is not flagged when `eval_strategy="steps"` has no `eval_steps` of its
    own (transformers then uses `logging_steps` as the evaluation interval).

    ## Why is this bad?
    The step count is read only under the `"steps"` strategy: the run evaluates, saves or logs
    on another schedule (or never) and the number written is silently ignored. axolotl refuses
    such a config at start-up; transformers says nothing. With the strategy left at its default
    (`eval_steps=200` and no `eval_strategy`: the run never evaluates) this is a warning; with a
    strategy written beside the number (`save_strategy="epoch"` and a leftover `save_steps`) the
    schedule was chosen, and it is info.

    ## Example
    ```python
    TrainingArguments(output_dir="o", eval_steps=200)   # eval_strategy defaults to "no"
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", eval_strategy="steps", eval_steps=200)
    ```

    ## Fix safety
    No automatic fix: turning the strategy to `"steps"` changes when the run evaluates or saves,
    and dropping the number loses what was meant.

    ## References
    - transformers `TrainingArguments.__post_init__` (only `IntervalStrategy.STEPS` reads the step
      counts; `eval_steps` falls back to `logging_steps`)
    - axolotl `utils/schemas/validation.py` (`check_eval_steps`, `check_save_steps`)
    - https://github.com/huggingface/transformers/issues/25071
    """

    code = "TL233"
    name = "steps-without-steps-strategy"
    severity = Severity.WARNING
    summary = 'eval_steps/save_steps/logging_steps set while the matching strategy is not "steps"'
    triggers = SETUP_NAMES
    fires_on = ("eval_steps", "save_steps", "logging_steps")
    cases = [
        *spelled_cases({"eval_steps": 200}),
        *spelled_cases({"save_steps": 25, "save_strategy": "epoch"}, only=("keyword", "flag", "argsfile")),
        *spelled_cases({"eval_steps": 200, "eval_strategy": "steps"}, flags=False),
        Case("from transformers import TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', logging_strategy='epoch', logging_steps=50, "
             "eval_strategy='steps')\n", flags=False, note="logging_steps is the eval interval here"),
        Case("from transformers import TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', save_steps=100, save_strategy=STRATEGY)\n",
             flags=False, note="the strategy is not known"),
        Case("from transformers import TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', save_steps=100)\n", flags=False,
             note='save_strategy defaults to "steps"'),
    ]

    def site_check(self, setup, site):
        for steps_name, strat_name in PAIRS:
            sv = site.get(steps_name)
            if sv is None or not sv.known or not is_num(sv.value):
                continue
            strat = strategy(self.eff(setup, site, strat_name))
            if strat not in STRATEGIES or strat == "steps":
                continue  # unknown, or not a strategy at all (a template placeholder)
            if steps_name == "logging_steps":
                ev = strategy(self.eff(setup, site, "eval_strategy"))
                es = self.eff(setup, site, "eval_steps")
                if not isinstance(ev, str) or (ev == "steps" and es in (None, 0)):
                    continue
            written = site.get(strat_name) is not None
            how = f'{strat_name}="{strat}"' + ("" if written else " (the default)")
            # the strategy left at its default: the interval was most likely meant (a warning); a
            # strategy written beside it chose another schedule, the number is a leftover (info)
            yield self.diagnostic(_span(site, steps_name),
                                  f"{steps_name}={sv.value!r} is ignored because {how}: the step count is read "
                                  f'only with {strat_name}="steps"; set {strat_name}="steps" or drop {steps_name}',
                                  related=_related(site, strat_name),
                                  severity=Severity.INFO if written else Severity.WARNING)
