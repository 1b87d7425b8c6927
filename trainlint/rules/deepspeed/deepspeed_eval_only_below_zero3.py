"""TL316 deepspeed-eval-only-below-zero3: evaluation-only Trainer run with a ZeRO stage below 3"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_models import (
    ds_used_by_trainer,
    method_calls,
    uses_hf_trainer,
)
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_setup_common import (
    _ds,
    _stage,
)
from trainlint.setup import Setup


def where_node_span(span) -> str:
    from pathlib import Path

    return f"{Path(span.path).name}:{span.line}"



class EvalOnlyLowStage(Rule):
    """
    ## What it does
    Flags a Trainer script that only evaluates or predicts (`trainer.evaluate()` /
    `trainer.predict()`, no `trainer.train()` anywhere) with a DeepSpeed config whose ZeRO stage
    is below 3.

    ## Why is this bad?
    Evaluating without training makes the Trainer start DeepSpeed in inference mode
    (`deepspeed_init(..., inference=True)`), which raises "ZeRO inference only makes sense with
    ZeRO Stage 3 - please adjust your config".

    ## Example
    ```python
    args = TrainingArguments(output_dir="o", deepspeed="ds_zero2.json")
    Trainer(model=model, args=args, eval_dataset=ds).evaluate()
    ```

    ## Use instead
    A ZeRO-3 config for evaluation, or no DeepSpeed config.

    ## Fix safety
    No fix.

    ## References
    - transformers `integrations/deepspeed.py` (`deepspeed_init`), `trainer.py` (`evaluation_loop`)
    """

    code = "TL316"
    name = "deepspeed-eval-only-below-zero3"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    needs_training = True
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    summary = "evaluation-only Trainer run with a ZeRO stage below 3"

    EVAL = ("from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
            "model = AutoModelForCausalLM.from_pretrained('m')\n"
            "args = TrainingArguments(output_dir='o', deepspeed='ds.json')\n"
            "trainer = Trainer(model=model, args=args)\nprint(trainer.evaluate())\n")
    cases = [
        Case(files={"train.py": EVAL, "ds.json": '{"zero_optimization": {"stage": 2},'
                                                 ' "train_micro_batch_size_per_gpu": "auto"}\n'}),
        # must not flag
        Case(files={"train.py": EVAL, "ds.json": '{"zero_optimization": {"stage": 3},'
                                                 ' "train_micro_batch_size_per_gpu": "auto"}\n'}, flags=False),
        Case(files={"train.py": EVAL + "trainer.train()\n",
                    "ds.json": '{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": "auto"}\n'},
             flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None or not uses_hf_trainer(setup) or not ds_used_by_trainer(setup):
            return
        stage = _stage(cfg)
        if stage is None or stage >= 3:
            return
        if method_calls(setup, "train"):
            return
        evals = method_calls(setup, "evaluate", "predict")
        if not evals:
            return
        pf, call = evals[0]
        span = cfg.stage.span if cfg.stage is not None and cfg.stage.span is not None else cfg.root.span
        yield self.diagnostic(pf.span(call), f"the script only evaluates, with ZeRO stage {stage} ({where_node_span(span)}): "
                                             f"the Trainer starts DeepSpeed for inference, which raises \"ZeRO "
                                             f"inference only makes sense with ZeRO Stage 3\"",
                              related=[span.related("the ZeRO stage is set here")])

