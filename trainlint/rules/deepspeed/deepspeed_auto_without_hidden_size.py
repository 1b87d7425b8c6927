"""TL310 deepspeed-auto-without-hidden-size: "auto" bucket sizes for a model whose config has no hidden_size"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_models import (
    ds_used_by_trainer,
    model_facts,
    norm_type,
    single_model,
)
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_setup_common import (
    HIDDEN_KEYS,
    _ds,
    _trainer_script,
)
from trainlint.setup import Setup


class AutoWithoutHiddenSize(Rule):
    """
    ## What it does
    Flags `"auto"` for `reduce_bucket_size`, `stage3_prefetch_bucket_size` or
    `stage3_param_persistence_threshold` when the model the Trainer gets is a local checkpoint
    whose `config.json` has no `hidden_size`, `hidden_sizes` or `text_config` with one, and whose
    `model_type` has none in transformers either (attribute maps included; the list is generated
    from transformers 5.24 by `scripts/gen_model_facts.py`).

    ## Why is this bad?
    `HfTrainerDeepSpeedConfig.trainer_config_finalize` raises when `train()` starts: "The
    model's config file has neither `hidden_size` nor `hidden_sizes` entry, therefore it's not
    possible to automatically fill out the following `auto` entries".

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}}
    ```
    for a `musicgen` checkpoint.

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "reduce_bucket_size": 16777216}}
    ```

    ## Fix safety
    No fix: the integer to use depends on the model.

    ## References
    - transformers `integrations/deepspeed.py` (`trainer_config_finalize`)
    """

    code = "TL310"
    name = "deepspeed-auto-without-hidden-size"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    needs_training = True
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    summary = "\"auto\" bucket sizes for a model whose config has no hidden_size"

    CONFIG = '{"model_type": "musicgen", "decoder": {"hidden_size": 1024}}\n'
    cases = [
        Case(files={"train.py": _trainer_script("'./ckpt'"), "ckpt/config.json": CONFIG,
                    "ds.json": '{"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"},'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'}),
        # must not flag
        Case(files={"train.py": _trainer_script("'./ckpt'"),
                    "ckpt/config.json": '{"model_type": "t5", "d_model": 512, "num_layers": 2, "num_heads": 8,'
                                        ' "d_ff": 1024, "vocab_size": 100}\n',
                    "ds.json": '{"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"},'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'}, flags=False,
             note="T5Config maps hidden_size to d_model"),
        Case(files={"train.py": _trainer_script("'./ckpt'"), "ckpt/config.json": CONFIG,
                    "ds.json": '{"zero_optimization": {"stage": 3, "reduce_bucket_size": 1000000},'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None or not ds_used_by_trainer(setup):
            return
        autos = [k for k in HIDDEN_KEYS if cfg.is_auto(f"zero_optimization.{k}")]
        if not autos:
            return
        model = single_model(setup)
        if model is None or model.local_config is None:
            return
        raw = model.local_config
        mt = raw.get("model_type")
        if not isinstance(mt, str) or norm_type(mt) not in {norm_type(t) for t in model_facts()["no_hidden_size"]}:
            return
        tc = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else {}
        if any(k in raw for k in ("hidden_size", "hidden_sizes")) or any(k in tc for k in ("hidden_size", "hidden_sizes")):
            return
        v = cfg.value(f"zero_optimization.{autos[0]}")
        yield self.diagnostic(v.span, f"\"auto\" for {', '.join(autos)} needs the model's hidden size, but "  # type: ignore[union-attr,arg-type]
                                      f"{model.model_id} ({mt}) has no hidden_size or hidden_sizes in its config: "
                                      f"transformers raises when train() starts; write integers",
                              related=[model.span.related(f"{model.model_id} is loaded here")])

