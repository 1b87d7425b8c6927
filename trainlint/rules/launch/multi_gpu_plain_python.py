"""TL406 multi-gpu-plain-python: several GPUs driven by one plain python process (DataParallel)"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup


class MultiGpuPlainPython(Rule):
    """
    ## What it does
    Flags a launch line that runs a Trainer script with plain `python` when the setup has more
    than one GPU (`CUDA_VISIBLE_DEVICES` on the line lists several, or `--gpus N`), with or
    without a DeepSpeed config.

    ## Why is this bad?
    One process sees all the GPUs and the Trainer falls back to `torch.nn.DataParallel`: one
    Python process driving every GPU, bound by the GIL, with the outputs gathered on GPU 0
    (unbalanced memory); DistributedDataParallel through a launcher is faster. With a
    DeepSpeed config (`--deepspeed ds.json`) it is worse: DeepSpeed initialises a world of one
    process, so the run trains on a single GPU while the others idle (LLaMA-Factory refuses
    this launch and asks for `torchrun`).

    ## Example
    ```bash
    CUDA_VISIBLE_DEVICES=0,1,2,3 python train.py --output_dir out
    ```

    ## Use instead
    ```bash
    CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node 4 train.py --output_dir out
    ```

    ## Fix safety
    Safe: the global batch stays per-device batch x number of GPUs. The fix replaces `python`
    by `torchrun --nproc_per_node N`.

    ## References
    - transformers `trainer.py` (`args.n_gpu > 1` wraps the model in `nn.DataParallel`)
    - https://pytorch.org/docs/stable/notes/cuda.html#use-nn-parallel-distributeddataparallel-instead-of-multiprocessing-or-nn-dataparallel
    - LLaMA-Factory `hparams/parser.py` (DeepSpeed needs a distributed launch)
    """

    code = "TL406"
    name = "multi-gpu-plain-python"
    severity = Severity.WARNING
    triggers = LAUNCH_NAMES
    python_alone = False  # reads only a launch line, which a file gives
    fix_safety = "safe"
    summary = "several GPUs driven by one plain python process (DataParallel)"
    cases = [
        Case(files={"run.sh": "CUDA_VISIBLE_DEVICES=0,1 python train.py --output_dir out\n",
                    "train.py": "from transformers import Trainer\n"},
             fixed="CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 train.py --output_dir out\n",
             fixed_path="run.sh"),
        Case(files={"run.sh": "python train.py --output_dir out\n", "train.py": "from transformers import Trainer\n"},
             options={"gpus": 4}),
        Case(files={"run.sh": "CUDA_VISIBLE_DEVICES=0,1,2,3 python train.py --deepspeed ds.json\n",
                    "train.py": "from transformers import Trainer\n", "ds.json": '{"train_batch_size": "auto"}\n'},
             note="DeepSpeed under one process"),
        Case(files={"run.sh": "python train.py --output_dir out\n", "train.py": "from transformers import Trainer\n"},
             flags=False),
        Case(files={"run.sh": "CUDA_VISIBLE_DEVICES=0,1 deepspeed train.py --deepspeed ds.json\n",
                    "train.py": "from transformers import Trainer\n", "ds.json": '{"train_batch_size": "auto"}\n'},
             flags=False),
        Case(files={"run.sh": "CUDA_VISIBLE_DEVICES=0 python train.py\n", "train.py": "from transformers import Trainer\n"},
             flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        launch = setup.extra.get("launch")
        if launch is None or launch.launcher != "python" or launch.script is None or not setup.scripts:
            return
        ds = setup.extra.get("deepspeed")
        if not any(pf.trainer_calls or pf.args_calls for pf in setup.scripts) and \
                not any("Trainer" in pf.text for pf in setup.scripts):
            return
        cvd = launch.env.get("CUDA_VISIBLE_DEVICES")
        n = None
        source = ""
        if cvd is not None and cvd.value is not None:
            n = len([x for x in cvd.value.split(",") if x.strip()])
            source = f"CUDA_VISIBLE_DEVICES={cvd.value}"
        elif setup.world_size is not None and isinstance(setup.world_size.value, int):
            n = setup.world_size.value
            source = f"--gpus {n}"
        if n is None or n < 2:
            return
        span = launch.launcher_span
        edits = [span.edit(f"torchrun --nproc_per_node {n}")] if span.line == span.end_line else None
        if ds is not None:
            message = (f"plain python with a DeepSpeed config and {n} GPUs ({source}): DeepSpeed starts a world of "
                       f"one process, which trains on one GPU; launch with torchrun --nproc_per_node {n} (or "
                       f"deepspeed --num_gpus {n}, accelerate launch)")
        else:
            message = (f"plain python with {n} GPUs ({source}): the Trainer falls back to nn.DataParallel in one "
                       f"process; launch with torchrun --nproc_per_node {n} (or accelerate launch) for "
                       f"DistributedDataParallel")
        yield self.diagnostic(span, message,
                              edits=edits, fix_message=f"launch with torchrun --nproc_per_node {n}")

