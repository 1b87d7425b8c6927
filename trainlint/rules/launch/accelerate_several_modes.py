"""TL401 accelerate-several-modes: accelerate launch with more than one distributed mode"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

MODES = ("multi_gpu", "cpu", "tpu", "use_deepspeed", "use_fsdp")



class AccelerateManyModes(Rule):
    """
    ## What it does
    Flags `accelerate launch` with more than one of `--multi_gpu`, `--cpu`, `--tpu`,
    `--use_deepspeed`, `--use_fsdp`.

    ## Why is this bad?
    The launcher's `_validate_launch_command` raises ("You can only use one of `--cpu`,
    `--multi_gpu`, `--tpu`, `--use_deepspeed`, `--use_fsdp` at a time.").

    ## Example
    ```bash
    accelerate launch --multi_gpu --use_deepspeed train.py
    ```

    ## Use instead
    ```bash
    accelerate launch --use_deepspeed train.py
    ```

    ## Fix safety
    No fix: which mode is meant is a choice.

    ## References
    - accelerate `commands/launch.py` (`_validate_launch_command`)
    """

    code = "TL401"
    name = "accelerate-several-modes"
    severity = Severity.ERROR
    triggers = LAUNCH_NAMES
    python_alone = False  # reads only a launch line, which a file gives
    summary = "accelerate launch with more than one distributed mode"
    cases = [
        Case(files={"run.sh": "accelerate launch --multi_gpu --use_deepspeed train.py\n",
                    "train.py": "from transformers import Trainer\n"}),
        Case(files={"run.sh": "accelerate launch --multi_gpu --num_processes 2 train.py\n",
                    "train.py": "from transformers import Trainer\n"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        launch = setup.extra.get("launch")
        if launch is None or launch.launcher != "accelerate":
            return
        found = [launch.launcher_arg(m) for m in MODES]
        found = [f for f in found if f is not None]
        if len(found) > 1:
            yield self.diagnostic(found[1].name_span, f"accelerate launch with {', '.join('--' + f.name for f in found)}: "
                                                      f"only one distributed mode can be used, the launcher refuses")

