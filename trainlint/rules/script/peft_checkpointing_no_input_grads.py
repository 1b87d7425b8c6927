"""TL108 peft-checkpointing-no-input-grads: PEFT + reentrant gradient checkpointing without input grads trains no adapters"""

from __future__ import annotations

import ast
from typing import Any, Iterable

from trainlint.analysis import (
    TrainerContext,
    base_trainer_class,
    trainer_contexts,
)
from trainlint.diagnostics import Diagnostic, Edit, Severity
from trainlint.rules._triggers import CHECKPOINTING_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._gradient_checkpointing_common import (
    CHECKPOINTING_WORDS,
    PLAIN_TRAINERS,
    Source,
    add_reentrant_kwarg,
    checkpointing_sources,
    peft_with_zero3,
)
from trainlint.setup import Setup


def effective_reentrant(sources: list[Source], major: int) -> Any:
    """What the run uses: the TrainingArguments setting wins (the Trainer enables checkpointing
    again with it at train time), else the first call; implicit means the version default."""
    ordered = sorted(sources, key=lambda s: s.via != "args")
    first = ordered[0]
    if first.reentrant is None:
        return major < 5
    return first.reentrant




_EMBED = ("embed", "wte", "word_embeddings", "tok_embeddings", "shared")


def _embeddings_trained(pf, step) -> bool | None:
    """Whether the PEFT config of ``get_peft_model(model, config)`` makes the input embeddings
    trainable (``modules_to_save`` with an embedding, ``trainable_token_indices``, LoRA on the
    embedding in ``target_modules``): True, False, or None when it cannot be told
    (``modules_to_save`` read from the command line, ``**kwargs``). A config the file does not
    build (a parameter) counts as one without them, the common case."""
    call = step.call
    cfg = call.args[1] if len(call.args) >= 2 else next((k.value for k in call.keywords if k.arg == "peft_config"),
                                                        None)
    if isinstance(cfg, ast.Name):
        b = pf.binding_of(cfg.id, step.scope)
        cfg = b.value if b is not None and b.kind in ("assign", "annassign") else None
    if not isinstance(cfg, ast.Call):
        return False
    if any(k.arg is None for k in cfg.keywords):
        return None
    for kw in cfg.keywords:
        if kw.arg not in ("modules_to_save", "trainable_token_indices", "target_modules"):
            continue
        value = pf.resolve(kw.value, step.scope).value
        if value is None and isinstance(kw.value, ast.Constant):
            continue
        if kw.arg == "trainable_token_indices":
            return True
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            if kw.arg == "modules_to_save":
                return None  # from the command line (BELLE, Chinese-LLaMA-Alpaca: "embed_tokens,lm_head")
            continue
        if any(isinstance(x, str) and any(w in x for w in _EMBED) for x in value):
            return True
    return False

class PeftCheckpointingNoInputGrads(Rule):
    """
    ## What it does
    Flags a PEFT model (`get_peft_model`, `PeftModel.from_pretrained`) trained by `Trainer` /
    `Seq2SeqTrainer` with reentrant gradient checkpointing (`use_reentrant=True`, which is the
    default of transformers 4.x when `gradient_checkpointing_kwargs` is not given) and nothing
    that makes the embedding outputs require grad: no `model.enable_input_require_grads()`, no
    `prepare_model_for_kbit_training(...)`, no trainable embeddings in the PEFT config
    (`modules_to_save=["embed_tokens", ...]`, `trainable_token_indices`; a `modules_to_save`
    read from the command line counts as unknown), and checkpointing not enabled before
    `get_peft_model` (then PEFT does it). transformers 5 enables input grads itself for text
    models and defaults to `use_reentrant=False`, so the rule is silent on 5.x targets.

    ## Why is this bad?
    With PEFT, the embeddings are frozen, so the input of the first checkpointed block does not
    require grad. Reentrant checkpointing then drops the block from the graph: the backward
    fails with "element 0 of tensors does not require grad and does not have a grad_fn" or,
    worse, the LoRA weights inside checkpointed blocks silently get no gradient.

    ## Example
    ```python
    model = get_peft_model(AutoModelForCausalLM.from_pretrained("facebook/opt-350m"), lora)
    args = TrainingArguments(output_dir="out", gradient_checkpointing=True)
    ```

    ## Use instead
    ```python
    model = get_peft_model(AutoModelForCausalLM.from_pretrained("facebook/opt-350m"), lora)
    args = TrainingArguments(output_dir="out", gradient_checkpointing=True,
                             gradient_checkpointing_kwargs={"use_reentrant": False})
    ```

    ## Fix safety
    Safe: non-reentrant checkpointing computes the same gradients and does not need inputs that
    require grad. The fix adds `gradient_checkpointing_kwargs={"use_reentrant": False}` when the
    TrainingArguments call has none. Under DeepSpeed ZeRO-3 there is no fix: non-reentrant
    checkpointing raises a `CheckpointError` on ZeRO-3's empty parameter shards (TRL forces
    `use_reentrant=True` there), so the message asks for `model.enable_input_require_grads()`.

    ## References
    - https://github.com/huggingface/peft/issues/137
    - https://github.com/huggingface/transformers/issues/26334, #25846, #42489
    - transformers 4.57.1 `modeling_utils.gradient_checkpointing_enable` (`{"use_reentrant": True}` default)
    - trl `trl/trainer/sft_trainer.py` (PEFT + ZeRO-3 forces `use_reentrant=True`)
    """

    code = "TL108"
    name = "peft-checkpointing-no-input-grads"
    severity = Severity.ERROR
    triggers = CHECKPOINTING_NAMES
    needs_training = True
    fires_on = CHECKPOINTING_WORDS
    fix_safety = "safe"
    summary = "PEFT + reentrant gradient checkpointing without input grads trains no adapters"

    cases = [
        Case(
            files={"ds_z3.json": '{"zero_optimization": {"stage": 3}}\n',
                   "train.py": (
                       "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                       "from peft import get_peft_model\n"
                       "model = get_peft_model(AutoModelForCausalLM.from_pretrained('opt'), lora)\n"
                       "args = TrainingArguments(output_dir='out', gradient_checkpointing=True, deepspeed='ds_z3.json')\n"
                       "Trainer(model=model, args=args)\n")},
            options={"transformers-version": "4.57.1"}, fixable=False, message="keep use_reentrant=True",
            note="ZeRO-3: no use_reentrant=False fix (CheckpointError); enable_input_require_grads instead",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import get_peft_model
            model = get_peft_model(AutoModelForCausalLM.from_pretrained("opt"), lora)
            args = TrainingArguments(output_dir="out", gradient_checkpointing=True)
            Trainer(model=model, args=args)
            """,
            options={"transformers-version": "4.57.1"},
            fixed=(
                "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                "from peft import get_peft_model\n"
                'model = get_peft_model(AutoModelForCausalLM.from_pretrained("opt"), lora)\n'
                'args = TrainingArguments(output_dir="out", gradient_checkpointing=True, '
                'gradient_checkpointing_kwargs={"use_reentrant": False})\n'
                "Trainer(model=model, args=args)\n"
            ),
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer
            from peft import get_peft_model
            model = AutoModelForCausalLM.from_pretrained("opt")
            model = get_peft_model(model, lora)
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
            Trainer(model=model, args=args)
            """,
            options={"transformers-version": "4.57.1"},
            note="explicit reentrant, enabled after wrapping",
        ),
        # must not flag
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import get_peft_model
            model = get_peft_model(AutoModelForCausalLM.from_pretrained("opt"), lora)
            args = TrainingArguments(output_dir="out", gradient_checkpointing=True)
            Trainer(model=model, args=args)
            """,
            options={"transformers-version": "5.24.0"}, flags=False,
            note="5.x: non-reentrant by default and input grads enabled for text models",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import get_peft_model
            model = AutoModelForCausalLM.from_pretrained("opt")
            model.enable_input_require_grads()
            model = get_peft_model(model, lora)
            Trainer(model=model, args=TrainingArguments(output_dir="o", gradient_checkpointing=True))
            """,
            options={"transformers-version": "4.57.1"}, flags=False,
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import get_peft_model, prepare_model_for_kbit_training
            model = prepare_model_for_kbit_training(AutoModelForCausalLM.from_pretrained("opt", load_in_4bit=True))
            model = get_peft_model(model, lora)
            Trainer(model=model, args=TrainingArguments(output_dir="o", gradient_checkpointing=True))
            """,
            options={"transformers-version": "4.57.1"}, flags=False,
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("opt")
            Trainer(model=model, args=TrainingArguments(output_dir="o", gradient_checkpointing=True))
            """,
            options={"transformers-version": "4.57.1"}, flags=False, note="full fine-tuning",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import LoraConfig, get_peft_model
            lora = LoraConfig(target_modules=["q_proj", "v_proj"], modules_to_save=["embed_tokens", "lm_head"])
            model = get_peft_model(AutoModelForCausalLM.from_pretrained("llama"), lora)
            Trainer(model=model, args=TrainingArguments(output_dir="o", gradient_checkpointing=True))
            """,
            options={"transformers-version": "4.57.1"}, flags=False,
            note="Chinese-LLaMA-Alpaca: the embeddings are trained, their outputs require grad",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import LoraConfig, get_peft_model
            modules_to_save = args.modules_to_save.split(",")
            cfg = LoraConfig(target_modules=["q_proj"], modules_to_save=modules_to_save)
            model = get_peft_model(AutoModelForCausalLM.from_pretrained("llama"), cfg)
            Trainer(model=model, args=TrainingArguments(output_dir="o", gradient_checkpointing=True))
            """,
            options={"transformers-version": "4.57.1"}, flags=False,
            note="modules_to_save from the command line: which modules is not known",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            from peft import LoraConfig, get_peft_model
            cfg = LoraConfig(target_modules=["q_proj"], modules_to_save=["lm_head"])
            model = get_peft_model(AutoModelForCausalLM.from_pretrained("llama"), cfg)
            Trainer(model=model, args=TrainingArguments(output_dir="o", gradient_checkpointing=True))
            """,
            options={"transformers-version": "4.57.1"}, flags=True,
            note="the LM head is trained, the embeddings stay frozen",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        major = setup.transformers_tuple()[0]
        if major >= 5:
            return  # 5.x enables input grads for text models whenever checkpointing is turned on
        for ctx in trainer_contexts(setup):
            flow = ctx.flow
            if flow is None or not flow.peft_wrapped or base_trainer_class(ctx.pf, ctx.trainer) not in PLAIN_TRAINERS:
                continue
            sources = checkpointing_sources(ctx)
            if not sources or flow.called("enable_input_require_grads") or flow.step("kbit") \
                    or any(s.via == "kbit" for s in sources):
                continue
            if effective_reentrant(sources, major) is not True:
                continue
            if any(_embeddings_trained(ctx.pf, st) is not False for st in flow.step("peft")):
                continue  # trainable embeddings give inputs with grad (or it cannot be told)
            explicit = any(s.reentrant is True for s in sources)
            peft_pos = min(((s.stmt.lineno, s.stmt.col_offset) for s in flow.step("peft")), default=None)
            if peft_pos is not None and any(s.via == "call" and s.call is not None and
                                            (s.call.lineno, s.call.col_offset) < peft_pos for s in sources) \
                    and not explicit:
                continue  # enabled before wrapping: PEFT enables input grads itself
            src = sorted(sources, key=lambda s: s.via != "args")[0]
            zero3 = peft_with_zero3(setup, ctx)
            edits = None if zero3 else self._fix(ctx, src)
            how = "use_reentrant=True" if src.reentrant is True else \
                f"the transformers {major}.x default use_reentrant=True"
            yield self.diagnostic(
                src.span,
                f"gradient checkpointing with {how} on a PEFT model whose frozen embeddings give inputs "
                f"without grad: the backward fails (\"element 0 of tensors does not require grad\") or the "
                f"adapters silently get no gradient; " + (
                    "under DeepSpeed ZeRO-3 keep use_reentrant=True (False raises a CheckpointError on the "
                    "empty parameter shards) and call model.enable_input_require_grads()" if zero3 else
                    "pass gradient_checkpointing_kwargs={\"use_reentrant\": False} "
                    "or call model.enable_input_require_grads()"),
                edits=edits, fix_message='add gradient_checkpointing_kwargs={"use_reentrant": False}')

    @staticmethod
    def _fix(ctx: TrainerContext, src: Source) -> list[Edit] | None:
        if src.kwargs_written:
            return None
        return add_reentrant_kwarg(ctx, src)

