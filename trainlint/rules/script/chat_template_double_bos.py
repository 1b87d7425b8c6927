"""TL133 chat-template-double-bos: tokenizing apply_chat_template text again with special tokens (a second BOS)"""

from __future__ import annotations

import ast
import re
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.fixing.python_edits import add_keyword
from trainlint.rules.base import Case, Facts, ScriptRule
from trainlint.sources.python import PythonFile

TOKENIZE_METHODS = ("encode", "encode_plus", "__call__", "batch_encode_plus")
HEAD = "from transformers import AutoTokenizer\ntok = AutoTokenizer.from_pretrained('meta-llama/Llama-3.1-8B')\n"


def _template_text(pf: PythonFile, expr: ast.AST, scope, depth: int = 0) -> ast.Call | None:
    """The ``x.apply_chat_template(..., tokenize=False)`` call ``expr`` is (or a name bound once to)."""
    if depth > 4:
        return None
    if isinstance(expr, ast.Name):
        b = pf.binding_of(expr.id, scope)
        if b is None or b.value is None or b.kind not in ("assign", "annassign"):
            return None
        return _template_text(pf, b.value, scope, depth + 1)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "apply_chat_template":
        kw = pf.keyword(expr, "tokenize")
        if kw is not None and isinstance(kw.value, ast.Constant) and kw.value.value is False:
            return expr
    return None


# ``tokenize=False`` as a call writes it: only blanks, line breaks, continuations and comments
# around the ``=``, and opening parentheses before the value (``tokenize=(False)`` is the
# constant too); a comment ends at its line break (no two ways to read one: no backtracking).
# It starts with the word, so a search skips to each ``tokenize`` at once (a look-behind for the
# name character before it would try every position: 20x slower on TRL's test files); that
# character is asked of each match (``_may_render``)
_TOKENIZE_FALSE = re.compile(r"tokenize(?:[\s\\]|#[^\r\n]*[\r\n])*=(?:[\s(\\]|#[^\r\n]*[\r\n])*False(?!\w)")
_NAME_CHAR = re.compile(r"\w")


def _may_render(pf: PythonFile) -> bool:
    """Whether the file can hold an ``apply_chat_template(..., tokenize=False)`` call (what
    ``_template_text`` finds): the keyword with its value stands in the file's identifier text
    (``_TOKENIZE_FALSE``); a file without it is not walked for its calls. Most files that
    render a template tokenize it in the same call (``tokenize=True``, the default) or pass
    ``tokenize`` and ``False`` apart (``tokenize=True, add_generation_prompt=False``)."""
    text = pf.identifier_text()
    if "tokenize" not in text:
        return False
    for m in _TOKENIZE_FALSE.finditer(text):
        at = m.start()
        if not at or _NAME_CHAR.match(text, at - 1) is None:  # not the end of a longer name
            return True
    return False


_ID_KEYWORDS = ("pretrained_model_name_or_path", "model_name", "model_id")


def _model_id(pf: PythonFile, call: ast.Call, scope) -> str | None:
    """The model id a ``X.from_pretrained(...)`` call loads (its first argument, or
    ``model_name=`` as unsloth's ``FastLanguageModel.from_pretrained`` takes it)."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "from_pretrained"):
        return None
    arg = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg in _ID_KEYWORDS), None)
    if arg is None:
        return None
    mid = pf.resolve(arg, scope).value
    return mid if isinstance(mid, str) else None


def _adds_no_bos(mid: str) -> bool:
    """The hub families whose tokenizers add no BOS (Qwen's tokenizer_config.json has
    ``"bos_token": null``; GPT-2's class adds none): generated data, by organisation, name and id."""
    from trainlint.knowledge.tokenizer_facts import adds_no_bos

    return adds_no_bos(mid)


def _tokenizer_adds_no_bos(pf: PythonFile, name: str, scope) -> bool:
    """``name`` comes from ``from_pretrained("<id>")`` of a model whose tokenizer adds no BOS
    (``tok = AutoTokenizer.from_pretrained(...)``, ``model, tok = FastLanguageModel
    .from_pretrained(model_name=...)``); when the tokenizer cannot be traced to its loading (a
    parameter of a notebook's cell function, ``get_chat_template(tokenizer)``), every hub model
    the file loads is such a model."""
    b = pf.binding_of(name, scope) if "." not in name else None
    if b is not None and isinstance(b.value, ast.Call):
        mid = _model_id(pf, b.value, scope)
        if mid is not None:
            return _adds_no_bos(mid)
    ids = [mid for cs in pf.calls if (mid := _model_id(pf, cs.node, cs.scope)) is not None
           and ("/" in mid and not mid.startswith((".", "/", "~")))]
    return bool(ids) and all(_adds_no_bos(mid) for mid in ids)


_MODEL_CLASS_ENDS = ("PreTrainedModel", "ForCausalLM", "ForConditionalGeneration")


def _model_helper_method(pf: PythonFile, name: str, scope) -> bool:
    """``name`` is a parameter of a method of a model class (``def chat(self, tokenizer, ...)``
    of ``MiniCPMForCausalLM(MiniCPMPreTrainedModel)`` in a modeling file copied from the hub):
    the model's own inference helper, whose tokenizer and chat template are the model's (MiniCPM's
    template writes no BOS), so nothing says the text holds one."""
    b = pf.binding_of(name, scope)
    if b is None or b.kind != "param":
        return False
    s = scope
    while s is not None and s.kind != "function":
        s = s.parent
    cls = s.parent if s is not None else None
    if cls is None or cls.kind != "class" or not isinstance(cls.node, ast.ClassDef):
        return False
    names = [cls.node.name] + [_receiver(base).rsplit(".", 1)[-1] for base in cls.node.bases]
    return any(n.endswith(_MODEL_CLASS_ENDS) for n in names)


# how a template writes the BOS token: the variable, or the token of a family spelled out
_BOS_MARKS = ("bos_token", "<s>", "<|begin_of_text|>", "<bos>", "<|startoftext|>", "<\uff5cbegin\u2581of\u2581sentence\uff5c>")


def _own_template_writes_no_bos(pf: PythonFile, tmpl: ast.Call, tok: str, scope) -> bool:
    """The template is the script's own text (``chat_template=`` of the call, else every
    ``tok.chat_template = "..."`` of the file) and none of it writes a BOS token (a zephyr-style
    ``'<|user|>\\n' + message['content'] + eos_token``): the text holds no BOS to double."""
    kw = pf.keyword(tmpl, "chat_template")
    texts: list[object] = []
    if kw is not None:
        texts.append(pf.resolve(kw.value, scope).value)
    else:
        for node in pf.of_type(ast.Assign):
            for t in node.targets:  # type: ignore[attr-defined]
                if isinstance(t, ast.Attribute) and t.attr == "chat_template" and _receiver(t.value) == tok:
                    texts.append(pf.resolve(node.value, scope).value)  # type: ignore[attr-defined]
    if not texts or not all(isinstance(x, str) for x in texts):
        return False
    return not any(m in x for x in texts for m in _BOS_MARKS)  # type: ignore[operator]


def _receiver(expr: ast.AST) -> str:
    return ast.unparse(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else ""


class ChatTemplateDoubleBos(ScriptRule):
    """
    ## What it does
    Flags a tokenizer call on the text of `apply_chat_template(..., tokenize=False)`,
    `tokenizer(text)` or `tokenizer.encode(text)`, without `add_special_tokens=False`, when the
    same tokenizer renders the template.

    ## Why is this bad?
    The chat template already writes the BOS token (`<|begin_of_text|>`, `<s>`, `<bos>`) into
    the text; tokenizing it with the default `add_special_tokens=True` prepends a second one on
    tokenizers that add BOS (Llama, Mistral, Gemma). Every training sample starts with two BOS
    tokens, a distribution shift the model never saw in pre-training, and nothing fails.
    Tokenizers that add no BOS (Qwen, GPT-2) are unaffected, so this is a warning, and a
    tokenizer loaded for such a model (`from_pretrained("Qwen/...")`, unsloth's `model, tokenizer
    = FastLanguageModel.from_pretrained(model_name=...)`; when the tokenizer is a parameter, every
    hub model the file loads) is not flagged. Which families add no BOS is generated data (the
    published `tokenizer_config.json` of each family: Qwen's has `"bos_token": null`), told by the
    model id's organisation and name, never by the architecture (DeepSeek-R1-Distill-Qwen is a
    Qwen2 model whose tokenizer has a BOS). A model class's own helper method (`def chat(self,
    tokenizer, ...)` of a `...ForCausalLM` in a modeling file copied from the hub) is not flagged
    either: its tokenizer and template are that model's, and nothing says the template writes BOS.
    Nor is a template the script writes itself (`tok.chat_template = "..."`, or
    `apply_chat_template(..., chat_template="...")`) whose text writes no BOS (no `bos_token`,
    `<s>`, `<|begin_of_text|>`, `<bos>`): a zephyr-style template starts with `<|user|>`.

    ## Example
    ```python
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    ids = tokenizer(text)["input_ids"]
    ```

    ## Use instead
    ```python
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    # or: tokenizer.apply_chat_template(messages, tokenize=True)
    ```

    ## Fix safety
    Unsafe: `add_special_tokens=False` changes the tokens the model sees (it drops the second
    BOS, which is the point).

    ## References
    - https://github.com/OpenRLHF/OpenRLHF/issues/393
    - https://github.com/huggingface/open-r1/issues/462
    """

    code = "TL133"
    name = "chat-template-double-bos"
    severity = Severity.WARNING
    fix_safety = "unsafe"
    summary = "tokenizing apply_chat_template text again with special tokens (a second BOS)"
    triggers = ("apply_chat_template",)
    cases = [
        Case(HEAD + "text = tok.apply_chat_template(msgs, tokenize=False)\nids = tok(text)['input_ids']\n",
             unsafe=True, fixed=HEAD + "text = tok.apply_chat_template(msgs, tokenize=False)\n"
                                       "ids = tok(text, add_special_tokens=False)['input_ids']\n"),
        Case(HEAD + "def f(ex):\n    return tok.encode(tok.apply_chat_template(ex['m'], tokenize=False))\n"),
        Case(HEAD + "text = tok.apply_chat_template(msgs, tokenize=False)\n"
                    "ids = tok(text, add_special_tokens=False)['input_ids']\n", flags=False),
        Case(HEAD + "ids = tok.apply_chat_template(msgs, tokenize=True)\n", flags=False),
        Case(HEAD.replace("meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-0.5B") +
             "text = tok.apply_chat_template(msgs, tokenize=False)\nids = tok(text)['input_ids']\n", flags=False,
             note="Qwen's tokenizer adds no BOS"),
        Case(HEAD + "text = tok.apply_chat_template(msgs, tokenize=False)\nprint(text)\n", flags=False),
        Case(HEAD + "DEFAULT_CHAT_TEMPLATE = \"{% for message in messages %}{{ '<|user|>\\n' + message['content']"
                    " + eos_token }}{% endfor %}\"\n"
                    "tok.chat_template = DEFAULT_CHAT_TEMPLATE\n"
                    "text = tok.apply_chat_template(msgs, tokenize=False)\nids = tok(text)['input_ids']\n",
             flags=False, note="the script's own zephyr-style template writes no BOS"),
        Case(HEAD + "text = tok.apply_chat_template(msgs, tokenize=False, chat_template=\"{% for m in messages %}"
                    "{{ m['content'] }}{% endfor %}\")\nids = tok(text)['input_ids']\n",
             flags=False, note="a template given to the call"),
        Case(HEAD + "tok.chat_template = \"{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}\"\n"
                    "text = tok.apply_chat_template(msgs, tokenize=False)\nids = tok(text)['input_ids']\n",
             unsafe=True, fixed=HEAD + "tok.chat_template = \"{{ bos_token }}{% for m in messages %}{{ m['content'] }}"
                                       "{% endfor %}\"\ntext = tok.apply_chat_template(msgs, tokenize=False)\n"
                                       "ids = tok(text, add_special_tokens=False)['input_ids']\n",
             note="the script's own template writes bos_token"),
        Case("from unsloth import FastLanguageModel\n"
             "model, tok = FastLanguageModel.from_pretrained(model_name='unsloth/Qwen3-14B', load_in_4bit=True)\n"
             "text = tok.apply_chat_template(msgs, tokenize=False)\nids = tok(text)['input_ids']\n", flags=False,
             note="unsloth's loader returns (model, tokenizer); a Qwen3 tokenizer adds no BOS"),
        Case("from unsloth import FastLanguageModel\n"
             "model, tok = FastLanguageModel.from_pretrained(model_name='unsloth/Qwen3-14B')\n"
             "def generate(tokenizer):\n    text = tokenizer.apply_chat_template(msgs, tokenize=False)\n"
             "    return tokenizer(text)\n", flags=False,
             note="the tokenizer is a parameter: every hub model the file loads is a Qwen"),
        Case("from unsloth import FastLanguageModel\n"
             "model, tok = FastLanguageModel.from_pretrained(model_name='unsloth/Llama-3.2-3B-Instruct')\n"
             "def generate(tokenizer):\n    text = tokenizer.apply_chat_template(msgs, tokenize=False)\n"
             "    return tokenizer(text)\n", unsafe=True,
             fixed="from unsloth import FastLanguageModel\n"
                   "model, tok = FastLanguageModel.from_pretrained(model_name='unsloth/Llama-3.2-3B-Instruct')\n"
                   "def generate(tokenizer):\n    text = tokenizer.apply_chat_template(msgs, tokenize=False)\n"
                   "    return tokenizer(text, add_special_tokens=False)\n",
             note="a Llama model: its tokenizer adds BOS"),
        Case(HEAD.replace("meta-llama/Llama-3.1-8B", "unsloth/QwQ-32B") +
             "text = tok.apply_chat_template(msgs, tokenize=False)\nids = tok(text)['input_ids']\n", flags=False,
             note="a re-upload of a Qwen-family model: the name says the family"),
        Case(HEAD.replace("meta-llama/Llama-3.1-8B", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B") +
             "text = tok.apply_chat_template(msgs, tokenize=False)\nids = tok(text)['input_ids']\n", unsafe=True,
             fixed=HEAD.replace("meta-llama/Llama-3.1-8B", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B") +
             "text = tok.apply_chat_template(msgs, tokenize=False)\n"
             "ids = tok(text, add_special_tokens=False)['input_ids']\n",
             note="a Qwen2 architecture whose tokenizer has a BOS that its template writes"),
        Case("from transformers import PreTrainedModel\n"
             "class MiniCPMForCausalLM(MiniCPMPreTrainedModel):\n"
             "    def chat(self, tokenizer, query, history=None):\n"
             "        history_str = tokenizer.apply_chat_template(history, tokenize=False, add_generation_prompt=False)\n"
             "        inputs = tokenizer(history_str, return_tensors='pt').to(self.device)\n"
             "        return self.generate(**inputs)\n", flags=False,
             note="a hub modeling file's own chat helper (FlagEmbedding's modeling_minicpm_reranker.py)"),
        Case(HEAD + "class Collator:\n"
                    "    def __call__(self, tokenizer, messages):\n"
                    "        text = tokenizer.apply_chat_template(messages, tokenize=False)\n"
                    "        return tokenizer(text)\n", unsafe=True,
             fixed=HEAD + "class Collator:\n"
                          "    def __call__(self, tokenizer, messages):\n"
                          "        text = tokenizer.apply_chat_template(messages, tokenize=False)\n"
                          "        return tokenizer(text, add_special_tokens=False)\n",
             note="a method of a class that is not a model: still flagged"),
    ]

    def check_script(self, pf: PythonFile, facts: Facts) -> Iterable[Diagnostic]:
        if "apply_chat_template" not in pf.text or not _may_render(pf):
            return
        # the template texts of the file (``x.apply_chat_template(..., tokenize=False)``): none, no
        # call can tokenize one
        rendered = {id(c.node) for c in pf.calls_named("apply_chat_template")
                    if _template_text(pf, c.node, c.scope) is not None}
        if not rendered:
            return
        for cs in pf.calls:
            call = cs.node
            f = call.func
            if not isinstance(f, (ast.Name, ast.Attribute)) or not call.args:
                continue
            first = call.args[0]
            if type(first) is ast.Call and id(first) not in rendered:
                continue
            # the template's text first: most calls pass none, and naming the receiver is costly
            tmpl = _template_text(pf, first, cs.scope)
            if tmpl is None:
                continue
            tok = _receiver(f.value) if isinstance(f, ast.Attribute) and f.attr in TOKENIZE_METHODS \
                else _receiver(f)
            if not tok or pf.keyword(call, "add_special_tokens") is not None \
                    or any(k.arg is None for k in call.keywords):
                continue
            if _receiver(tmpl.func.value) != tok:  # type: ignore[attr-defined]
                continue
            if _tokenizer_adds_no_bos(pf, tok, cs.scope) or _model_helper_method(pf, tok, cs.scope) \
                    or _own_template_writes_no_bos(pf, tmpl, tok, cs.scope):
                continue
            yield self.diagnostic(pf.span(call),
                                  "the chat template's text already contains the BOS token; tokenizing it again "
                                  "with the default add_special_tokens=True adds a second one on BOS-adding "
                                  "tokenizers (Llama, Mistral, Gemma); pass add_special_tokens=False",
                                  edits=[add_keyword(pf, call, "add_special_tokens=False")],
                                  fix_message="pass add_special_tokens=False",
                                  related=[pf.span(tmpl).related("the template is rendered here")])
