"""Gradient checkpointing combinations: TL108 peft-checkpointing-no-input-grads, TL109
use-cache-with-checkpointing, TL110 implicit-use-reentrant, TL111
find-unused-parameters-with-checkpointing, TL112 compile-with-checkpointing."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import Any, Iterable

from trainlint.analysis import (
    TrainerContext,
    base_trainer_class,
    keyword_nodes,
    site_is_closed,
    site_node,
    trainer_contexts,
    )
from trainlint.diagnostics import Diagnostic, Edit, Severity, Span
from trainlint.fixing.python_edits import add_keyword
from trainlint.rules.base import Case, Rule
from trainlint.setup import PYTHON, UNKNOWN, ArgsSite, Setup

GC_ARGS = ("gradient_checkpointing", "activation_checkpointing")
GC_KWARGS = ("gradient_checkpointing_kwargs", "activation_checkpointing_kwargs")
GC_METHODS = ("gradient_checkpointing_enable", "activation_checkpointing_enable")
PLAIN_TRAINERS = ("Trainer", "Seq2SeqTrainer")


@dataclass
class Source:
    """One place that turns gradient checkpointing on."""

    span: Span
    via: str  # args, call, kbit
    reentrant: Any  # True/False written, None when not written, UNKNOWN when not resolvable
    site: ArgsSite | None = None
    call: ast.Call | None = None
    kwargs_written: bool = False


def _reentrant_from_node(ctx: TrainerContext, node: ast.AST | None, scope) -> Any:
    if node is None:
        return None
    pf = ctx.pf
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    entries = pf.resolve_dict(node, scope)
    if entries is None:
        return UNKNOWN
    for key, _kn, vn, _s in entries:
        if key == "use_reentrant":
            v = pf.resolve(vn, scope).value
            return v if isinstance(v, bool) else UNKNOWN
    return None


def checkpointing_sources(ctx: TrainerContext) -> list[Source]:
    pf, flow = ctx.pf, ctx.flow
    out: list[Source] = []
    for site in ctx.sites or []:
        on = next((site.get(n) for n in GC_ARGS if site.get(n) is not None), None)
        if on is None or on.value is not True:
            continue
        kv = next((site.get(n) for n in GC_KWARGS if site.get(n) is not None), None)
        reentrant: Any = None
        if kv is not None:
            if kv.origin == PYTHON and site.call is not None:
                node = site_node(pf, site, kv.name)
                reentrant = _reentrant_from_node(ctx, node, site.call.site.scope)
            elif isinstance(kv.value, dict):
                reentrant = kv.value.get("use_reentrant")
            elif isinstance(kv.value, str):
                try:
                    reentrant = json.loads(kv.value).get("use_reentrant")
                except (ValueError, AttributeError):
                    reentrant = UNKNOWN
            else:
                reentrant = UNKNOWN
        elif not site_is_closed(pf, site):
            reentrant = UNKNOWN
        out.append(Source(on.key_span or on.span, "args", reentrant, site=site,  # type: ignore[arg-type]
                          kwargs_written=kv is not None))
    if flow is None:
        return out
    for c in flow.called(*GC_METHODS):
        if "." in c.receiver or not c.receiver:
            continue
        nodes = keyword_nodes(pf, c.site.node, c.site.scope)
        node = next((nodes[n] for n in GC_KWARGS if n in nodes), None)
        if node is None and c.site.node.args:
            node = c.site.node.args[0]
        open_kw = any(k.arg is None for k in c.site.node.keywords) and node is None
        out.append(Source(pf.span(c.site.node), "call",
                          UNKNOWN if open_kw else _reentrant_from_node(ctx, node, c.site.scope),
                          call=c.site.node, kwargs_written=node is not None))
    kbit_calls = [s.call for s in flow.step("kbit")] + [c.site.node for c in flow.called(
        "prepare_model_for_kbit_training", "prepare_model_for_int8_training") if not c.receiver]
    for call in kbit_calls:
        scope = next((cs.scope for cs in pf.calls if cs.node is call), pf.module_scope)
        nodes = keyword_nodes(pf, call, scope)
        if "use_gradient_checkpointing" in nodes and pf.resolve(nodes["use_gradient_checkpointing"], scope).value \
                is not True:
            continue
        node = nodes.get("gradient_checkpointing_kwargs")
        out.append(Source(pf.span(call), "kbit", _reentrant_from_node(ctx, node, scope), call=call,
                          kwargs_written=node is not None))
    return out


def effective_reentrant(sources: list[Source], major: int) -> Any:
    """What the run uses: the TrainingArguments setting wins (the Trainer enables checkpointing
    again with it at train time), else the first call; implicit means the version default."""
    ordered = sorted(sources, key=lambda s: s.via != "args")
    first = ordered[0]
    if first.reentrant is None:
        return major < 5
    return first.reentrant


def _gc_related(sources: list[Source]) -> list:
    return [sources[0].span.related("gradient checkpointing is turned on here")]


class PeftCheckpointingNoInputGrads(Rule):
    """
    ## What it does
    Flags a PEFT model (`get_peft_model`, `PeftModel.from_pretrained`) trained by `Trainer` /
    `Seq2SeqTrainer` with reentrant gradient checkpointing (`use_reentrant=True`, which is the
    default of transformers 4.x when `gradient_checkpointing_kwargs` is not given) and nothing
    that makes the embedding outputs require grad: no `model.enable_input_require_grads()`, no
    `prepare_model_for_kbit_training(...)`, and checkpointing not enabled before
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
    TrainingArguments call has none.

    ## References
    - https://github.com/huggingface/peft/issues/137
    - https://github.com/huggingface/transformers/issues/26334, #25846, #42489
    - transformers 4.57.1 `modeling_utils.gradient_checkpointing_enable` (`{"use_reentrant": True}` default)
    - pitfalls catalog P08
    """

    code = "TL108"
    name = "peft-checkpointing-no-input-grads"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "PEFT + reentrant gradient checkpointing without input grads trains no adapters"

    cases = [
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
            explicit = any(s.reentrant is True for s in sources)
            peft_pos = min(((s.stmt.lineno, s.stmt.col_offset) for s in flow.step("peft")), default=None)
            if peft_pos is not None and any(s.via == "call" and s.call is not None and
                                            (s.call.lineno, s.call.col_offset) < peft_pos for s in sources) \
                    and not explicit:
                continue  # enabled before wrapping: PEFT enables input grads itself
            src = sorted(sources, key=lambda s: s.via != "args")[0]
            edits = self._fix(ctx, src)
            how = "use_reentrant=True" if src.reentrant is True else \
                f"the transformers {major}.x default use_reentrant=True"
            yield self.diagnostic(
                src.span,
                f"gradient checkpointing with {how} on a PEFT model whose frozen embeddings give inputs "
                f"without grad: the backward fails (\"element 0 of tensors does not require grad\") or the "
                f"adapters silently get no gradient; pass gradient_checkpointing_kwargs={{\"use_reentrant\": False}} "
                f"or call model.enable_input_require_grads()",
                edits=edits, fix_message='add gradient_checkpointing_kwargs={"use_reentrant": False}')

    @staticmethod
    def _fix(ctx: TrainerContext, src: Source) -> list[Edit] | None:
        if src.kwargs_written:
            return None
        return add_reentrant_kwarg(ctx, src)


def add_reentrant_kwarg(ctx: TrainerContext, src: Source) -> list[Edit] | None:
    if src.via == "args" and src.site is not None and src.site.call is not None and site_is_closed(ctx.pf, src.site):
        name = "activation_checkpointing_kwargs" if src.site.get("activation_checkpointing") is not None \
            and src.site.get("gradient_checkpointing") is None else "gradient_checkpointing_kwargs"
        return [add_keyword(ctx.pf, src.site.call.site.node, f'{name}={{"use_reentrant": False}}')]
    if src.via in ("call", "kbit") and src.call is not None and not src.call.args \
            and not any(k.arg is None for k in src.call.keywords):
        name = "activation_checkpointing_kwargs" if isinstance(src.call.func, ast.Attribute) \
            and src.call.func.attr == "activation_checkpointing_enable" else "gradient_checkpointing_kwargs"
        return [add_keyword(ctx.pf, src.call, f'{name}={{"use_reentrant": False}}')]
    return None


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
    - pitfalls catalog P09
    """

    code = "TL109"
    name = "use-cache-with-checkpointing"
    severity = Severity.INFO
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
            if load_off:
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


class ImplicitUseReentrant(Rule):
    """
    ## What it does
    Flags gradient checkpointing turned on (`gradient_checkpointing=True`,
    `model.gradient_checkpointing_enable()`, `prepare_model_for_kbit_training`) without saying
    `use_reentrant` in `gradient_checkpointing_kwargs`.

    ## Why is this bad?
    The default flipped between versions: transformers 4.x uses `{"use_reentrant": True}` when
    no kwargs are given (4.57 `modeling_utils`), 5.x uses `{"use_reentrant": False}`. The
    reentrant variant is the one behind the PEFT "does not require grad" failures (TL108) and
    the DDP "marked as ready twice" errors (TL111); PyTorch itself warns when the choice is
    left implicit. Pinning it makes the script behave the same on both major versions.

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
    Safe: gradients are the same; memory and speed differ slightly.

    ## References
    - transformers 4.57.1 and 5.24 `modeling_utils` (checkpointing defaults)
    - https://github.com/bitsandbytes-foundation/bitsandbytes/issues/945
    - pitfalls catalog P10
    """

    code = "TL110"
    name = "implicit-use-reentrant"
    severity = Severity.INFO
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
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        major = setup.transformers_tuple()[0]
        seen: set[tuple] = set()
        contexts = trainer_contexts(setup)
        # TrainingArguments built without a Trainer in this file still configure one
        covered = {id(s) for c in contexts for s in c.sites or []}
        extra = [TrainerContext(pf, None, None, [site]) for pf in setup.scripts  # type: ignore[arg-type]
                 for site in pf.sites if id(site) not in covered]
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
                yield self.diagnostic(
                    src.span,
                    f"gradient checkpointing without use_reentrant: the default is True on transformers 4.x and False "
                    f"on 5.x (here {major}.x: {default}); pin gradient_checkpointing_kwargs={{\"use_reentrant\": False}}",
                    edits=add_reentrant_kwarg(ctx, src),
                    fix_message='add gradient_checkpointing_kwargs={"use_reentrant": False}')


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
    - pitfalls catalog P11
    """

    code = "TL111"
    name = "find-unused-parameters-with-checkpointing"
    severity = Severity.ERROR
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
    - pitfalls catalog P12
    """

    code = "TL112"
    name = "compile-with-checkpointing"
    severity = Severity.WARNING
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
