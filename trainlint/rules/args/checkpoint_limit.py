"""TL224 save-total-limit-missing."""

from __future__ import annotations

from typing import Iterator

from pydantic import Field

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.fixing.python_edits import add_keyword
from trainlint.rules._versioned import SiteRule, python_file, strategy
from trainlint.rules.base import Case, RuleOptions
from trainlint.setup import ArgsSite, Setup

TA = "from transformers import TrainingArguments\n"


class SaveLimitOptions(RuleOptions):

    fix_value: int = Field(3, ge=1, alias="fix-value", description="the save_total_limit the fix writes")


class SaveTotalLimitMissing(SiteRule):
    """
    ## What it does
    Flags a TrainingArguments-like call (or launch line / args file) that saves checkpoints
    (`save_strategy` is `"steps"`, its default, `"epoch"` or `"best"`) without
    `save_total_limit`.

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
    - transformers `TrainingArguments.save_total_limit` docstring
    - pitfalls catalog P27
    """

    code = "TL224"
    name = "save-total-limit-missing"
    severity = Severity.INFO
    fix_safety = "unsafe"
    summary = "checkpoints are saved without save_total_limit, so every one is kept"
    Options = SaveLimitOptions

    cases = [
        Case(TA + "args = TrainingArguments(output_dir='o', save_steps=200)\n", unsafe=True,
             fixed=TA + "args = TrainingArguments(output_dir='o', save_steps=200, save_total_limit=3)\n"),
        Case(TA + "args = TrainingArguments(output_dir='o', save_strategy='epoch')\n"),
        Case(files={"run.sh": "python run.py --output_dir o --save_strategy epoch\n",
                    "run.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                              "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"}),
        # must not flag
        Case(TA + "args = TrainingArguments(output_dir='o', save_total_limit=2)\n", flags=False),
        Case(TA + "args = TrainingArguments(output_dir='o', save_strategy='no')\n", flags=False),
        Case(TA + "import os\nargs = TrainingArguments(output_dir='o', save_strategy=os.environ['S'])\n", flags=False,
             note="unknown strategy: never guessed"),
        Case(TA + "args = TrainingArguments(output_dir='o', **load_config())\n", flags=False,
             note="the unresolved **kwargs may set the limit"),
    ]

    def site_check(self, setup: Setup, site: ArgsSite) -> Iterator[Diagnostic]:
        if site.get("save_total_limit") is not None or site.open_ended:
            return
        save = strategy(self.eff(setup, site, "save_strategy"))
        if save not in ("steps", "epoch", "best"):
            return
        written = site.get("save_strategy")
        how = f'save_strategy="{save}"' + ("" if written is not None else " (the default)")
        if save == "steps":
            steps = self.eff(setup, site, "save_steps")
            if isinstance(steps, (int, float)) and not isinstance(steps, bool):
                how += f", every {steps:g} steps" if steps >= 1 else f", every {steps:g} of the run"
        span = (written.key_span or written.span) if written is not None else site.span
        if span is None:
            return
        edits = None
        limit = self.options.fix_value  # type: ignore[attr-defined]
        if site.call is not None:
            pf = python_file(setup, site.path)
            if pf is not None:
                edits = [add_keyword(pf, site.call.site.node, f"save_total_limit={limit}")]
        yield self.diagnostic(
            span,
            f"{how} keeps every checkpoint (model, optimizer and scheduler state each): long runs fill "
            f"the disk; set save_total_limit",
            edits=edits, fix_message=f"add save_total_limit={limit}")
