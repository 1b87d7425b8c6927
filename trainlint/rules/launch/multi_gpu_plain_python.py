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
    without a DeepSpeed config. A script that spreads its model over the GPUs itself
    (`from_pretrained(..., device_map="auto")`, `"balanced"`, `"sequential"`, even under a
    condition) is naive model parallelism in one process, which is what plain `python` is for:
    the Trainer sees the model's `hf_device_map` and does not wrap it in `DataParallel`.

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
        Case(files={"run.sh": "export CUDA_VISIBLE_DEVICES=0,1\npython main.py --output_dir out --model_parallel True\n",
                    "main.py": "from transformers import AutoModel, Seq2SeqTrainer\n"
                               "if args.model_parallel:\n"
                               "    model = AutoModel.from_pretrained('m', device_map='auto')\n"
                               "else:\n    model = AutoModel.from_pretrained('m')\n"
                               "Seq2SeqTrainer(model=model)\n"},
             flags=False, note="zero_nlp's chatglm_v2_6b_lora: naive model parallelism over the two GPUs"),
        Case(files={"run.sh": "CUDA_VISIBLE_DEVICES=0,1,2 python train.py --output_dir out\n",
                    "train.py": "from transformers import AutoModelForCausalLM, Trainer\n"
                                "dm = 'balanced'\n"
                                "model = AutoModelForCausalLM.from_pretrained('m', device_map=dm)\n"
                                "Trainer(model=model)\n"},
             flags=False, note="a device map through a variable"),
        Case(files={"run.sh": "CUDA_VISIBLE_DEVICES=0,1 python train.py --output_dir out\n",
                    "train.py": "from transformers import AutoModelForCausalLM, Trainer\n"
                                "model = AutoModelForCausalLM.from_pretrained('m', device_map={'': 0})\n"
                                "Trainer(model=model)\n"},
             note="a device map that keeps the model on one GPU: DataParallel over both"),
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
        from trainlint.analysis import spreading_loads

        if any(next(spreading_loads(pf), None) for pf in setup.scripts):
            return  # naive model parallelism over the GPUs: one process is what it needs
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

