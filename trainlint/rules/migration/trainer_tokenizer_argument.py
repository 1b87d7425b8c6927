"""TL605 trainer-tokenizer-argument: Trainer(tokenizer=) / trainer.tokenizer: processing_class since 4.46, removed in 5.0"""

from __future__ import annotations

import ast
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

PROCESSING_CLASS_SINCE = "4.46.0"  # Trainer.__init__ has processing_class (4.46.0 trainer.py)
TRL_PROCESSING_CLASS_SINCE = "0.12.0"  # TRL trainers take processing_class (trl 0.12.0 sft_trainer.py)


TOKENIZER_REMOVED_IN = "5.0.0"  # Trainer.__init__ without tokenizer, no .tokenizer property (5.0.0)


# TRL trainers: the TRL versions in which ``tokenizer=`` is a deprecated alias of
# ``processing_class`` (a ``deprecate_kwarg`` decorator on ``__init__``); outside them the
# keyword is a TypeError. Read in the trl 0.12.0, 0.13.0, 0.14.0, 0.15.0, 0.16.0 and 0.20.0
# wheels (0.12.0 is the oldest TRL the field data covers). GKD and GRPO never took it.
TRL_TOKENIZER_ALIAS: dict[str, tuple[str, str] | None] = {
    "SFTTrainer": ("0.12.0", "0.16.0"),
    "DPOTrainer": ("0.12.0", "0.16.0"),
    "CPOTrainer": ("0.13.0", "0.14.0"),
    "KTOTrainer": ("0.13.0", "0.14.0"),
    "ORPOTrainer": ("0.13.0", "0.15.0"),
    "PPOTrainer": ("0.13.0", "0.15.0"),
    "RewardTrainer": ("0.13.0", "0.15.0"),
    "GKDTrainer": None,
    "GRPOTrainer": None,
}



class TrainerTokenizerArgument(Rule):
    """
    ## What it does
    Flags `Trainer(tokenizer=...)` / `Seq2SeqTrainer(tokenizer=...)` (and local subclasses)
    and reads of `trainer.tokenizer`, when the target transformers has `processing_class`
    (4.46 and later); and `tokenizer=` on TRL trainers (`SFTTrainer`, `DPOTrainer`,
    `CPOTrainer`, `KTOTrainer`, `ORPOTrainer`, `PPOTrainer`, `RewardTrainer`, `GKDTrainer`,
    `GRPOTrainer`) by the target TRL version. A TRL trainer in a file that imports a framework
    that patches the TRL trainers (unsloth, imported before `trl`, maps `tokenizer=` to
    `processing_class`; see `trainlint/knowledge/data/frameworks.json`) is not flagged.

    ## Why is this bad?
    From 4.46 the keyword is a deprecated alias (passing both raises); transformers 5.0 removed
    it: `TypeError: Trainer.__init__() got an unexpected keyword argument 'tokenizer'`, and
    `trainer.tokenizer` is an `AttributeError`. TRL's trainers took `tokenizer=` as a
    deprecated alias for a few releases each (SFT and DPO until 0.16, CPO and KTO in 0.13 only,
    ORPO, PPO and Reward in 0.13-0.14); outside those it is the same TypeError.

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
            if not transformers_at_least(setup, PROCESSING_CLASS_SINCE):
                return None
            if transformers_at_least(setup, TOKENIZER_REMOVED_IN):
                return Severity.ERROR, f"removed in transformers {TOKENIZER_REMOVED_IN}", target_text(setup)
            return (Severity.WARNING, f"deprecated since {PROCESSING_CLASS_SINCE}, removed in {TOKENIZER_REMOVED_IN}",
                    target_text(setup))
        if tc.class_name not in TRL_TOKENIZER_ALIAS or not pf.imports.get(tc.class_name, "").startswith("trl"):
            return None
        if patched_trainer_keyword(pf, tc.class_name, "tokenizer") is not None:
            return None  # a framework imported first (unsloth) maps tokenizer= to processing_class
        alias = TRL_TOKENIZER_ALIAS[tc.class_name]
        trl = _vkey(target(setup)[2])
        where = target_text(setup, "trl")
        if alias is None:
            return Severity.ERROR, "not an argument of it in any TRL release since 0.12", where
        since, removed = alias
        if trl >= _vkey(removed):
            return Severity.ERROR, f"removed in trl {removed}", where
        if trl >= _vkey(since):
            return Severity.WARNING, f"deprecated, removed in trl {removed}", where
        return Severity.ERROR, f"not accepted before trl {since}", where

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        attr_status = None
        if transformers_at_least(setup, PROCESSING_CLASS_SINCE):
            removed = transformers_at_least(setup, TOKENIZER_REMOVED_IN)
            attr_status = (Severity.ERROR if removed else Severity.WARNING,
                           f"removed in transformers {TOKENIZER_REMOVED_IN}" if removed
                           else f"deprecated since {PROCESSING_CLASS_SINCE}, removed in {TOKENIZER_REMOVED_IN}")
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
                applicability, note = older_support(setup, PROCESSING_CLASS_SINCE, "processing_class=", pf.path)
                if tc.class_name in TRL_TRAINER_CLASSES and applicability == "safe":
                    applicability, note = older_support(setup, TRL_PROCESSING_CLASS_SINCE, "processing_class=",
                                                        pf.path, "trl")
                yield self.diagnostic(
                    pf.keyword_name_span(kw),
                    f"{tc.class_name}(tokenizer=) is {when} ({where}): use processing_class={note}",
                    edits=edits, fix_message=fix_message, severity=severity,
                    applicability=applicability)  # type: ignore[arg-type]
            if attr_status is None:
                continue
            severity, when = attr_status
            for node in pf.nodes:
                if isinstance(node, ast.Attribute) and node.attr == "tokenizer" and isinstance(node.ctx, ast.Load) \
                        and isinstance(node.value, ast.Name) and node.value.id in names \
                        and len(pf.bindings_of(node.value.id, pf.module_scope)) <= 1:
                    sp = pf.span(node)
                    attr_span = replace(sp, line=sp.end_line, column=sp.end_column - len("tokenizer"))
                    applicability, note = older_support(setup, PROCESSING_CLASS_SINCE, "processing_class", pf.path)
                    yield self.diagnostic(
                        attr_span,
                        f"{node.value.id}.tokenizer is {when} ({target_text(setup)}): use "
                        f"{node.value.id}.processing_class{note}",
                        edits=[attr_span.edit("processing_class")], fix_message="read processing_class",
                        severity=severity, applicability=applicability)  # type: ignore[arg-type]

