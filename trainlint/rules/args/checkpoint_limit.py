"""TL224 save-total-limit-missing."""

from __future__ import annotations

import math
from typing import Iterator


from trainlint.diagnostics import Diagnostic, Severity
from trainlint.fixing.python_edits import add_keyword
from trainlint.rules._context import run_context
from trainlint.rules._setup_models import uses_hf_trainer
from trainlint.rules._versioned import SiteRule, python_file, strategy
from trainlint.rules.base import Case, RuleOptions, option
from trainlint.setup import ArgsSite, Setup

TA = "from transformers import Trainer, TrainingArguments\n"
TR = "Trainer(model=model, args=args).train()\n"


def _trainer_runs(setup: Setup, site: ArgsSite) -> bool:
    """A Trainer (or TRL trainer) runs with the site's arguments: the setup's scripts build
    one, or a framework CLI that runs the HF Trainer reads the file (``llamafactory-cli``,
    ``trl sft``: the site's consumer names it, with no script of the project in between)."""
    if uses_hf_trainer(setup):
        return True
    consumer = getattr(site, "consumer", None)
    return (consumer is not None and getattr(consumer, "kind", "") == "library" and not setup.scripts
            and bool(getattr(consumer, "frameworks", ()) or "cli" in getattr(consumer, "via", "")))


class SaveLimitOptions(RuleOptions):

    fix_value: int = option(3, ge=1, alias="fix-value", description="the save_total_limit the fix writes")


class SaveTotalLimitMissing(SiteRule):
    """
    ## What it does
    Flags a TrainingArguments-like call (or launch line / args file) that saves checkpoints
    (`save_strategy` is `"steps"`, its default, `"epoch"` or `"best"`) without
    `save_total_limit`, when the run is long enough to leave many checkpoints: more than the
    limit the fix would write (3) by the settings (`num_train_epochs` with epoch saving,
    `max_steps` / `save_steps` with step saving), or a step-saving run whose length depends on
    the data. It is silent for test files (`test_*.py`, `conftest.py`, files under `tests/`, which
    often assert on every checkpoint) and short runs (`max_steps` up to 100), and when no
    `Trainer` (or TRL trainer) in the setup runs with the arguments: a custom loop saves what it
    saves itself.

    ## Why is this bad?
    Without a limit every checkpoint is kept. A checkpoint holds the model and, to resume, the
    optimizer state (for AdamW about twice the model again in fp32) plus scheduler and RNG
    state. With the default of one checkpoint every 500 steps, a long run of a 7B model writes
    tens of GB per checkpoint until the disk is full and the run dies while saving. With
    `load_best_model_at_end=True` the best checkpoint is always kept in addition to the most
    recent ones.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", save_strategy="steps", save_steps=500)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", save_strategy="steps", save_steps=500, save_total_limit=3)
    ```

    ## Fix safety
    Unsafe: training computes the same thing, but older checkpoints are deleted as new ones
    are written, so a checkpoint you meant to keep may be gone. The fix adds
    `save_total_limit=3` (option `fix-value`) to Python calls.

    ## References
    - transformers `TrainingArguments.save_total_limit` docstring (`src/transformers/training_args.py`, 5.24.0)
    - https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments.save_total_limit
    """

    code = "TL224"
    name = "save-total-limit-missing"
    severity = Severity.INFO
    fix_safety = "unsafe"
    summary = "checkpoints are saved without save_total_limit, so every one is kept"
    Options = SaveLimitOptions

    cases = [
        Case(TA + "args = TrainingArguments(output_dir='o', save_steps=200)\n" + TR, unsafe=True,
             fixed=TA + "args = TrainingArguments(output_dir='o', save_steps=200, save_total_limit=3)\n" + TR),
        Case(TA + "args = TrainingArguments(output_dir='o', save_strategy='epoch', num_train_epochs=10)\n" + TR),
        Case(TA + "args = TrainingArguments(output_dir='o', max_steps=20000, save_steps=1000)\n" + TR,
             message="20 checkpoints", note="20 checkpoints"),
        Case(files={"run.sh": "python run.py --output_dir o --save_strategy epoch --num_train_epochs 8\n",
                    "run.py": "from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
                              "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n" + TR}),
        Case("from trl import SFTConfig, SFTTrainer\nargs = SFTConfig(output_dir='o', max_steps=9000, save_steps=100)\n"
             "SFTTrainer(model='m', args=args, train_dataset=ds).train()\n", note="a TRL trainer"),
        # must not flag
        Case(TA + "args = TrainingArguments(output_dir='o', save_strategy='epoch')\n" + TR, flags=False,
             note="the default 3 epochs leave 3 checkpoints"),
        Case(TA + "args = TrainingArguments(output_dir='o', max_steps=1500, save_steps=500)\n" + TR, flags=False,
             note="3 checkpoints"),
        Case(TA + "args = TrainingArguments(output_dir='o', max_steps=10, save_steps=1)\n" + TR, flags=False,
             note="a smoke run"),
        Case(files={"tests/test_checkpoints.py": TA + "def test_every_checkpoint(tmp_path):\n"
                    "    args = TrainingArguments(output_dir=str(tmp_path), save_steps=1, num_train_epochs=5)\n"
                    "    Trainer(model=model, args=args).train()\n"},
             flags=False, note="a test that may assert on every checkpoint"),
        Case(TA + "args = TrainingArguments(output_dir='o', max_steps=90000, save_steps=100)\n"
             "accelerator = Accelerator()\nfor step, batch in enumerate(loader):\n    model(**batch).loss.backward()\n",
             flags=False, note="a custom loop: no Trainer writes checkpoints"),
        Case(files={"run.sh": "python run.py --output_dir o --save_strategy epoch --num_train_epochs 8\n",
                    "run.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                              "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
                              "train_loop(model, args)\n"}, flags=False,
             note="the parsed arguments feed the project's own loop"),
        Case(TA + "args = TrainingArguments(output_dir='o', save_total_limit=2)\n" + TR, flags=False),
        Case(TA + "args = TrainingArguments(output_dir='o', save_strategy='no')\n" + TR, flags=False),
        Case(TA + "import os\nargs = TrainingArguments(output_dir='o', save_strategy=os.environ['S'])\n" + TR,
             flags=False, note="unknown strategy: never guessed"),
        Case(TA + "args = TrainingArguments(output_dir='o', **load_config())\n" + TR, flags=False,
             note="the unresolved **kwargs may set the limit"),
    ]

    def site_check(self, setup: Setup, site: ArgsSite) -> Iterator[Diagnostic]:
        if site.get("save_total_limit") is not None or site.open_ended:
            return
        save = strategy(self.eff(setup, site, "save_strategy"))
        if save not in ("steps", "epoch", "best"):
            return
        if not _trainer_runs(setup, site):
            return  # no Trainer saves checkpoints here (a custom loop, or the args go elsewhere)
        ctx = run_context(setup, site)
        if ctx.quiet_reason is not None:
            return  # a test or a smoke run: it may well want every checkpoint
        limit = self.options.fix_value  # type: ignore[attr-defined]
        written = site.get("save_strategy")
        how = f'save_strategy="{save}"' + ("" if written is not None else " (the default)")
        count = self._checkpoints(setup, site, save, ctx.max_steps)
        if count is not None and count <= limit:
            return  # a handful of checkpoints: nothing to limit
        if save == "steps":
            steps = self.eff(setup, site, "save_steps")
            if isinstance(steps, (int, float)) and not isinstance(steps, bool):
                how += f", every {steps:g} steps" if steps >= 1 else f", every {steps:g} of the run"
        many = f"{count} checkpoints" if count is not None else "a checkpoint per interval for the whole run"
        span = (written.key_span or written.span) if written is not None else site.span
        if span is None:
            return
        edits = None
        if site.call is not None:
            pf = python_file(setup, site.path)
            if pf is not None:
                edits = [add_keyword(pf, site.call.site.node, f"save_total_limit={limit}")]
        yield self.diagnostic(
            span,
            f"{how} keeps every checkpoint ({many}, each with the model, optimizer and scheduler state): "
            f"long runs fill the disk; set save_total_limit",
            edits=edits, fix_message=f"add save_total_limit={limit}")

    def _checkpoints(self, setup: Setup, site: ArgsSite, save: str, max_steps: int | None) -> int | None:
        """How many checkpoints the run writes, when the settings say; None when it depends on
        the data (the number of steps per epoch)."""
        if save == "epoch":
            if max_steps is not None:
                return None
            epochs = self.eff(setup, site, "num_train_epochs")
            if isinstance(epochs, (int, float)) and not isinstance(epochs, bool) and epochs > 0:
                return math.ceil(epochs)
            return None
        if save == "steps" and max_steps is not None:
            every = self.eff(setup, site, "save_steps")
            if isinstance(every, (int, float)) and not isinstance(every, bool) and every > 0:
                return int(1 / every) if every < 1 else max_steps // int(every)
        return None
