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
    `--num_processes`"), or fails parsing it.

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
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 8\n"},
             flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = setup.extra.get("accelerate")
        if acc is None:
            return
        v = acc.num_processes
        if v is None or v.span is None:
            return
        if isinstance(v.value, bool) or not isinstance(v.value, int) or v.value < 1:
            yield self.diagnostic(v.span, f"num_processes {v.value!r} is not a positive integer: the launcher "
                                          f"cannot start the run with it")

