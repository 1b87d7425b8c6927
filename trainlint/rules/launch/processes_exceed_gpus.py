"""TL403 processes-exceed-gpus: more processes than configured or visible GPUs"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup


class ProcessesExceedGpuIds(Rule):
    """
    ## What it does
    Flags `num_processes` larger than the number of `gpu_ids` in an accelerate config, or than
    the GPUs listed in `CUDA_VISIBLE_DEVICES` on the launch line.

    ## Why is this bad?
    The extra processes map to GPU ordinals that do not exist: "CUDA error: invalid device
    ordinal" once the run starts.

    ## Example
    ```yaml
    num_processes: 4
    gpu_ids: 0,1
    ```

    ## Use instead
    ```yaml
    num_processes: 2
    gpu_ids: 0,1
    ```

    ## Fix safety
    Unsafe: `num_processes` is set to the number of GPU ids, which changes the world size (and
    the effective batch size).

    ## References
    - https://github.com/RUCAIBox/TextBox/issues/343
    - https://github.com/huggingface/accelerate/pull/2916
    """

    code = "TL403"
    name = "processes-exceed-gpus"
    severity = Severity.ERROR
    triggers = LAUNCH_NAMES
    python_alone = False  # reads only an accelerate config or a launch line, which a file gives
    fix_safety = "unsafe"
    summary = "more processes than configured or visible GPUs"
    cases = [
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                                "num_processes: 4\ngpu_ids: 0,1\n"}, unsafe=True,
             fixed="compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: 0,1\n",
             fixed_path="acc.yaml"),
        Case(files={"run.sh": "CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 4 train.py\n",
                    "train.py": "from transformers import Trainer\n"}),
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                                "num_processes: 2\ngpu_ids: 0,1\n"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = setup.extra.get("accelerate")
        launch = setup.extra.get("launch")
        if acc is not None:
            np_, ids = acc.num_processes, acc.gpu_id_list()
            machines = acc.num_machines
            if np_ is not None and isinstance(np_.value, int) and ids and (machines is None or machines.value == 1) \
                    and np_.value > len(ids):
                yield self.diagnostic(np_.span, f"num_processes {np_.value} but gpu_ids lists {len(ids)} GPU"  # type: ignore[arg-type]
                                                f"{'s' if len(ids) != 1 else ''}: the extra processes get invalid device "
                                                f"ordinals", edits=[np_.span.edit(str(len(ids)))],  # type: ignore[union-attr]
                                      fix_message=f"set num_processes to {len(ids)}")
        if launch is not None and launch.launcher in ("torchrun", "torch.distributed.launch", "accelerate"):
            cvd = launch.env.get("CUDA_VISIBLE_DEVICES")
            world = launch.world_size_value()
            if cvd is None or cvd.value is None or world is None or world.name == "CUDA_VISIBLE_DEVICES":
                return
            n = len([x for x in cvd.value.split(",") if x.strip()])
            nnodes = launch.launcher_arg("nnodes")
            if nnodes is None and isinstance(world.value, int) and world.value > n:
                yield self.diagnostic(world.span, f"{world.value} processes but CUDA_VISIBLE_DEVICES={cvd.value} shows "  # type: ignore[arg-type]
                                                  f"{n} GPU{'s' if n != 1 else ''}: the extra processes get invalid "
                                                  f"device ordinals", related=[cvd.value_span.related("set here")]
                                      if getattr(cvd, "value_span", None) else [])

