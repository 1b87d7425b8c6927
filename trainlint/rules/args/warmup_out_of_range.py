"""TL212 warmup-out-of-range: warmup_steps/warmup_ratio outside what the target version accepts"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._versioned import (
    SiteRule,
    fields_for,
    is_num,
    target_text,
    behaviour_holds,
)
from trainlint.rules.args._args_checks_common import (
    TA,
    V440,
    V457,
    V524,
    _span,
)
from trainlint.rules.base import Case
from trainlint.setup import UNKNOWN


class WarmupOutOfRange(SiteRule):
    """
    ## What it does
    Flags warmup values the target version rejects: `warmup_steps < 0` (all versions);
    on 4.x, `warmup_ratio` outside [0, 1] and (4.57) a `warmup_steps` that is not an int, such
    as the 5.x ratio form `warmup_steps=0.1` run on 4.57.

    ## Why is this bad?
    `ValueError` at construction ("warmup_ratio must lie in range [0,1]", "warmup_steps must
    be of type int and must be 0 or a positive integer").

    ## Example
    ```python
    TrainingArguments(output_dir="o", warmup_steps=0.1)  # transformers 4.57
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", warmup_ratio=0.1)  # 4.x; warmup_steps=0.1 on 5.x
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers 4.40, 4.57.1 and 5.24 `TrainingArguments.__post_init__`
    """

    code = "TL212"
    fires_on = ("warmup_steps", "warmup_ratio")
    name = "warmup-out-of-range"
    severity = Severity.ERROR
    summary = "warmup_steps/warmup_ratio outside what the target version accepts"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', warmup_steps=0.1)\n", options=V457),
        Case(TA + "a = TrainingArguments(output_dir='o', warmup_ratio=1.5)\n", options=V440),
        Case(TA + "a = TrainingArguments(output_dir='o', warmup_steps=-5)\n", options=V524),
        Case(TA + "a = TrainingArguments(output_dir='o', warmup_steps=0.1)\n", options=V524, flags=False),
        Case(TA + "a = TrainingArguments(output_dir='o', warmup_ratio=0.1)\n", options=V440, flags=False),
    ]

    def site_check(self, setup, site):
        ws = site.known("warmup_steps")
        wr = site.known("warmup_ratio")
        fields = fields_for(setup, site.class_name) or {}
        if is_num(ws) and ws < 0 and behaviour_holds(setup, "warmup_steps_negative_raises"):
            yield self.diagnostic(_span(site, "warmup_steps"), f"warmup_steps={ws!r} is negative: "
                                  f"TrainingArguments raises ValueError ({target_text(setup)})")
            return
        if "warmup_ratio" in fields and behaviour_holds(setup, "warmup_ratio_range_checked"):
            if is_num(wr) and (wr < 0 or wr > 1):
                yield self.diagnostic(_span(site, "warmup_ratio"), f"warmup_ratio={wr!r} is outside [0, 1]: "
                                      f"TrainingArguments raises ValueError ({target_text(setup)})")
            if behaviour_holds(setup, "warmup_steps_must_be_int") and site.get("warmup_steps") is not None \
                    and ws is not UNKNOWN \
                    and (not isinstance(ws, int) or isinstance(ws, bool) or ws < 0):
                yield self.diagnostic(_span(site, "warmup_steps"),
                                      f"warmup_steps={ws!r} must be an int >= 0 in {target_text(setup)} (the float "
                                      "ratio form is 5.x only; use warmup_ratio): TrainingArguments raises ValueError")

