"""TL313 deepspeed-warmup-steps-not-positive: scheduler warmup_num_steps that DeepSpeed >= 0.19.6 rejects"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_setup_common import (
    _ds,
)
from trainlint.setup import Setup


class WarmupStepsNotPositive(Rule):
    """
    ## What it does
    Flags `scheduler.params.warmup_num_steps` written as zero, a negative number or a
    non-integer (`1e3`, `100.0`) in a DeepSpeed config.

    ## Why is this bad?
    DeepSpeed >= 0.19.6 rejects it when the scheduler is built (`WarmupLR`, `WarmupDecayLR`,
    `WarmupCosineLR`: "warmup_num_steps must be a positive integer"); older versions silently
    clamped it to 2 steps. transformers' own `"auto"` fill uses `max(1, warmup steps)` for this
    reason.

    ## Example
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 0}}}
    ```

    ## Use instead
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 1}}}
    ```
    (or `"auto"` under the HF Trainer).

    ## Fix safety
    Safe: `1` (an integral float is written as the integer); older DeepSpeed used 2 for 0.

    ## References
    - DeepSpeed 0.19.8 `runtime/lr_schedules.py` (`WarmupLR.__init__`)
    - transformers 5.24 `integrations/deepspeed.py` (`trainer_config_finalize` comment)
    """

    code = "TL313"
    name = "deepspeed-warmup-steps-not-positive"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    fix_safety = "safe"
    summary = "scheduler warmup_num_steps that DeepSpeed >= 0.19.6 rejects"

    cases = [
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8,\n "scheduler": {"type": "WarmupLR",'
                               ' "params": {"warmup_num_steps": 0}}}\n'}, fixed_path="ds.json",
             fixed='{"train_micro_batch_size_per_gpu": 8,\n "scheduler": {"type": "WarmupLR",'
                   ' "params": {"warmup_num_steps": 1}}}\n'),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "scheduler": {"type": "WarmupDecayLR",'
                               ' "params": {"warmup_num_steps": 1e3, "total_num_steps": 10000}}}\n'},
             fixed_path="ds.json",
             fixed='{"train_micro_batch_size_per_gpu": 8, "scheduler": {"type": "WarmupDecayLR",'
                   ' "params": {"warmup_num_steps": 1000, "total_num_steps": 10000}}}\n'),
        # must not flag
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "scheduler": {"type": "WarmupLR",'
                               ' "params": {"warmup_num_steps": 100}}}\n'}, flags=False),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "scheduler": {"type": "WarmupLR",'
                               ' "params": {"warmup_num_steps": "auto"}}}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        node = cfg.node("scheduler.params.warmup_num_steps")
        if node is None or node.kind != "number":
            return
        raw = node.value
        if isinstance(raw, int) and raw > 0:
            return
        if isinstance(raw, float) and raw.is_integer() and raw > 0:
            new = str(int(raw))
            what = f"{node.raw} is a float"
        else:
            new = "1"
            what = f"{node.raw} is not positive"
        yield self.diagnostic(node.span, f"scheduler warmup_num_steps {what}: DeepSpeed >= 0.19.6 raises "
                                         f"\"warmup_num_steps must be a positive integer\" (older versions "
                                         f"clamped it to 2)", edits=[node.span.edit(new)],
                              fix_message=f"set warmup_num_steps to {new}")

