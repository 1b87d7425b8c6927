"""TL102 padding-max-length."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Edit, Severity
from trainlint.fixing.python_edits import (
    add_keyword,
    ensure_import,
    remove_argument,
    remove_dict_entry,
    replace,
)
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
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


@dataclass
class PaddingUse:
    """One tokenizer call that pads to max_length, with what the fix needs."""

    call: CallSite
    tokenizer: ast.expr  # the tokenizer expression (for the collator the fix adds)
    value_node: ast.AST  # where "max_length" is written
    remove: tuple[str, ast.AST, ast.AST] | None  # ("arg", call, keyword) or ("dict", dict, key)
    in_map: bool


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


def _labels_padded_too(pf: PythonFile, use: PaddingUse) -> bool:
    """Sequence labels (text_target=, or labels built from tokenizer output): the collator must
    pad labels as well, which DataCollatorForSeq2Seq does (with -100)."""
    if any(k.arg == "text_target" for k in use.call.node.keywords):
        return True
    fn = use.call.in_def
    if fn is None:
        return False
    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.slice, ast.Constant) and node.slice.value == "labels":
            return True
    return False


class PaddingMaxLength(Rule):
    """
    ## What it does
    Flags a tokenizer call with `padding="max_length"` (or `PaddingStrategy.MAX_LENGTH`, or
    the legacy `pad_to_max_length=True`) in a script that trains with a `Trainer`: written
    directly, through a constant, in a `**kwargs` dict, inside a lambda, or bound with
    `functools.partial(tokenizer, ...)`.

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
    Safe for models with an attention mask. The fix removes the padding argument and makes
    sure the Trainer pads each batch: it keeps an existing padding collator or
    `processing_class=`/`tokenizer=`, replaces `default_data_collator` with
    `DataCollatorWithPadding`, or adds `data_collator=DataCollatorWithPadding(tokenizer)`
    (`DataCollatorForSeq2Seq` when the labels are token sequences). When the call also asks for
    tensors (`return_tensors=`), runs outside a `dataset.map` function, or the Trainer uses a
    custom collator, the finding has no fix. On TPUs static shapes are wanted: scripts that
    import `torch_xla` are not flagged.

    ## References
    - transformers `DataCollatorWithPadding`, `Trainer` default collator
    - pitfalls catalog P13
    """

    code = "TL102"
    name = "padding-max-length"
    severity = Severity.WARNING
    triggers = SETUP_NAMES + ("DataCollator",)
    fix_safety = "safe"
    summary = 'padding="max_length" at preprocessing pads every example to the maximum'

    cases = [
        Case(
            """
            from transformers import AutoTokenizer, Trainer
            tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
            def tokenize(batch):
                return tokenizer(batch["text"], padding="max_length", truncation=True)
            ds = ds.map(tokenize, batched=True)
            trainer = Trainer(model=model, train_dataset=ds, processing_class=tokenizer)
            """,
            fixed=(
                "from transformers import AutoTokenizer, Trainer\n"
                'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")\n'
                "def tokenize(batch):\n"
                '    return tokenizer(batch["text"], truncation=True)\n'
                "ds = ds.map(tokenize, batched=True)\n"
                "trainer = Trainer(model=model, train_dataset=ds, processing_class=tokenizer)\n"
            ),
        ),
        Case(
            """
            from transformers import AutoTokenizer, Trainer
            tok = AutoTokenizer.from_pretrained("bert-base-uncased")
            PAD = "max_length"
            ds = ds.map(lambda b: tok(b["text"], padding=PAD, truncation=True), batched=True)
            trainer = Trainer(model=model, train_dataset=ds)
            """,
            fixed=(
                "from transformers import AutoTokenizer, Trainer, DataCollatorWithPadding\n"
                'tok = AutoTokenizer.from_pretrained("bert-base-uncased")\n'
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
            fixed=(
                "import functools\n"
                "from transformers import Trainer, default_data_collator, DataCollatorWithPadding\n"
                "tokenizer = load_tokenizer()\n"
                'enc = functools.partial(tokenizer, max_length=128)\n'
                'ds = ds.map(lambda b: enc(b["text"]), batched=True)\n'
                "trainer = Trainer(model=model, train_dataset=ds, data_collator=DataCollatorWithPadding(tokenizer))\n"
            ),
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
            def collate(batch):
                return tokenizer([b["text"] for b in batch], padding="max_length", return_tensors="pt")
            Trainer(model=model, train_dataset=ds, data_collator=collate)
            """,
            note="flagged, but no fix: the collator asks for tensors",
        ),
        # must not flag
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

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf in setup.scripts:
            if not pf.trainer_calls or pf.uses_module("torch_xla"):
                continue
            for use in find_padding(pf):
                tok_text = pf.source_of(use.tokenizer)
                edits = self._fix(pf, use)
                kw = pf.keyword(use.call.node, "max_length")
                length = pf.resolve(kw.value, use.call.scope).value if kw is not None else None
                to = f"max_length={length} tokens" if isinstance(length, int) else "the maximum length"
                message = (f'`padding="max_length"` in a `{tok_text}` call pads every example to {to} '
                           f"at preprocessing, so most of each batch is padding (wasted compute and "
                           f"memory); drop it and let a collator pad each batch to its longest example")
                yield self.diagnostic(pf.span(use.value_node), message, edits=edits,
                                      fix_message="remove the padding and pad per batch (dynamic padding)")

    def _fix(self, pf: PythonFile, use: PaddingUse) -> list[Edit] | None:
        call = use.call.node
        if use.remove is None or not use.in_map:
            return None
        if any(k.arg == "return_tensors" for k in call.keywords):
            return None
        kind, container, item = use.remove
        if kind == "arg":
            edits = [remove_argument(pf, container, item)]  # type: ignore[arg-type]
        else:
            edits = [remove_dict_entry(pf, container, item)]  # type: ignore[arg-type]
        for tc in pf.trainer_calls:
            more = self._collator_edits(pf, tc, use)
            if more is None:
                return None
            edits.extend(more)
        return edits

    def _collator_edits(self, pf: PythonFile, tc: TrainerCall, use: PaddingUse) -> list[Edit] | None:
        """Edits that make ``tc`` pad per batch; [] when it already does; None when unknown."""
        scope = tc.site.scope
        collator = tc.keywords.get("data_collator")
        if collator is None and ("processing_class" in tc.keywords or "tokenizer" in tc.keywords):
            return []
        if collator is None and tc.class_name in TRL_TRAINER_CLASSES:
            return []  # TRL trainers pad with their own collators
        tok_name = pf.source_of(use.tokenizer)
        if not isinstance(use.tokenizer, ast.Name) or scope.lookup(use.tokenizer.id) is None:
            return None
        seq2seq = tc.class_name == "Seq2SeqTrainer" or _labels_padded_too(pf, use)
        cls = "DataCollatorForSeq2Seq" if seq2seq else "DataCollatorWithPadding"
        model = tc.keywords.get("model")
        args = f"{tok_name}, model={pf.source_of(model)}" if seq2seq and isinstance(model, ast.Name) else tok_name
        new = f"{cls}({args})"
        edits: list[Edit] = []
        if collator is not None:
            name = _collator_name(pf, collator, scope)
            if name in PADDING_COLLATORS:
                return []
            if name not in NON_PADDING_COLLATORS:
                return None  # a custom collator: we cannot tell whether it pads
            edits.append(replace(pf.span(collator), new))
        else:
            edits.append(add_keyword(pf, tc.site.node, f"data_collator={new}"))
        imp = ensure_import(pf, "transformers", cls)
        if imp is not None:
            edits.append(imp)
        return edits
