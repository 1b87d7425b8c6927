"""TL302 deepspeed-batch-size-triple: train_batch_size != micro batch x accumulation x world size (or none given)"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import as_int, located, where
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_config_common import (
    _ds,
)
from trainlint.setup import Setup


class DeepSpeedBatchTriple(Rule):
    """
    ## What it does
    Checks DeepSpeed's batch-size triple: `train_batch_size` must equal
    `train_micro_batch_size_per_gpu` x `gradient_accumulation_steps` x world size when all
    three are numbers; at least one of `train_batch_size` and `train_micro_batch_size_per_gpu`
    must be given; none may be zero or negative. The world size comes from the launch line or
    accelerate config (or `--gpus`).

    ## Why is this bad?
    DeepSpeed asserts on it when the engine starts (`_batch_assertion`,
    `_set_batch_related_parameters` in `runtime/config.py`); when only two are given it
    derives the third with an integer division, silently rounding down.

    ## Example
    ```json
    {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 2}
    ```
    on 2 GPUs (8 x 2 x 2 = 32).

    ## Use instead
    ```json
    {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 2}
    ```
    or `"auto"` for all three under the HF Trainer.

    ## Fix safety
    No automatic fix: which of the three is intended is a choice.

    ## References
    - DeepSpeed `runtime/config.py` (`_batch_assertion`)
    """

    code = "TL302"
    name = "deepspeed-batch-size-triple"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    summary = "train_batch_size != micro batch x accumulation x world size (or none given)"

    cases = [
        Case(files={"ds.json": '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8,'
                               ' "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 1}}\n'},
             options={"gpus": 2}),
        Case(files={"ds.json": '{"zero_optimization": {"stage": 2}, "gradient_accumulation_steps": 1,'
                               ' "fp16": {"enabled": true}}\n'}, note="no batch size at all"),
        Case(files={"ds.json": '{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": 0}\n'}),
        # must not flag
        Case(files={"ds.json": '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 8,'
                               ' "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 1}}\n'},
             options={"gpus": 2}, flags=False),
        Case(files={"ds.json": '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8,'
                               ' "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 1}}\n'},
             flags=False, note="world size unknown: never guessed"),
        Case(files={"ds.json": '{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",'
                               ' "zero_optimization": {"stage": 1}}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        tbs, mbs, ga = cfg.batch_triple()
        if tbs is None and mbs is None:
            span = cfg.root.span
            first = type(span)(path=span.path, line=span.line, column=span.column, end_line=span.line,
                               end_column=span.column + 1)
            yield self.diagnostic(first, "neither train_batch_size nor train_micro_batch_size_per_gpu is set: "
                                         "DeepSpeed asserts that one of them is given (use \"auto\" under the HF Trainer)")
            return
        for v in (tbs, mbs, ga):
            if v is not None and as_int(v.value) is not None and as_int(v.value) <= 0:  # type: ignore[operator]
                yield self.diagnostic(v.span, f"{v.name} is {v.value}: DeepSpeed requires a positive batch size "  # type: ignore[arg-type]
                                              f"and accumulation")
                return
        world = setup.world_size
        if tbs is None or mbs is None or ga is None or world is None:
            return
        t, m, g = as_int(tbs.value), as_int(mbs.value), as_int(ga.value)
        w = as_int(world.value)
        if None in (t, m, g, w):
            return
        if t != m * g * w:  # type: ignore[operator]
            yield self.diagnostic(
                tbs.span,  # type: ignore[arg-type]
                f"train_batch_size {t} in {where(tbs)} != micro batch {m} x accumulation {g} x {w} processes "
                f"({located(world) if world.span else world.note or 'world size'}) = {m * g * w}: "  # type: ignore[operator]
                f"DeepSpeed asserts that they agree",
                related=[x.span.related(f"{x.name} is set here") for x in (mbs, ga, world) if x.span is not None])

