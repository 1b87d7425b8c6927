"""TL229 optimizers-conflict: Trainer(optimizers=...) with optimizer_cls_and_kwargs, or under FSDP"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    target_text,
    behaviour_holds,
    wrapper_of,
)
from trainlint.rules.args._args_checks_common import (
    V524,
    _kw_span,
    _trainer_calls,
)
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup


class OptimizersConflict(Rule):
    """
    ## What it does
    Flags `Trainer(optimizers=(optimizer, scheduler))` when the Trainer refuses a ready-made
    optimizer: together with `optimizer_cls_and_kwargs=` (transformers 4.48 and later), or in an
    FSDP run (and, before 4.46, a DeepSpeed run). FSDP/DeepSpeed are recognised as in
    `save-only-model-conflict` (TL226): `fsdp=`, `deepspeed=`, a linked config, the accelerate
    config or `accelerate launch --use_fsdp/--use_deepspeed`. `optimizers=(None, None)` (the
    default) is fine.

    ## Why is this bad?
    `Trainer.__init__` raises `RuntimeError: Passing both optimizers and
    optimizer_cls_and_kwargs arguments is incompatible`, or `RuntimeError: Passing optimizers
    is not allowed if PyTorch FSDP is enabled`: FSDP (and DeepSpeed before 4.46) must build the
    optimizer over the sharded parameters itself.

    ## Example
    ```python
    Trainer(model=model, args=args, optimizers=(AdamW(model.parameters()), None))  # fsdp=True
    ```

    ## Use instead
    ```python
    Trainer(model=model, args=args, optimizer_cls_and_kwargs=(AdamW, {"lr": 1e-4}))
    ```

    ## Fix safety
    No automatic fix: the optimizer's construction has to move into `optimizer_cls_and_kwargs`
    (or an override of `create_optimizer`).

    ## References
    - transformers `Trainer.__init__` ("Optimizer validations"; the
      DeepSpeed part until 4.45, the optimizer_cls_and_kwargs part from 4.48, read in the wheels)
    """

    code = "TL229"
    name = "optimizers-conflict"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("optimizers",)
    summary = "Trainer(optimizers=...) with optimizer_cls_and_kwargs, or under FSDP"
    cases = [
        Case("from transformers import Trainer, TrainingArguments\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', fsdp=True), optimizers=(opt, None))\n",
             options=V524),
        Case("from transformers import Trainer\n"
             "t = Trainer(model=m, args=a, optimizers=(opt, sched), optimizer_cls_and_kwargs=(AdamW, {}))\n"),
        Case("from transformers import Trainer, TrainingArguments\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', deepspeed='ds.json'), "
             "optimizers=(opt, None))\n", options={"transformers_version": "4.44.0"}, note="DeepSpeed before 4.46"),
        # must not flag
        Case("from transformers import Trainer, TrainingArguments\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', deepspeed='ds.json'), "
             "optimizers=(opt, None))\n", options=V524, flags=False, note="DeepSpeed accepts it from 4.46"),
        Case("from transformers import Trainer, TrainingArguments\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o'), optimizers=(opt, sched))\n", flags=False),
        Case("from transformers import Trainer, TrainingArguments\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', fsdp=True), optimizers=(None, None))\n",
             flags=False, note="the default value"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        wrapped = next((w for site in setup.sites if (w := wrapper_of(setup, site)) is not None), None)
        for pf, tc in _trainer_calls(setup):
            opt = tc.keywords.get("optimizers")
            if opt is None or (isinstance(opt, ast.Tuple) and all(
                    isinstance(e, ast.Constant) and e.value is None for e in opt.elts)):
                continue
            cls_kwargs = tc.keywords.get("optimizer_cls_and_kwargs")
            if cls_kwargs is not None and not (isinstance(cls_kwargs, ast.Constant) and cls_kwargs.value is None) \
                    and behaviour_holds(setup, "trainer_rejects_optimizers_with_optimizer_cls_and_kwargs"):
                yield self.diagnostic(_kw_span(pf, tc, "optimizers"), "optimizers= and optimizer_cls_and_kwargs= "
                                      "together: Trainer raises RuntimeError; keep optimizer_cls_and_kwargs")
                continue
            if wrapped is None:
                continue
            wrapper, evidence = wrapped
            if wrapper == "DeepSpeed" and not behaviour_holds(setup, "trainer_rejects_optimizers_with_deepspeed"):
                continue
            related = [evidence.span.related(f"{wrapper} is configured here")] \
                if evidence is not None and evidence.span is not None else []
            yield self.diagnostic(_kw_span(pf, tc, "optimizers"), f"optimizers= with {wrapper}: Trainer raises "
                                  f"RuntimeError ({wrapper} builds the optimizer over its sharded parameters; "
                                  f"{target_text(setup)}); pass optimizer_cls_and_kwargs= or override "
                                  f"create_optimizer", related=related)

