"""TL402 multi-gpu-too-few-processes: distributed_type MULTI_GPU with fewer than 2 processes or GPU ids"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup


class MultiGpuTooFew(Rule):
    """
    ## What it does
    Flags an accelerate config with `distributed_type: MULTI_GPU` and `num_processes` below 2,
    or `gpu_ids` listing fewer than 2 GPUs on one machine.

    ## Why is this bad?
    The launcher raises ("You need to use at least 2 processes to use `--multi_gpu`", "Less than
    two GPU ids were configured and tried to run on on multiple GPUs").

    ## Example
    ```yaml
    distributed_type: MULTI_GPU
    num_processes: 1
    ```

    ## Use instead
    `distributed_type: 'NO'` for one GPU, or `num_processes: 2` and more GPU ids.

    ## Fix safety
    No fix.

    ## References
    - accelerate `commands/launch.py`
    """

    code = "TL402"
    name = "multi-gpu-too-few-processes"
    severity = Severity.ERROR
    triggers = LAUNCH_NAMES
    python_alone = False  # reads only an accelerate config, which a file gives
    summary = "distributed_type MULTI_GPU with fewer than 2 processes or GPU ids"
    cases = [
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 1\n"}),
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                                "num_processes: 2\ngpu_ids: '0'\nnum_machines: 1\n"}),
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\n"
                                "gpu_ids: all\n"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = setup.extra.get("accelerate")
        if acc is None:
            return
        dt = acc.distributed_type
        if dt is None or dt.value != "MULTI_GPU":
            return
        launch = setup.extra.get("launch")
        override = launch.launcher_arg("num_processes") if launch is not None and launch.launcher == "accelerate" else None
        np_ = acc.num_processes
        if override is None and np_ is not None and isinstance(np_.value, int) and 0 < np_.value < 2:
            yield self.diagnostic(np_.span, f"distributed_type MULTI_GPU with num_processes {np_.value}: accelerate "  # type: ignore[arg-type]
                                            f"needs at least 2 processes for multi-GPU",
                                  related=[dt.span.related("MULTI_GPU is set here")] if dt.span else [])
            return
        ids = acc.gpu_id_list()
        machines = acc.num_machines
        one_machine = machines is None or machines.value == 1
        if ids is not None and len(ids) < 2 and one_machine:
            g = acc.gpu_ids
            yield self.diagnostic(g.span, f"distributed_type MULTI_GPU with gpu_ids {g.value!r}: fewer than two "  # type: ignore[union-attr,arg-type]
                                          f"GPU ids on one machine, accelerate refuses to start")

