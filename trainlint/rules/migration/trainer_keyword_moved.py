"""TL610 trainer-keyword-moved: a TRL trainer keyword that moved to the trainer's config class"""

from __future__ import annotations

import ast
import builtins
from typing import TYPE_CHECKING, Iterable

from trainlint.consumers import patched_config_keywords
from trainlint.diagnostics import Diagnostic, Edit, Severity
from trainlint.knowledge import training_args as ta
from trainlint.rules._versioned import local_class_accepts_anything, target, target_text
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup, Value
from trainlint.sources.python import CallSite, PythonFile, TrainerCall, TrainingArgsCall

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.knowledge import trl_trainers

_OTHER_RULES = {"tokenizer"}  # trainer-tokenizer-argument (TL605) owns it
_BUILTINS = frozenset(dir(builtins))


def _config_field(config: str, keyword: str, tf: str, trl: str) -> str | None:
    """The field of ``config`` in the target versions that takes the keyword's value: the same
    name, or the name a later rename gave it (``max_seq_length`` -> ``max_length``)."""
    try:
        names = ta.field_names(config, tf, trl)
    except ta.UnknownClassError:
        return None
    if keyword in names:
        return keyword
    r = ta.rename_for(config, keyword)
    if r is not None and r.kind == "field" and r.new in names:
        return r.new
    return None


def _names_bound_before(pf: PythonFile, expr: ast.AST, where: CallSite) -> bool:
    """Whether every name ``expr`` reads is bound, in the scope of ``where``, only by statements
    that come before ``where`` (so the expression means the same thing there), or is a builtin."""
    for node in ast.walk(expr):
        if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp, ast.Await, ast.Yield)):
            return False
        if not isinstance(node, ast.Name):
            continue
        found = where.scope.lookup(node.id)
        if found is None:
            if node.id in _BUILTINS:
                continue
            return False
        for b in found[1]:
            line = getattr(b.node, "lineno", None)
            if line is None or line >= where.node.lineno:
                return False
    return True


def _config_call_of(pf: PythonFile, tc: TrainerCall) -> TrainingArgsCall | None:
    """The config call that ``args=`` passes, when it is built in the file and only this
    trainer uses it."""
    ac = tc.args_call
    if ac is None or ac.site.in_lambda:
        return None
    if ac.bound_to is not None and pf.name_uses(ac.bound_to) != 1:
        return None
    return ac



class TrainerKeywordMoved(Rule):
    """
    ## What it does
    Flags a keyword of a TRL trainer (`SFTTrainer`, `DPOTrainer`, `RewardTrainer`, ...) that
    the target TRL version's constructor no longer takes because it moved to the trainer's
    config class (`SFTConfig`, `DPOConfig`, `RewardConfig`): `SFTTrainer(dataset_text_field=,
    packing=, max_seq_length=, dataset_num_proc=, neftune_noise_alpha=, ...)`,
    `DPOTrainer(beta=, max_length=, loss_type=, ...)`, `RewardTrainer(max_length=)`. Keywords
    written directly, through a constant or in an unpacked `**dict` are read. Which keywords a
    trainer takes, and where each went, is read from the released TRL wheels. A trainer in a
    file that imports a framework that moves them (unsloth, imported before `trl`, passes the
    config fields given to a TRL trainer on to its `args=` config; see
    `trainlint/knowledge/data/frameworks.json`) is not flagged when `args=` is a keyword.

    ## Why is this bad?
    From the release that removed it the keyword is a `TypeError: __init__() got an unexpected
    keyword argument` when the trainer is built, after the model and data have been loaded (TRL
    0.13 for `SFTTrainer`/`DPOTrainer`, 0.14 for `RewardTrainer`). In the release before, it is
    deprecated and only overrides the config.

    ## Example
    ```python
    args = SFTConfig(output_dir="out")
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, dataset_text_field="text")
    ```

    ## Use instead
    ```python
    args = SFTConfig(output_dir="out", dataset_text_field="text")
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds)
    ```

    ## Fix safety
    Safe when `args=` is a config of the right class built in the same file and used only by this
    trainer, and the value means the same where the config is built: the keyword moves into that
    call (under the name the target version uses, `max_length` for `max_seq_length` from TRL
    0.20), which is exactly what the trainer did with it. Unsafe when `args=` is a plain
    `TrainingArguments`: the fix turns it into the config class and imports it, and the config
    class has other defaults than `TrainingArguments` for the fields the script does not set.
    No fix when the keyword comes from a `**dict`, or the config is built elsewhere.

    ## References
    - huggingface/trl v0.12.2 `trl/trainer/sft_trainer.py` (`_deprecate_arguments(version="0.13.0", ...)`)
    - huggingface/trl#2060; unslothai/unsloth#1264; huggingface/course#1171;
      foundation-model-stack/fms-hf-tuning#399
    """

    code = "TL610"
    name = "trainer-keyword-moved"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("trl",)
    fix_safety = "safe"
    summary = "a TRL trainer keyword that moved to its config class (SFTTrainer(max_seq_length=) ...)"

    cases = [
        Case("""
            from trl import SFTConfig, SFTTrainer
            args = SFTConfig(output_dir="o")
            trainer = SFTTrainer(model=m, args=args, train_dataset=ds, dataset_text_field="text")
            """, options={"trl_version": "0.13.0"},
             fixed='from trl import SFTConfig, SFTTrainer\n'
                   'args = SFTConfig(output_dir="o", dataset_text_field="text")\n'
                   'trainer = SFTTrainer(model=m, args=args, train_dataset=ds)\n'),
        Case("""
            from trl import SFTConfig, SFTTrainer
            MAX_LEN = 1024
            trainer = SFTTrainer(
                model=m,
                args=SFTConfig(
                    output_dir="o",
                ),
                max_seq_length=MAX_LEN,
            )
            """, options={"trl_version": "0.24.0"},
             fixed='from trl import SFTConfig, SFTTrainer\nMAX_LEN = 1024\ntrainer = SFTTrainer(\n    model=m,\n'
                   '    args=SFTConfig(\n        output_dir="o",\n        max_length=MAX_LEN,\n    ),\n)\n',
             note="a constant; SFTConfig calls it max_length from 0.20"),
        Case("""
            from trl import DPOConfig, DPOTrainer
            cfg = DPOConfig(output_dir="o")
            kw = dict(beta=0.1, max_length=512)
            trainer = DPOTrainer(model=m, ref_model=None, args=cfg, **kw)
            """, options={"trl_version": "0.20.0"}, note="an unpacked dict: no fix"),
        Case("""
            from transformers import TrainingArguments
            from trl import SFTTrainer
            args = TrainingArguments(output_dir="o")
            trainer = SFTTrainer(model=m, args=args, packing=True)
            """, options={"trl_version": "1.16.0"}, unsafe=True,
             fixed='from transformers import TrainingArguments\nfrom trl import SFTTrainer, SFTConfig\n'
                   'args = SFTConfig(output_dir="o", packing=True)\ntrainer = SFTTrainer(model=m, args=args)\n',
             note="a plain TrainingArguments becomes the config: unsafe"),
        Case("""
            from trl import RewardConfig, RewardTrainer
            trainer = RewardTrainer(model=m, args=RewardConfig(output_dir="o"), max_length=512)
            """, options={"trl_version": "0.14.0"},
             fixed='from trl import RewardConfig, RewardTrainer\n'
                   'trainer = RewardTrainer(model=m, args=RewardConfig(output_dir="o", max_length=512))\n'),
        Case("""
            from unsloth import FastLanguageModel
            from trl import SFTConfig, SFTTrainer
            trainer = SFTTrainer(model, SFTConfig(output_dir="o"), packing=True)
            """, options={"trl_version": "0.22.2"}, note="args passed by position: unsloth moves nothing"),
        Case("""
            from trl import SFTConfig, SFTTrainer
            trainer = SFTTrainer(model=m, args=SFTConfig(output_dir="o"), packing=True)
            """, options={"trl_version": "0.12.2"}, note="deprecated in 0.12 (a warning)",
             fixed='from trl import SFTConfig, SFTTrainer\n'
                   'trainer = SFTTrainer(model=m, args=SFTConfig(output_dir="o", packing=True))\n'),
        # must not flag
        Case("""
            from trl import SFTConfig, SFTTrainer
            trainer = SFTTrainer(model=m, args=SFTConfig(output_dir="o", packing=True), formatting_func=f)
            """, options={"trl_version": "1.16.0"}, flags=False),
        Case("""
            from mylib import SFTTrainer
            trainer = SFTTrainer(model=m, packing=True)
            """, options={"trl_version": "1.16.0"}, flags=False, note="not TRL's"),
        Case("""
            from unsloth import FastLanguageModel
            from trl import SFTConfig, SFTTrainer
            model, tok = FastLanguageModel.from_pretrained("unsloth/llama-3-8b-bnb-4bit")
            trainer = SFTTrainer(model=model, tokenizer=tok, train_dataset=ds, dataset_text_field="text",
                                 max_seq_length=2048, packing=False, args=SFTConfig(output_dir="o"))
            """, options={"trl_version": "0.22.2"}, flags=False,
             note="unsloth, imported first, moves config fields given to a TRL trainer into args="),
        Case("""
            from trl import SFTTrainer
            class MyTrainer(SFTTrainer):
                def __init__(self, *a, packing=False, **kw):
                    super().__init__(*a, **kw)
            trainer = MyTrainer(model=m, packing=True)
            """, options={"trl_version": "1.16.0"}, flags=False, note="its own __init__ takes it"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        tf, _, trl, _ = target(setup)
        for pf in setup.scripts:
            for tc in pf.trainer_calls:
                if not pf.imports.get(tc.class_name, "").startswith("trl") \
                        and not any(qn.startswith("trl") and qn.endswith("." + tc.class_name)
                                    for qn in pf.imports.values()):
                    continue
                if local_class_accepts_anything(pf, tc.site.node.func):
                    continue
                if any(k.arg == "args" for k in tc.site.node.keywords) \
                        and patched_config_keywords(pf, tc.class_name) is not None:
                    continue  # a framework imported first (unsloth) moves them into args=
                # the signature data is read (and its module imported) only from here on
                from trainlint.knowledge import trl_trainers

                moved = trl_trainers.moved_keywords(tc.class_name)
                keywords = tc.site.node.keywords
                if all(k.arg is not None and k.arg not in moved for k in keywords):
                    continue  # only a keyword that moved can be reported: none written, no **kwargs
                values, _ = pf.call_keywords(tc.site.node, tc.site.scope)
                if not values:
                    continue
                sig = trl_trainers.signature(tc.class_name, trl)
                if sig is None or sig.varkw:
                    continue
                for name, value in values.items():
                    if name in _OTHER_RULES or (name in sig.params and name not in sig.deprecated) \
                            or name in sig.aliases:
                        continue
                    m = trl_trainers.moved(tc.class_name, name)
                    if m is None:
                        continue
                    yield from self._report(setup, pf, tc, sig, m, value, tf, trl)

    def _report(self, setup: Setup, pf: PythonFile, tc: TrainerCall, sig: trl_trainers.TrainerSignature,
                m: trl_trainers.Moved, value: Value, tf: str, trl: str) -> Iterable[Diagnostic]:
        config = sig.config or m.config
        field = _config_field(config, m.keyword, tf, trl)
        deprecated = m.keyword in sig.params  # still accepted by the target, with a warning
        if deprecated:
            state = f"is deprecated and removed in trl {m.removed_in}"
            severity = Severity.WARNING
        else:
            state = f"was removed in trl {m.removed_in}: TypeError when the trainer is built"
            severity = Severity.ERROR
        where = target_text(setup, "trl")
        given = tc.args_call.class_name if tc.args_call is not None else None
        on = f"the {config} passed as args=" if given in (None, config) else \
            f"args={config}(...) (args= is a {given} here)"
        if field is None:
            advice = f"{config} has no such field in the target version either; remove it"
        elif field != m.keyword:
            advice = f"set {field}= on {on} ({config} renamed {m.keyword} to {field})"
        else:
            advice = f"set it on {on}"
        message = f"{tc.class_name}({m.keyword}=) {state} ({where}): {advice}"
        edits, applicability, fix_message = self._fix(pf, tc, config, field, value)
        span = value.key_span or value.span or pf.span(tc.site.node)
        yield self.diagnostic(span, message, edits=edits, fix_message=fix_message,
                              applicability=applicability, severity=severity)  # type: ignore[arg-type]

    def _fix(self, pf: PythonFile, tc: TrainerCall, config: str, field: str | None, value: Value
             ) -> tuple[list[Edit] | None, str | None, str]:
        from trainlint.fixing.python_edits import add_keyword, ensure_import, remove_argument

        if field is None:
            return None, None, ""
        kw = pf.keyword(tc.site.node, value.name)
        if kw is None or value.key_span is None or value.key_span != pf.keyword_name_span(kw):
            return None, None, ""  # from a **dict: no edit
        ac = _config_call_of(pf, tc)
        if ac is None or ac.site.scope is not tc.site.scope and ac.bound_to is not None:
            return None, None, ""
        if ac.args.open_ended or ac.args.get(field) is not None:
            return None, None, ""  # the config may already set it (or sets it): nothing to move into
        if not _names_bound_before(pf, kw.value, ac.site):
            return None, None, ""
        text = f"{field}={pf.source_of(kw.value)}"
        edits = [add_keyword(pf, ac.site.node, text), remove_argument(pf, tc.site.node, kw)]
        if ac.class_name == config:
            return edits, "safe", f"move {value.name}= into {config}(...)"
        if ac.class_name != "TrainingArguments":
            return None, None, ""
        # a plain TrainingArguments: it becomes the config class (other defaults: unsafe)
        func = ac.site.node.func
        edits.append(pf.span(func).edit(config))
        imp = ensure_import(pf, "trl", config)
        if imp is not None:
            edits.append(imp)
        return edits, "unsafe", f"build a {config} instead of TrainingArguments and move {value.name}= into it"
