"""TL308 deepspeed-offload-not-needed: ZeRO offload although the model states fit on the GPU"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._context import run_context
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_setup_common import (
    _ds,
    _stage,
    _trainer_script,
)
from trainlint.setup import Setup


class OffloadNotNeeded(Rule):
    """
    ## What it does
    Flags ZeRO CPU/NVMe offload (`offload_optimizer`, `offload_param`) when the memory estimate
    says the model states (16-bit weights, gradients, fp32 master weights and Adam states) fit
    on the target GPU without offload, using at most half of its memory. It needs the model
    (from the model table or a local `config.json`) and the target GPU (`--gpu`). The figure is
    the one `trainlint estimate` prints and `estimated-oom` (TL550) judges (the setup's model,
    precision, optimizer, trainable parameters and ZeRO stage), with the offload switched off;
    an input no file states keeps its default (one GPU when the world size is not known) rather
    than its cheapest reading, so the rule errs towards silence. A 4/8-bit model is not judged.

    ## Why is this bad?
    Offload moves optimizer states (and with `offload_param` the weights) to host memory and
    runs the optimizer step on the CPU: every step pays PCIe transfers and a CPU Adam. The
    DeepSpeed guide: "If you have enough GPU memory make sure you disable CPU/NVMe offload to
    make everything faster".

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
    ```
    for flan-t5-large (0.8B parameters) on an A100-80GB.

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "none"}}}
    ```

    ## Fix safety
    Unsafe: the numerics are the same, but the run then needs the GPU memory the estimate
    computed; activations (batch size, sequence length) are not part of the comparison.

    ## References
    - https://huggingface.co/docs/transformers/deepspeed (ZeRO-Offload; "disable CPU/NVMe offload")
    - DeepSpeed `estimate_zero2_model_states_mem_needs` / `estimate_zero3_model_states_mem_needs`
    """

    code = "TL308"
    needs = ("gpu",)  # every finding is about the target GPU, which only --gpu gives
    name = "deepspeed-offload-not-needed"
    severity = Severity.INFO
    triggers = DEEPSPEED_NAMES
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    fix_safety = "unsafe"
    summary = "ZeRO offload although the model states fit on the GPU"

    DS = ('{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": true}},'
          ' "train_micro_batch_size_per_gpu": "auto"}\n')
    cases = [
        Case(files={"train.py": _trainer_script("'google/flan-t5-large'"), "ds.json": DS}, options={"gpu": "A100"},
             unsafe=True, fixed_path="ds.json",
             fixed='{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "none", "pin_memory": true}},'
                   ' "train_micro_batch_size_per_gpu": "auto"}\n'),
        # must not flag
        Case(files={"train.py": _trainer_script("'meta-llama/Llama-2-7b-hf'"), "ds.json": DS}, options={"gpu": "A100"},
             flags=False, note="7B: 20 B x 6.7e9 = 125 GiB of model states on one GPU"),
        Case(files={"train.py": _trainer_script("'google/flan-t5-large'"), "ds.json": DS}, flags=False,
             note="no target GPU"),
        Case(files={"train.py": _trainer_script("'my/unknown-model'"), "ds.json": DS}, options={"gpu": "A100"},
             flags=False, note="model unknown"),
        Case(files={"tests/test_offload.py": _trainer_script("'google/flan-t5-large'"), "tests/ds.json": DS},
             options={"gpu": "A100"}, flags=False, note="a test that exercises offload does so on purpose"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        gpu = setup.gpu
        if cfg is None or gpu is None:
            return
        from trainlint.memory import estimate, format_bytes

        stage = _stage(cfg)
        if stage is None or stage < 1:
            return
        offloads = []
        for which in ("optimizer", "param"):
            dev = cfg.value(f"zero_optimization.offload_{which}.device")
            if dev is not None and dev.value in ("cpu", "nvme") and (which == "optimizer" or stage == 3):
                offloads.append((which, dev))
        if not offloads:
            return
        if run_context(setup).test_file is not None:
            return  # a test that exercises offload on a small model does so on purpose
        from dataclasses import replace

        from trainlint.estimate import SetupEstimate, estimate_setup

        # the one estimate `trainlint estimate` and TL550 use (same model, precision, optimizer,
        # trainable parameters, world size), read at its stated shape: an unstated input keeps
        # its default (one GPU, fp32 states), never a cheaper reading, so "fits without offload"
        # is not claimed on a guess; only the offload is switched off
        r = estimate_setup(setup)
        if not isinstance(r, SetupEstimate) or r.quantized or r.shape.zero_stage < 1:
            return
        est = estimate(replace(r.shape, offload_optimizer="none", offload_param="none"))
        states = est.model_states
        if states > gpu.memory_bytes * 0.5:
            return
        share = 100 * states / gpu.memory_bytes
        world = r.shape.world_size
        gpus = f"{world} GPU{'s' if world != 1 else ''}" if "world_size" not in r.assumed \
            else "one GPU (world size unknown)"
        related = [r.model_span.related(f"{r.model.hub_id} is loaded here")] if r.model_span is not None else []
        for which, dev in offloads:
            yield self.diagnostic(
                dev.span,  # type: ignore[arg-type]
                f"offload_{which} to {dev.value}, but without offload the model states of {r.model.hub_id} "
                f"({r.model.params / 1e9:.2f}B parameters) take about {format_bytes(states)} per GPU under "
                f"ZeRO-{stage} on {gpus}, {share:.0f}% of the {gpu.name}'s memory: offload only slows every step "
                f"(see `trainlint estimate`)",
                edits=[dev.span.edit('"none"')], fix_message=f"set offload_{which}.device to \"none\"",  # type: ignore[union-attr]
                related=related)

