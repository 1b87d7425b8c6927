"""TL404 bad-num-processes: num_processes is not a positive integer"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup


class BadNumProcesses(Rule):
    """
    ## What it does
    Flags `num_processes` in an accelerate config that is not a positive integer (`-1`, `0`,
    `"gpu"`, ...).

    ## Why is this bad?
    The launcher cannot start that many processes ("You need to manually pass in
    `--num_processes`"), or fails parsing it. A launch line that passes `--num_processes`
    overrides the file, so it is not flagged; `null` or `-1` in a config that no launch line of
    the repository uses is a cluster template whose script passes the count: info.

    ## Example
    ```yaml
    num_processes: -1
    ```

    ## Use instead
    ```yaml
    num_processes: 4
    ```

    ## Fix safety
    No fix: the number of GPUs is not known statically.

    ## References
    - accelerate `commands/launch.py`
    """

    code = "TL404"
    name = "bad-num-processes"
    severity = Severity.ERROR
    triggers = LAUNCH_NAMES
    python_alone = False  # reads only an accelerate config, which a file gives
    summary = "num_processes is not a positive integer"
    cases = [
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: -1\n"}),
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 0\n"}),
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: null\n",
                    "train.py": "from transformers import Trainer\nTrainer(model=m)\n",
                    "run.sh": "accelerate launch --config_file acc.yaml train.py\n"},
             note="a launch line uses it without --num_processes"),
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 8\n"},
             flags=False),
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: null\n",
                    "train.py": "from transformers import Trainer\nTrainer(model=m)\n",
                    "run.sh": "accelerate launch --config_file acc.yaml --num_processes 8 train.py\n"},
             flags=False, note="the launch line passes the count"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = setup.extra.get("accelerate")
        if acc is None:
            return
        v = acc.num_processes
        if v is None or v.span is None:
            return
        if not (isinstance(v.value, bool) or not isinstance(v.value, int) or v.value < 1):
            return
        launch = setup.extra.get("launch")
        if launch is not None and launch.launcher_arg("num_processes") is not None:
            return  # `accelerate launch --num_processes N --config_file ...`: the flag wins
        if launch is None and (v.value is None or v.value == -1):
            # a config written for a cluster script that passes the count itself (smollm's
            # slurm templates: `num_processes: null`; accelerate's own "-1: pass it in")
            yield self.diagnostic(v.span, f"num_processes {_shown(v.value)} in a config no launch line here uses: "
                                          f"accelerate launch stops unless the command passes --num_processes; "
                                          f"fine for a cluster template that always does", severity=Severity.INFO)
            return
        yield self.diagnostic(v.span, f"num_processes {_shown(v.value)} is not a positive integer: the launcher "
                                      f"cannot start the run with it")


def _shown(value) -> str:
    return "null" if value is None else repr(value)

