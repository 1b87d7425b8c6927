"""TL109 use-cache-with-checkpointing: gradient checkpointing with the KV cache still on"""

from __future__ import annotations

import ast

from typing import Iterable

from trainlint.analysis import (
    base_trainer_class,
    trainer_contexts,
)
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import CHECKPOINTING_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._gradient_checkpointing_common import (
    CHECKPOINTING_WORDS,
    PLAIN_TRAINERS,
    checkpointing_sources,
)
from trainlint.setup import Setup


class UseCacheWithCheckpointing(Rule):
    """
    ## What it does
    Flags gradient checkpointing on a generative model (`*ForCausalLM`, `*ForSeq2SeqLM`,
    `*ForConditionalGeneration`) trained by `Trainer`/`Seq2SeqTrainer` while the KV cache is
    left on: no `use_cache=False` at `from_pretrained` and no `model.config.use_cache = False`.
    transformers 5 sets `model.config.use_cache` from `TrainingArguments.use_cache` (default
    False), so on 5.x only an explicit `use_cache=True` there is flagged. TRL trainers turn the
    cache off themselves and are not flagged.

    ## Why is this bad?
    The cache is useless in training and incompatible with checkpointing: every forward logs
    "`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`",
    and some models failed with shape errors when it stayed on.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m")
    args = TrainingArguments(output_dir="out", gradient_checkpointing=True)  # transformers 4.x
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m")
    model.config.use_cache = False  # turn it back on for generation after training
    args = TrainingArguments(output_dir="out", gradient_checkpointing=True)
    ```

    ## Fix safety
    No automatic fix: the setting is saved with the model's config, so where to turn it back on
    for inference is the user's call.

    ## References
    - https://github.com/huggingface/transformers/issues/30320
    - https://github.com/huggingface/trl/pull/3891
    - transformers 5.24 `TrainingArguments.use_cache`, `Trainer.__init__` (`model.config.use_cache = args.use_cache`)
    """

    code = "TL109"
    name = "use-cache-with-checkpointing"
    severity = Severity.INFO
    triggers = CHECKPOINTING_NAMES
    needs_training = True
    fires_on = CHECKPOINTING_WORDS
    fix_safety = "none"
    summary = "gradient checkpointing with the KV cache still on"

    cases = [
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("opt")
            Trainer(model=model, args=TrainingArguments(output_dir="o", gradient_checkpointing=True))
            """,
            options={"transformers-version": "4.57.1"},
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("opt", use_cache=True)
            model.gradient_checkpointing_enable()
            Trainer(model=model, args=TrainingArguments(output_dir="o", use_cache=True))
            """,
            options={"transformers-version": "5.24.0"},
        ),
        Case(
            """
            from transformers import AutoConfig, AutoModelForCausalLM, Trainer, TrainingArguments
            config = AutoConfig.from_pretrained("qwen")
            config.use_cache = True
            model = AutoModelForCausalLM.from_pretrained("qwen", config=config)
            Trainer(model=model, args=TrainingArguments(output_dir="o", gradient_checkpointing=True))
            """,
            options={"transformers-version": "4.57.1"},
        ),
        # must not flag
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("opt")
            model.config.use_cache = False
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
            options={"transformers-version": "5.24.0"}, flags=False, note="5.x turns the cache off",
        ),
        Case(
            """
            from transformers import AutoConfig, AutoModelForCausalLM, Trainer, TrainingArguments
            config = AutoConfig.from_pretrained("qwen")
            config.use_cache = False
            model = AutoModelForCausalLM.from_pretrained("qwen", config=config)
            Trainer(model=model, args=TrainingArguments(output_dir="o", gradient_checkpointing=True))
            """,
            options={"transformers-version": "4.57.1"}, flags=False,
            note="the config passed to from_pretrained has the cache off (Qwen's finetune.py)",
        ),
        Case(
            """
            from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
            Trainer(model=model, args=TrainingArguments(output_dir="o", gradient_checkpointing=True))
            """,
            options={"transformers-version": "4.57.1"}, flags=False, note="an encoder has no KV cache",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        major = setup.transformers_tuple()[0]
        for ctx in trainer_contexts(setup):
            flow = ctx.flow
            if flow is None or base_trainer_class(ctx.pf, ctx.trainer) not in PLAIN_TRAINERS:
                continue
            gen = [ld for ld in flow.loads if any(k in ld.cls for k in ("CausalLM", "Seq2SeqLM", "ConditionalGeneration"))]
            if not gen:
                continue
            sources = checkpointing_sources(ctx)
            if not sources:
                continue
            pf = ctx.pf
            if any(t.endswith("config.use_cache") for _s, t, _v in flow.attr_sets):
                continue
            load_off = [ld for ld in gen if (v := ld.kw("use_cache")) is not None and v.value is not True]
            if load_off or any(_config_turns_cache_off(pf, ld) for ld in gen):
                continue
            if major >= 5:
                arg_on = [v for s in ctx.sites or [] for v in [s.get("use_cache")] if v is not None and v.value is True]
                if not arg_on:
                    continue
                where = arg_on[0].key_span or arg_on[0].span
                detail = "use_cache=True in TrainingArguments keeps the cache on"
            else:
                where = sources[0].span
                detail = f"transformers {major}.x leaves model.config.use_cache on"
            yield self.diagnostic(
                where,  # type: ignore[arg-type]
                f"gradient checkpointing with the KV cache on ({detail}): the cache is useless in training and "
                f"every forward warns and turns it off; set model.config.use_cache = False for training",
                related=[pf.span(gen[0].call).related("the model is loaded here")])


def _config_turns_cache_off(pf, ld) -> bool:
    """``config.use_cache = False`` (or ``config = AutoConfig.from_pretrained(..., use_cache=False)``)
    on the config object the load passes as ``config=`` (Qwen's finetune.py): the model is
    built with the cache off. Any other value, or a config not followed, counts as not off."""
    node = ld.nodes.get("config")
    if not isinstance(node, ast.Name):
        return False
    name = node.id
    for stmt in pf.nodes:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                if isinstance(t, ast.Attribute) and t.attr == "use_cache" and isinstance(t.value, ast.Name) \
                        and t.value.id == name and isinstance(stmt.value, ast.Constant) and stmt.value.value is False:
                    return True
            if any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets) and \
                    isinstance(stmt.value, ast.Call) and any(
                        k.arg == "use_cache" and isinstance(k.value, ast.Constant) and k.value.value is False
                        for k in stmt.value.keywords):
                return True
    return False
