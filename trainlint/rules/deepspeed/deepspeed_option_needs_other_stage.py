"""TL314 deepspeed-option-needs-other-stage: partial optimizer offload outside ZeRO-3, fp16 master weights without ZeRO"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_setup_common import (
    _ds,
    _stage,
)
from trainlint.setup import Setup


class StageOnlyOption(Rule):
    """
    ## What it does
    Flags DeepSpeed options that only work with certain ZeRO stages:
    `offload_optimizer.ratio` below 1 (partial optimizer offload, ZeRO-3 only) and
    `fp16.fp16_master_weights_and_grads` without ZeRO (stage 0), and outside stage 2 for
    DeepSpeed 0.18 and older.

    ## Why is this bad?
    DeepSpeed asserts when the config is read: "Partial offloading only supported for ZeRO
    Stage 3." (`offload_ratio_check` in `runtime/zero/config.py`) and
    "Fp16_master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3." (0.19; "with
    ZeRO Stage 2 for now" in 0.16.9 to 0.18.0).

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}
    ```

    ## Fix safety
    No fix: changing the stage changes memory and communication.

    ## References
    - DeepSpeed 0.19.8 `runtime/zero/config.py` (`offload_ratio_check`), `runtime/config.py` (`_do_error_check`)
    - DeepSpeed 0.16.9 `runtime/config.py` (`_do_error_check`)
    """

    code = "TL314"
    name = "deepspeed-option-needs-other-stage"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    summary = "partial optimizer offload outside ZeRO-3, fp16 master weights without ZeRO"

    cases = [
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}\n'}),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "fp16": {"enabled": true,'
                               ' "fp16_master_weights_and_grads": true}}\n'}),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3},'
                               ' "fp16": {"enabled": true, "fp16_master_weights_and_grads": true}}\n'},
             note="warning: DeepSpeed 0.18.0 and older accept only stage 2"),
        # must not flag
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3,'
                               ' "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}\n'}, flags=False),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2},'
                               ' "fp16": {"enabled": true, "fp16_master_weights_and_grads": true}}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        stage = _stage(cfg)
        if stage is None:
            return
        ratio = cfg.value("zero_optimization.offload_optimizer.ratio")
        if ratio is not None and isinstance(ratio.value, (int, float)) and not isinstance(ratio.value, bool) \
                and ratio.value < 1 and stage != 3:
            yield self.diagnostic(ratio.span, f"offload_optimizer.ratio {ratio.value} (partial offload) with ZeRO "  # type: ignore[arg-type]
                                              f"stage {stage}: DeepSpeed asserts \"Partial offloading only supported "
                                              f"for ZeRO Stage 3\"")
        fm = cfg.value("fp16.fp16_master_weights_and_grads")
        if fm is not None and fm.value is True:
            if stage == 0:
                yield self.diagnostic(fm.span, "fp16_master_weights_and_grads without ZeRO: DeepSpeed asserts it "  # type: ignore[arg-type]
                                               "is only supported with ZeRO stage 1, 2 or 3 (only stage 2 up to 0.18)")
            elif stage != 2:
                yield self.diagnostic(fm.span, f"fp16_master_weights_and_grads with ZeRO stage {stage}: DeepSpeed "  # type: ignore[arg-type]
                                               f"0.18 and older asserts it is only supported with stage 2 (0.19 accepts "
                                               f"stages 1-3)", severity=Severity.WARNING)

