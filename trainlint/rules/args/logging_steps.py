"""TL201 logging-steps-too-low."""

from __future__ import annotations

import json
from typing import Iterable


from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._context import run_context
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule, RuleOptions, option
from trainlint.setup import Setup


TA = "from transformers import TrainingArguments\n"
_BERT = ("from transformers import AutoModelForSequenceClassification, TrainingArguments\n"
         "model = AutoModelForSequenceClassification.from_pretrained('bert-base-uncased')\n")
_LLAMA = ("from transformers import AutoModelForCausalLM, TrainingArguments\n"
          "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n")


class LoggingStepsOptions(RuleOptions):

    threshold: int = option(1, ge=1, description="flag `logging_steps` values at or below this")
    fix_value: int = option(10, ge=2, alias="fix-value", description="the value the fix writes")


class LoggingStepsTooLow(Rule):
    """
    ## What it does
    Flags `logging_steps=1` (or any value at or below the configured threshold) wherever it is
    set: a `TrainingArguments`/`Seq2SeqTrainingArguments`/TRL config keyword (also through a
    constant or an unpacked dict), a `--logging_steps` flag on a launch line, or an HF args
    file.

    The severity comes from what the setup says about the run: a **warning** when evaluation
    falls back to `logging_steps` (`eval_strategy="steps"` without `eval_steps`: an evaluation
    after every step) or when steps are fast (a model under 1B parameters, or sequences of 512
    tokens or less when no model is named); **information** when steps take seconds anyway (a
    6B+ model by the model facts or the size its hub id spells out, sequences of
    2048 tokens or more, TRL `packing=True`, `gradient_accumulation_steps` of 8 or more) or
    when the step time cannot be told. It is silent in test files (`test_*.py`, `conftest.py`,
    files under `tests/`) and in short runs (`max_steps` up to 100, `num_train_epochs` below
    0.1), where logging every step is the point.

    ## Why is this bad?
    Every logging step reads the loss back from the GPU (a host-device synchronisation that
    stalls the pipeline), reduces it across all ranks on a multi-GPU run, and writes to every
    active logger (wandb, TensorBoard, ...). At one log per step this overhead is paid on every
    optimizer step. With `eval_strategy="steps"` and no `eval_steps`, evaluation falls back to
    `logging_steps`, so the model is also evaluated after every step.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", logging_steps=1)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", logging_steps=10)
    ```
    (10-50 for short runs; the library default is 500.)

    ## Fix safety
    Safe: the training computes the same thing; only how often it is logged (and evaluated)
    changes. The fix is offered only when evaluation falls back to `logging_steps`, so the run
    evaluates after every step. Otherwise per-step logs may be the author's choice (a
    tutorial's loss curve, a long recipe's) and there is no fix: the finding says what it costs.

    ## References
    - transformers `TrainingArguments.logging_steps` and `eval_steps` ("Will default to the same
      value as `logging_steps` if not set"), `src/transformers/training_args.py` (5.24.0)
    - https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments
    """

    code = "TL201"
    name = "logging-steps-too-low"
    severity = Severity.WARNING
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("logging_steps",)
    fix_safety = "safe"
    summary = "logging_steps=1 syncs and logs on every optimizer step"
    Options = LoggingStepsOptions

    cases = [
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", logging_steps=1, eval_strategy="steps")
            """,
            fixed='from transformers import TrainingArguments\n'
                  'args = TrainingArguments(output_dir="out", logging_steps=10, eval_strategy="steps")\n',
        ),
        Case(
            _BERT + "LOG_EVERY = 1\nargs = TrainingArguments(output_dir='out', logging_steps=LOG_EVERY, "
                    "eval_strategy='steps')\n",
            fixed=_BERT + "LOG_EVERY = 10\nargs = TrainingArguments(output_dir='out', logging_steps=LOG_EVERY, "
                          "eval_strategy='steps')\n",
            note="through a constant",
        ),
        Case(files={"dpo.ipynb": json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                                                        "execution_count": None, "source": [
            "from trl import DPOConfig\n",
            "args = DPOConfig(output_dir='o', model_init_kwargs=None, max_steps=200, logging_steps=1)\n"]}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5})},
             fixable=False, note="a tutorial's 200-step run (smol-course DPO notebook): per-step logs by choice"),
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", logging_steps=1)
            """,
            fixable=False, severity="info", note="the step time cannot be told: per-step logs may be the choice, no fix",
        ),
        Case(
            """
            import transformers as tf
            common = dict(output_dir="out", logging_steps=1)
            args = tf.Seq2SeqTrainingArguments(**common, predict_with_generate=True)
            """,
        ),
        Case(
            """
            from trl import SFTConfig
            cfg = {"logging_steps": 1, "output_dir": "o"}
            args = SFTConfig(**cfg)
            """,
        ),
        Case(
            """
            from transformers import TrainingArguments
            class MyArgs(TrainingArguments):
                pass
            args = MyArgs(output_dir="out", logging_steps=1)
            """,
        ),
        Case("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', logging_steps=5)\n",
             rule_options={"threshold": 5}),
        Case(_BERT + "args = TrainingArguments(output_dir='o', logging_steps=1)\n", severity="warning",
             message="109M-parameter model", note="a 110M-parameter model: steps are fast"),
        Case(TA + "args = TrainingArguments(output_dir='o', logging_steps=1, eval_strategy='steps')\n",
             severity="warning", message="evaluation falls back to logging_steps",
             note="evaluation falls back to logging_steps: every step"),
        Case(_LLAMA + "args = TrainingArguments(output_dir='o', logging_steps=1, bf16=True)\n", severity="info",
             message="6.7B-parameter model", fixable=False, note="multi-second steps of a 7B model: no fix"),
        Case(files={"recipes/sft.yaml": "model_name_or_path: meta-llama/Llama-3.1-8B\nlogging_steps: 1\n"
                                        "max_length: 32768\noutput_dir: o\n",
                    "sft.py": "from trl import SFTConfig, TrlParser\n"
                              "(args,) = TrlParser((SFTConfig,)).parse_args_and_config()\n",
                    "run.sh": "accelerate launch --num_processes 8 sft.py --config recipes/sft.yaml\n"},
             severity="info", fixable=False,
             note="a long-sequence recipe on 8 GPUs (alignment-handbook's SmolLM3 recipes): per-step logs by choice"),
        Case("from trl import SFTConfig\nargs = SFTConfig(output_dir='o', logging_steps=1, packing=True)\n",
             severity="info", message="packing=True", note="packing: long steps"),
        Case(TA + "args = TrainingArguments(output_dir='o', logging_steps=1, gradient_accumulation_steps=16)\n",
             severity="info", message="gradient_accumulation_steps=16", note="heavy accumulation"),
        Case(files={"run.sh": "python train.py --output_dir o --logging_steps 1\n",
                    "train.py": "from transformers import AutoModel, HfArgumentParser, TrainingArguments\n"
                                "model = AutoModel.from_pretrained('bert-base-uncased')\n"
                                "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"},
             severity="warning", message="109M-parameter model", note="a launch-line flag"),
        Case(files={"run.sh": "deepspeed train.py --model_name_or_path meta-llama/Llama-2-7b-hf --output_dir o "
                              "--logging_steps 1\n",
                    "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                                "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"},
             severity="info", message="6.7B-parameter model", note="the model named on the launch line"),
        Case(files={"run.sh": "torchrun train.py --model_max_length 4096 --output_dir o --logging_steps 1\n",
                    "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                                "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"},
             severity="info", message="4096-token sequences", note="a long model_max_length"),
        Case(files={"run.sh": "torchrun train.py --model_name_or_path Qwen/Qwen3-VL-30B-A3B-Instruct "
                              "--max_seq_length 512 --output_dir o --logging_steps 1\n",
                    "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                                "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"},
             severity="info", message="30.0B-parameter model",
             note="short sequences, but the model's name says 30B: not fast"),
        # must not flag
        Case(_BERT + "args = TrainingArguments(output_dir='o', logging_steps=1, max_steps=3)\n", flags=False,
             note="a 3-step smoke run: logging every step is the point"),
        Case(files={"tests/test_train.py": _BERT + "def test_train(tmp_path):\n"
                                               "    args = TrainingArguments(output_dir=str(tmp_path), logging_steps=1)\n"},
             flags=False, note="a test file"),
        Case(files={"conftest.py": TA + "ARGS = TrainingArguments(output_dir='o', logging_steps=1)\n"}, flags=False,
             note="pytest's conftest"),
        Case("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', logging_steps=50)\n",
             flags=False),
        Case("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', logging_steps=0.01)\n",
             flags=False, note="a float below 1 is a ratio of the total steps"),
        Case("from transformers import TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', logging_steps=1, logging_strategy='epoch')\n",
             flags=False, note="logging_steps is ignored unless the strategy is steps"),
        Case("from transformers import TrainingArguments\nimport sys\n"
             "args = TrainingArguments(output_dir='o', logging_steps=int(sys.argv[1]))\n",
             flags=False, note="unknown values are never guessed"),
        Case("from mylib import TrainingArguments\nargs = TrainingArguments(logging_steps=1)\n",
             flags=False, note="not the transformers class"),
        Case("def log(logging_steps=1):\n    pass\n", flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        opts: LoggingStepsOptions = self.options  # type: ignore[assignment]
        for site in setup.sites:
            v = site.get("logging_steps")
            if v is None or not v.known:
                continue
            steps = v.value
            if isinstance(steps, bool) or not isinstance(steps, (int, float)):
                continue
            if steps < 1 or steps != int(steps) or steps > opts.threshold:
                continue
            strategy = site.known("logging_strategy")
            if isinstance(strategy, str) and strategy.lower() in ("no", "epoch"):
                continue
            ctx = run_context(setup, site)
            if ctx.quiet_reason is not None:
                continue  # a test or a smoke run: logging every step is what it wants
            world = setup.world_size_value
            on = f" on {world} GPUs" if world and world > 1 else ""
            eval_strategy = site.known("eval_strategy")
            if eval_strategy is None or not isinstance(eval_strategy, str):
                eval_strategy = site.known("evaluation_strategy")
            eval_every = (isinstance(eval_strategy, str) and eval_strategy.lower() == "steps"
                          and site.get("eval_steps") is None and not site.open_ended)
            every = "every " + ("" if steps == 1 else f"{int(steps)} ") + ("optimizer step" if steps == 1 else
                                                                            "optimizer steps")
            cost = (f"each log syncs the loss from the GPU{' and across ranks' if world and world > 1 else ''} "
                    f"and writes to every logger")
            if eval_every:
                severity = Severity.WARNING
                why = (f'with eval_strategy="steps" and no eval_steps, evaluation falls back to logging_steps, so '
                       f"the model is also evaluated {every}")
            elif ctx.fast_steps is not None:
                severity = Severity.WARNING
                why = f"with {ctx.fast_steps} steps are fast, so this is a visible share of each step"
            elif ctx.heavy_steps is not None:
                severity = Severity.INFO
                why = (f"with {ctx.heavy_steps} each step takes seconds, so the cost is small; a coarser "
                       f"interval still keeps the logs readable")
            else:
                severity = Severity.INFO
                why = "it slows training when steps are fast (a small model, short sequences)"
            message = f"logging_steps={int(steps)}{on} logs {every}: {cost}; {why}"
            span = v.span or v.key_span
            edit_span = v.edit_span()
            # the fix is offered only where logging every step costs an evaluation per step; else
            # per-step logs are the author's choice (a tutorial's 200-step DPO run on a 135M model
            # in smol-course, the loss curve of a long recipe), and the fix would change what they see
            edits = [edit_span.edit(str(opts.fix_value))] if edit_span is not None and eval_every else None
            yield self.diagnostic(span, message, edits=edits, fix_message=f"set logging_steps to {opts.fix_value}",
                                  severity=severity)
