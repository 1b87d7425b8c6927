"""TL415 torch-distributed-launch: python -m torch.distributed.launch, the deprecated launcher"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

SCRIPT = "from transformers import Trainer\n"


class TorchDistributedLaunch(Rule):
    """
    ## What it does
    Flags a launch line that starts training with `python -m torch.distributed.launch`.

    ## Why is this bad?
    `torch.distributed.launch` is deprecated in favour of `torchrun` (PyTorch prints a
    `FutureWarning` and plans its removal). It passes `--local_rank=N` to the script as an
    argument unless `--use-env` is given, so a script that parses only its own flags fails with
    "unrecognized arguments: --local-rank", and newer PyTorch spells it `--local-rank`, which
    older scripts do not accept. `torchrun` sets the `LOCAL_RANK` environment variable instead,
    which the Trainer reads.

    ## Example
    ```bash
    python -m torch.distributed.launch --nproc_per_node 4 train.py --output_dir out
    ```

    ## Use instead
    ```bash
    torchrun --nproc_per_node 4 train.py --output_dir out
    ```

    ## Fix safety
    Unsafe: the fix writes `torchrun` (and drops `--use_env`, which torchrun does not take); a
    script that reads `--local_rank` from its own argument parser must read the `LOCAL_RANK`
    environment variable instead.

    ## References
    - https://pytorch.org/docs/stable/distributed.html#launch-utility (deprecated, use torchrun)
    - torch `distributed/launch.py` (the deprecation warning)
    """

    code = "TL415"
    name = "torch-distributed-launch"
    severity = Severity.WARNING
    fix_safety = "unsafe"
    summary = "python -m torch.distributed.launch, the deprecated launcher"
    triggers = ()
    cases = [
        Case(files={"run.sh": "python -m torch.distributed.launch --nproc_per_node 2 train.py --output_dir o\n",
                    "train.py": SCRIPT}, unsafe=True, fixed_path="run.sh",
             fixed="torchrun --nproc_per_node 2 train.py --output_dir o\n"),
        Case(files={"run.sh": "python3 -m torch.distributed.launch --use_env --nproc_per_node=2 train.py\n",
                    "train.py": SCRIPT}, unsafe=True, fixed_path="run.sh",
             fixed="torchrun --nproc_per_node=2 train.py\n"),
        Case(files={"run.sh": "torchrun --nproc_per_node 2 train.py --output_dir o\n", "train.py": SCRIPT}, flags=False),
        Case(files={"run.sh": "python -m torch.distributed.run --nproc_per_node 2 train.py\n", "train.py": SCRIPT},
             flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        launch = setup.extra.get("launch")
        if launch is None or launch.launcher != "torch.distributed.launch":
            return
        span = launch.launcher_span
        edits = [span.edit("torchrun")] if span.line == span.end_line else None
        use_env = launch.launcher_arg("use_env")
        if edits is not None and use_env is not None:
            from trainlint.sources.shell import remove_flag_edit

            try:
                edits.append(remove_flag_edit(use_env))
            except ValueError:
                edits = None
        yield self.diagnostic(span, "python -m torch.distributed.launch is deprecated: it passes --local_rank to the "
                                    "script as an argument (spelled --local-rank on newer PyTorch) instead of the "
                                    "LOCAL_RANK variable; use torchrun with the same options",
                              edits=edits, fix_message="launch with torchrun")
