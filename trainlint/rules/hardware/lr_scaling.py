"""TL502 lr-not-scaled."""

from __future__ import annotations

import math
from typing import Iterable, Literal


from trainlint.diagnostics import Diagnostic, Severity
from trainlint.fixing.python_edits import add_keyword, python_literal
from trainlint.record import Row
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule, RuleOptions, option
from trainlint.setup import ArgsSite, Setup

# TrainingArguments defaults (unchanged from 4.40 to 5.24)
DEFAULT_LR = 5e-5
DEFAULT_BATCH = 8
DEFAULT_ACCUM = 1


class LrScalingOptions(RuleOptions):

    rule: Literal["sqrt", "linear"] = option(
        "sqrt", description="how the learning rate should follow the effective batch size "
                            "(sqrt suits Adam-family optimizers, linear suits SGD)")
    reference_batch_size: int | None = option(
        None, ge=1, alias="reference-batch-size",
        description="a known-good effective batch size (per-device x accumulation x GPUs)")
    reference_learning_rate: float | None = option(
        None, gt=0, alias="reference-learning-rate", description="the learning rate tuned for that batch size")
    tolerance: float = option(0.01, ge=0, description="relative difference under which two learning rates are equal")


class BatchLr(Row):  # a row (trainlint.record): cheaper to define than a NamedTuple
    """The batch size terms and learning rate of one TrainingArguments site."""

    __slots__ = ()
    _fields = ("per_device", "accum", "world", "lr", "where")
    per_device: int
    accum: int
    world: int
    lr: float
    where: str

    def __new__(_cls, per_device: int, accum: int, world: int, lr: float, where: str) -> BatchLr:
        return tuple.__new__(_cls, (per_device, accum, world, lr, where))

    @property
    def effective(self) -> int:
        return self.per_device * self.accum * self.world

    def formula(self) -> str:
        parts = [f"{self.per_device} per device"]
        if self.accum != 1:
            parts.append(f"{self.accum} accumulation steps")
        parts.append(f"{self.world} GPU{'s' if self.world != 1 else ''}")
        return f"{self.effective} ({' x '.join(parts)})"


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def batch_lr(site: ArgsSite, world: int, where: str) -> BatchLr | None:
    """The effective batch and learning rate of a site; None if any part is unknown."""
    def get(name, default):
        v = site.get(name)
        if v is None:
            return None if site.open_ended else default
        return v.value if v.known else None

    per_device = _int(get("per_device_train_batch_size", DEFAULT_BATCH))
    accum = _int(get("gradient_accumulation_steps", DEFAULT_ACCUM))
    lr = get("learning_rate", DEFAULT_LR)
    if per_device is None or accum is None or not isinstance(lr, (int, float)) or isinstance(lr, bool) or lr <= 0:
        return None
    return BatchLr(per_device, accum, world, float(lr), where)


def _written(setup: Setup, span) -> str | None:
    """The text at ``span`` in a script of the setup (how the file writes the number)."""
    pf = next((s for s in setup.scripts if s.path == span.path), None)
    if pf is None or span.line != span.end_line or span.line > len(pf.lines):
        return None
    return pf.lines[span.line - 1][span.column - 1:span.end_column - 1]


def _round(x: float) -> float:
    return float(f"{x:.3g}")


class LrNotScaled(Rule):
    """
    ## What it does
    Flags a change of the effective batch size (per-device batch x gradient accumulation x
    number of GPUs) that left the learning rate where it was. The reference is the same setup
    at the git revision `--base` (default `HEAD`, which is exactly what a pre-commit hook sees:
    the staged file against the last commit), or a known-good pair set in the configuration:

    ```toml
    [tool.trainlint.lr-not-scaled]
    reference-batch-size = 32
    reference-learning-rate = 2e-5
    rule = "sqrt"   # or "linear"
    ```

    The number of GPUs comes from the launch line (`--nproc_per_node`, `--num_processes`,
    `num_processes` in an accelerate config) or `--gpus`.

    ## Why is this bad?
    A learning rate is tuned for a batch size. With a larger batch each step averages more
    examples, the gradient noise drops and there are fewer steps per epoch, so the same
    learning rate trains more slowly (a smaller batch with the same rate can diverge). The
    usual heuristics scale the rate with the batch: by the square root for Adam-family
    optimizers, linearly for SGD (Goyal et al., 2017).

    ## Example
    ```python
    # committed: per_device_train_batch_size=8, learning_rate=2e-5
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=32, learning_rate=2e-5)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=32, learning_rate=4e-5)
    ```

    ## Fix safety
    Unsafe: it changes the training dynamics. The scaled value is a starting point for tuning,
    not a guarantee.

    ## Options
    See above: `rule`, `reference-batch-size`, `reference-learning-rate`, `tolerance`.

    ## References
    - Goyal et al., "Accurate, Large Minibatch SGD" (linear scaling), arXiv:1706.02677
    - Malladi et al., "On the SDEs and Scaling Rules for Adaptive Gradient Algorithms" (sqrt
      scaling for Adam), arXiv:2205.10287
    """

    code = "TL502"
    name = "lr-not-scaled"
    severity = Severity.WARNING
    triggers = DEEPSPEED_NAMES
    needs_training = True
    fix_safety = "unsafe"
    summary = "the effective batch size changed but the learning rate did not"
    Options = LrScalingOptions

    cases = [
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", per_device_train_batch_size=32, learning_rate=2e-5)
            """,
            git_base={"train.py": "from transformers import TrainingArguments\n"
                                  "args = TrainingArguments(output_dir='o', per_device_train_batch_size=8, learning_rate=2e-5)\n"},
            unsafe=True,
            fixed=("from transformers import TrainingArguments\n"
                   'args = TrainingArguments(output_dir="o", per_device_train_batch_size=32, learning_rate=4e-5)\n'),
        ),
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", per_device_train_batch_size=8, learning_rate=2e-5)
            """,
            options={"gpus": 4},
            rule_options={"reference-batch-size": 8, "reference-learning-rate": 2e-5, "rule": "linear"},
            note="4 GPUs: effective batch 32 against the configured reference 8",
        ),
        Case(
            files={"run.sh": "torchrun --nproc_per_node 4 run.py \\\n  --per_device_train_batch_size 8 \\\n"
                             "  --learning_rate 2e-5\n",
                   "run.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                             "parser = HfArgumentParser((TrainingArguments,))\n"},
            git_base={"run.sh": "torchrun --nproc_per_node 1 run.py \\\n  --per_device_train_batch_size 8 \\\n"
                                "  --learning_rate 2e-5\n",
                      "run.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                                "parser = HfArgumentParser((TrainingArguments,))\n"},
            unsafe=True, fixed_path="run.sh",
            fixed="torchrun --nproc_per_node 4 run.py \\\n  --per_device_train_batch_size 8 \\\n  --learning_rate 4e-5\n",
            note="world size 1 -> 4 on the launch line, learning rate unchanged",
        ),
        # must not flag
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", per_device_train_batch_size=32, learning_rate=4e-5)
            """,
            git_base={"train.py": "from transformers import TrainingArguments\n"
                                  "args = TrainingArguments(output_dir='o', per_device_train_batch_size=8, learning_rate=2e-5)\n"},
            flags=False, note="the learning rate was changed too",
        ),
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", per_device_train_batch_size=16, gradient_accumulation_steps=2)
            """,
            git_base={"train.py": "from transformers import TrainingArguments\n"
                                  "args = TrainingArguments(output_dir='o', per_device_train_batch_size=32)\n"},
            flags=False, note="same effective batch (16 x 2 = 32)",
        ),
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", per_device_train_batch_size=32, learning_rate=2e-5)
            """,
            flags=False, note="no reference: not in git, nothing configured",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        opts: LrScalingOptions = self.options  # type: ignore[assignment]
        world = setup.world_size_value or 1
        for site in setup.sites:
            current = batch_lr(site, world, "here")
            if current is None:
                continue
            reference = self._reference(site, setup, world, opts)
            if reference is None or reference.effective == current.effective:
                continue
            if abs(current.lr - reference.lr) > opts.tolerance * reference.lr:
                continue  # the learning rate was changed: the user took care of it
            ratio = current.effective / reference.effective
            factor = math.sqrt(ratio) if opts.rule == "sqrt" else ratio
            suggested = _round(reference.lr * factor)
            rule_text = "square-root" if opts.rule == "sqrt" else "linear"
            message = (f"effective batch size changed from {reference.formula()} at {reference.where} to "
                       f"{current.formula()}, but learning_rate stayed {python_literal(current.lr)}; with the "
                       f"{rule_text} rule it would be about {python_literal(suggested)}")
            lr_v = site.get("learning_rate")
            bs_v = site.get("per_device_train_batch_size")
            anchor = lr_v if lr_v is not None else bs_v
            span = (anchor.span or anchor.key_span) if anchor is not None else site.span
            if span is None:
                continue
            edits = None
            if lr_v is not None and lr_v.edit_span() is not None:
                text = python_literal(suggested, like=_written(setup, lr_v.edit_span()))
                edits = [lr_v.edit_span().edit(text)]  # type: ignore[union-attr]
            elif lr_v is None and site.call is not None:
                pf = next((s for s in setup.scripts if s.path == site.path), None)
                if pf is not None:
                    edits = [add_keyword(pf, site.call.site.node, f"learning_rate={python_literal(suggested)}")]
            yield self.diagnostic(span, message, edits=edits,
                                  fix_message=f"set learning_rate to {python_literal(suggested)}")

    def _reference(self, site: ArgsSite, setup: Setup, world: int, opts: LrScalingOptions) -> BatchLr | None:
        """The configured reference pair, else the same site in the file at ``--base``."""
        if opts.reference_batch_size and opts.reference_learning_rate:
            return BatchLr(opts.reference_batch_size, 1, 1, opts.reference_learning_rate, "the configured reference")
        pf = next((s for s in setup.scripts if s.path == site.path), None)
        if site.call is None:
            # launch-line flags or an args file: the same file at the base revision
            from trainlint.linking import site_at_revision

            found = site_at_revision(setup, site, self.settings.base)
            if found is None:
                return None
            base_site, base_world = found
            return batch_lr(base_site, base_world or world, self.settings.base)
        if pf is None:
            return None
        from trainlint.sources.python import parse_python
        from trainlint.vcs import read_at_revision

        rev = self.settings.base
        text = read_at_revision(site.path, rev)
        try:
            if text is not None and site.path.endswith(".ipynb"):  # the notebook's program then
                from trainlint.sources.errors import ReadError
                from trainlint.sources.notebook import python_program

                try:
                    text = python_program(site.path, text)
                except ReadError:
                    return None
            if text is None or text == pf.text:
                return None
            base = parse_python(site.path, text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        # pair the site with the one at the same position among calls of the same class
        # (by the call: a launch line may have replaced the site by a copy with its flag values)
        index = next((i for i, s in enumerate(s for s in pf.sites if s.class_name == site.class_name)
                      if s.call is site.call), None)
        if index is None:
            return None
        same = [s for s in base.sites if s.class_name == site.class_name]
        if index >= len(same):
            return None
        return batch_lr(same[index], world, rev)
