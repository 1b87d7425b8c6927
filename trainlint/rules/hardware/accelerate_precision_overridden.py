"""TL504 accelerate-precision-overridden: accelerate mixed_precision is silently overridden by TrainingArguments fp16/bf16"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import located, where
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.hardware._cross_file_common import (
    HF_SCRIPT,
)
from trainlint.setup import Setup


class AcceleratePrecisionOverridden(Rule):
    """
    ## What it does
    Flags an accelerate config `mixed_precision` that the TrainingArguments of the same setup
    contradict (`mixed_precision: bf16` with `fp16=True`, `no` with `bf16=True`, ...).

    ## Why is this bad?
    `TrainingArguments.__post_init__` replaces accelerate's `ACCELERATE_MIXED_PRECISION` with its
    own `fp16`/`bf16`, so the YAML setting is silently ignored; whoever reads the YAML is misled.

    ## Example
    ```yaml
    mixed_precision: bf16
    ```
    with `--fp16` on the launch line.

    ## Use instead
    Make them agree (`mixed_precision: fp16`), or decide the precision in one place.

    ## Fix safety
    Safe: the YAML is set to what TrainingArguments already makes the run use.

    ## References
    - transformers `training_args.py` (`__post_init__`, mixed precision from the environment)
    """

    code = "TL504"
    name = "accelerate-precision-overridden"
    severity = Severity.WARNING
    triggers = DEEPSPEED_NAMES
    needs_training = True
    python_alone = False  # reads only an accelerate config, which a file gives
    fix_safety = "safe"
    summary = "accelerate mixed_precision is silently overridden by TrainingArguments fp16/bf16"

    cases = [
        Case(files={"launch.sh": "accelerate launch --config_file acc.yaml run.py --output_dir o --fp16\n",
                    "run.py": HF_SCRIPT,
                    "acc.yaml": "distributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_processes: 2\n"},
             fixed="distributed_type: MULTI_GPU\nmixed_precision: fp16\nnum_processes: 2\n", fixed_path="acc.yaml"),
        # must not flag
        Case(files={"launch.sh": "accelerate launch --config_file acc.yaml run.py --output_dir o --bf16\n",
                    "run.py": HF_SCRIPT,
                    "acc.yaml": "distributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_processes: 2\n"}, flags=False),
        Case(files={"launch.sh": "accelerate launch --config_file acc.yaml run.py --output_dir o\n",
                    "run.py": HF_SCRIPT,
                    "acc.yaml": "distributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_processes: 2\n"},
             flags=False, note="TrainingArguments does not set a precision: accelerate's is used"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = setup.extra.get("accelerate")
        if acc is None or setup.extra.get("deepspeed") is not None:
            return  # under DeepSpeed the DeepSpeed config decides (TL503, TL301)
        mp = acc.mixed_precision
        if mp is None or mp.value not in ("no", "fp16", "bf16") or mp.span is None:
            return
        for site in setup.sites:
            fp, bf = site.get("fp16"), site.get("bf16")
            wanted = "fp16" if fp is not None and fp.value is True else "bf16" if bf is not None and bf.value is True else None
            if wanted is None or wanted == mp.value:
                continue
            ta = fp if wanted == "fp16" else bf
            yield self.diagnostic(mp.span, f"accelerate mixed_precision {mp.value} in {where(mp)} is overridden by "
                                           f"{located(ta)}: the run uses {wanted}", edits=[mp.span.edit(wanted)],
                                  related=[ta.span.related(f"{wanted} is set here")] if ta.span else [],
                                  fix_message=f"set mixed_precision to {wanted}")

