"""TL201 logging-steps-too-low."""

from __future__ import annotations

from typing import Iterable

from pydantic import Field

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule, RuleOptions
from trainlint.setup import Setup


class LoggingStepsOptions(RuleOptions):

    threshold: int = Field(1, ge=1, description="flag `logging_steps` values at or below this")
    fix_value: int = Field(10, ge=2, alias="fix-value", description="the value the fix writes")


class LoggingStepsTooLow(Rule):
    """
    ## What it does
    Flags `logging_steps=1` (or any value at or below the configured threshold) wherever it is
    set: a `TrainingArguments`/`Seq2SeqTrainingArguments`/TRL config keyword (also through a
    constant or an unpacked dict), a `--logging_steps` flag on a launch line, or an HF args
    file.

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
    Safe: the training computes the same thing; only how often it is logged changes.

    ## References
    - transformers `TrainingArguments.logging_steps` and `eval_steps` ("Will default to the same
      value as `logging_steps` if not set")
    - pitfalls catalog P25, A03
    """

    code = "TL201"
    name = "logging-steps-too-low"
    severity = Severity.WARNING
    triggers = SETUP_NAMES
    fix_safety = "safe"
    summary = "logging_steps=1 syncs and logs on every optimizer step"
    Options = LoggingStepsOptions

    cases = [
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", logging_steps=1)
            """,
            fixed='from transformers import TrainingArguments\nargs = TrainingArguments(output_dir="out", logging_steps=10)\n',
        ),
        Case(
            """
            from transformers import TrainingArguments as TA
            LOG_EVERY = 1
            args = TA(output_dir="out", logging_steps=LOG_EVERY)
            """,
            fixed='from transformers import TrainingArguments as TA\nLOG_EVERY = 10\nargs = TA(output_dir="out", logging_steps=LOG_EVERY)\n',
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
        # must not flag
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
            world = setup.world_size_value
            on = f" on {world} GPUs" if world and world > 1 else ""
            extra = ""
            eval_strategy = site.known("eval_strategy")
            if eval_strategy is None or not isinstance(eval_strategy, str):
                eval_strategy = site.known("evaluation_strategy")
            if isinstance(eval_strategy, str) and eval_strategy.lower() == "steps" and site.get("eval_steps") is None:
                extra = "; with eval_strategy=\"steps\" and no eval_steps it also evaluates after every step"
            message = (f"logging_steps={int(steps)}{on} logs every {'' if steps == 1 else f'{int(steps)} '}"
                       f"optimizer step{'' if steps == 1 else 's'}: each log syncs the loss from the GPU"
                       f"{' and across ranks' if world and world > 1 else ''} and writes to every logger{extra}")
            span = v.span or v.key_span
            edit_span = v.edit_span()
            edits = [edit_span.edit(str(opts.fix_value))] if edit_span is not None else None
            yield self.diagnostic(span, message, edits=edits, fix_message=f"set logging_steps to {opts.fix_value}")
