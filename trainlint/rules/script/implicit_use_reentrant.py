"""TL110 implicit-use-reentrant: gradient checkpointing without an explicit use_reentrant"""

from __future__ import annotations

from typing import Iterable

from trainlint.analysis import (
    TrainerContext,
    trainer_contexts,
)
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import CHECKPOINTING_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._gradient_checkpointing_common import (
    CHECKPOINTING_WORDS,
    add_reentrant_kwarg,
    checkpointing_sources,
    peft_with_zero3,
)
from trainlint.setup import Setup


class ImplicitUseReentrant(Rule):
    """
    ## What it does
    Flags gradient checkpointing turned on (`gradient_checkpointing=True`,
    `model.gradient_checkpointing_enable()`, `prepare_model_for_kbit_training`) without saying
    `use_reentrant` in `gradient_checkpointing_kwargs`. Test files (pytest files, files under
    `tests/`) are not flagged: a test sets checkpointing up as the case it checks.

    ## Why is this bad?
    The default flipped between versions: transformers 4.x uses `{"use_reentrant": True}` when
    no kwargs are given (4.57 `modeling_utils`), 5.x uses `{"use_reentrant": False}`. The
    reentrant variant is the one behind the PEFT "does not require grad" failures (TL108) and
    the DDP "marked as ready twice" errors (TL111); PyTorch itself warns when the choice is
    left implicit. Pinning it makes the script behave the same on both major versions.

    The one exception is a PEFT model under DeepSpeed ZeRO-3: there the non-reentrant variant
    raises `torch.utils.checkpoint.CheckpointError` on the empty parameter shards, TRL's
    trainers force `use_reentrant=True`, and the rule recommends (and writes) `True`.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", gradient_checkpointing=True)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", gradient_checkpointing=True,
                             gradient_checkpointing_kwargs={"use_reentrant": False})
    ```

    ## Fix safety
    Safe: gradients are the same; memory and speed differ slightly. The fix writes
    `{"use_reentrant": False}`, or `{"use_reentrant": True}` for PEFT under ZeRO-3. It is unsafe
    when the notebook or script installs itself, or the project allows, a transformers (or, for
    `prepare_model_for_kbit_training`, a peft) older than the data can show to take
    `gradient_checkpointing_kwargs`.

    ## References
    - transformers 4.57.1 and 5.24 `modeling_utils` (checkpointing defaults)
    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/945
    - trl `trl/trainer/sft_trainer.py` (PEFT + ZeRO-3: "`use_reentrant` is forced to `True`")
    """

    code = "TL110"
    name = "implicit-use-reentrant"
    severity = Severity.INFO
    triggers = CHECKPOINTING_NAMES
    needs_training = True
    fires_on = CHECKPOINTING_WORDS
    fix_safety = "safe"
    summary = "gradient checkpointing without an explicit use_reentrant"

    cases = [
        Case(
            """
            from transformers import TrainingArguments, Trainer
            args = TrainingArguments(
                output_dir="out",
                gradient_checkpointing=True,
            )
            Trainer(model=model, args=args)
            """,
            fixed=(
                "from transformers import TrainingArguments, Trainer\n"
                "args = TrainingArguments(\n"
                '    output_dir="out",\n'
                "    gradient_checkpointing=True,\n"
                '    gradient_checkpointing_kwargs={"use_reentrant": False},\n'
                ")\n"
                "Trainer(model=model, args=args)\n"
            ),
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer
            model = AutoModelForCausalLM.from_pretrained("m")
            model.gradient_checkpointing_enable()
            Trainer(model=model, args=args)
            """,
            fixed=(
                "from transformers import AutoModelForCausalLM, Trainer\n"
                'model = AutoModelForCausalLM.from_pretrained("m")\n'
                'model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})\n'
                "Trainer(model=model, args=args)\n"
            ),
        ),
        Case(
            files={"ds_z3.json": '{"zero_optimization": {"stage": 3}}\n',
                   "train.py": (
                       "from peft import LoraConfig, get_peft_model\n"
                       "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                       "model = get_peft_model(AutoModelForCausalLM.from_pretrained('m'), LoraConfig(r=8))\n"
                       "args = TrainingArguments(output_dir='o', gradient_checkpointing=True, deepspeed='ds_z3.json')\n"
                       "Trainer(model=model, args=args).train()\n")},
            fixed=("from peft import LoraConfig, get_peft_model\n"
                   "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                   "model = get_peft_model(AutoModelForCausalLM.from_pretrained('m'), LoraConfig(r=8))\n"
                   "args = TrainingArguments(output_dir='o', gradient_checkpointing=True, deepspeed='ds_z3.json', "
                   'gradient_checkpointing_kwargs={"use_reentrant": True})\n'
                   "Trainer(model=model, args=args).train()\n"),
            message="CheckpointError", note="PEFT + ZeRO-3: use_reentrant=False raises a CheckpointError, so the advice is True",
        ),
        # must not flag
        Case(
            """
            from transformers import TrainingArguments
            GC = {"use_reentrant": True}
            args = TrainingArguments(output_dir="o", gradient_checkpointing=True, gradient_checkpointing_kwargs=GC)
            """,
            flags=False,
        ),
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", gradient_checkpointing=False)
            """,
            flags=False,
        ),
        Case(
            """
            import torch
            model.gradient_checkpointing_enable()
            for batch in loader:
                model(**batch).loss.backward()
            """,
            flags=False, note="custom loop: no Trainer, the model is not followed",
        ),
        Case(files={"tests/test_dpo_trainer.py": (
            "from trl import DPOConfig, DPOTrainer\n"
            "def test_train_with_gradient_checkpointing(tmp_path):\n"
            "    args = DPOConfig(output_dir=str(tmp_path), gradient_checkpointing=True, report_to='none')\n"
            "    DPOTrainer(model='tiny', args=args).train()\n")},
             flags=False, note="a test of checkpointing (trl's tests): pinning use_reentrant changes what it tests"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        from trainlint.rules._context import run_context

        if run_context(setup).test_file is not None:
            return  # a test sets up checkpointing as the case it checks: pinning it changes the test
        major = setup.transformers_tuple()[0]
        seen: set[tuple] = set()
        contexts = trainer_contexts(setup)
        # TrainingArguments built without a Trainer in this file still configure one
        covered = {id(s) for c in contexts for s in c.sites or []}
        extra = [TrainerContext(pf, None, None, [site]) for pf in setup.scripts  # type: ignore[arg-type]
                 for site in pf.sites if id(site) not in covered and setup.judges(site)]
        for ctx in contexts + extra:
            sources = checkpointing_sources(ctx)
            if not sources or any(s.reentrant is not None for s in sources):
                continue
            for src in sources:
                key = (src.span.path, src.span.line, src.span.column)
                if key in seen:
                    continue
                seen.add(key)
                default = "True" if major < 5 else "False"
                if peft_with_zero3(setup, ctx):
                    edits = add_reentrant_kwarg(ctx, src, True)
                    applicability, note = _kwargs_support(setup, src, edits)
                    yield self.diagnostic(
                        src.span,
                        f"gradient checkpointing without use_reentrant on a PEFT model under DeepSpeed ZeRO-3: "
                        f"the default is {default} here ({major}.x), and use_reentrant=False raises a "
                        f"CheckpointError on ZeRO-3's empty parameter shards (TRL forces True there); pin "
                        f"gradient_checkpointing_kwargs={{\"use_reentrant\": True}}{note}",
                        edits=edits, applicability=applicability,  # type: ignore[arg-type]
                        fix_message='add gradient_checkpointing_kwargs={"use_reentrant": True}')
                    continue
                edits = add_reentrant_kwarg(ctx, src)
                applicability, note = _kwargs_support(setup, src, edits)
                yield self.diagnostic(
                    src.span,
                    f"gradient checkpointing without use_reentrant: the default is True on transformers 4.x and False "
                    f"on 5.x (here {major}.x: {default}); pin gradient_checkpointing_kwargs={{\"use_reentrant\": False}}"
                    f"{note}",
                    edits=edits, applicability=applicability,  # type: ignore[arg-type]
                    fix_message='add gradient_checkpointing_kwargs={"use_reentrant": False}')


def _kwargs_support(setup: Setup, src, edits) -> tuple[str, str]:
    """(applicability, message note): the keyword the fix adds must exist in every version the
    file or its project runs on (a notebook that installs transformers 4.34 has no
    gradient_checkpointing_kwargs); versions older than the data are not vouched for."""
    if not edits:
        return "safe", ""
    from trainlint.knowledge import public_names
    from trainlint.knowledge import training_args as ta
    from trainlint.rules._versioned import older_support

    path = edits[0].path
    since = ta.history("TrainingArguments", "gradient_checkpointing_kwargs").first or ta.known_versions()[0]
    applicability, note = older_support(setup, since, "gradient_checkpointing_kwargs", path)
    if applicability == "safe" and src.via == "kbit":
        applicability, note = older_support(setup, public_names.known_versions("peft")[0],
                                            "gradient_checkpointing_kwargs", path, "peft")
    return applicability, note
