"""TL311 deepspeed-auto-outside-trainer: "auto" DeepSpeed values with deepspeed.initialize called directly"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_models import (
    qualified_calls,
    uses_hf_trainer,
)
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_setup_common import (
    _ds,
    _trainer_script,
)
from trainlint.setup import Setup


class AutoOutsideTrainer(Rule):
    """
    ## What it does
    Flags `"auto"` values in a DeepSpeed config that a script passes to `deepspeed.initialize`
    itself, without the HF Trainer (the config is linked by `--deepspeed`/`--deepspeed_config`
    on the launch line or by `deepspeed.initialize(config="...")`).

    ## Why is this bad?
    `"auto"` is a placeholder that only the HF Trainer (and accelerate) replaces; DeepSpeed reads
    the string itself and fails on it (batch-size arithmetic, its schema's integer fields). The
    guide: without the Trainer "you can't use the auto value".

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}
    ```
    with `engine, *_ = deepspeed.initialize(model=model, config="ds.json")`.

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2}}
    ```

    ## Fix safety
    No fix: the values are the script's choice.

    ## References
    - https://huggingface.co/docs/transformers/deepspeed ("auto" values need the Trainer)
    - DeepSpeed `runtime/config.py`
    """

    code = "TL311"
    name = "deepspeed-auto-outside-trainer"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    summary = "\"auto\" DeepSpeed values with deepspeed.initialize called directly"

    SCRIPT = ("import deepspeed\nfrom transformers import AutoModelForCausalLM\n"
              "model = AutoModelForCausalLM.from_pretrained('m')\n"
              "engine, opt, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),"
              " config='ds.json')\n")
    cases = [
        Case(files={"train.py": SCRIPT, "ds.json": '{"train_micro_batch_size_per_gpu": "auto",'
                                                   ' "zero_optimization": {"stage": 2}}\n'}),
        Case(files={"run.sh": "deepspeed --num_gpus 2 train.py --deepspeed_config ds.json\n",
                    "train.py": SCRIPT.replace("config='ds.json'", "args=cmd_args"),
                    "ds.json": '{"train_micro_batch_size_per_gpu": 8, "gradient_clipping": "auto",'
                               ' "zero_optimization": {"stage": 2}}\n'}),
        # must not flag
        Case(files={"train.py": SCRIPT, "ds.json": '{"train_micro_batch_size_per_gpu": 8,'
                                                   ' "zero_optimization": {"stage": 2}}\n'}, flags=False),
        Case(files={"train.py": _trainer_script(), "ds.json": '{"train_micro_batch_size_per_gpu": "auto",'
                                                              ' "zero_optimization": {"stage": 2}}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None or uses_hf_trainer(setup) or setup.sites:
            return
        inits = qualified_calls(setup, "deepspeed.initialize")
        if not inits:
            return
        autos = cfg.auto_paths()
        if not autos:
            return
        first = cfg.node(autos[0])
        pf, call = inits[0]
        shown = ", ".join(autos[:4]) + (f" and {len(autos) - 4} more" if len(autos) > 4 else "")
        yield self.diagnostic(first.span, f"\"auto\" for {shown}, but the script calls deepspeed.initialize itself: "  # type: ignore[union-attr]
                                          f"only the HF Trainer (or accelerate) fills \"auto\", DeepSpeed fails on it",
                              related=[pf.span(call).related("deepspeed.initialize is called here")])

