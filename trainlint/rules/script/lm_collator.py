"""TL113 pad-token-is-eos, TL114 mlm-collator-for-causal-lm."""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import _dotted, collator_call, may_name, trainer_contexts
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.fixing.python_edits import add_keyword
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

LM_COLLATORS = {"DataCollatorForLanguageModeling"}


def _mlm(pf, call: ast.Call, scope) -> object:
    """The collator's mlm value: True (default), False, or None when not resolvable."""
    kw = next((k for k in call.keywords if k.arg == "mlm"), None)
    if kw is None:
        if len(call.args) >= 2:
            v = pf.resolve(call.args[1], scope).value
            return v if isinstance(v, bool) else None
        if any(k.arg is None for k in call.keywords):
            return None
        return True
    v = pf.resolve(kw.value, scope).value
    return v if isinstance(v, bool) else None


def _lm_collators(ctx):
    found = collator_call(ctx.pf, ctx.trainer)
    if found is None:
        return None
    call, scope = found
    if _dotted(call.func).split(".")[-1] not in LM_COLLATORS:
        return None
    return call, scope


def _pad_is_eos(pf) -> list[tuple[ast.Assign, str]]:
    """``(statement, tokenizer name)`` of each ``<name>.pad_token = <x>.eos_token`` (or the
    ``_id`` pair) of the file, in statement order: found once per file, not per Trainer."""
    found = pf.__dict__.get("_tl_pad_is_eos")
    if found is None:
        found = []
        if may_name(pf, "pad_token"):
            for stmt, _sc in pf.statements:
                if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
                    continue
                t, v = stmt.targets[0], stmt.value
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and isinstance(v, ast.Attribute) \
                        and (t.attr, v.attr) in (("pad_token", "eos_token"), ("pad_token_id", "eos_token_id")):
                    found.append((stmt, t.value.id))
        pf.__dict__["_tl_pad_is_eos"] = found
    return found


class MlmCollatorForCausalLm(Rule):
    """
    ## What it does
    Flags `DataCollatorForLanguageModeling(tokenizer)` without `mlm=False` passed to a
    `Trainer` that trains a causal LM (`AutoModelForCausalLM`, `*ForCausalLM`, `*LMHeadModel`).

    ## Why is this bad?
    `mlm` defaults to True. For a tokenizer without a mask token (GPT-2, Llama, ...) the
    collator raises "This tokenizer does not have a mask token which is necessary for masked
    language modeling"; with one, it silently trains a masked-token objective on a model meant
    to predict the next token.

    ## Example
    ```python
    collator = DataCollatorForLanguageModeling(tokenizer)
    Trainer(model=AutoModelForCausalLM.from_pretrained("gpt2"), data_collator=collator)
    ```

    ## Use instead
    ```python
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    ```

    ## Fix safety
    Unsafe: it changes the objective, which is only wrong if masked-LM training was intended
    (not with a causal LM).

    ## References
    - transformers `data/data_collator.py` (`mlm: bool = True`, 4.57.1 and 5.24)
    """

    code = "TL114"
    name = "mlm-collator-for-causal-lm"
    severity = Severity.ERROR
    triggers = SETUP_NAMES + ("DataCollatorForLanguageModeling",)
    needs_training = True
    fires_on = tuple(sorted(LM_COLLATORS))
    fix_safety = "unsafe"
    summary = "DataCollatorForLanguageModeling defaults to mlm=True for a causal LM"

    cases = [
        Case(
            """
            from transformers import AutoModelForCausalLM, DataCollatorForLanguageModeling, Trainer
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            collator = DataCollatorForLanguageModeling(tokenizer)
            Trainer(model=model, data_collator=collator)
            """,
            unsafe=True,
            fixed=(
                "from transformers import AutoModelForCausalLM, DataCollatorForLanguageModeling, Trainer\n"
                'model = AutoModelForCausalLM.from_pretrained("gpt2")\n'
                "collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)\n"
                "Trainer(model=model, data_collator=collator)\n"
            ),
        ),
        Case(
            """
            import transformers as tf
            model = tf.GPT2LMHeadModel.from_pretrained("gpt2")
            tf.Trainer(model=model, data_collator=tf.DataCollatorForLanguageModeling(tokenizer=tok, mlm=True))
            """,
        ),
        # must not flag
        Case(
            """
            from transformers import AutoModelForMaskedLM, DataCollatorForLanguageModeling, Trainer
            model = AutoModelForMaskedLM.from_pretrained("bert-base-uncased")
            Trainer(model=model, data_collator=DataCollatorForLanguageModeling(tokenizer))
            """,
            flags=False, note="masked LM",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, DataCollatorForLanguageModeling, Trainer
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            Trainer(model=model, data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
            """,
            flags=False,
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for ctx in trainer_contexts(setup):
            if ctx.flow is None or not any(("CausalLM" in ld.cls or "LMHeadModel" in ld.cls) for ld in ctx.flow.loads):
                continue
            found = _lm_collators(ctx)
            if found is None:
                continue
            call, scope = found
            mlm = _mlm(ctx.pf, call, scope)
            if mlm is not True:
                continue
            kw = next((k for k in call.keywords if k.arg == "mlm"), None)
            edits = [add_keyword(ctx.pf, call, "mlm=False")] if kw is None and len(call.args) < 2 else \
                ([ctx.pf.span(kw.value).edit("False")] if kw is not None and isinstance(kw.value, ast.Constant) else None)
            yield self.diagnostic(
                ctx.pf.span(call),
                "DataCollatorForLanguageModeling with mlm=True (the default) for a causal LM: it raises for "
                "tokenizers without a mask token, or trains a masked-token objective; pass mlm=False",
                edits=edits, fix_message="pass mlm=False")


class PadTokenIsEos(Rule):
    """
    ## What it does
    Flags `tokenizer.pad_token = tokenizer.eos_token` (or `pad_token_id = eos_token_id`) in a
    script whose Trainer uses `DataCollatorForLanguageModeling(..., mlm=False)` with that
    tokenizer.

    ## Why is this bad?
    The causal-LM collator builds labels from the inputs and sets the label of every position
    holding the pad id to -100. When pad is EOS, the real end-of-sequence tokens are masked
    too, so the model never learns to stop and generates until `max_new_tokens`.

    ## Example
    ```python
    tokenizer.pad_token = tokenizer.eos_token
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    ```

    ## Use instead
    ```python
    tokenizer.add_special_tokens({"pad_token": "<pad>"})
    model.resize_token_embeddings(len(tokenizer))
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    ```

    ## Fix safety
    No automatic fix: a new pad token changes the vocabulary (embeddings must be resized), or
    labels must be built by hand.

    ## References
    - https://github.com/huggingface/transformers/issues/23530, https://github.com/huggingface/trl/issues/976
    - https://github.com/huggingface/blog/pull/1302, https://github.com/huggingface/open-r1/issues/494
    """

    code = "TL113"
    name = "pad-token-is-eos"
    severity = Severity.WARNING
    triggers = SETUP_NAMES + ("DataCollatorForLanguageModeling",)
    needs_training = True
    fires_on = tuple(sorted(LM_COLLATORS))
    fix_safety = "none"
    summary = "pad_token = eos_token with the causal-LM collator masks every EOS label"

    cases = [
        Case(
            """
            from transformers import AutoTokenizer, DataCollatorForLanguageModeling, Trainer
            tokenizer = AutoTokenizer.from_pretrained("gpt2")
            tokenizer.pad_token = tokenizer.eos_token
            collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
            Trainer(model=model, data_collator=collator)
            """,
        ),
        Case(
            """
            from transformers import AutoTokenizer, DataCollatorForLanguageModeling, Trainer
            tok = AutoTokenizer.from_pretrained("gpt2")
            tok.pad_token_id = tok.eos_token_id
            Trainer(model=model, data_collator=DataCollatorForLanguageModeling(tokenizer=tok, mlm=False))
            """,
        ),
        # must not flag
        Case(
            """
            from transformers import AutoTokenizer, DataCollatorForLanguageModeling, Trainer
            tokenizer = AutoTokenizer.from_pretrained("gpt2")
            tokenizer.pad_token = tokenizer.unk_token
            Trainer(model=model, data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
            """,
            flags=False,
        ),
        Case(
            """
            from transformers import AutoTokenizer, DataCollatorForSeq2Seq, Trainer
            tokenizer = AutoTokenizer.from_pretrained("gpt2")
            tokenizer.pad_token = tokenizer.eos_token
            Trainer(model=model, data_collator=DataCollatorForSeq2Seq(tokenizer))
            """,
            flags=False, note="labels built by the user, padded with -100",
        ),
        Case(
            """
            from transformers import AutoTokenizer
            tokenizer = AutoTokenizer.from_pretrained("gpt2")
            tokenizer.pad_token = tokenizer.eos_token
            batch = tokenizer(texts, padding=True, return_tensors="pt")
            """,
            flags=False, note="inference batching",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for ctx in trainer_contexts(setup):
            found = _lm_collators(ctx)
            if found is None:
                continue
            call, scope = found
            if _mlm(ctx.pf, call, scope) is not False:
                continue
            tok = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "tokenizer"), None)
            if not isinstance(tok, ast.Name):
                continue
            pf = ctx.pf
            for stmt, name in _pad_is_eos(pf):
                if name == tok.id:
                    yield self.diagnostic(
                        pf.span(stmt),
                        f"{pf.source_of(stmt)} with DataCollatorForLanguageModeling(mlm=False): the collator sets the "
                        f"label of every pad-id position to -100, so every real EOS is masked too and the model "
                        f"never learns to stop; use a distinct pad token",
                        related=[pf.span(call).related("the collator is built here")])
