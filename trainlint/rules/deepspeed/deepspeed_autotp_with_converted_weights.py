"""TL317 deepspeed-autotp-with-converted-weights: DeepSpeed AutoTP with a MoE model whose weights transformers converts on load"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_models import (
    norm_type,
    single_model,
)
from trainlint.rules._setup_util import as_int
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_setup_common import (
    _ds,
    _stage,
    _trainer_script,
)
from trainlint.setup import Setup

# model types whose checkpoints transformers 5.24 converts while loading (MoE expert fusion,
# conversion_mapping.py), as far as the model table knows them
CONVERTED_TYPES = {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "olmoe", "minimax"}



class AutoTpWithConvertedWeights(Rule):
    """
    ## What it does
    Flags `tensor_parallel.autotp_size` above 1 with ZeRO-3 when the model is a mixture of
    experts whose checkpoint transformers 5 converts while loading (Mixtral, Qwen2-MoE,
    DeepSeek-V2/V3, ...; only models the model table or a local `config.json` identifies).

    ## Why is this bad?
    Loading such a checkpoint under ZeRO-3 applies weight conversions (expert fusion), which
    transformers 5.24 refuses with DeepSpeed tensor parallelism: NotImplementedError "Weight
    conversions (e.g., MoE expert fusion) with DeepSpeed Tensor Parallelism are not yet
    implemented".

    ## Example
    ```json
    {"zero_optimization": {"stage": 3}, "tensor_parallel": {"autotp_size": 2}}
    ```
    for `mistralai/Mixtral-8x7B-v0.1`.

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3}}
    ```

    ## Fix safety
    Unsafe: `autotp_size` becomes 1, every GPU then holds whole layers.

    ## References
    - transformers 5.24 `integrations/deepspeed.py` (`_apply_weight_conversions_to_state_dict`),
      `conversion_mapping.py`
    """

    code = "TL317"
    name = "deepspeed-autotp-with-converted-weights"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    fix_safety = "unsafe"
    summary = "DeepSpeed AutoTP with a MoE model whose weights transformers converts on load"

    DS = '{"zero_optimization": {"stage": 3}, "tensor_parallel": {"autotp_size": 2}, "train_micro_batch_size_per_gpu": "auto"}\n'
    cases = [
        Case(files={"train.py": _trainer_script("'mistralai/Mixtral-8x7B-v0.1'"), "ds.json": DS}, unsafe=True,
             fixed_path="ds.json", fixed=DS.replace('"autotp_size": 2', '"autotp_size": 1')),
        # must not flag
        Case(files={"train.py": _trainer_script("'meta-llama/Llama-2-7b-hf'"), "ds.json": DS}, flags=False),
        Case(files={"train.py": _trainer_script("'some/unknown-moe'"), "ds.json": DS}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None or _stage(cfg) != 3:
            return
        tp = cfg.value("tensor_parallel.autotp_size")
        if tp is None or as_int(tp.value) is None or as_int(tp.value) <= 1 or tp.span is None:  # type: ignore[operator]
            return
        model = single_model(setup)
        if model is None or norm_type(model.info.model_type) not in CONVERTED_TYPES:
            return
        yield self.diagnostic(tp.span, f"autotp_size {tp.value} with ZeRO-3 and {model.model_id} "
                                       f"({model.info.model_type}): transformers converts this mixture-of-experts "
                                       f"checkpoint while loading and raises NotImplementedError for weight "
                                       f"conversions with DeepSpeed tensor parallelism",
                              edits=[tp.span.edit("1")], fix_message="set autotp_size to 1",
                              related=[model.span.related(f"{model.model_id} is loaded here")])

