"""TL413 parallelism-config-without-fsdp2: parallelism config without FSDP2"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.launch._accelerate_fsdp_common import (
    FSDP_YAML,
    _fsdp,
    fsdp_version,
)
from trainlint.setup import Setup

PC_SIZES = ("dp_replicate_size", "dp_shard_size", "tp_size", "cp_size", "sp_size")



class ParallelismConfigWithoutFsdp2(Rule):
    """
    ## What it does
    Flags `accelerate launch --use_parallelism_config` without `--use_fsdp` on the same command
    line, and an accelerate config whose `parallelism_config` spans more than one process
    (product of its sizes) with FSDP version 1.

    ## Why is this bad?
    The launcher checks its flags before reading the config file and raises "You cannot use
    `--use_parallelism_config` without `--use_fsdp` and `--fsdp_version=2`"; at run time
    `ParallelismConfig` raises "ParallelismConfig is only compatible DistributedType.FSDP
    (version 2) or DistributedType.Multi{Device} or DistributedType.DEEPSPEED" under FSDP1.

    ## Example
    ```bash
    accelerate launch --use_parallelism_config --parallelism_config_dp_shard_size 4 train.py
    ```

    ## Use instead
    ```bash
    accelerate launch --use_fsdp --fsdp_version 2 --use_parallelism_config --parallelism_config_dp_shard_size 4 train.py
    ```

    ## Fix safety
    No fix.

    ## References
    - accelerate `commands/launch.py` (`_validate_launch_command`), `parallelism_config.py`
    """

    code = "TL413"
    name = "parallelism-config-without-fsdp2"
    severity = Severity.ERROR
    triggers = LAUNCH_NAMES
    python_alone = False  # reads only a launch line or an accelerate config, which a file gives
    summary = "parallelism config without FSDP2"

    cases = [
        Case(files={"run.sh": "accelerate launch --use_parallelism_config --parallelism_config_dp_shard_size 2 train.py\n",
                    "train.py": "import accelerate\n"}),
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_version: 1\nparallelism_config:\n"
                                "  parallelism_config_dp_shard_size: 2\n"}),
        # must not flag
        Case(files={"run.sh": "accelerate launch --use_fsdp --use_parallelism_config train.py\n",
                    "train.py": "import accelerate\n"}, flags=False),
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_version: 2\nparallelism_config:\n"
                                "  parallelism_config_dp_shard_size: 2\n"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        launch = setup.extra.get("launch")
        if launch is not None and launch.launcher == "accelerate":
            upc = launch.launcher_arg("use_parallelism_config")
            if upc is not None and launch.launcher_arg("use_fsdp") is None:
                yield self.diagnostic(upc.name_span, "--use_parallelism_config without --use_fsdp on the command line: "
                                                     "accelerate launch checks the flags before reading the config "
                                                     "file and refuses")
                return
        acc = _fsdp(setup)
        if acc is None or fsdp_version(acc) != 1:
            return
        pc = acc.node("parallelism_config")
        if pc is None or not pc.is_mapping:
            return
        total = 1
        for size in PC_SIZES:
            n = acc.value(f"parallelism_config.parallelism_config_{size}") or acc.value(f"parallelism_config.{size}")
            if n is not None and isinstance(n.value, int) and not isinstance(n.value, bool) and n.value > 0:
                total *= n.value
        if total <= 1 or pc.key_span is None:
            return
        yield self.diagnostic(pc.key_span, f"parallelism_config over {total} processes with FSDP version 1: "
                                           f"accelerate raises (ParallelismConfig needs FSDP2, multi-GPU or DeepSpeed)")

