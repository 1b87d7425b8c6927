"""TL234 warmup-steps-and-ratio: warmup_steps and warmup_ratio both set (one silently wins)"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.knowledge import training_args as ta
from trainlint.rules._spellings import spelled_cases
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import SiteRule, fields_for, is_num, target, target_text
from trainlint.rules.args._args_checks_common import _related, _span


class WarmupStepsAndRatio(SiteRule):
    """
    ## What it does
    Flags `warmup_steps` and `warmup_ratio` both set above zero, on the transformers versions
    that still have `warmup_ratio`.

    ## Why is this bad?
    Only one of them is used, and which one depends on the version: on 4.x `warmup_steps`
    overrides `warmup_ratio` (a log line says so); from the release that deprecates
    `warmup_ratio` (5.0) `__post_init__` copies the ratio into `warmup_steps`, overwriting the
    step count. Later 5.x releases remove `warmup_ratio` (TL601 reports that): `warmup_steps`
    takes a float below 1 as a ratio instead. The version boundaries come from the field
    history generated from the released wheels.

    ## Example
    ```python
    TrainingArguments(output_dir="o", warmup_steps=500, warmup_ratio=0.1)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", warmup_steps=500)   # or warmup_steps=0.1 on 5.x
    ```

    ## Fix safety
    No automatic fix: which of the two was meant is not known.

    ## References
    - transformers 4.57 `TrainingArguments.get_warmup_steps` ("warmup_steps will override any
      effect of warmup_ratio"); 5.0 `__post_init__` (`self.warmup_steps = self.warmup_ratio`)
    - axolotl `utils/schemas/validation.py` (`check_warmup`)
    """

    code = "TL234"
    name = "warmup-steps-and-ratio"
    severity = Severity.WARNING
    summary = "warmup_steps and warmup_ratio both set (one silently wins)"
    triggers = SETUP_NAMES
    fires_on = ("warmup_ratio",)
    cases = [
        *spelled_cases({"warmup_steps": 500, "warmup_ratio": 0.1}, options={"transformers_version": "4.57.1"}),
        *spelled_cases({"warmup_steps": 500, "warmup_ratio": 0.1}, only=("keyword",),
                       options={"transformers_version": "5.1.0"}, note="the ratio overwrites the steps"),
        *spelled_cases({"warmup_steps": 500, "warmup_ratio": 0.0}, flags=False,
                       options={"transformers_version": "4.57.1"}),
        *spelled_cases({"warmup_ratio": 0.1}, flags=False, only=("keyword", "flag"),
                       options={"transformers_version": "4.57.1"}),
        *spelled_cases({"warmup_steps": 500, "warmup_ratio": 0.1}, flags=False, only=("keyword",),
                       options={"transformers_version": "5.24.0"}, note="warmup_ratio is removed: TL601's finding"),
    ]

    def site_check(self, setup, site):
        steps, ratio = site.get("warmup_steps"), site.get("warmup_ratio")
        if steps is None or ratio is None or not is_num(steps.value) or not is_num(ratio.value):
            return
        if steps.value <= 0 or ratio.value <= 0:
            return
        fields = fields_for(setup, site.class_name) or {}
        if "warmup_ratio" not in fields:
            return
        hist = ta.history("TrainingArguments", "warmup_ratio")
        ratio_wins = hist.deprecated_in is not None and ta.vkey(target(setup)[0]) >= ta.vkey(hist.deprecated_in)
        if ratio_wins:
            effect = (f"warmup_ratio={ratio.value!r} overwrites warmup_steps={steps.value!r} (warmup_ratio is deprecated "
                      f"since {hist.deprecated_in}; {target_text(setup)})")
            fix = "keep one: warmup_steps alone (a float below 1 is a ratio)"
        else:
            effect = (f"warmup_steps={steps.value!r} overrides warmup_ratio={ratio.value!r}, which is ignored "
                      f"({target_text(setup)})")
            fix = "keep one of them"
        yield self.diagnostic(_span(site, "warmup_ratio"), f"warmup_steps and warmup_ratio are both set: {effect}; {fix}",
                              related=_related(site, "warmup_steps"))
