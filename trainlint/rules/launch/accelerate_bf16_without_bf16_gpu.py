"""TL414 accelerate-bf16-without-bf16-gpu: accelerate mixed_precision bf16 on a GPU without native bf16"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import where
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.launch._accelerate_fsdp_common import (
    _acc,
)
from trainlint.setup import FLAG, Setup, Value


class AccelerateBf16WithoutBf16Gpu(Rule):
    """
    ## What it does
    Flags `mixed_precision: bf16` in an accelerate config (or `--mixed_precision bf16` on an
    `accelerate launch` line) when the target GPU (`--gpu`) has no native bf16 (pre-Ampere
    NVIDIA GPUs such as V100 and T4).

    ## Why is this bad?
    accelerate raises "bf16 mixed precision requires PyTorch >= 1.10 and a supported device"
    only when PyTorch reports no bf16 at all; current PyTorch reports emulated support on
    pre-Ampere GPUs (`torch.cuda.is_bf16_supported(including_emulation=True)`), so the run starts
    and computes bf16 without bf16 tensor cores: slower than fp16, often slower than fp32.

    ## Example
    ```yaml
    mixed_precision: bf16   # on a V100
    ```

    ## Use instead
    ```yaml
    mixed_precision: fp16
    ```

    ## Fix safety
    Unsafe: fp16 has a smaller range than bf16 (loss scaling takes care of gradients, but
    bf16-pretrained models can overflow).

    ## References
    - accelerate `accelerator.py`, `commands/launch.py` (bf16 check), `utils/imports.py`
      (`is_bf16_available`)
    - torch `cuda/__init__.py` (`is_bf16_supported`)
    """

    code = "TL414"
    needs = ("gpu",)  # every finding is about the target GPU, which only --gpu gives
    name = "accelerate-bf16-without-bf16-gpu"
    severity = Severity.WARNING
    triggers = LAUNCH_NAMES
    fires_on = ("bf16",)
    fix_safety = "unsafe"
    summary = "accelerate mixed_precision bf16 on a GPU without native bf16"

    cases = [
        Case(files={"acc.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: bf16\n"},
             options={"gpu": "V100"}, unsafe=True, fixed_path="acc.yaml",
             fixed="distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: fp16\n"),
        # must not flag
        Case(files={"acc.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: bf16\n"},
             options={"gpu": "A100"}, flags=False),
        Case(files={"acc.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: bf16\n"},
             flags=False, note="no target GPU"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        gpu = setup.gpu
        if gpu is None or gpu.bf16 or gpu.vendor != "nvidia":
            return
        launch = setup.extra.get("launch")
        v = None
        if launch is not None and launch.launcher == "accelerate":
            f = launch.launcher_arg("mixed_precision")
            if f is not None and f.value == "bf16" and f.value_span is not None:
                v = Value(value="bf16", origin=FLAG, span=f.value_span, key_span=f.name_span, name="mixed_precision")
        acc = _acc(setup)
        if v is None and acc is not None:
            mp = acc.mixed_precision
            if mp is not None and mp.value == "bf16" and mp.span is not None:
                v = mp
        if v is None:
            return
        yield self.diagnostic(v.span, f"mixed_precision bf16 ({where(v)}) on {gpu.describe()}, which has no bf16 "  # type: ignore[arg-type]
                                      f"tensor cores: PyTorch emulates bf16 there, the run is slower than with fp16",
                              edits=[v.span.edit("fp16")], fix_message="use fp16")  # type: ignore[union-attr]

