"""TL603 deprecated-argument: an argument the target version deprecates (still accepted)"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.knowledge import training_args as ta
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    older_support,
    fields_for,
    is_known_class,
    target_text,
    valid_names,
)
from trainlint.rules.base import Case, Rule
from trainlint.rules.migration._migration_common import (
    _NO_AUTOMATIC_RENAME,
    V424,
    V446,
    V457,
    V524,
    _replacement_fix,
    _shown,
)
from trainlint.setup import Setup


def _package_of(cls: str, name: str) -> str:
    try:
        return ta.history(cls, name).package
    except ta.UnknownClassError:
        return "transformers"


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
    The fix is unsafe when the project declares support (its requirements, pyproject.toml or
    setup.py) for a transformers older than the first one with the new name.

    ## References
    - the deprecation messages in `TrainingArguments.__post_init__` of each version
    """

    code = "TL603"
    name = "deprecated-argument"
    severity = Severity.INFO
    triggers = SETUP_NAMES
    needs_training = True
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
                note = ""
                if edits and r is not None and r.new_since and package == "transformers":
                    older, note = older_support(setup, r.new_since, r.new, site.path)
                    if older == "unsafe":
                        applicability = "unsafe"
                message = (f"{_shown(value)} is deprecated ({target_text(setup, package)})"
                           + (f": {advice}" if advice else f": {deprecation_gist(f.deprecated)}") + note)
                span = value.key_span or value.span or site.span
                if span is None:
                    continue
                yield self.diagnostic(span, message, edits=edits, fix_message=fix_message,
                                      applicability=applicability)  # type: ignore[arg-type]

