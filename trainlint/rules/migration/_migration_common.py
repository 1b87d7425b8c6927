"""Helpers shared by the rules split out of `migration`: TL6xx: API migration, by target transformers / TRL version."""

from __future__ import annotations

import ast
from typing import Iterator

from trainlint import reads
from trainlint.diagnostics import Edit
from trainlint.knowledge import training_args as ta
from trainlint.rules._versioned import (
    fields_for,
    is_known_class,
    names_open,
    parser_library_fields,
    python_keyword,
    remove_edit,
    rename_key_edit,
    replace_with_field_edits,
    target,
    valid_names,
)
from trainlint.setup import UNKNOWN, ArgsSite, Setup, Value
from trainlint.sources.python import PythonFile

V424 = {"transformers_version": "4.40.0"}


V446 = {"transformers_version": "4.46.0"}


V457 = {"transformers_version": "4.57.1"}


V50 = {"transformers_version": "5.0.0"}


V524 = {"transformers_version": "5.24.0"}


# Scripts of the TrlParser cases (TRL's own ScriptArguments / ModelConfig; a project subclass)
TRL_SFT = """from trl import ModelConfig, ScriptArguments, SFTConfig, SFTTrainer, TrlParser

if __name__ == "__main__":
    parser = TrlParser((ScriptArguments, SFTConfig, ModelConfig))
    script_args, training_args, model_args = parser.parse_args_and_config()
    SFTTrainer(model=model_args.model_name_or_path, args=training_args).train()
"""

TRL_GRPO_PROJECT = """from dataclasses import dataclass, field
import trl
from trl import GRPOConfig, GRPOTrainer, ModelConfig, TrlParser


@dataclass
class GRPOScriptArguments(trl.ScriptArguments):
    my_reward_weight: float = field(default=1.0, metadata={"help": "weight"})


if __name__ == "__main__":
    parser = TrlParser((GRPOScriptArguments, GRPOConfig, ModelConfig))
    script_args, training_args, model_args = parser.parse_args_and_config()
    GRPOTrainer(model=model_args.model_name_or_path, reward_funcs=[], args=training_args).train()
"""


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


def _version_for(setup: Setup, package: str) -> str:
    tf, _, trl, _ = target(setup)
    return trl if package == "trl" else tf


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
        if names_open(site):
            return "skip", None  # may be a field of the reader's other dataclasses
        if site.call is None and name in parser_library_fields(setup):
            return "skip", None  # a field TRL's ModelConfig/ScriptArguments had in another release
        return "unknown", None
    version = _version_for(setup, h.package)
    if h.first is not None and _vkey(version) < _vkey(h.first):
        return "too-new", h
    return "removed", h


def _written_with_status(setup: Setup, wanted: str):
    """(site, name, value, history) for every argument written in a TrainingArguments-like
    site of a known class whose status against the target version is ``wanted``."""
    for site, name, value, status, h in _statuses(setup):
        if status == wanted:
            yield site, name, value, h


def _statuses(setup: Setup) -> list[tuple[ArgsSite, str, Value, str, ta.FieldHistory | None]]:
    """(site, name, value, status, history) for every argument written in a TrainingArguments-
    like site of a known class (``_status``): worked out once per setup, for the three rules
    that each report one status (removed, too new, unknown)."""
    found = setup.extra.get("_arg_statuses")
    if found is None:
        found = []
        for site in setup.sites:
            if not is_known_class(site.class_name):
                continue
            for name, value in site.values.items():
                status, h = _status(setup, site, name)
                found.append((site, name, value, status, h))
        setup.extra["_arg_statuses"] = found
    return found


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


def _from_pretrained_calls(pf: PythonFile) -> list[ast.Call]:
    """The ``<transformers model class>.from_pretrained(...)`` calls of ``pf``: the class is
    known through the file's imports, so a file that imports nothing of transformers has
    none (and is not walked for them). A function of the file alone, found once per check
    (``reads.kept``) for the two rules that ask of every setup that holds it."""
    if not pf.uses_module("transformers"):
        return []
    return reads.kept(("_from_pretrained_calls", pf), lambda: list(_model_loads(pf)))


def _model_loads(pf: PythonFile) -> Iterator[ast.Call]:
    for cs in pf.calls_named("from_pretrained"):
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

