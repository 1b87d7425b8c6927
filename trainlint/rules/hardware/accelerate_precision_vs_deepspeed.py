"""TL503 accelerate-precision-vs-deepspeed: accelerate mixed_precision contradicts the DeepSpeed config's precision"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import where
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup


class AcceleratePrecisionVsDeepSpeed(Rule):
    """
    ## What it does
    Flags an accelerate config whose `mixed_precision` is `fp16` while the linked DeepSpeed
    config enables `bf16` (or `bf16` against DeepSpeed `fp16`).

    ## Why is this bad?
    accelerate's `DeepSpeedPlugin.set_mixed_precision` raises ("`--mixed_precision` arg cannot
    be set to fp16 when bf16 is set in the DeepSpeed config file") when the run starts.

    ## Example
    ```yaml
    mixed_precision: fp16
    deepspeed_config:
      deepspeed_config_file: ds.json   # {"bf16": {"enabled": true}}
    ```

    ## Use instead
    `"bf16": {"enabled": "auto"}` in the DeepSpeed file, so one place decides.

    ## Fix safety
    Safe: the DeepSpeed value becomes `"auto"` and follows the precision chosen elsewhere.

    ## References
    - accelerate `utils/dataclasses.py` (`DeepSpeedPlugin.set_mixed_precision`)
    """

    code = "TL503"
    name = "accelerate-precision-vs-deepspeed"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    python_alone = False  # reads only an accelerate config, which a file gives
    fix_safety = "safe"
    summary = "accelerate mixed_precision contradicts the DeepSpeed config's precision"

    cases = [
        Case(files={"acc.yaml": "distributed_type: DEEPSPEED\nmixed_precision: fp16\nnum_processes: 2\n"
                                "deepspeed_config:\n  deepspeed_config_file: ds.json\n",
                    "ds.json": '{"bf16": {"enabled": true}, "train_micro_batch_size_per_gpu": 8}\n'},
             fixed='{"bf16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": 8}\n', fixed_path="ds.json"),
        # must not flag
        Case(files={"acc.yaml": "distributed_type: DEEPSPEED\nmixed_precision: bf16\nnum_processes: 2\n"
                                "deepspeed_config:\n  deepspeed_config_file: ds.json\n",
                    "ds.json": '{"bf16": {"enabled": true}, "train_micro_batch_size_per_gpu": 8}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc, cfg = setup.extra.get("accelerate"), setup.extra.get("deepspeed")
        if acc is None or cfg is None:
            return
        mp = acc.mixed_precision
        if mp is None or mp.value not in ("fp16", "bf16"):
            return
        other = "bf16" if mp.value == "fp16" else "fp16"
        ds = cfg.value(f"{other}.enabled")
        if ds is None or ds.value is not True or ds.span is None:
            return
        yield self.diagnostic(ds.span, f"{other} is enabled in {where(ds)} but accelerate's mixed_precision is "
                                       f"{mp.value} in {where(mp)}: accelerate refuses to start", edits=[ds.span.edit('"auto"')],
                              related=[mp.span.related("mixed_precision is set here")] if mp.span else [],
                              fix_message='set the DeepSpeed value to "auto"')

