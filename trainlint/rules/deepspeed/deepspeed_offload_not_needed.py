"""TL308 deepspeed-offload-not-needed: ZeRO offload although the model states fit on the GPU"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_models import (
    single_model,
)
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
    (from the model table or a local `config.json`) and the target GPU (`--gpu`); the estimate
    assumes full fine-tuning in mixed precision with Adam, and one GPU when the world size is not
    known, so it errs towards silence.

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
        from trainlint.memory import estimate, format_bytes, shape_from_model

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
        model = single_model(setup)
        if model is None or not model.info.known:
            return
        world = setup.world_size_value or 1
        est = estimate(shape_from_model(model.info, zero_stage=stage, precision="bf16", world_size=world,
                                        optimizer="adamw_torch", offload_optimizer="none", offload_param="none"))
        states = est.model_states
        if states > gpu.memory_bytes * 0.5:
            return
        share = 100 * states / gpu.memory_bytes
        gpus = f"{world} GPU{'s' if world != 1 else ''}" if setup.world_size_value else "one GPU (world size unknown)"
        for which, dev in offloads:
            yield self.diagnostic(
                dev.span,  # type: ignore[arg-type]
                f"offload_{which} to {dev.value}, but without offload the model states of {model.model_id} "
                f"({model.info.params / 1e9:.2f}B parameters) take about {format_bytes(states)} per GPU under "
                f"ZeRO-{stage} on {gpus}, {share:.0f}% of the {gpu.name}'s memory: offload only slows every step",
                edits=[dev.span.edit('"none"')], fix_message=f"set offload_{which}.device to \"none\"",  # type: ignore[union-attr]
                related=[model.span.related(f"{model.model_id} is loaded here")])

