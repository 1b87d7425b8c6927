"""TL112 compile-with-checkpointing: torch.compile together with gradient checkpointing"""

from __future__ import annotations

from typing import Iterable

from trainlint.analysis import (
    trainer_contexts,
)
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import CHECKPOINTING_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._gradient_checkpointing_common import (
    _gc_related,
    checkpointing_sources,
)
from trainlint.setup import UNKNOWN, Setup


class CompileWithCheckpointing(Rule):
    """
    ## What it does
    Flags `torch.compile` (`torch_compile=True`, `torch_compile_backend`/`torch_compile_mode`
    in TrainingArguments, or `torch.compile(model)` on the trained model) together with
    gradient checkpointing.

    ## Why is this bad?
    Compiled graphs and activation recomputation have a long history of incompatibilities:
    graph breaks at every checkpointed block, recompilations, and recompute mismatches
    ("Recomputed values ... have different metadata"). Compiling the model by hand also
    bypasses the Trainer's own compile settings (accelerate's dynamo config).

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", torch_compile=True, gradient_checkpointing=True)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", torch_compile=True)  # or checkpointing without compile
    ```

    ## Fix safety
    No automatic fix: which of the two to drop depends on memory and speed.

    ## References
    - https://github.com/pytorch/pytorch/issues/97436
    - https://github.com/unslothai/unsloth-zoo/issues/1001, #1146
    - https://github.com/huggingface/transformers/issues/34656
    """

    code = "TL112"
    name = "compile-with-checkpointing"
    severity = Severity.WARNING
    triggers = CHECKPOINTING_NAMES
    needs_training = True
    fires_on = ("torch_compile", "torch_compile_backend", "torch_compile_mode", "compile")
    fix_safety = "none"
    summary = "torch.compile together with gradient checkpointing"

    cases = [
        Case(
            """
            from transformers import TrainingArguments, Trainer
            args = TrainingArguments(output_dir="o", torch_compile=True, gradient_checkpointing=True)
            Trainer(model=model, args=args)
            """,
        ),
        Case(
            """
            import torch
            from transformers import AutoModel, TrainingArguments, Trainer
            model = AutoModel.from_pretrained("m")
            model.gradient_checkpointing_enable()
            model = torch.compile(model)
            Trainer(model=model, args=TrainingArguments(output_dir="o"))
            """,
        ),
        # must not flag
        Case(
            """
            from transformers import TrainingArguments, Trainer
            Trainer(model=model, args=TrainingArguments(output_dir="o", torch_compile=True))
            """,
            flags=False,
        ),
        Case(
            """
            import torch
            model = torch.compile(model)
            model.gradient_checkpointing_enable()
            for batch in loader:
                model(**batch).loss.backward()
            """,
            flags=False, note="custom loop",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for ctx in trainer_contexts(setup):
            sources = checkpointing_sources(ctx)
            if not sources:
                continue
            found = None
            for site in ctx.sites or []:
                for k in ("torch_compile", "torch_compile_backend", "torch_compile_mode"):
                    v = site.get(k)
                    if v is not None and v.value not in (None, False, "", UNKNOWN):
                        found = (v.key_span or v.span, f"{k}={v.value!r}")
                        break
            if found is None and ctx.flow is not None:
                comp = ctx.flow.step("compile") + [c for c in ctx.flow.called("compile") if not c.receiver
                                                   or c.receiver == "torch"]  # type: ignore[operator]
                if comp:
                    node = comp[0].call if hasattr(comp[0], "call") else comp[0].site.node  # type: ignore[union-attr]
                    found = (ctx.pf.span(node), "torch.compile(model)")
            if found is None:
                continue
            yield self.diagnostic(
                found[0],  # type: ignore[arg-type]
                f"{found[1]} together with gradient checkpointing: compiled graphs break or recompile at every "
                f"checkpointed block and recomputation can mismatch; test with one of them off",
                related=_gc_related(sources))

