"""TL6xx: API migration, by target transformers / TRL version (pitfalls catalog section 1).

TL601 removed-argument, TL602 unknown-argument, TL603 deprecated-argument, TL604
argument-not-yet-available work on every ``ArgsSite`` (Python keywords, launch-line flags, args
files) against the versioned field data in ``knowledge/data/training_args.json`` (and
``trl_args.json``); TL605-TL609 are Python rules on Trainer calls, imports, ``from_pretrained``
keywords and the checkpointing methods.
"""

from __future__ import annotations

import ast
from typing import Iterable, Iterator

from trainlint.diagnostics import Diagnostic, Edit, Severity, replace
from trainlint.knowledge import training_args as ta
from trainlint.rules._versioned import (
    fields_for,
    is_known_class,
    local_class_accepts_anything,
    python_keyword,
    remove_edit,
    rename_key_edit,
    replace_with_field_edits,
    target,
    target_text,
    transformers_at_least,
    valid_names,
)
from trainlint.rules.base import Case, Rule
from trainlint.setup import UNKNOWN, ArgsSite, Setup, Value
from trainlint.sources.python import PythonFile, TrainerCall

V424 = {"transformers_version": "4.40.0"}
V446 = {"transformers_version": "4.46.0"}
V457 = {"transformers_version": "4.57.1"}
V50 = {"transformers_version": "5.0.0"}
V524 = {"transformers_version": "5.24.0"}

# Removed arguments whose deletion never changes what the target version does (the library had
# stopped reading them, or they only named what is now always done).
_DELETE_IS_SAFE = {
    "overwrite_output_dir": "the Trainer never read it; a script that used it to decide whether to resume "
                            "must keep that decision on its own flag",
    "use_mps_device": "mps is used when available, like cuda",
    "include_tokens_per_second": "the tokens/s metric is no longer computed",
}
_NATIVE_AMP = {"auto", "cuda_amp", "amp", "cpu_amp"}
# Renames that are not the same value under the new name.
_NO_AUTOMATIC_RENAME = {"push_to_hub_organization"}


def _vkey(v: str) -> tuple:
    return ta.vkey(v)


def _package_of(cls: str, name: str) -> str:
    try:
        return ta.history(cls, name).package
    except ta.UnknownClassError:
        return "transformers"


def _version_for(setup: Setup, package: str) -> str:
    tf, _, trl, _ = target(setup)
    return trl if package == "trl" else tf


def _removed_in(h: ta.FieldHistory, version: str) -> str | None:
    """The first known version after the field's last appearance before ``version``."""
    known = ta.known_versions() if h.package == "transformers" else ta.trl_known_versions()
    last_before = None
    for a, b in h.present:
        if _vkey(a) <= _vkey(version):
            last_before = b
    if last_before is None:
        return None
    for v in known:
        if _vkey(v) > _vkey(last_before):
            return v
    return None


def _status(setup: Setup, site: ArgsSite, name: str) -> tuple[str, ta.FieldHistory | None]:
    """"ok", "unknown" (never a field), "removed", "too-new" or "skip"."""
    valid = valid_names(setup, site)
    if valid is None:
        return "skip", None
    if name in valid:
        return "ok", None
    try:
        h = ta.history(site.class_name, name)
    except ta.UnknownClassError:
        return "skip", None
    if not h.known:
        base = name[3:] if name.startswith("no_") else None
        if base and site.call is None:
            try:
                hb = ta.history(site.class_name, base)
            except ta.UnknownClassError:
                hb = None
            if hb is not None and hb.known:
                return "skip", None  # --no_X of a removed bool field: reported for X elsewhere
        return "unknown", None
    version = _version_for(setup, h.package)
    if h.first is not None and _vkey(version) < _vkey(h.first):
        return "too-new", h
    return "removed", h



def _written_with_status(setup: Setup, wanted: str):
    """(site, name, value, history) for every argument written in a TrainingArguments-like
    site of a known class whose status against the target version is ``wanted``."""
    for site in setup.sites:
        if not is_known_class(site.class_name):
            continue
        for name, value in site.values.items():
            status, h = _status(setup, site, name)
            if status == wanted:
                yield site, name, value, h

def deprecation_gist(text: str, limit: int = 220) -> str:
    """The part of a deprecation message that says what to do: from the first sentence that
    mentions the deprecation (a help text often starts by describing the field), cut at a
    sentence end within ``limit`` characters."""
    text = " ".join(text.split())
    start = text.lower().find("deprecat")
    if start > 0:
        cut = max(text.rfind(". ", 0, start), text.rfind(": ", 0, start))
        text = text[cut + 2:] if cut != -1 else text
    if len(text) <= limit:
        return text
    end = text.rfind(". ", 0, limit)
    return text[:end + 1] if end > 40 else text[:limit].rstrip() + "..."


def _shown(value: Value) -> str:
    if value.origin == "flag":
        return value.key_text or f"--{value.name}"
    return value.name


def _replacement_fix(setup: Setup, site: ArgsSite, value: Value, valid: frozenset[str]
                     ) -> tuple[list[Edit] | None, str, str, str]:
    """(edits, applicability, fix message, advice for the message) for an old argument."""
    name = value.name
    r = ta.rename_for(site.class_name, name)
    if r is not None and r.kind in ("field", "value", "dict-key") and r.new not in valid:
        r_new_missing = True
    else:
        r_new_missing = False
    if r is not None and not r_new_missing and r.old not in _NO_AUTOMATIC_RENAME:
        written_new = site.get(r.new) if r.new else None
        if r.kind == "field":
            if name == "warmup_ratio":
                ftype = (fields_for(setup, site.class_name) or {}).get("warmup_steps")
                if ftype is None or "float" not in ftype.type:
                    return None, "safe", "", "set warmup_steps to the number of steps instead"
            if written_new is not None:
                e = remove_edit(setup, site, value)
                safety = "unsafe" if name == "warmup_ratio" else "safe"
                return ([e] if e else None), safety, f"remove {name} ({r.new} is set)", f"remove it ({r.new} is set)"
            e = rename_key_edit(setup, site, value, r.new)  # type: ignore[arg-type]
            return ([e] if e else None), "safe", f"rename to {r.new}", f"use {r.new}"
        if r.kind == "value":
            advice = f"use {r.new}={r.value!r}"
            if written_new is not None or not value.known:
                return None, "safe", "", advice
            if value.value is False or value.value is None:
                e = remove_edit(setup, site, value)
                return ([e] if e else None), "safe", f"remove {name}={value.value!r} (the default)", advice
            if value.value is True:
                edits = replace_with_field_edits(setup, site, value, r.new, r.value)  # type: ignore[arg-type]
                return edits, "safe", f"replace with {r.new}={r.value!r}", advice
            return None, "safe", "", advice
        if r.kind == "dict-key":
            advice = f"move it into {r.new}={{{r.key!r}: ...}}"
            found = python_keyword(setup, site, name)
            if written_new is not None or found is None:
                return None, "safe", "", advice
            pf, kw = found
            text = f"{r.new}={{{r.key!r}: {pf.source_of(kw.value)}}}"
            return [pf.span(kw).edit(text)], "safe", f"move into {r.new}", advice
        if r.kind == "env":
            report_to = site.get("report_to")
            fields = fields_for(setup, site.class_name) or {}
            effective_report = report_to.value if report_to is not None else (
                fields["report_to"].default if "report_to" in fields and not site.open_ended else UNKNOWN)
            reports = [effective_report] if isinstance(effective_report, str) else effective_report
            advice = f"export {r.new}={value.value if value.known else '<dir>'} in the launch environment instead"
            if isinstance(reports, (list, tuple)) and not any(str(x).lower() in ("all", "tensorboard") for x in reports):
                e = remove_edit(setup, site, value)
                return ([e] if e else None), "safe", f"remove {name} (TensorBoard is not a report_to target)", \
                    f"remove it (report_to has no tensorboard, so it has no effect); for TensorBoard {advice}"
            return None, "safe", "", advice
    # no replacement in the target version: deletion
    advice = "remove it"
    if r is not None and r.note:
        advice += f" ({r.note})"
    if r is not None and r_new_missing:
        advice = f"remove it ({r.new} does not exist in the target version either)"
    safe = name in _DELETE_IS_SAFE
    if name in ("fp16_backend", "half_precision_backend") and value.known and str(value.value).lower() in _NATIVE_AMP:
        safe = True
        advice = "remove it (native AMP is the only backend)"
    if name in _DELETE_IS_SAFE:
        advice = f"remove it ({_DELETE_IS_SAFE[name]})"
    if not safe and value.known:
        h = ta.history(site.class_name, name)
        last_default = h.default_changes[-1][1] if h.default_changes else UNKNOWN
        if last_default is not UNKNOWN and value.value == last_default and type(value.value) is type(last_default):
            safe = True
            advice = f"remove it ({name}={value.value!r} was the default)"
    if name == "save_safetensors" and value.value is True:
        safe = True
        advice = "remove it (safetensors is always written)"
    e = remove_edit(setup, site, value)
    return ([e] if e else None), ("safe" if safe else "unsafe"), f"remove {name}", advice


class RemovedArgument(Rule):
    """
    ## What it does
    Flags a `TrainingArguments` / `Seq2SeqTrainingArguments` / TRL config argument that the
    target version no longer has: a keyword, a `--flag` of a launch line that feeds an
    `HfArgumentParser` script, or a key of an HF args file. The target version is
    `--transformers-version` / `--trl-version`, `[tool.trainlint]`, the installed package
    (read from its metadata, never imported), a pin in the project's `requirements*.txt` or
    `pyproject.toml`, else the newest version the data knows.

    ## Why is this bad?
    The dataclass no longer has the field: `TrainingArguments(evaluation_strategy=...)` raises
    `TypeError: __init__() got an unexpected keyword argument`, and `HfArgumentParser` exits
    with "the following arguments are not recognized", usually only after minutes of model
    and data loading.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", evaluation_strategy="epoch", overwrite_output_dir=True)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", eval_strategy="epoch")
    ```

    ## Fix safety
    Renames are safe (same value under the new name, only when the target version has the new
    name; when both are written the old one is removed). A removal is safe when nothing replaces
    the argument and deleting it cannot change what the target version does (it was set to its
    old default, or the library no longer read it); otherwise it is unsafe. `logging_dir` is
    removed only when TensorBoard is not a `report_to` target; otherwise the message says to
    export `TENSORBOARD_LOGGING_DIR`.

    ## References
    - pitfalls catalog R01, R03-R16, R18-R20, R26 (field lists diffed over released wheels)
    - huggingface/transformers#36946 (evaluation_strategy), #41017 and #41404 (v5 removals)
    - huggingface/trl#3704 (max_seq_length)
    """

    code = "TL601"
    name = "removed-argument"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "an argument the target transformers/TRL version no longer has"

    cases = [
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", evaluation_strategy="epoch")  # keep
            """, options=V524,
             fixed='from transformers import TrainingArguments\n'
                   'args = TrainingArguments(output_dir="o", eval_strategy="epoch")  # keep\n'),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(
                output_dir="o",
                overwrite_output_dir=True,
                eval_strategy="no",
            )
            """, options=V524,
             fixed='from transformers import TrainingArguments\nargs = TrainingArguments(\n    output_dir="o",\n'
                   '    eval_strategy="no",\n)\n'),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", evaluation_strategy="steps", eval_strategy="steps")
            """, options=V524,
             fixed='from transformers import TrainingArguments\n'
                   'args = TrainingArguments(output_dir="o", eval_strategy="steps")\n',
             note="both written: the old one goes"),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", adafactor=True)
            """, options=V50,
             fixed='from transformers import TrainingArguments\n'
                   'args = TrainingArguments(output_dir="o", optim=\'adafactor\')\n'),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", fsdp_min_num_params=1000)
            """, options=V50,
             fixed='from transformers import TrainingArguments\n'
                   'args = TrainingArguments(output_dir="o", fsdp_config={\'min_num_params\': 1000})\n'),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", logging_dir="./logs", report_to="wandb")
            """, options=V524,
             fixed='from transformers import TrainingArguments\n'
                   'args = TrainingArguments(output_dir="o", report_to="wandb")\n',
             note="logging_dir only matters to TensorBoard"),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", logging_dir="./logs", report_to="tensorboard")
            """, options=V524, fixed=None, note="no exact fix: export TENSORBOARD_LOGGING_DIR"),
        Case("""
            from transformers import TrainingArguments
            common = {"output_dir": "o", "no_cuda": True}
            args = TrainingArguments(**common)
            """, options=V50),
        Case("""
            from trl import SFTConfig
            cfg = SFTConfig(output_dir="o", max_seq_length=512)
            """, options={"trl_version": "0.20.0"},
             fixed='from trl import SFTConfig\ncfg = SFTConfig(output_dir="o", max_length=512)\n'),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", warmup_ratio=0.1)
            """, options=V524,
             fixed='from transformers import TrainingArguments\n'
                   'args = TrainingArguments(output_dir="o", warmup_steps=0.1)\n'),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", group_by_length=True)
            """, options=V524,
             fixed='from transformers import TrainingArguments\n'
                   'args = TrainingArguments(output_dir="o", train_sampling_strategy=\'group_by_length\')\n'),
        # must not flag
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", evaluation_strategy="epoch", overwrite_output_dir=True)
            """, options=V424, flags=False, note="both exist in 4.40"),
        Case("""
            from trl import SFTConfig
            cfg = SFTConfig(output_dir="o", max_seq_length=512)
            """, options={"trl_version": "0.19.1"}, flags=False),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", eval_strategy="epoch")
            """, options=V524, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site, name, value, h in _written_with_status(setup, "removed"):
            if h is None:
                continue
            version = _version_for(setup, h.package)
            removed = _removed_in(h, version) or h.removed_in or "a later version"
            valid = valid_names(setup, site) or frozenset()
            edits, applicability, fix_message, advice = _replacement_fix(setup, site, value, valid)
            message = (f"{_shown(value)} was removed from {site.class_name} in {h.package} {removed} "
                       f"({target_text(setup, h.package)}): {advice}")
            span = value.key_span or value.span or site.span
            if span is None:
                continue
            yield self.diagnostic(span, message, edits=edits, fix_message=fix_message,
                                  applicability=applicability)  # type: ignore[arg-type]


class UnknownArgument(Rule):
    """
    ## What it does
    Flags an argument name that no version of `TrainingArguments` (or the TRL config class)
    has ever had: a misspelt keyword, `--flag` or args-file key. The message suggests the
    closest valid names of the target version. Local subclasses' own annotated fields, and the
    other dataclasses an `HfArgumentParser` script parses into, count as valid; keys that an
    unresolved `**kwargs` may add are never reported.

    ## Why is this bad?
    `TrainingArguments(learning_rat=1e-4)` raises `TypeError` at construction, and
    `HfArgumentParser` rejects `--learning_rat 1e-4` ("the following arguments are not
    recognized"), after the model and data have been loaded.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", learning_rat=1e-4)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", learning_rate=1e-4)
    ```

    ## Fix safety
    No automatic fix: the closest name is a guess.

    ## References
    - transformers `TrainingArguments` (a dataclass: unknown keywords raise `TypeError`)
    - transformers `HfArgumentParser.parse_args_into_dataclasses` ("Some specified arguments are
      not used by the HfArgumentParser")
    """

    code = "TL602"
    name = "unknown-argument"
    severity = Severity.ERROR
    fix_safety = "none"
    summary = "an argument name TrainingArguments never had (with did-you-mean)"

    cases = [
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", learning_rat=1e-4)
            """),
        Case("""
            from transformers import Seq2SeqTrainingArguments
            opts = dict(output_dir="o", predict_with_generat=True)
            args = Seq2SeqTrainingArguments(**opts)
            """),
        Case("""
            from dataclasses import dataclass, field
            from transformers import TrainingArguments
            @dataclass
            class MyArgs(TrainingArguments):
                lora_rank: int = 8
            args = MyArgs(output_dir="o", lora_rank=16, lerning_rate=1e-4)
            """, note="the subclass's own field is fine, the typo is not"),
        # must not flag
        Case("""
            from dataclasses import dataclass, field
            from transformers import TrainingArguments
            @dataclass
            class MyArgs(TrainingArguments):
                lora_rank: int = 8
            args = MyArgs(output_dir="o", lora_rank=16)
            """, flags=False),
        Case("""
            from transformers import TrainingArguments
            class MyArgs(TrainingArguments):
                def __init__(self, lerning_rate=None, **kw):
                    super().__init__(learning_rate=lerning_rate, **kw)
            args = MyArgs(output_dir="o", lerning_rate=1e-4)
            """, flags=False, note="its own __init__ decides"),
        Case("""
            from transformers import TrainingArguments
            def build(**kw):
                return TrainingArguments(output_dir="o", **kw)
            """, flags=False),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", evaluation_strategy="epoch")
            """, options=V524, flags=False, note="a removed name is TL601's"),
        Case("""
            from mylib import TrainingArguments
            args = TrainingArguments(output_dir="o", learning_rat=1e-4)
            """, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site, name, value, _ in _written_with_status(setup, "unknown"):
            tf, _, trl, _ = target(setup)
            try:
                guesses = ta.did_you_mean(site.class_name, name, tf, trl)
            except ta.UnknownClassError:
                guesses = []
            if value.origin == "flag":
                guesses = [f"--{g}" for g in guesses]
            hint = f"; did you mean {' or '.join(guesses)}?" if guesses else ""
            what = "has no argument"
            message = (f"{site.class_name} {what} {_shown(value)} ({target_text(setup)}): construction "
                       f"fails{hint}")
            span = value.key_span or value.span or site.span
            if span is None:
                continue
            yield self.diagnostic(span, message)


class DeprecatedArgument(Rule):
    """
    ## What it does
    Flags an argument that the target version still accepts but deprecates (it logs a
    deprecation warning and names its removal), such as `evaluation_strategy` on 4.41-4.50,
    `no_cuda` on 4.x, or `gradient_checkpointing` on 5.23+.

    ## Why is this bad?
    It works today and breaks on the next upgrade, with a `TypeError` at construction.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", evaluation_strategy="epoch")  # transformers 4.46
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", eval_strategy="epoch")
    ```

    ## Fix safety
    Safe renames where the target version has the new name (the library copies the old value
    into it); otherwise no fix.

    ## References
    - pitfalls catalog R01, R03-R13, R18, R19, R21
    - the deprecation messages in `TrainingArguments.__post_init__` of each version
    """

    code = "TL603"
    name = "deprecated-argument"
    severity = Severity.INFO
    fix_safety = "safe"
    summary = "an argument the target version deprecates (still accepted)"

    cases = [
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", evaluation_strategy="epoch")
            """, options=V446,
             fixed='from transformers import TrainingArguments\n'
                   'args = TrainingArguments(output_dir="o", eval_strategy="epoch")\n'),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", gradient_checkpointing=True)
            """, options=V524,
             fixed='from transformers import TrainingArguments\n'
                   'args = TrainingArguments(output_dir="o", activation_checkpointing=True)\n'),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", no_cuda=True)
            """, options=V457,
             fixed='from transformers import TrainingArguments\n'
                   'args = TrainingArguments(output_dir="o", use_cpu=True)\n'),
        # must not flag
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", evaluation_strategy="epoch")
            """, options=V424, flags=False, note="not yet deprecated in 4.40"),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", gradient_checkpointing=True)
            """, options=V457, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site in setup.sites:
            if not is_known_class(site.class_name):
                continue
            fields = fields_for(setup, site.class_name)
            valid = valid_names(setup, site)
            if fields is None or valid is None:
                continue
            for name, value in site.values.items():
                f = fields.get(name)
                if f is None or not f.deprecated or not f.init:
                    continue
                r = ta.rename_for(site.class_name, name)
                edits = None
                fix_message = ""
                advice = ""
                applicability = "safe"
                if r is not None and r.kind == "field" and r.new in valid and name not in _NO_AUTOMATIC_RENAME \
                        and name != "warmup_ratio":
                    edits, applicability, fix_message, advice = _replacement_fix(setup, site, value, valid)
                elif r is not None and r.new:
                    advice = f"use {r.new}" if r.kind == "field" else f"use {r.new}" + (
                        f"={r.value!r}" if r.kind == "value" else "")
                package = _package_of(site.class_name, name)
                if package == "trl":  # a TRL class that redeclares a field TrainingArguments deprecates
                    base = (fields_for(setup, "TrainingArguments") or {}).get(name)
                    if base is not None and base.deprecated == f.deprecated:
                        package = "transformers"
                message = (f"{_shown(value)} is deprecated ({target_text(setup, package)})"
                           + (f": {advice}" if advice else f": {deprecation_gist(f.deprecated)}"))
                span = value.key_span or value.span or site.span
                if span is None:
                    continue
                yield self.diagnostic(span, message, edits=edits, fix_message=fix_message,
                                      applicability=applicability)  # type: ignore[arg-type]


class ArgumentNotYetAvailable(Rule):
    """
    ## What it does
    Flags an argument that exists only in versions newer than the target (for example
    `eval_strategy` with transformers 4.40, or `train_sampling_strategy` before 5.2).

    ## Why is this bad?
    The target version's dataclass does not have it: `TypeError` at construction. This happens
    when a script written for a newer release runs in an older pinned environment.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", eval_strategy="epoch")  # transformers 4.40
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", evaluation_strategy="epoch")
    ```
    or upgrade transformers.

    ## Fix safety
    No fix: upgrading or renaming back is the user's choice.

    ## References
    - pitfalls catalog section 1 (field lists by version)
    """

    code = "TL604"
    name = "argument-not-yet-available"
    severity = Severity.ERROR
    fix_safety = "none"
    summary = "an argument added after the target version"

    cases = [
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", eval_strategy="epoch")
            """, options=V424),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", eval_strategy="epoch")
            """, options=V446, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site, name, value, h in _written_with_status(setup, "too-new"):
            if h is None:
                continue
            old = [r.old for r in ta.renames() if r.new == name and r.kind == "field"]
            hint = f"; this version calls it {old[0]}" if old else ""
            try:
                if old and old[0] not in ta.field_names(site.class_name, *target(setup)[::2]):
                    hint = ""
            except ta.UnknownClassError:
                hint = ""
            message = (f"{_shown(value)} was added to {site.class_name} in {h.package} {h.first} "
                       f"({target_text(setup, h.package)}){hint}")
            span = value.key_span or value.span or site.span
            if span is None:
                continue
            yield self.diagnostic(span, message)


# -- Python-only migrations ------------------------------------------------------------------------

PROCESSING_CLASS_SINCE = "4.46.0"  # Trainer.__init__ has processing_class (4.46.0 trainer.py)
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
    `GRPOTrainer`) by the target TRL version.

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

    ## References
    - pitfalls catalog R02; huggingface/transformers#32385
    - transformers 4.46 `trainer.py` (`deprecate_kwarg("tokenizer", new_name="processing_class")`)
    - trl 0.12.0-0.20.0 `trl/trainer/*_trainer.py` (the `deprecate_kwarg("tokenizer", ...)`
      decorators and their removal versions)
    """

    code = "TL605"
    name = "trainer-tokenizer-argument"
    severity = Severity.ERROR
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
                yield self.diagnostic(
                    pf.keyword_name_span(kw),
                    f"{tc.class_name}(tokenizer=) is {when} ({where}): use processing_class=",
                    edits=edits, fix_message=fix_message, severity=severity)
            if attr_status is None:
                continue
            severity, when = attr_status
            for node in pf.nodes:
                if isinstance(node, ast.Attribute) and node.attr == "tokenizer" and isinstance(node.ctx, ast.Load) \
                        and isinstance(node.value, ast.Name) and node.value.id in names \
                        and len(pf.bindings_of(node.value.id, pf.module_scope)) <= 1:
                    sp = pf.span(node)
                    attr_span = replace(sp, line=sp.end_line, column=sp.end_column - len("tokenizer"))
                    yield self.diagnostic(
                        attr_span,
                        f"{node.value.id}.tokenizer is {when} ({target_text(setup)}): use "
                        f"{node.value.id}.processing_class",
                        edits=[attr_span.edit("processing_class")], fix_message="read processing_class",
                        severity=severity)


EVALUATION_STRATEGY_REMOVED_IN = "5.0.0"  # trainer_utils.py: present in 4.57.1, gone in 5.0.0


class EvaluationStrategyEnum(Rule):
    """
    ## What it does
    Flags imports of `EvaluationStrategy` from transformers when the target is 5.0 or newer.

    ## Why is this bad?
    The enum was removed in 5.0 (it had been a deprecated alias of `IntervalStrategy`): the
    import raises `ImportError` before anything runs.

    ## Example
    ```python
    from transformers.trainer_utils import EvaluationStrategy
    args = TrainingArguments(output_dir="out", eval_strategy=EvaluationStrategy.EPOCH)
    ```

    ## Use instead
    ```python
    from transformers.trainer_utils import IntervalStrategy
    args = TrainingArguments(output_dir="out", eval_strategy=IntervalStrategy.EPOCH)
    ```

    ## Fix safety
    Safe: `IntervalStrategy` has the same members. The import is renamed, and so is every use
    of the name when it was imported without an alias.

    ## References
    - pitfalls catalog R22; huggingface/transformers#41131
    """

    code = "TL606"
    name = "evaluation-strategy-enum"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "EvaluationStrategy was removed in transformers 5.0 (use IntervalStrategy)"

    cases = [
        Case("""
            from transformers.trainer_utils import EvaluationStrategy
            s = EvaluationStrategy.EPOCH
            """, options=V50,
             fixed="from transformers.trainer_utils import IntervalStrategy\ns = IntervalStrategy.EPOCH\n"),
        Case("""
            from transformers import EvaluationStrategy as ES
            s = ES.STEPS
            """, options=V524,
             fixed="from transformers import IntervalStrategy as ES\ns = ES.STEPS\n"),
        Case("""
            from transformers.trainer_utils import EvaluationStrategy
            """, options=V457, flags=False),
        Case("""
            from transformers.trainer_utils import IntervalStrategy
            """, options=V524, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        if not transformers_at_least(setup, EVALUATION_STRATEGY_REMOVED_IN):
            return
        for pf in setup.scripts:
            for node in pf.nodes:
                if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
                    continue
                if node.module.split(".")[0] != "transformers":
                    continue
                for alias in node.names:
                    if alias.name != "EvaluationStrategy":
                        continue
                    sp = pf.span(alias)
                    name_span = replace(sp, end_line=sp.line, end_column=sp.column + len("EvaluationStrategy"))
                    edits = [name_span.edit("IntervalStrategy")]
                    if alias.asname is None:
                        if len(pf.module_scope.bindings.get("EvaluationStrategy", [])) > 1:
                            edits = []
                        else:
                            for n in pf.nodes:
                                if isinstance(n, ast.Name) and n.id == "EvaluationStrategy":
                                    edits.append(pf.span(n).edit("IntervalStrategy"))
                    yield self.diagnostic(
                        name_span,
                        f"EvaluationStrategy was removed in transformers {EVALUATION_STRATEGY_REMOVED_IN} "
                        f"({target_text(setup)}): use IntervalStrategy",
                        edits=edits or None, fix_message="use IntervalStrategy")


DTYPE_SINCE = "4.56.0"  # modeling_utils.py: from_pretrained pops "dtype" from 4.56.0
AUTH_TOKEN_REMOVED_IN = "5.0.0"  # modeling_utils.py 5.0.0 no longer handles use_auth_token
LOAD_IN_REMOVED_IN = "5.0.0"  # 5.x from_pretrained no longer parses load_in_8bit/load_in_4bit


def _from_pretrained_calls(pf: PythonFile) -> Iterator[ast.Call]:
    for cs in pf.calls:
        f = cs.node.func
        if not (isinstance(f, ast.Attribute) and f.attr == "from_pretrained"):
            continue
        qn = pf.qualname(f.value)
        if qn is None or not (qn.startswith("transformers.") or qn.startswith("peft.")):
            continue
        if qn.startswith("peft."):
            continue
        # tokenizers and configs take no dtype/quantization: only models
        last = qn.rsplit(".", 1)[-1]
        if "Tokenizer" in last or last.endswith("Config") or "Processor" in last or "FeatureExtractor" in last:
            continue
        yield cs.node


class FromPretrainedRemovedKwargs(Rule):
    """
    ## What it does
    Flags `from_pretrained(use_auth_token=...)` and `from_pretrained(load_in_8bit=True)` /
    `load_in_4bit=True` on a transformers model class when the target is 5.0 or newer (a
    warning on 4.x, where they are deprecated).

    ## Why is this bad?
    transformers 5 no longer handles these keywords: `use_auth_token` is not read (a gated or
    private model then fails to download), and `load_in_8bit`/`load_in_4bit` are passed on to
    the model's config instead of quantizing: the model loads in full precision and runs out of
    memory, or fails.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, use_auth_token=True, load_in_4bit=True)
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained(
        name, token=True, quantization_config=BitsAndBytesConfig(load_in_4bit=True))
    ```

    ## Fix safety
    `use_auth_token` -> `token` is safe. `load_in_*` has no automatic fix (it needs an import
    and a `BitsAndBytesConfig`).

    ## References
    - pitfalls catalog R23
    - transformers 4.57.1 and 5.0.0 `modeling_utils.py` (`PreTrainedModel.from_pretrained`)
    """

    code = "TL607"
    name = "from-pretrained-removed-kwargs"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "from_pretrained(use_auth_token=, load_in_8bit/4bit=) no longer handled in transformers 5"

    cases = [
        Case("""
            from transformers import AutoModelForCausalLM
            m = AutoModelForCausalLM.from_pretrained("x", use_auth_token=True)
            """, options=V524,
             fixed='from transformers import AutoModelForCausalLM\n'
                   'm = AutoModelForCausalLM.from_pretrained("x", token=True)\n'),
        Case("""
            from transformers import AutoModelForCausalLM
            m = AutoModelForCausalLM.from_pretrained("x", load_in_4bit=True)
            """, options=V524),
        Case("""
            from transformers import AutoModelForCausalLM
            m = AutoModelForCausalLM.from_pretrained("x", token=True)
            """, options=V524, flags=False),
        Case("""
            from transformers import AutoModelForCausalLM
            m = AutoModelForCausalLM.from_pretrained("x", load_in_4bit=False)
            """, options=V524, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        removed = transformers_at_least(setup, AUTH_TOKEN_REMOVED_IN)
        severity = Severity.ERROR if removed else Severity.WARNING
        state = f"no longer handled since transformers {AUTH_TOKEN_REMOVED_IN}" if removed else "deprecated"
        for pf in setup.scripts:
            for call in _from_pretrained_calls(pf):
                kws = {k.arg: k for k in call.keywords if k.arg}
                if "use_auth_token" in kws:
                    kw = kws["use_auth_token"]
                    from trainlint.fixing.python_edits import remove_argument

                    if "token" in kws:
                        edits = [remove_argument(pf, call, kw)]
                    else:
                        edits = [pf.keyword_name_span(kw).edit("token")]
                    yield self.diagnostic(pf.keyword_name_span(kw),
                                          f"from_pretrained(use_auth_token=) is {state} ({target_text(setup)}): "
                                          f"use token=", edits=edits, fix_message="use token=", severity=severity)
                for name in ("load_in_8bit", "load_in_4bit"):
                    kw = kws.get(name)
                    if kw is None:
                        continue
                    scope = next((cs.scope for cs in pf.calls if cs.node is call), pf.module_scope)
                    v = pf.resolve(kw.value, scope).value
                    if v is False:
                        continue
                    yield self.diagnostic(
                        pf.keyword_name_span(kw),
                        f"from_pretrained({name}=) is {state} ({target_text(setup)}): pass "
                        f"quantization_config=BitsAndBytesConfig({name}=True)", severity=severity)


class FromPretrainedTorchDtype(Rule):
    """
    ## What it does
    Flags `from_pretrained(torch_dtype=...)` when the target transformers accepts `dtype`
    (4.56 and later).

    ## Why is this bad?
    `torch_dtype` is a deprecated alias: it logs "`torch_dtype` is deprecated! Use `dtype`
    instead!" and is kept only for backward compatibility.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.bfloat16)
    ```

    ## Fix safety
    Safe: the same value under the new name.

    ## References
    - pitfalls catalog R23; transformers 4.56.0 `modeling_utils.py`
    """

    code = "TL608"
    name = "from-pretrained-torch-dtype"
    severity = Severity.INFO
    fix_safety = "safe"
    summary = "from_pretrained(torch_dtype=) is a deprecated alias of dtype= (4.56+)"

    cases = [
        Case("""
            import torch
            from transformers import AutoModelForCausalLM
            m = AutoModelForCausalLM.from_pretrained("x", torch_dtype=torch.bfloat16)
            """, options=V524,
             fixed='import torch\nfrom transformers import AutoModelForCausalLM\n'
                   'm = AutoModelForCausalLM.from_pretrained("x", dtype=torch.bfloat16)\n'),
        Case("""
            import torch
            from transformers import AutoModelForCausalLM
            m = AutoModelForCausalLM.from_pretrained("x", torch_dtype=torch.bfloat16)
            """, options={"transformers_version": "4.55.4"}, flags=False),
        Case("""
            from transformers import AutoTokenizer
            t = AutoTokenizer.from_pretrained("x", torch_dtype="auto")
            """, options=V524, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        if not transformers_at_least(setup, DTYPE_SINCE):
            return
        for pf in setup.scripts:
            for call in _from_pretrained_calls(pf):
                kws = {k.arg: k for k in call.keywords if k.arg}
                kw = kws.get("torch_dtype")
                if kw is None:
                    continue
                if "dtype" in kws:
                    continue  # dtype wins; nothing to rename into
                yield self.diagnostic(
                    pf.keyword_name_span(kw),
                    f"torch_dtype= is a deprecated alias of dtype= ({target_text(setup)})",
                    edits=[pf.keyword_name_span(kw).edit("dtype")], fix_message="rename to dtype=")


CHECKPOINTING_RENAMED_IN = "5.23.0"  # modeling_utils.py: activation_checkpointing_* (5.22.0: absent)
_CHECKPOINTING_RENAMES = {
    "gradient_checkpointing_enable": "activation_checkpointing_enable",
    "gradient_checkpointing_disable": "activation_checkpointing_disable",
    "is_gradient_checkpointing": "is_activation_checkpointing",
}


class CheckpointingMethodRenamed(Rule):
    """
    ## What it does
    Flags, for transformers 5.23 and later, calls of `model.gradient_checkpointing_enable()`
    / `model.gradient_checkpointing_disable()` and reads of `model.is_gradient_checkpointing`
    in a script that imports transformers, peft or trl. A file that defines a method of one of
    these names (a custom model overriding it) is left alone.

    ## Why is this bad?
    5.23 renamed them to `activation_checkpointing_enable` / `_disable` /
    `is_activation_checkpointing` (the TrainingArguments field became
    `activation_checkpointing`, see `deprecated-argument`, TL603). The old names still work but
    warn "is deprecated and will be removed in v6" on every call.

    ## Example
    ```python
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    ```

    ## Use instead
    ```python
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    ```

    ## Fix safety
    Safe: the old methods are aliases that call the new ones (the keyword
    `gradient_checkpointing_kwargs=` is renamed with them).

    ## References
    - pitfalls catalog R21; transformers 5.23 `PreTrainedModel.gradient_checkpointing_enable`
      (read in the 5.22.0 and 5.23.0 wheels)
    """

    code = "TL609"
    name = "checkpointing-method-renamed"
    severity = Severity.INFO
    fix_safety = "safe"
    summary = "gradient_checkpointing_enable() and friends: activation_checkpointing_* since 5.23"

    cases = [
        Case("""
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            print(model.is_gradient_checkpointing)
            """, options=V524,
             fixed="from transformers import AutoModelForCausalLM\n"
                   "model = AutoModelForCausalLM.from_pretrained(\"gpt2\")\n"
                   "model.activation_checkpointing_enable(activation_checkpointing_kwargs={\"use_reentrant\": False})\n"
                   "print(model.is_activation_checkpointing)\n"),
        # must not flag
        Case("""
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            model.gradient_checkpointing_enable()
            """, options={"transformers_version": "5.22.0"}, flags=False),
        Case("""
            import torch
            class Net(torch.nn.Module):
                def gradient_checkpointing_enable(self):
                    self.ckpt = True
            Net().gradient_checkpointing_enable()
            """, options=V524, flags=False, note="not a transformers script; its own method"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        if not transformers_at_least(setup, CHECKPOINTING_RENAMED_IN):
            return
        for pf in setup.scripts:
            if not any(pf.uses_module(m) for m in ("transformers", "peft", "trl")) \
                    or not any(old in pf.text for old in _CHECKPOINTING_RENAMES):
                continue
            if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in _CHECKPOINTING_RENAMES
                   for n in pf.nodes):
                continue
            for node in pf.nodes:
                if not (isinstance(node, ast.Attribute) and node.attr in _CHECKPOINTING_RENAMES
                        and isinstance(node.ctx, ast.Load)):
                    continue
                new = _CHECKPOINTING_RENAMES[node.attr]
                sp = pf.span(node)
                attr_span = replace(sp, line=sp.end_line, column=sp.end_column - len(node.attr))
                edits = [attr_span.edit(new)]
                call = next((c.node for c in pf.calls if c.node.func is node), None)
                kw = pf.keyword(call, "gradient_checkpointing_kwargs") if call is not None else None
                if kw is not None:
                    edits.append(pf.keyword_name_span(kw).edit("activation_checkpointing_kwargs"))
                yield self.diagnostic(
                    attr_span, f"{node.attr} is deprecated since transformers {CHECKPOINTING_RENAMED_IN} "
                               f"({target_text(setup)}; removed in v6): use {new}",
                    edits=edits, fix_message=f"rename to {new}")
