"""TL111 find-unused-parameters-with-checkpointing: ddp_find_unused_parameters=True with gradient checkpointing"""

from __future__ import annotations

from typing import Iterable

from trainlint.analysis import (
    base_trainer_class,
    site_is_closed,
    trainer_contexts,
)
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import CHECKPOINTING_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._gradient_checkpointing_common import (
    PLAIN_TRAINERS,
    _gc_related,
    checkpointing_sources,
)
from trainlint.setup import PYTHON, Setup


class FindUnusedParametersWithCheckpointing(Rule):
    """
    ## What it does
    Flags `ddp_find_unused_parameters=True` together with gradient checkpointing (error), and,
    as advice, a multi-GPU DDP run (world size above 1, no DeepSpeed/FSDP) without gradient
    checkpointing that leaves `ddp_find_unused_parameters` unset, where the Trainer turns the
    search on (info).

    ## Why is this bad?
    DDP's unused-parameter search and (reentrant) checkpointing each mark parameters ready;
    together they fail with "Expected to mark a variable ready only once ... marked as ready
    twice". The Trainer avoids the combination itself when the argument is unset; setting it to
    True forces it. Unset without checkpointing, the search runs every step: an extra traversal
    of the autograd graph that most models (all parameters used) do not need.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", gradient_checkpointing=True,
                             ddp_find_unused_parameters=True)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", gradient_checkpointing=True,
                             ddp_find_unused_parameters=False)
    ```

    ## Fix safety
    With checkpointing: safe (`False`), every parameter gets a gradient in these runs. The
    advice variant has no automatic fix: a model with really unused parameters then fails with
    "Expected to have finished reduction in the prior iteration".

    ## References
    - https://github.com/huggingface/accelerate/issues/2017, https://github.com/huggingface/peft/issues/313
    - https://github.com/huggingface/transformers/issues/23018, https://github.com/huggingface/transformers/pull/4659
    - transformers 5.24 `Trainer._build_accelerator_args` (find_unused default)
    """

    code = "TL111"
    name = "find-unused-parameters-with-checkpointing"
    severity = Severity.ERROR
    triggers = CHECKPOINTING_NAMES
    needs_training = True
    fix_safety = "safe"
    summary = "ddp_find_unused_parameters=True with gradient checkpointing"

    cases = [
        Case(
            """
            from transformers import TrainingArguments, Trainer
            args = TrainingArguments(output_dir="o", gradient_checkpointing=True, ddp_find_unused_parameters=True)
            Trainer(model=model, args=args)
            """,
            fixed=(
                "from transformers import TrainingArguments, Trainer\n"
                'args = TrainingArguments(output_dir="o", gradient_checkpointing=True, ddp_find_unused_parameters=False)\n'
                "Trainer(model=model, args=args)\n"
            ),
        ),
        Case(
            """
            from transformers import AutoModel, TrainingArguments, Trainer
            model = AutoModel.from_pretrained("m")
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
            opts = {"ddp_find_unused_parameters": True}
            Trainer(model=model, args=TrainingArguments(output_dir="o", **opts))
            """,
        ),
        Case(
            """
            from transformers import TrainingArguments, Trainer
            Trainer(model=model, args=TrainingArguments(output_dir="o"))
            """,
            options={"gpus": 8}, note="advice: the search runs every step",
        ),
        # must not flag
        Case(
            """
            from transformers import TrainingArguments, Trainer
            Trainer(model=model, args=TrainingArguments(output_dir="o", gradient_checkpointing=True))
            """,
            options={"gpus": 8}, flags=False, note="the Trainer turns the search off itself",
        ),
        Case(
            """
            from transformers import TrainingArguments, Trainer
            Trainer(model=model, args=TrainingArguments(output_dir="o"))
            """,
            flags=False, note="single process or unknown",
        ),
        Case(
            """
            from transformers import TrainingArguments, Trainer
            Trainer(model=model, args=TrainingArguments(output_dir="o", deepspeed="ds.json"))
            """,
            options={"gpus": 8}, flags=False, note="DeepSpeed does not use DDP",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for ctx in trainer_contexts(setup):
            sources = checkpointing_sources(ctx)
            for site in ctx.sites or []:
                fu = site.get("ddp_find_unused_parameters")
                if fu is not None and fu.value is True and sources:
                    span = fu.edit_span()
                    yield self.diagnostic(
                        fu.span or fu.key_span,  # type: ignore[arg-type]
                        "ddp_find_unused_parameters=True with gradient checkpointing: DDP's unused-parameter search and "
                        "checkpointing both mark parameters ready (\"marked as ready twice\"); set it to False",
                        edits=[span.edit("False" if fu.origin == PYTHON else "false")] if span is not None else None,
                        fix_message="set ddp_find_unused_parameters=False", related=_gc_related(sources))
                    continue
                n = setup.world_size_value
                if fu is None and not sources and n is not None and n > 1 and ctx.trainer is not None \
                        and site_is_closed(ctx.pf, site) \
                        and not any(site.get(k) is not None and site.get(k).value not in (None, "", False, [])
                                    for k in ("deepspeed", "fsdp")) \
                        and base_trainer_class(ctx.pf, ctx.trainer) in PLAIN_TRAINERS:
                    yield self.diagnostic(
                        site.span or ctx.pf.span(ctx.trainer.site.node),  # type: ignore[arg-type]
                        f"{n}-process DDP run with ddp_find_unused_parameters unset and no gradient checkpointing: the "
                        f"Trainer turns DDP's unused-parameter search on, an extra autograd-graph traversal every step; "
                        f"set ddp_find_unused_parameters=False if every parameter gets a gradient",
                        severity=Severity.INFO)

