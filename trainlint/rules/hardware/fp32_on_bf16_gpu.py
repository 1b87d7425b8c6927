"""TL510 fp32-on-bf16-gpu: no mixed precision anywhere on a GPU that has bf16 (fp32 training)"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from trainlint.analysis import trainer_contexts
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import effective
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

PRECISION = ("fp16", "bf16")
SCRIPT = ("from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
          "model = AutoModelForCausalLM.from_pretrained('gpt2'{dtype})\n"
          "args = TrainingArguments(output_dir='o'{extra})\n"
          "Trainer(model=model, args=args).train()\n")


def _mixed_precision_elsewhere(setup: Setup) -> bool:
    acc = setup.extra.get("accelerate")
    if acc is not None and acc.mixed_precision is not None and str(acc.mixed_precision.value).lower() in PRECISION:
        return True
    ds = setup.extra.get("deepspeed")
    if ds is not None:
        for name in PRECISION:
            v = ds.precision_enabled(name)
            if v is not None and v.value not in (False, None):
                return True  # true, or "auto" (filled from TrainingArguments, which may be set on the line)
    return False


class Fp32OnBf16Gpu(Rule):
    """
    ## What it does
    Flags a Trainer setup on a target GPU with bf16 (Ampere or newer, `--gpu`) in which nothing
    turns on mixed precision (no `bf16`/`fp16` in TrainingArguments, launch flags, args file,
    accelerate `mixed_precision` or DeepSpeed) while the model's weights are float32 (test files
    are left out: they train tiny models in fp32 on purpose): loaded with
    `dtype=torch.float32`, without a dtype on transformers 4 (float32 was the default), or
    a checkpoint stored in float32.

    ## Why is this bad?
    The run trains in full fp32: about half the matmul throughput of bf16 on these GPUs and
    twice the activation memory. LLaMA-Factory and axolotl default to or recommend bf16 on such
    hardware. It is advice: some runs need fp32 on purpose.

    ## Example
    ```python
    args = TrainingArguments(output_dir="o")            # on an A100, transformers 4.x
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="o", bf16=True)
    ```

    ## Fix safety
    No automatic fix (it changes the numerics).

    ## References
    - https://huggingface.co/docs/transformers/perf_train_gpu_one#bf16
    - LLaMA-Factory `hparams/parser.py` (bf16 recommended when supported)
    """

    code = "TL510"
    needs = ("gpu",)  # every finding is about the target GPU, which only --gpu gives
    name = "fp32-on-bf16-gpu"
    severity = Severity.INFO
    summary = "no mixed precision anywhere on a GPU that has bf16 (fp32 training)"
    triggers = SETUP_NAMES
    needs_training = True
    cases = [
        Case(SCRIPT.format(dtype="", extra=""), options={"gpu": "A100", "transformers_version": "4.57.1"}),
        Case("import torch\n" + SCRIPT.format(dtype=", dtype=torch.float32", extra=""), options={"gpu": "H100"}),
        Case(SCRIPT.format(dtype="", extra=", bf16=True"), options={"gpu": "A100", "transformers_version": "4.57.1"},
             flags=False),
        Case(SCRIPT.format(dtype="", extra=""), options={"gpu": "T4", "transformers_version": "4.57.1"}, flags=False,
             note="no bf16 on the GPU"),
        Case(SCRIPT.format(dtype="", extra=""), options={"transformers_version": "4.57.1"}, flags=False,
             note="no target GPU"),
        Case(files={"run.sh": "accelerate launch --config_file acc.yaml train.py\n",
                    "train.py": SCRIPT.format(dtype="", extra=""),
                    "acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                                "mixed_precision: bf16\nnum_processes: 2\n"},
             options={"gpu": "A100", "transformers_version": "4.57.1"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        gpu = setup.gpu
        if gpu is None:
            return
        from trainlint.knowledge.gpus import is_ampere_or_newer

        if gpu is None or not is_ampere_or_newer(gpu):
            return
        if _mixed_precision_elsewhere(setup):
            return
        major = setup.transformers_tuple()[0]
        from trainlint.rules.script.auto_dtype_half_weights import stored_dtype

        for ctx in trainer_contexts(setup):
            if ctx.flow is None or not ctx.sites or not ctx.flow.loads:
                continue
            if any(ld.quant for ld in ctx.flow.loads) or ctx.flow.step("cast"):
                continue
            if any(effective(setup, s, n) is not False for s in ctx.sites for n in PRECISION) or \
                    any(effective(setup, s, "use_cpu") is True for s in ctx.sites):
                continue
            pf = ctx.pf
            parts = Path(pf.path).parts
            if "tests" in parts or parts[-1].startswith("test_"):
                continue  # unit tests train tiny models in fp32 on purpose
            for ld in ctx.flow.loads:
                dt = ld.dtype(pf)
                if dt is None:
                    fp32 = major < 5 or stored_dtype(pf.path, ld.model_id_text()) == "float32"
                else:
                    fp32 = dt == "float32"
                if not fp32 or ld.method != "from_pretrained":
                    continue
                yield self.diagnostic(pf.span(ld.call),
                                      f"the model trains in full fp32 on {gpu.describe()}, which has bf16: no bf16/fp16 "
                                      "is set in the TrainingArguments, launch line, accelerate or DeepSpeed config; "
                                      "bf16=True roughly doubles matmul throughput and halves activation memory")
                break
            break
