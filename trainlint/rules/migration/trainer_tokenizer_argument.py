"""TL605 trainer-tokenizer-argument: Trainer(tokenizer=) / trainer.tokenizer: processing_class since 4.46, removed in 5.0"""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import Iterable

from trainlint.consumers import patched_trainer_keyword
from trainlint.diagnostics import Diagnostic, Severity, replace
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    older_support,
    local_class_accepts_anything,
    target,
    target_text,
    transformers_at_least,
)
from trainlint.rules.base import Case, Rule
from trainlint.rules.migration._migration_common import (
    V424,
    V457,
    V524,
    _vkey,
)
from trainlint.setup import Setup
from trainlint.sources.python import TRL_TRAINER_CLASSES, PythonFile, TrainerCall

@lru_cache(maxsize=256)  # the released signatures: the same answer for every setup
def _transformers_window(cls: str) -> tuple[str | None, str | None]:
    """(since, removed_in) of ``tokenizer=`` as an alias of ``processing_class`` on
    ``Trainer.__init__`` / ``Seq2SeqTrainer.__init__``: the first release with the
    ``processing_class`` parameter, and the first release after the last one that still takes
    ``tokenizer`` (a parameter or the ``deprecate_kwarg`` alias). From
    ``knowledge/data/model_api.json`` (the released signatures). The ``trainer.tokenizer``
    property went with the keyword (5.0 ``trainer.py`` has neither)."""
    from trainlint.knowledge import model_api

    key = f"{cls}.__init__"
    return model_api.keyword_window(key, "processing_class")[0], model_api.keyword_window(key, "tokenizer", alias=True)[1]


@lru_cache(maxsize=256)  # the released signatures: the same answer for every setup
def _trl_processing_class_since(cls: str) -> str | None:
    """The first TRL release whose ``cls.__init__`` takes ``processing_class``, from
    ``knowledge/data/trl_trainers.json`` (the released signatures); None when none the data
    knows does."""
    from trainlint.knowledge import trl_trainers

    for v in trl_trainers.known_versions():
        sig = trl_trainers.signature(cls, v)
        if sig is not None and "processing_class" in sig.params:
            return v
    return None


@lru_cache(maxsize=256)  # the released signatures: the same answer for every setup
def _trl_status(cls: str, version: str) -> tuple[str, str | None, str | None] | None:
    """How TRL trainer ``cls`` takes ``tokenizer=`` in that TRL release, from
    ``knowledge/data/trl_trainers.json`` (every release's ``__init__`` and its
    ``deprecate_kwarg`` aliases): ("accepted" | "alias" | "never" | "not-yet" | "removed",
    first release that takes it, first release after the last that does); None when the
    trainer is unknown there or takes ``**kwargs``."""
    from trainlint.knowledge import trl_trainers

    sig = trl_trainers.signature(cls, version)
    if sig is None or sig.varkw:
        return None
    takes = []
    versions = trl_trainers.known_versions()
    for v in versions:
        other = trl_trainers.signature(cls, v)
        takes.append(other is not None and ("tokenizer" in other.params or "tokenizer" in other.aliases))
    if not any(takes):
        return "never", None, None
    first = versions[takes.index(True)]
    last = len(takes) - 1 - takes[::-1].index(True)
    removed = versions[last + 1] if last + 1 < len(versions) else None
    if "tokenizer" in sig.params:
        return "accepted", first, removed
    if "tokenizer" in sig.aliases:
        return "alias", first, removed
    return ("not-yet" if _vkey(version) < _vkey(first) else "removed"), first, removed


class TrainerTokenizerArgument(Rule):
    """
    ## What it does
    Flags `Trainer(tokenizer=...)` / `Seq2SeqTrainer(tokenizer=...)` (and local subclasses)
    and reads of `trainer.tokenizer`, when the target transformers has `processing_class`;
    and `tokenizer=` on TRL trainers (`SFTTrainer`, `DPOTrainer`, `CPOTrainer`, `KTOTrainer`,
    `ORPOTrainer`, `GKDTrainer`, `GRPOTrainer`, ...) by the target TRL version. Which releases
    take `tokenizer=` (a parameter, or the `deprecate_kwarg` alias of `processing_class`) is
    read from every released signature (`knowledge/data/model_api.json`,
    `knowledge/data/trl_trainers.json`). A TRL trainer in a file that imports a framework
    that patches the TRL trainers (unsloth, imported before `trl`, maps `tokenizer=` to
    `processing_class`; see `trainlint/knowledge/data/frameworks.json`) is not flagged, nor is
    a trainer whose `__init__` takes `**kwargs`.

    ## Why is this bad?
    From 4.46 the keyword is a deprecated alias (passing both raises); transformers 5.0 removed
    it: `TypeError: Trainer.__init__() got an unexpected keyword argument 'tokenizer'`, and
    `trainer.tokenizer` is an `AttributeError`. TRL's trainers took `tokenizer=` as a
    deprecated alias for a few releases each (SFT and DPO until 0.16, CPO, KTO, GKD and others
    only around 0.12-0.13); outside those it is the same TypeError.

    ## Example
    ```python
    trainer = Trainer(model=model, args=args, tokenizer=tokenizer)
    ```

    ## Use instead
    ```python
    trainer = Trainer(model=model, args=args, processing_class=tokenizer)
    ```

    ## Fix safety
    Safe: the same object under the new name (when both are written, `tokenizer=` is removed).
    The fix is unsafe when the notebook or shell script installs itself (`%pip install
    "trl==0.9.6"`), or the project declares support for (its requirements or pyproject.toml), a
    transformers older than 4.46 or, for a TRL trainer, a TRL older than 0.12 (the releases that
    added `processing_class`): it would break the code there.

    ## References
    - huggingface/transformers#32385
    - transformers 4.46 `trainer.py` (`deprecate_kwarg("tokenizer", new_name="processing_class")`)
    - trl 0.12.0-0.20.0 `trl/trainer/*_trainer.py` (the `deprecate_kwarg("tokenizer", ...)`
      decorators and their removal versions)
    """

    code = "TL605"
    name = "trainer-tokenizer-argument"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("tokenizer",)
    fix_safety = "safe"
    summary = "Trainer(tokenizer=) / trainer.tokenizer: processing_class since 4.46, removed in 5.0"

    cases = [
        Case("""
            from transformers import Trainer
            trainer = Trainer(model=m, args=a, tokenizer=tok)
            print(trainer.tokenizer)
            """, options=V524,
             fixed="from transformers import Trainer\ntrainer = Trainer(model=m, args=a, processing_class=tok)\n"
                   "print(trainer.processing_class)\n"),
        Case("""
            from transformers import Seq2SeqTrainer
            trainer = Seq2SeqTrainer(model=m, tokenizer=tok, processing_class=tok)
            """, options=V457,
             fixed="from transformers import Seq2SeqTrainer\ntrainer = Seq2SeqTrainer(model=m, processing_class=tok)\n"),
        Case("""
            from trl import SFTTrainer
            trainer = SFTTrainer(model=m, args=a, tokenizer=tok)
            """, options={"trl_version": "0.20.0"},
             fixed="from trl import SFTTrainer\ntrainer = SFTTrainer(model=m, args=a, processing_class=tok)\n"),
        Case("""
            from trl import DPOTrainer
            trainer = DPOTrainer(model=m, args=a, tokenizer=tok)
            """, options={"trl_version": "0.14.0"}, note="deprecated alias (a warning)"),
        Case("""
            from trl import RewardTrainer
            trainer = RewardTrainer(model=m, args=a, tokenizer=tok)
            """, options={"trl_version": "0.12.0"}, note="no alias in 0.12"),
        # must not flag
        Case("""
            from transformers import Trainer
            trainer = Trainer(model=m, args=a, tokenizer=tok)
            """, options=V424, flags=False, note="processing_class does not exist before 4.46"),
        Case("""
            from trl import SFTTrainer
            trainer = SFTTrainer(model=m, args=a, processing_class=tok)
            """, options={"trl_version": "0.20.0"}, flags=False),
        Case("""
            from transformers import Trainer
            trainer = Trainer(model=m, args=a, processing_class=tok)
            """, options=V524, flags=False),
        Case("""
            from unsloth import FastLanguageModel
            from trl import SFTTrainer
            model, tok = FastLanguageModel.from_pretrained("unsloth/llama-3-8b-bnb-4bit")
            trainer = SFTTrainer(model=model, args=a, tokenizer=tok)
            """, options={"trl_version": "0.20.0"}, flags=False,
             note="unsloth, imported first, maps tokenizer= to processing_class on TRL trainers"),
        Case("""
            from mylib import Trainer
            trainer = Trainer(model=m, tokenizer=tok)
            """, options=V524, flags=False),
        Case("""
            from transformers import Trainer
            class MyTrainer(Trainer):
                def __init__(self, *args, tokenizer=None, **kwargs):
                    super().__init__(*args, processing_class=tokenizer, **kwargs)
            trainer = MyTrainer(model=m, tokenizer=tok)
            """, options=V524, flags=False, note="the subclass takes tokenizer= itself"),
    ]

    def _status(self, setup: Setup, pf: PythonFile, tc: TrainerCall) -> tuple[Severity, str, str] | None:
        """(severity, what happens, whose versions) for ``tokenizer=`` on this trainer class."""
        if tc.class_name in ("Trainer", "Seq2SeqTrainer"):
            return self._transformers_status(setup, tc.class_name)
        if tc.class_name not in TRL_TRAINER_CLASSES or not pf.imports.get(tc.class_name, "").startswith("trl"):
            return None
        if patched_trainer_keyword(pf, tc.class_name, "tokenizer") is not None:
            return None  # a framework imported first (unsloth) maps tokenizer= to processing_class
        trl = target(setup)[2]
        found = _trl_status(tc.class_name, trl)
        if found is None:
            return None
        state, since, removed = found
        where = target_text(setup, "trl")
        if state == "never":
            from trainlint.knowledge import trl_trainers

            return Severity.ERROR, f"not an argument of it in any TRL release since {trl_trainers.known_versions()[0]}", \
                where
        if state == "removed":
            return Severity.ERROR, f"removed in trl {removed}", where
        if state == "alias":
            return Severity.WARNING, f"deprecated, removed in trl {removed}" if removed else "deprecated", where
        if state == "not-yet":
            return Severity.ERROR, f"not accepted before trl {since}", where
        return None

    def _transformers_status(self, setup: Setup, cls: str) -> tuple[Severity, str, str] | None:
        since, removed = _transformers_window(cls)
        if since is None or not transformers_at_least(setup, since):
            return None
        if removed is not None and transformers_at_least(setup, removed):
            return Severity.ERROR, f"removed in transformers {removed}", target_text(setup)
        return (Severity.WARNING, f"deprecated since {since}" + (f", removed in {removed}" if removed else ""),
                target_text(setup))

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        attr_status = None
        since = None
        if any(pf.trainer_calls for pf in setup.scripts):
            found = self._transformers_status(setup, "Trainer")
            if found is not None:
                attr_status = found[:2]
                since = _transformers_window("Trainer")[0]
        for pf in setup.scripts:
            names: set[str] = set()
            for tc in pf.trainer_calls:
                status = self._status(setup, pf, tc)
                if status is None:
                    continue
                severity, when, where = status
                stmt = tc.site.stmt
                if isinstance(stmt, ast.Assign) and stmt.value is tc.site.node and len(stmt.targets) == 1 \
                        and isinstance(stmt.targets[0], ast.Name):
                    names.add(stmt.targets[0].id)
                kw = pf.keyword(tc.site.node, "tokenizer")
                if kw is None or local_class_accepts_anything(pf, tc.site.node.func):
                    continue
                if pf.keyword(tc.site.node, "processing_class") is not None:
                    from trainlint.fixing.python_edits import remove_argument

                    edits = [remove_argument(pf, tc.site.node, kw)]
                    fix_message = "remove tokenizer= (processing_class= is set)"
                else:
                    edits = [pf.keyword_name_span(kw).edit("processing_class")]
                    fix_message = "rename to processing_class="
                applicability, note = older_support(setup, _transformers_window("Trainer")[0] or "", "processing_class=",
                                                    pf.path)
                if tc.class_name in TRL_TRAINER_CLASSES and applicability == "safe":
                    since_trl = _trl_processing_class_since(tc.class_name)
                    applicability, note = older_support(setup, since_trl, "processing_class=", pf.path, "trl") \
                        if since_trl else ("unsafe", " (the fix is unsafe: no TRL release the data knows takes "
                                                     "processing_class= here)")
                yield self.diagnostic(
                    pf.keyword_name_span(kw),
                    f"{tc.class_name}(tokenizer=) is {when} ({where}): use processing_class={note}",
                    edits=edits, fix_message=fix_message, severity=severity,
                    applicability=applicability)  # type: ignore[arg-type]
            if attr_status is None or not names:
                continue
            severity, when = attr_status
            for node in pf.attributes("tokenizer"):
                if isinstance(node.ctx, ast.Load) \
                        and isinstance(node.value, ast.Name) and node.value.id in names \
                        and len(pf.bindings_of(node.value.id, pf.module_scope)) <= 1:
                    sp = pf.span(node)
                    attr_span = replace(sp, line=sp.end_line, column=sp.end_column - len("tokenizer"))
                    applicability, note = older_support(setup, since or "", "processing_class", pf.path)
                    yield self.diagnostic(
                        attr_span,
                        f"{node.value.id}.tokenizer is {when} ({target_text(setup)}): use "
                        f"{node.value.id}.processing_class{note}",
                        edits=[attr_span.edit("processing_class")], fix_message="read processing_class",
                        severity=severity, applicability=applicability)  # type: ignore[arg-type]

