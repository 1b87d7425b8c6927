"""TL309 deepspeed-hand-set-hidden-size-buckets: hand-set ZeRO-3 bucket sizes that "auto" derives from the model's hidden size"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_models import (
    ds_used_by_trainer,
)
from trainlint.rules._setup_util import as_int, where
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_setup_common import (
    HIDDEN_KEYS,
    _ds,
    _stage,
    _trainer_script,
)
from trainlint.setup import Setup


class HandSetHiddenSizeBuckets(Rule):
    """
    ## What it does
    Flags concrete numbers for the ZeRO-3 settings that transformers derives from the model's
    hidden size when they are `"auto"`: `reduce_bucket_size` (hidden²),
    `stage3_prefetch_bucket_size` (0.9·hidden²) and `stage3_param_persistence_threshold`
    (10·hidden), in a config used by the HF Trainer with ZeRO stage 3.

    ## Why is this bad?
    Numbers copied from another setup are tuned for another model: buckets much larger than
    hidden² cost GPU memory (with `overlap_comm` several times over), much smaller ones cost
    communication calls. The DeepSpeed guide's ZeRO-3 template leaves all three on `"auto"`.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "reduce_bucket_size": 500000000}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}}
    ```

    ## Fix safety
    Unsafe: the numerics are the same, the bucket sizes (memory and speed) change.

    ## References
    - transformers `integrations/deepspeed.py` (`trainer_config_finalize`)
    - https://huggingface.co/docs/transformers/deepspeed (ZeRO-3 example config)
    """

    code = "TL309"
    name = "deepspeed-hand-set-hidden-size-buckets"
    severity = Severity.INFO
    triggers = DEEPSPEED_NAMES
    needs_training = True
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    fix_safety = "unsafe"
    summary = "hand-set ZeRO-3 bucket sizes that \"auto\" derives from the model's hidden size"

    cases = [
        Case(files={"train.py": _trainer_script(),
                    "ds.json": '{"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 5e8},'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'},
             unsafe=True, fixed_path="ds.json",
             fixed='{"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": "auto"},'
                   ' "train_micro_batch_size_per_gpu": "auto"}\n'),
        # must not flag
        Case(files={"train.py": _trainer_script(),
                    "ds.json": '{"zero_optimization": {"stage": 2, "reduce_bucket_size": 5e8},'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'}, flags=False,
             note="stage 2: the guide's own template sets the buckets by hand"),
        Case(files={"ds.json": '{"zero_optimization": {"stage": 3, "reduce_bucket_size": 5e8},'
                               ' "train_micro_batch_size_per_gpu": 8}\n'}, flags=False,
             note="no HF Trainer: \"auto\" would not be filled"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None or _stage(cfg) != 3 or not ds_used_by_trainer(setup):
            return
        for key in HIDDEN_KEYS:
            v = cfg.value(f"zero_optimization.{key}")
            if v is None or v.span is None or as_int(v.value) is None:
                continue
            yield self.diagnostic(v.span, f"{key} is set by hand to {v.value} in {where(v)}: under the HF Trainer "
                                          f"\"auto\" sizes it from the model's hidden size", edits=[v.span.edit('"auto"')],
                                  fix_message=f"set {key} to \"auto\"")

