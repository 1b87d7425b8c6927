"""TL132 new-tokens-untrained-with-lora: tokens added to the vocabulary of a LoRA model whose config does not train the embeddings"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._peft_common import peft_uses
from trainlint.setup import Setup

EMBED_WORDS = ("embed", "wte", "lm_head", "word_embeddings", "shared", "output")
HEAD = ("from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer\n"
        "from peft import LoraConfig, get_peft_model\n"
        "tok = AutoTokenizer.from_pretrained('m')\nmodel = AutoModelForCausalLM.from_pretrained('m')\n")
TAIL = "model = get_peft_model(model, LoraConfig({kw}))\nTrainer(model=model)\n"


def _adds_tokens(pf, call: ast.Call, scope) -> bool:
    f = call.func
    if not isinstance(f, ast.Attribute):
        return False
    if f.attr == "resize_token_embeddings":
        return True
    if f.attr == "add_tokens":
        return True
    if f.attr == "add_special_tokens" and call.args:
        entries = pf.resolve_dict(call.args[0], scope)
        if entries is None:
            return False
        known = None
        for k, _kn, vn, _s in entries:
            if k == "pad_token":
                continue  # padding positions are masked out: an untrained pad row does no harm
            v = pf.resolve(vn, scope).value
            if isinstance(v, (str, list)):
                if known is None:
                    known = _class_tokens(pf, f.value, scope, call) or frozenset()
                if all(x in known for x in (v if isinstance(v, list) else [v]) if isinstance(x, str)):
                    continue  # the class's own tokens (LlamaTokenizer's "<s>"): in the vocabulary already
            if isinstance(v, str) or (isinstance(v, list) and any(isinstance(x, str) for x in v)):
                return True  # a literal token: new unless it is already in the vocabulary
        return False
    return False


def _class_tokens(pf, tok: ast.expr, scope, call: ast.Call) -> frozenset[str] | None:
    """The default special tokens of the tokenizer class that built ``tok`` (its nearest
    assignment above ``call``: ``tok = LlamaTokenizer.from_pretrained(...)``), or None."""
    from trainlint.knowledge.tokenizer_facts import class_default_tokens

    if not isinstance(tok, ast.Name):
        return None
    above = [b for b in pf.bindings_of(tok.id, scope)
             if b.kind == "assign" and isinstance(b.value, ast.Call) and b.node.lineno <= call.lineno]
    if not above:
        return None
    value = max(above, key=lambda b: b.node.lineno).value
    func = value.func  # type: ignore[union-attr]
    if isinstance(func, ast.Attribute) and func.attr == "from_pretrained":
        func = func.value
    qn = pf.qualname(func) or ""
    if not qn.startswith("transformers."):
        return None
    return class_default_tokens(qn.rsplit(".", 1)[-1])


def _is_resize(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == "resize_token_embeddings"


def _trains_embeddings(pf, cfg_call: ast.Call, scope) -> bool | None:
    """Whether the PEFT config trains the embedding rows (modules_to_save with an embedding or
    head, or trainable_token_indices); None when it cannot be told."""
    if any(k.arg is None for k in cfg_call.keywords):
        return None
    for kw in cfg_call.keywords:
        if kw.arg == "trainable_token_indices":
            return not (isinstance(kw.value, ast.Constant) and kw.value.value is None)
        if kw.arg == "target_modules":
            v = pf.resolve(kw.value, scope).value
            if isinstance(v, (list, tuple)) and any(isinstance(x, str) and any(w in x for w in EMBED_WORDS[:4])
                                                    for x in v):
                return True  # LoRA on the embedding/LM head adapts the new rows too
            continue
        if kw.arg == "modules_to_save":
            v = pf.resolve(kw.value, scope).value
            if isinstance(v, (list, tuple)):
                return any(isinstance(x, str) and any(w in x for w in EMBED_WORDS) for x in v)
            if v is None:
                continue
            return None
    return False


class NewTokensUntrainedWithLora(Rule):
    """
    ## What it does
    Flags `tokenizer.add_tokens(...)` or `tokenizer.add_special_tokens({...: "<new>"})` (a new pad
    token alone does not count: padding positions are masked; nor does
    `model.resize_token_embeddings(...)` alone, which does not say which tokens were added), in
    the function that builds the LoRA (PEFT) config of a trained model, when that config has neither `modules_to_save` nor `target_modules` with the
    embedding/LM-head modules, nor `trainable_token_indices`. A special token that the
    tokenizer's class declares by default (`LlamaTokenizer.from_pretrained(...)` then
    `add_special_tokens({"bos_token": "<s>", "eos_token": "</s>"})`: its own `<s>`, `</s>`,
    `<unk>`, generated from the transformers classes) is in the vocabulary already and adds no
    row; with `AutoTokenizer` the class is the checkpoint's, so a literal token counts as new.

    ## Why is this bad?
    The resized embedding matrix gets new rows initialised at random (or as the mean), but LoRA
    trains only its adapters: the embedding and the LM head stay frozen, so the new tokens are
    never learned, and the model cannot read or produce them well. TRL warns about it for the
    tokens it adds itself; for tokens the script adds nobody does.

    ## Example
    ```python
    tokenizer.add_special_tokens({"additional_special_tokens": ["<tool>"]})
    model.resize_token_embeddings(len(tokenizer))
    model = get_peft_model(model, LoraConfig(target_modules="all-linear"))
    ```

    ## Use instead
    ```python
    model = get_peft_model(model, LoraConfig(target_modules="all-linear",
                                             modules_to_save=["embed_tokens", "lm_head"]))
    # or, training only the new rows: trainable_token_indices={"embed_tokens": new_ids}
    ```

    ## Fix safety
    No automatic fix (the module names depend on the model family).

    ## References
    - PEFT `LoraConfig` (`modules_to_save`, `trainable_token_indices`)
    - https://github.com/huggingface/peft/issues/1298, https://github.com/huggingface/peft/issues/2589
    """

    code = "TL132"
    name = "new-tokens-untrained-with-lora"
    severity = Severity.WARNING
    summary = "tokens added to the vocabulary of a LoRA model whose config does not train the embeddings"
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("resize_token_embeddings", "add_tokens", "add_special_tokens")
    cases = [
        Case(HEAD + "tok.add_tokens(['<tool>'])\nmodel.resize_token_embeddings(len(tok))\n" +
             TAIL.format(kw="target_modules='all-linear'")),
        Case(HEAD + "tok.add_special_tokens({'additional_special_tokens': ['<tool>']})\n" +
             TAIL.format(kw="modules_to_save=['classifier']")),
        Case(HEAD + "tok.add_special_tokens({'pad_token': '[PAD]'})\n" + TAIL.format(kw=""), flags=False,
             note="a new pad token is never trained on: its positions are masked"),
        Case(HEAD + "tok.add_tokens(['<tool>'])\nmodel.resize_token_embeddings(len(tok))\n" +
             TAIL.format(kw="modules_to_save=['embed_tokens', 'lm_head']"), flags=False),
        Case(HEAD + "tok.add_tokens(['<tool>'])\n" + TAIL.format(kw="trainable_token_indices={'embed_tokens': [1]}"),
             flags=False),
        Case(HEAD + "tok.add_special_tokens({'pad_token': tok.eos_token})\n" + TAIL.format(kw=""), flags=False,
             note="an existing token"),
        Case(HEAD + TAIL.format(kw=""), flags=False),
        Case(HEAD.replace("AutoTokenizer", "LlamaTokenizer") +
             "tok.add_special_tokens({'bos_token': '<s>', 'eos_token': '</s>', 'unk_token': '<unk>',"
             " 'pad_token': '<unk>'})\n" + TAIL.format(kw=""), flags=False,
             note="BELLE: LlamaTokenizer's own special tokens, re-declared"),
        Case(HEAD.replace("AutoTokenizer", "LlamaTokenizer") + "eos = '</s>'\n"
             "tok.add_special_tokens({'eos_token': eos, 'additional_special_tokens': ['<s>']})\n"
             + TAIL.format(kw=""), flags=False, note="through a variable; an additional token the vocabulary has"),
        Case(HEAD.replace("AutoTokenizer", "LlamaTokenizer") +
             "tok.add_special_tokens({'bos_token': '<s>', 'eos_token': '<|im_end|>'})\n" + TAIL.format(kw=""),
             note="a new end token: not one of LlamaTokenizer's"),
        Case(HEAD + "tok.add_special_tokens({'bos_token': '<s>', 'eos_token': '</s>'})\n" + TAIL.format(kw=""),
             note="AutoTokenizer: the checkpoint's class, whose tokens are not known"),
        Case(HEAD + "def other():\n    tok.add_tokens(['<x>'])\n    model.resize_token_embeddings(len(tok))\n" +
             TAIL.format(kw=""), flags=False, note="another function adds the tokens"),
        Case(HEAD + "add_padding_to_tokenizer(tok)\nif len(tok) > model.get_input_embeddings().weight.shape[0]:\n"
                    "    model.resize_token_embeddings(len(tok))\n" + TAIL.format(kw="target_modules=['q_proj']"),
             flags=False, note="princeton-nlp/LESS: a resize after a helper that adds a pad token; which tokens "
                               "were added is not known"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        seen: set[int] = set()
        for use in peft_uses(setup):
            if id(use.config.node) in seen:
                continue
            seen.add(id(use.config.node))
            pf = use.pf
            # in the same function as the PEFT config (a helper defined elsewhere may never run here)
            adding = next((cs for cs in pf.calls if cs.scope is use.config.scope
                           and _adds_tokens(pf, cs.node, cs.scope)
                           and not _is_resize(cs.node)), None)
            if adding is None:
                # a resize alone does not say which tokens were added: LESS's train.py resizes after
                # `add_padding_to_tokenizer(tokenizer)`, a helper that adds only a pad token, whose
                # untrained row does no harm (its positions are masked)
                continue
            if _trains_embeddings(pf, use.config.node, use.config.scope) is not False:
                continue
            yield self.diagnostic(pf.span(adding.node),
                                  "tokens are added to the vocabulary, but the LoRA config trains neither the "
                                  "embeddings nor the LM head (no modules_to_save with them, no "
                                  "trainable_token_indices): the new rows stay untrained; add modules_to_save="
                                  "[\"embed_tokens\", \"lm_head\"] (the family's names) or trainable_token_indices",
                                  related=[pf.span(use.config.node).related("the PEFT config")])
