"""TL102 padding-max-length."""

from __future__ import annotations

import ast
import re
from typing import Iterable

from trainlint.analysis import may_name
from trainlint.lazyre import lazy
from trainlint.diagnostics import Diagnostic, Edit, Severity
from trainlint.fixing.python_edits import (
    add_keyword,
    ensure_import,
    remove_argument,
    remove_dict_entry,
    replace,
)
from trainlint.record import Row
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._context import is_test_path, run_context
from trainlint.rules.base import Case, Facts, ScriptRule
from trainlint.setup import Setup
from trainlint.sources.python import (
    TRL_TRAINER_CLASSES,
    CallSite,
    PythonFile,
    Scope,
    TrainerCall,
)

TOKENIZER_METHODS = {"__call__", "encode", "encode_plus", "batch_encode_plus", "pad", "apply_chat_template"}
PADDING_COLLATORS = {
    "DataCollatorWithPadding", "DataCollatorForSeq2Seq", "DataCollatorForTokenClassification",
    "DataCollatorForLanguageModeling", "DataCollatorForWholeWordMask", "DataCollatorForMultipleChoice",
    "DataCollatorForPermutationLanguageModeling", "DataCollatorWithFlattening",
    "DataCollatorForCompletionOnlyLM", "DataCollatorForPreference",
}
NON_PADDING_COLLATORS = {"default_data_collator", "DefaultDataCollator"}


class PaddingUse(Row):  # a row (trainlint.record): cheaper to define than a NamedTuple
    """One tokenizer call that pads to max_length, with what the fix needs."""

    __slots__ = ()
    _fields = ("call", "tokenizer", "value_node", "remove", "in_map")
    call: CallSite
    tokenizer: ast.expr  # the tokenizer expression (for the collator the fix adds)
    value_node: ast.AST  # where "max_length" is written
    remove: tuple[str, ast.AST, ast.AST] | None  # ("arg", call, keyword) or ("dict", dict, key)
    in_map: bool

    def __new__(_cls, call: CallSite, tokenizer: ast.expr, value_node: ast.AST,
                remove: tuple[str, ast.AST, ast.AST] | None, in_map: bool) -> PaddingUse:
        return tuple.__new__(_cls, (call, tokenizer, value_node, remove, in_map))


def _dotted(expr: ast.AST) -> str:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        inner = _dotted(expr.value)
        return f"{inner}.{expr.attr}" if inner else expr.attr
    return ""


def is_tokenizer(pf: PythonFile, expr: ast.AST, scope: Scope, _depth: int = 0) -> bool:
    """A tokenizer or processor object: bound to ``*Tokenizer*.from_pretrained(...)`` /
    ``AutoProcessor...`` / a tokenizer class call, or named like one."""
    if _depth > 4:
        return False
    if isinstance(expr, ast.Attribute):
        return "tokenizer" in expr.attr.lower() or expr.attr in ("tok", "processor")
    if not isinstance(expr, ast.Name):
        return False
    low = expr.id.lower()
    b = pf.binding_of(expr.id, scope)
    if b is not None and isinstance(b.value, ast.Call):
        callee = _dotted(b.value.func)
        if "Tokenizer" in callee or "Processor" in callee:
            return True
        if callee.endswith("from_pretrained") and ("Tokenizer" in callee or "Processor" in callee):
            return True
    if b is not None and isinstance(b.value, (ast.Name, ast.Attribute)):
        return is_tokenizer(pf, b.value, scope, _depth + 1)
    return "tokenizer" in low or low in ("tok", "tknzr", "processor")


def _map_functions(pf: PythonFile) -> tuple[set[str], set[int]]:
    """Names of functions and ids of lambdas handed to ``<dataset>.map(...)``."""
    names: set[str] = set()
    lambdas: set[int] = set()
    for cs in pf.calls:
        f = cs.node.func
        if isinstance(f, ast.Attribute) and f.attr == "map":
            fn = cs.node.args[0] if cs.node.args else next((k.value for k in cs.node.keywords if k.arg == "function"), None)
            if isinstance(fn, ast.Name):
                names.add(fn.id)
            elif isinstance(fn, ast.Lambda):
                lambdas.add(id(fn))
            elif isinstance(fn, ast.Call) and _dotted(fn.func).endswith("partial") and fn.args \
                    and isinstance(fn.args[0], ast.Name):
                names.add(fn.args[0].id)
    return names, lambdas


def _is_max_length(value) -> bool:
    return isinstance(value, str) and value.lower() == "max_length"


def find_padding(pf: PythonFile) -> list[PaddingUse]:
    """The ``padding="max_length"`` / ``pad_to_max_length=True`` uses of the file's tokenizer
    calls, found once per file (every setup that holds it asks)."""
    found = pf.__dict__.get("_tl_padding")
    if found is None:
        # a keyword or a dict key is written by its name: a file without one is not walked
        found = pf.__dict__["_tl_padding"] = _find_padding(pf) if may_name(pf, "padding", "pad_to_max_length") else []
    return found


def _find_padding(pf: PythonFile) -> list[PaddingUse]:
    map_names, map_lambdas = _map_functions(pf)
    uses: list[PaddingUse] = []
    for cs in pf.calls:
        call = cs.node
        func = call.func
        tok: ast.expr | None = None
        callee = _dotted(func)
        if callee in ("partial", "functools.partial") or pf.qualname(func) == "functools.partial":
            if call.args and is_tokenizer(pf, call.args[0], cs.scope):
                tok = call.args[0]
        elif isinstance(func, ast.Attribute) and func.attr in TOKENIZER_METHODS:
            if is_tokenizer(pf, func.value, cs.scope):
                tok = func.value
        elif is_tokenizer(pf, func, cs.scope):
            tok = func
        if tok is None:
            continue
        in_map = (isinstance(cs.in_def, (ast.FunctionDef, ast.AsyncFunctionDef)) and cs.in_def.name in map_names) \
            or (isinstance(cs.in_def, ast.Lambda) and id(cs.in_def) in map_lambdas) \
            or callee.endswith("partial")
        for kw in call.keywords:
            if kw.arg == "padding":
                r = pf.resolve(kw.value, cs.scope)
                if _is_max_length(r.value):
                    uses.append(PaddingUse(cs, tok, r.node or kw.value, ("arg", call, kw), in_map))
            elif kw.arg == "pad_to_max_length":
                r = pf.resolve(kw.value, cs.scope)
                if r.value is True:
                    uses.append(PaddingUse(cs, tok, kw.value, ("arg", call, kw), in_map))
            elif kw.arg is None:
                entries = pf.resolve_dict(kw.value, cs.scope)
                for key, key_node, value_node, shared in entries or []:
                    if key not in ("padding", "pad_to_max_length"):
                        continue
                    r = pf.resolve(value_node, cs.scope)
                    if (key == "padding" and _is_max_length(r.value)) or (key == "pad_to_max_length" and r.value is True):
                        remove = None
                        if not shared:
                            container = _container_of(pf, kw.value, cs.scope)
                            if isinstance(container, ast.Dict):
                                remove = ("dict", container, key_node)
                            elif isinstance(container, ast.Call) and isinstance(key_node, ast.keyword):
                                remove = ("arg", container, key_node)
                        uses.append(PaddingUse(cs, tok, value_node or key_node, remove, in_map))
    return uses


def _container_of(pf: PythonFile, expr: ast.AST, scope: Scope) -> ast.AST | None:
    if isinstance(expr, ast.Name):
        b = pf.binding_of(expr.id, scope)
        return b.value if b is not None else None
    return expr


def _collator_name(pf: PythonFile, expr: ast.AST, scope: Scope) -> str:
    if isinstance(expr, ast.Call):
        return _dotted(expr.func).split(".")[-1]
    if isinstance(expr, ast.Name):
        b = pf.binding_of(expr.id, scope)
        if b is not None and isinstance(b.value, ast.Call):
            return _dotted(b.value.func).split(".")[-1]
        return expr.id
    return _dotted(expr).split(".")[-1]


MODEL_KINDS = (  # class-name part -> what the labels of such a model are
    ("ForSequenceClassification", "seq-cls"), ("ForTokenClassification", "token-cls"),
    ("ForQuestionAnswering", "qa"), ("ForMultipleChoice", "multiple-choice"),
    ("ForCausalLM", "causal"), ("LMHeadModel", "causal"), ("ForMaskedLM", "masked"),
    ("ForSeq2SeqLM", "seq2seq"), ("ForConditionalGeneration", "seq2seq"),
)
SEQUENCE_LABEL_COLLATORS = {"DataCollatorForSeq2Seq", "DataCollatorForTokenClassification"}


def model_kind(pf: PythonFile, tc: TrainerCall) -> str | None:
    """What the Trainer's model is (``seq-cls``, ``causal``, ...) from the class it is loaded
    or built with; None when not known."""
    from trainlint.analysis import flow_for

    flow = flow_for(pf, tc)
    if flow is None:
        return None
    names = [ld.cls for ld in flow.loads]
    names += [_dotted(b.value.func).split(".")[-1] for b, _s in flow.bindings if isinstance(b.value, ast.Call)]
    kinds = {kind for n in names for part, kind in MODEL_KINDS if part in n}
    return kinds.pop() if len(kinds) == 1 else None


class Labels(Row):  # a row (trainlint.record): cheaper to define than a NamedTuple
    """What the tokenizing function makes the labels: ``none`` (it writes none: they come from
    a dataset column, or there are none), ``copied`` (token sequences copied from the inputs),
    ``targets`` (separately tokenized target sequences), ``values`` (something else: class ids
    or per-token tags), ``unknown``; ``masked``: pad positions are set to -100 in it."""

    __slots__ = ()
    _fields = ("kind", "masked")
    kind: str
    masked: bool

    def __new__(_cls, kind: str, masked: bool = False) -> Labels:
        return tuple.__new__(_cls, (kind, masked))


def _mentions_input_ids(node: ast.AST) -> list[ast.AST]:
    """The objects whose ``input_ids`` the expression reads (``x["input_ids"]``, ``x.input_ids``)."""
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and n.slice.value == "input_ids":
            out.append(n.value)
        elif isinstance(n, ast.Attribute) and n.attr == "input_ids":
            out.append(n.value)
    return out


def _is_call_result(pf: PythonFile, expr: ast.AST, call: ast.Call, scope: Scope) -> bool:
    """``expr`` is the value of ``call`` (directly or through a name bound to it)."""
    if expr is call:
        return True
    if isinstance(expr, ast.Name):
        b = pf.binding_of(expr.id, scope)
        return b is not None and b.value is call
    return False


_INFERENCE_NAMES = lazy(r"predict|infer|generat|evaluat|^eval|^test|score|serve|demo|chat", re.I)


def _train_calls(pf: PythonFile) -> list[CallSite]:
    """``<trainer>.train(...)`` calls: the receiver is bound to a Trainer call or named like one."""
    trainer_nodes = {id(tc.site.node) for tc in pf.trainer_calls}
    out = []
    for cs in pf.calls_named("train"):
        f = cs.node.func
        if not (isinstance(f, ast.Attribute) and f.attr == "train"):
            continue
        recv = f.value
        if isinstance(recv, ast.Call) and id(recv) in trainer_nodes:
            out.append(cs)
        elif isinstance(recv, ast.Name):
            b = pf.binding_of(recv.id, cs.scope)
            if (b is not None and isinstance(b.value, ast.Call) and id(b.value) in trainer_nodes) \
                    or "trainer" in recv.id.lower():
                out.append(cs)
    return out


def _enclosing_class(pf: PythonFile, fn: ast.AST) -> ast.ClassDef | None:
    owners = getattr(pf, "_class_of_method", None)
    if owners is None:  # found once per file (each tokenizer call of a large file asks)
        owners = pf._class_of_method = {}  # type: ignore[attr-defined]
        for node in pf.of_type(ast.ClassDef):  # the statement index: no walk of the expressions
            for item in node.body:
                owners.setdefault(id(item), node)
    return owners.get(id(fn))


def _collator_functions(pf: PythonFile) -> set[str]:
    cached = getattr(pf, "_collator_functions", None)
    if cached is None:  # found once per file
        cached = pf._collator_functions = _find_collator_functions(pf)  # type: ignore[attr-defined]
    return cached


def _find_collator_functions(pf: PythonFile) -> set[str]:
    names = set()
    for tc in pf.trainer_calls:
        expr = tc.keywords.get("data_collator")
        if isinstance(expr, ast.Name):
            names.add(expr.id)
        elif isinstance(expr, ast.Call) and _dotted(expr.func).endswith("partial") and expr.args \
                and isinstance(expr.args[0], ast.Name):
            names.add(expr.args[0].id)
    for cs in pf.calls:  # DataLoader(collate_fn=...) of a custom loop feeding the same model
        for kw in cs.node.keywords:
            if kw.arg == "collate_fn" and isinstance(kw.value, ast.Name):
                names.add(kw.value.id)
    return names


def feeds_training(pf: PythonFile, use: PaddingUse, train_calls: list[CallSite] | None = None) -> bool:
    """Whether the tokenizer call prepares training data: in a ``dataset.map`` function, a
    collator, a dataset class (``__getitem__``/``__init__`` of a class with ``__getitem__``), or
    straight-line preprocessing before ``train()``; not an inference call after ``train()`` nor
    one in a predict/generate/evaluate function."""
    if use.in_map:
        return True
    fn = use.call.in_def
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if fn.name in _collator_functions(pf):
            return True
        cls = _enclosing_class(pf, fn)
        if cls is not None:
            methods = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            if "__getitem__" in methods or "__call__" in methods or "__iter__" in methods:
                return True
        if _INFERENCE_NAMES.search(fn.name):
            return False
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and node.attr in ("generate", "no_grad", "inference_mode"):
                return False
    trains = _train_calls(pf) if train_calls is None else train_calls
    line = use.call.node.lineno
    for tc in trains:
        if tc.in_def is fn and tc.node.lineno < line:
            return False  # after train() in the same body: evaluation or inference
    return True


def labels_of(pf: PythonFile, use: PaddingUse) -> Labels:
    call = use.call.node
    fn = use.call.in_def
    masked = False
    if fn is not None:
        masked = any(isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and isinstance(n.operand, ast.Constant)
                     and n.operand.value == 100 for n in ast.walk(fn))
    if any(k.arg == "text_target" for k in call.keywords):
        return Labels("targets", masked)
    if fn is None:
        return Labels("unknown", masked)
    writes = _label_writes(fn)
    if writes is None:
        return Labels("unknown", masked)
    if not writes:
        return Labels("none", masked)
    kinds = set()
    for value in writes:
        sources = _mentions_input_ids(value)
        if not sources:
            kinds.add("values")
        elif all(_is_call_result(pf, src, call, use.call.scope) for src in sources):
            kinds.add("copied")
        elif any(isinstance(src, ast.Name) and (b := pf.binding_of(src.id, use.call.scope)) is not None
                 and isinstance(b.value, ast.Call) and b.value is not call for src in sources):
            kinds.add("targets")
        else:
            kinds.add("unknown")
    return Labels(kinds.pop() if len(kinds) == 1 else "unknown", masked)


def _label_writes(fn: ast.AST) -> list[ast.AST] | None:
    """The values the function writes as ``labels`` (``x["labels"] = v``, ``{"labels": v}``,
    ``dict(labels=v)``); None when it writes them some way not understood."""
    out: list[ast.AST] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and t.slice.value == "labels":
                    out.append(node.value)
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == "labels":
                    out.append(v)
        elif isinstance(node, ast.Call) and any(k.arg == "labels" for k in node.keywords) \
                and _dotted(node.func) in ("dict", "update") or isinstance(node, ast.Call) \
                and isinstance(node.func, ast.Attribute) and node.func.attr == "update" \
                and any(k.arg == "labels" for k in node.keywords):
            out.extend(k.value for k in node.keywords if k.arg == "labels")
    # "labels" written through a variable key or setdefault: not understood
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "setdefault" \
                and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "labels":
            return None
    return out


def _test_file(setup: Setup) -> str | None:
    return run_context(setup).test_file


class PaddingMaxLength(ScriptRule):
    """
    ## What it does
    Flags a tokenizer call with `padding="max_length"` (or `PaddingStrategy.MAX_LENGTH`, or
    the legacy `pad_to_max_length=True`) in a script that trains with a `Trainer`: written
    directly, through a constant, in a `**kwargs` dict, inside a lambda, or bound with
    `functools.partial(tokenizer, ...)`, when the call prepares training data: a function
    handed to `dataset.map`, a collator (`data_collator=`, `collate_fn=`), a dataset class
    (a class with `__getitem__`), or preprocessing before `trainer.train()`. Calls after
    `train()` in the same body, and calls in functions that predict, generate or evaluate
    (by name, or because they call `.generate()` or run under `torch.no_grad()`), are
    inference and are not flagged, and so are test files (`test_*.py`, `conftest.py`, files
    under `tests/`), which pad to a fixed length on purpose.

    ## Why is this bad?
    Padding in preprocessing pads *every* example to `max_length` (often 512) once and for all.
    Most of each batch is then padding: the model computes attention and feed-forward layers
    over pad tokens, activation memory grows with the padded length, and step time with it.
    Padding per batch to the longest example in that batch (dynamic padding) gives the same
    results for models with an attention mask, faster and in less memory; it is what the
    Trainer does by default when it is given the tokenizer.

    ## Example
    ```python
    def tokenize(batch):
        return tokenizer(batch["text"], padding="max_length", truncation=True, max_length=512)

    ds = ds.map(tokenize, batched=True)
    trainer = Trainer(model=model, args=args, train_dataset=ds)
    ```

    ## Use instead
    ```python
    def tokenize(batch):
        return tokenizer(batch["text"], truncation=True, max_length=512)

    ds = ds.map(tokenize, batched=True)
    trainer = Trainer(model=model, args=args, train_dataset=ds,
                      data_collator=DataCollatorWithPadding(tokenizer))
    ```

    ## Fix safety
    Safe for models with an attention mask, when the collator that pads each batch is known to
    be right for the labels. The fix removes the padding argument and chooses the collator from
    what the tokenizing function makes the labels and what the model is:
    no labels written and a sequence classifier (class ids come from a column), or class ids
    written: `DataCollatorWithPadding` (or the Trainer's default with `processing_class=`);
    per-token tags and a token classifier: `DataCollatorForTokenClassification`; token
    sequences copied from `input_ids` or tokenized targets: `DataCollatorForSeq2Seq`, which
    pads labels with -100 (`DataCollatorWithPadding` and `DataCollatorForLanguageModeling`
    cannot pad such labels). That last fix is unsafe unless the function already sets pad
    positions to -100: before, the loss counted the pad tokens. An existing padding collator
    that fits the labels is kept. No fix when the labels or the model are not known, a custom
    collator is used, the call asks for tensors (`return_tensors=`) or runs outside a
    `dataset.map` function. On TPUs static shapes are wanted: scripts that import `torch_xla`
    are not flagged.

    ## References
    - transformers `DataCollatorWithPadding` (`src/transformers/data/data_collator.py`), `Trainer`
      default collator (`src/transformers/trainer.py`, 5.24.0)
    - https://huggingface.co/docs/transformers/main/en/pad_truncation
    """

    code = "TL102"
    name = "padding-max-length"
    severity = Severity.WARNING
    triggers = SETUP_NAMES + ("DataCollator",)
    needs_training = True
    fires_on = ("max_length", "MAX_LENGTH")
    fix_safety = "safe"
    summary = 'padding="max_length" at preprocessing pads every example to the maximum'

    cases = [
        Case(
            """
            from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer
            tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
            def tokenize(batch):
                return tokenizer(batch["text"], padding="max_length", truncation=True)
            ds = ds.map(tokenize, batched=True)
            trainer = Trainer(model=model, train_dataset=ds, processing_class=tokenizer)
            """,
            fixed=(
                "from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer\n"
                'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")\n'
                'model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")\n'
                "def tokenize(batch):\n"
                '    return tokenizer(batch["text"], truncation=True)\n'
                "ds = ds.map(tokenize, batched=True)\n"
                "trainer = Trainer(model=model, train_dataset=ds, processing_class=tokenizer)\n"
            ),
        ),
        Case(
            """
            from transformers import AutoTokenizer, BertForSequenceClassification, Trainer
            tok = AutoTokenizer.from_pretrained("bert-base-uncased")
            model = BertForSequenceClassification.from_pretrained("bert-base-uncased")
            PAD = "max_length"
            ds = ds.map(lambda b: tok(b["text"], padding=PAD, truncation=True), batched=True)
            trainer = Trainer(model=model, train_dataset=ds)
            """,
            fixed=(
                "from transformers import AutoTokenizer, BertForSequenceClassification, Trainer, DataCollatorWithPadding\n"
                'tok = AutoTokenizer.from_pretrained("bert-base-uncased")\n'
                'model = BertForSequenceClassification.from_pretrained("bert-base-uncased")\n'
                'PAD = "max_length"\n'
                'ds = ds.map(lambda b: tok(b["text"], truncation=True), batched=True)\n'
                "trainer = Trainer(model=model, train_dataset=ds, data_collator=DataCollatorWithPadding(tok))\n"
            ),
        ),
        Case(
            """
            import functools
            from transformers import Trainer, default_data_collator
            tokenizer = load_tokenizer()
            enc = functools.partial(tokenizer, padding="max_length", max_length=128)
            ds = ds.map(lambda b: enc(b["text"]), batched=True)
            trainer = Trainer(model=model, train_dataset=ds, data_collator=default_data_collator)
            """,
            note="flagged, no fix: what the labels are is not followed through the partial",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer
            tok = AutoTokenizer.from_pretrained("gpt2")
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            def prep(batch):
                out = tok(batch["text"], padding="max_length", truncation=True, max_length=64)
                out["labels"] = [[t if t != tok.pad_token_id else -100 for t in ids] for ids in out["input_ids"]]
                return out
            ds = ds.map(prep, batched=True)
            Trainer(model=model, train_dataset=ds, processing_class=tok)
            """,
            fixed=(
                "from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, DataCollatorForSeq2Seq\n"
                'tok = AutoTokenizer.from_pretrained("gpt2")\n'
                'model = AutoModelForCausalLM.from_pretrained("gpt2")\n'
                "def prep(batch):\n"
                '    out = tok(batch["text"], truncation=True, max_length=64)\n'
                '    out["labels"] = [[t if t != tok.pad_token_id else -100 for t in ids] for ids in out["input_ids"]]\n'
                "    return out\n"
                "ds = ds.map(prep, batched=True)\n"
                "Trainer(model=model, train_dataset=ds, processing_class=tok, data_collator=DataCollatorForSeq2Seq(tok))\n"
            ),
            note="labels copied from the inputs, pads masked: DataCollatorForSeq2Seq, not the Trainer's "
                 "default DataCollatorWithPadding (which cannot pad labels)",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer
            tok = AutoTokenizer.from_pretrained("gpt2")
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            def prep(batch):
                out = tok(batch["text"], padding="max_length", truncation=True, max_length=64)
                out["labels"] = out["input_ids"].copy()
                return out
            ds = ds.map(prep, batched=True)
            Trainer(model=model, train_dataset=ds, processing_class=tok)
            """,
            note="labels copied with their pad tokens: the fix is unsafe (the loss stops counting pads)",
        ),
        Case(
            """
            from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer
            tok = AutoTokenizer.from_pretrained("bert-base-uncased")
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=3)
            def prep(batch):
                out = tok(batch["text"], padding="max_length", truncation=True)
                out["labels"] = [label2id[x] for x in batch["label"]]
                return out
            ds = ds.map(prep, batched=True)
            Trainer(model=model, train_dataset=ds, processing_class=tok)
            """,
            fixed=(
                "from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer\n"
                'tok = AutoTokenizer.from_pretrained("bert-base-uncased")\n'
                'model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=3)\n'
                "def prep(batch):\n"
                '    out = tok(batch["text"], truncation=True)\n'
                '    out["labels"] = [label2id[x] for x in batch["label"]]\n'
                "    return out\n"
                "ds = ds.map(prep, batched=True)\n"
                "Trainer(model=model, train_dataset=ds, processing_class=tok)\n"
            ),
            note="class ids: the Trainer's default DataCollatorWithPadding (never DataCollatorForSeq2Seq)",
        ),
        Case(
            """
            from transformers import AutoTokenizer, Trainer
            tok = AutoTokenizer.from_pretrained("bert-base-uncased")
            def prep(batch):
                return tok(batch["text"], padding="max_length", truncation=True)
            ds = ds.map(prep, batched=True)
            Trainer(model=build_model(), train_dataset=ds, processing_class=tok)
            """,
            note="flagged, no fix: the model (so what its labels are) is not known",
        ),
        Case(
            """
            from transformers import Trainer
            kwargs = {"truncation": True, "padding": "max_length"}
            def prep(b):
                return tokenizer(b["text"], **kwargs)
            ds = ds.map(prep)
            Trainer(model=model, train_dataset=ds, tokenizer=tokenizer)
            """,
        ),
        Case(
            """
            from transformers import Trainer
            opts = dict(truncation=True, padding="max_length")
            def prep(b):
                return tokenizer.encode_plus(b["text"], **opts)
            ds = ds.map(prep)
            Trainer(model=model, train_dataset=ds, processing_class=tokenizer)
            """,
            note="a dict(...) passed by **kwargs to a method call",
        ),
        Case(
            """
            from transformers import Trainer
            def collate(batch):
                return tokenizer([b["text"] for b in batch], padding="max_length", return_tensors="pt")
            Trainer(model=model, train_dataset=ds, data_collator=collate)
            """,
            note="flagged, but no fix: the collator asks for tensors",
        ),
        Case(
            """
            from torch.utils.data import Dataset
            from transformers import Trainer
            class TextDataset(Dataset):
                def __init__(self, texts):
                    self.texts = texts
                def __len__(self):
                    return len(self.texts)
                def __getitem__(self, i):
                    return tokenizer(self.texts[i], padding="max_length", truncation=True, max_length=256)
            Trainer(model=model, train_dataset=TextDataset(texts)).train()
            """,
            note="a dataset class",
        ),
        Case(
            """
            from transformers import Trainer
            enc = tokenizer(train_texts, padding="max_length", truncation=True)
            ds = MyDataset(enc)
            trainer = Trainer(model=model, train_dataset=ds)
            trainer.train()
            """,
            note="preprocessing before train()",
        ),
        # must not flag
        Case(files={"tests/test_callbacks.py": (
            "from transformers import Trainer\n"
            "def test_logs(tmp_path):\n"
            "    ds = ds.map(lambda b: tokenizer(b['text'], padding='max_length', max_length=16), batched=True)\n"
            "    Trainer(model=model, train_dataset=ds).train()\n")},
             flags=False, note="a test pads to a fixed length on purpose"),
        Case(
            """
            from transformers import Trainer
            ds = ds.map(lambda b: tokenizer(b["text"], truncation=True), batched=True)
            trainer = Trainer(model=model, train_dataset=ds, processing_class=tokenizer)
            trainer.train()
            inputs = tokenizer(["a test sentence"], padding="max_length", return_tensors="pt")
            print(model(**inputs).logits)
            """,
            flags=False, note="inference after train()",
        ),
        Case(
            """
            from transformers import Trainer
            def predict(texts):
                inputs = tokenizer(texts, padding="max_length", return_tensors="pt")
                return model(**inputs)
            trainer = Trainer(model=model, train_dataset=ds, processing_class=tokenizer)
            trainer.train()
            """,
            flags=False, note="a predict function",
        ),
        Case(
            """
            from transformers import AutoTokenizer
            tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
            inputs = tokenizer(texts, padding="max_length", return_tensors="pt")
            outputs = model(**inputs)
            """,
            flags=False, note="inference script: no Trainer",
        ),
        Case(
            """
            from transformers import Trainer
            ds = ds.map(lambda b: tokenizer(b["text"], padding=True, truncation=True), batched=True)
            Trainer(model=model, train_dataset=ds)
            """,
            flags=False,
        ),
        Case(
            """
            import torch_xla.core.xla_model as xm
            from transformers import Trainer
            ds = ds.map(lambda b: tokenizer(b["text"], padding="max_length"), batched=True)
            Trainer(model=model, train_dataset=ds)
            """,
            flags=False, note="TPUs want static shapes",
        ),
        Case(
            """
            from transformers import Trainer
            ds = ds.map(lambda b: formatter(b["text"], padding="max_length"))
            Trainer(model=model, train_dataset=ds)
            """,
            flags=False, note="not a tokenizer",
        ),
    ]

    def check_script(self, pf: PythonFile, facts: Facts) -> Iterable[Diagnostic]:
        if not pf.trainer_calls or pf.uses_module("torch_xla"):
            return
        if is_test_path(pf.path) or facts.ask(_test_file) is not None:
            return  # a test pads to a fixed length on purpose (deterministic shapes and values)
        uses = find_padding(pf)
        if not uses:
            return
        train_calls = _train_calls(pf)
        for use in uses:
            if not feeds_training(pf, use, train_calls):
                continue
            tok_text = pf.source_of(use.tokenizer)
            edits, safe, why = self._fix(pf, use)
            kw = pf.keyword(use.call.node, "max_length")
            length = pf.resolve(kw.value, use.call.scope).value if kw is not None else None
            to = f"max_length={length} tokens" if isinstance(length, int) else "the maximum length"
            message = (f'`padding="max_length"` in a `{tok_text}` call pads every example to {to} '
                       f"at preprocessing, so most of each batch is padding (wasted compute and "
                       f"memory); drop it and let a collator pad each batch to its longest example{why}")
            yield self.diagnostic(pf.span(use.value_node), message, edits=edits,
                                  applicability="safe" if safe else "unsafe",
                                  fix_message="remove the padding and pad per batch (dynamic padding)")

    def _fix(self, pf: PythonFile, use: PaddingUse) -> tuple[list[Edit] | None, bool, str]:
        """(edits, safe, why there is no fix or why it is unsafe)."""
        call = use.call.node
        if use.remove is None or not use.in_map:
            return None, True, ""
        if any(k.arg == "return_tensors" for k in call.keywords):
            return None, True, ""
        kind, container, item = use.remove
        if kind == "arg":
            edits = [remove_argument(pf, container, item)]  # type: ignore[arg-type]
        else:
            edits = [remove_dict_entry(pf, container, item)]  # type: ignore[arg-type]
        labels = labels_of(pf, use)
        safe, why = True, ""
        for tc in pf.trainer_calls:
            more, tc_safe, tc_why = self._collator_edits(pf, tc, use, labels)
            if more is None:
                return None, True, tc_why
            edits.extend(more)
            if not tc_safe:
                safe, why = False, tc_why
        return edits, safe, why

    def _collator_edits(self, pf: PythonFile, tc: TrainerCall, use: PaddingUse, labels: Labels
                        ) -> tuple[list[Edit] | None, bool, str]:
        """Edits that make ``tc`` pad each batch the way its labels need (``[]`` when it already
        does), whether that keeps the loss the same, and a note; None when no collator is known
        to be right. The collator follows from the labels and the model:

        * no labels written, a classifier/QA model: ``DataCollatorWithPadding`` (class ids and
          positions are scalars);
        * class ids / per-token tags written: ``DataCollatorWithPadding`` for a sequence
          classifier, ``DataCollatorForTokenClassification`` for a token classifier;
        * token sequences (copied from the inputs, or tokenized targets):
          ``DataCollatorForSeq2Seq``, which pads them with -100; unsafe unless the function
          already sets pad positions to -100 (else the loss used to include pad tokens).
        """
        scope = tc.site.scope
        collator = tc.keywords.get("data_collator")
        kind = model_kind(pf, tc)
        lk = labels.kind
        safe, why = True, ""
        if lk == "none" and kind in ("seq-cls", "qa"):
            need = "DataCollatorWithPadding"
        elif lk == "none" and kind in ("causal", "masked", "seq2seq"):
            need = None  # only an existing padding collator (a language-modeling one) is right
        elif lk == "values" and kind == "seq-cls":
            need = "DataCollatorWithPadding"
        elif lk == "values" and kind == "token-cls":
            need = "DataCollatorForTokenClassification"
        elif lk in ("copied", "targets") and kind in ("causal", "seq2seq", None):
            need = "DataCollatorForSeq2Seq"
            if not labels.masked:
                safe = False
                why = (" (the fix is unsafe: the labels padded to max_length included pad tokens, which the "
                       "loss counted; DataCollatorForSeq2Seq pads labels with -100, which it ignores)")
        else:
            what = {"none": "no labels", "values": "labels that are neither class ids of a classifier nor "
                    "per-token tags", "unknown": "labels it cannot follow"}.get(lk, lk)
            return None, True, f" (no fix: {what} for {'an unknown model' if kind is None else 'a ' + kind + ' model'})"
        if collator is None and tc.class_name in TRL_TRAINER_CLASSES:
            if lk == "none":
                return [], True, ""  # TRL trainers pad with their own collators
            return None, True, " (no fix: a TRL trainer's own collator and labels written by the script)"
        implicit = collator is None and ("processing_class" in tc.keywords or "tokenizer" in tc.keywords)
        if collator is not None:
            name = _collator_name(pf, collator, scope)
            if name in PADDING_COLLATORS:
                if need == "DataCollatorWithPadding" or need is None \
                        or (need in SEQUENCE_LABEL_COLLATORS and name in SEQUENCE_LABEL_COLLATORS):
                    return [], safe, why
                return None, True, f" (no fix: {name} cannot pad these labels per batch)"
            if name not in NON_PADDING_COLLATORS:
                return None, True, " (no fix: a custom collator, which may not pad)"
        if need is None:
            return None, True, " (no fix: no collator known to build these labels per batch)"
        if implicit and need == "DataCollatorWithPadding":
            return [], safe, why  # the Trainer's default collator with a tokenizer pads per batch
        tok_name = pf.source_of(use.tokenizer)
        if not isinstance(use.tokenizer, ast.Name) or scope.lookup(use.tokenizer.id) is None:
            return None, True, ""
        model = tc.keywords.get("model")
        args = tok_name
        if need == "DataCollatorForSeq2Seq" and kind == "seq2seq" and isinstance(model, ast.Name):
            args = f"{tok_name}, model={pf.source_of(model)}"
        new = f"{need}({args})"
        edits: list[Edit] = []
        if collator is not None:
            edits.append(replace(pf.span(collator), new))
        else:
            edits.append(add_keyword(pf, tc.site.node, f"data_collator={new}"))
        imp = ensure_import(pf, "transformers", need)
        if imp is not None:
            edits.append(imp)
        return edits, safe, why
