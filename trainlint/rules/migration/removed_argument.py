"""TL601 removed-argument: an argument the target transformers/TRL version no longer has"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.knowledge import training_args as ta
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    fields_for,
    is_known_class,
    declares,
    parser_library_dataclasses,
    target,
    project_allows_before,
    version_words,
    target_text,
    tolerant_parse,
    valid_names,
)
from trainlint.rules.base import Case, Rule
from trainlint.rules.migration._migration_common import (
    TRL_SFT,
    V50,
    V424,
    V524,
    _replacement_fix,
    _shown,
    _version_for,
    _vkey,
    _written_with_status,
)
from trainlint.setup import FLAG, ArgsSite, Setup


def _dataclass_removed_in(lib: str, name: str, version: str) -> str | None:
    """The first release without field ``name`` of TRL dataclass ``lib`` after its last release
    with it before ``version``, when ``version`` lacks it; else None."""
    from trainlint.knowledge import trl_script_args as tsa

    now = tsa.field_names(lib, version)
    if now is None or name in now:
        return None
    before = [b for a, b in tsa.present(lib, name) if _vkey(a) <= _vkey(version)]
    if not before:
        return None
    later = [v for v in tsa.known_versions() if _vkey(v) > _vkey(before[-1])]
    return later[0] if later and _vkey(later[0]) <= _vkey(version) else None


def _before(version: str) -> str:
    from trainlint.knowledge import trl_script_args as tsa

    vs = tsa.known_versions()
    return vs[max(0, vs.index(version) - 1)] if version in vs else version


def _replacement_in(message: str | None, valid: frozenset[str]) -> str | None:
    """The field a deprecation message says to use instead (``please use `dtype` instead``),
    when the target has it."""
    import re

    if not message:
        return None
    for m in re.finditer(r"\buse `([A-Za-z_][A-Za-z0-9_]*)`", message):
        if m.group(1) in valid:
            return m.group(1)
    return None


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



class RemovedArgument(Rule):
    """
    ## What it does
    Flags a `TrainingArguments` / `Seq2SeqTrainingArguments` / TRL config argument that the
    target version no longer has: a keyword, a `--flag` of a launch line that feeds an
    `HfArgumentParser` script, or a key of an HF args file. The target version is
    `--transformers-version` / `--trl-version`, `[tool.trainlint]`, the installed package
    (read from its metadata, never imported), a pin in the project's `requirements*.txt` or
    `pyproject.toml`, else the newest version the data knows. For a `TrlParser` /
    `HfArgumentParser` that also reads TRL's own `ModelConfig` / `ScriptArguments`, a flag or
    key that one of those had in earlier releases and the target TRL release dropped
    (`torch_dtype` of `ModelConfig`) is flagged too, with the replacement its deprecation named.

    ## Why is this bad?
    The dataclass no longer has the field: `TrainingArguments(evaluation_strategy=...)` raises
    `TypeError: __init__() got an unexpected keyword argument`, and `HfArgumentParser` exits
    with "the following arguments are not recognized", usually only after minutes of model
    and data loading. A script that parses with
    `parse_args_into_dataclasses(return_remaining_strings=True)` or `parse_known_args()` (or
    `parse_json_file(..., allow_extra_keys=True)` for an args file) does not even fail: the removed
    flag is left among the remaining strings, nothing reads it, and its setting is silently lost
    (`--evaluation_strategy steps` then means no evaluation at all). That case is a warning that
    names the lost setting.

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
    The fix is unsafe when the project declares support (its requirements, pyproject.toml or
    setup.py) for a transformers from before the removal.

    ## References
    - huggingface/transformers#36946 (evaluation_strategy), #41017 and #41404 (v5 removals)
    - huggingface/trl#3704 (max_seq_length)
    """

    code = "TL601"
    name = "removed-argument"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
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
        Case(files={
            "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                        "parser = HfArgumentParser(TrainingArguments)\n"
                        "(args, rest) = parser.parse_args_into_dataclasses(return_remaining_strings=True)\n",
            "run.sh": "python train.py --output_dir o --evaluation_strategy steps --eval_steps 50\n",
        }, options=V524, fixed_path="run.sh",
             fixed="python train.py --output_dir o --eval_strategy steps --eval_steps 50\n",
             note="a tolerant parser swallows the flag: a warning that says the setting is lost"),
        Case(files={
            "train.py": "import argparse\nfrom transformers import HfArgumentParser, TrainingArguments\n"
                        "parser = HfArgumentParser(TrainingArguments)\n"
                        "args, unknown = parser.parse_known_args()\n",
            "run.sh": "python train.py --output_dir o --evaluation_strategy epoch\n",
        }, options=V524, fixed_path="run.sh", fixed="python train.py --output_dir o --eval_strategy epoch\n"),
        # must not flag
        Case(files={
            "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                        "parser = HfArgumentParser(TrainingArguments)\n"
                        "(args, rest) = parser.parse_args_into_dataclasses(return_remaining_strings=True)\n",
            "run.sh": "python train.py --output_dir o --eval_strategy steps --my_own_flag 3\n",
        }, options=V524, flags=False, note="a flag no version ever had is the script's own"),
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
        # TRL's ModelConfig read by the same parser
        Case(files={"run.sh": "python sft.py --config recipe.yaml\n", "sft.py": TRL_SFT,
                    "recipe.yaml": "model_name_or_path: Qwen/Qwen2-0.5B\ntorch_dtype: bfloat16\noutput_dir: out\n"},
             options={"trl_version": "1.16.0"}, message="use dtype", flags=True,
             note="ModelConfig.torch_dtype, deprecated for dtype, is gone from trl 0.27"),
        Case(files={"run.sh": "python sft.py --config recipe.yaml\n", "sft.py": TRL_SFT,
                    "recipe.yaml": "model_name_or_path: Qwen/Qwen2-0.5B\ntorch_dtype: bfloat16\noutput_dir: out\n"},
             options={"trl_version": "0.20.0"}, flags=False, note="still a ModelConfig field there"),
        Case(files={"run.sh": "python sft.py --config recipe.yaml\n", "sft.py": TRL_SFT,
                    "recipe.yaml": "model_name_or_path: Qwen/Qwen2-0.5B\ndtype: bfloat16\noutput_dir: out\n"},
             options={"trl_version": "1.16.0"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site, name, value, h in _written_with_status(setup, "removed"):
            if h is None:
                continue
            version = _version_for(setup, h.package)
            removed = _removed_in(h, version) or h.removed_in or "a later version"
            valid = valid_names(setup, site) or frozenset()
            edits, applicability, fix_message, advice = _replacement_fix(setup, site, value, valid)
            note = ""
            if edits and h.package in ("transformers", "trl") and removed[:1].isdigit():
                bound = removed
                r = ta.rename_for(site.class_name, name)
                if h.package == "trl" and r is not None and r.kind == "field" and r.new:
                    # a TRL field renamed with the same meaning (max_seq_length -> max_length): the
                    # fix works wherever the new name exists
                    try:
                        bound = ta.history(site.class_name, r.new).first or removed
                    except ta.UnknownClassError:
                        pass
                low = project_allows_before(setup, bound, site.path, h.package)
                if low is not None:
                    applicability = "unsafe"
                    note = (f" (the fix is unsafe: {declares(low[1])} {version_words(h.package, low)}, where "
                            f"{name} still works and the fixed code means something else or fails)")
            message = (f"{_shown(value)} was removed from {site.class_name} in {h.package} {removed} "
                       f"({target_text(setup, h.package)}): {advice}{note}")
            span = value.key_span or value.span or site.span
            if span is None:
                continue
            yield self.diagnostic(span, message, edits=edits, fix_message=fix_message,
                                  applicability=applicability)  # type: ignore[arg-type]
        # the rest reports on a parser's sites only (flags, an args file): a setup without one
        # does not ask what its scripts' parsers read
        if not any(s.call is None and is_known_class(s.class_name) for s in setup.sites):
            return
        yield from self._library_dataclass_fields(setup)
        tolerant = tolerant_parse(setup)
        if tolerant is not None:
            yield from self._swallowed(setup, tolerant)

    def _library_dataclass_fields(self, setup: Setup) -> Iterable[Diagnostic]:
        """Flags and args-file keys for a field TRL's own parser dataclasses (``ModelConfig``,
        ``ScriptArguments``) had in earlier releases and the target TRL release no longer has
        (``torch_dtype``): the parser rejects them like any unknown name."""
        from trainlint.knowledge import trl_script_args as tsa

        libs = parser_library_dataclasses(setup)
        if not libs:
            return
        trl = target(setup)[2]
        for site in setup.sites:
            if site.call is not None or not is_known_class(site.class_name):
                continue
            valid = valid_names(setup, site)
            if valid is None:
                continue
            for name, value in site.values.items():
                if name in valid:
                    continue
                for lib in libs:
                    removed = _dataclass_removed_in(lib, name, trl)
                    if removed is None:
                        continue
                    cls = lib.rsplit(".", 1)[1]
                    advice = "remove it"
                    last = tsa.fields(lib, _before(removed)) or {}
                    dep = last.get(name).deprecated if name in last else None
                    new = _replacement_in(dep, valid)
                    if new is not None:
                        advice = f"use {'--' + new if value.origin == FLAG else new}"
                    span = value.key_span or value.span or site.span
                    if span is None:
                        break
                    yield self.diagnostic(span, f"{_shown(value)} was removed from TRL's {cls} in trl {removed} "
                                                f"({target_text(setup, 'trl')}): the parser rejects it; {advice}")
                    break

    def _swallowed(self, setup: Setup, tolerant) -> Iterable[Diagnostic]:
        """Removed flags/keys that a tolerant parser lets through: the setting is lost."""
        pf, _, how = tolerant
        for site in setup.sites:
            if site.call is not None or not is_known_class(site.class_name):
                continue
            if getattr(site.reader, "strict", False):
                continue  # this site's own reader rejects unknown flags (another script tolerates them)
            valid = valid_names(setup, site, strict=False)
            if valid is None:
                continue
            for name, value in site.values.items():
                if name in valid:
                    continue
                try:
                    h = ta.history(site.class_name, name)
                except ta.UnknownClassError:
                    continue
                if not h.known:
                    continue  # never a field: the script's own flag, which it reads from the rest
                version = _version_for(setup, h.package)
                if h.first is not None and _vkey(version) < _vkey(h.first):
                    continue
                removed = _removed_in(h, version) or h.removed_in or "a later version"
                edits, applicability, fix_message, advice = _replacement_fix(setup, site, value, valid)
                what = "flag" if value.origin == FLAG else "key"
                message = (f"{_shown(value)} was removed from {site.class_name} in {h.package} {removed} "
                           f"({target_text(setup, h.package)}), and {pf.path} parses with {how}, so the {what} is "
                           f"not rejected: it is left over unread and its setting is silently lost"
                           f"{_lost_effect(setup, site, name)}; {advice}")
                span = value.key_span or value.span or site.span
                if span is None:
                    continue
                yield self.diagnostic(span, message, edits=edits, fix_message=fix_message,
                                      applicability=applicability, severity=Severity.WARNING)  # type: ignore[arg-type]


def _lost_effect(setup: Setup, site: ArgsSite, name: str) -> str:
    """`` (eval_strategy stays 'no')``: what the replacement field is left at."""
    r = ta.rename_for(site.class_name, name)
    if r is None or not r.new or r.kind not in ("field", "value") or site.get(r.new) is not None:
        return ""
    f = (fields_for(setup, site.class_name) or {}).get(r.new)
    if f is None or not f.default_is_literal:
        return ""
    return f" ({r.new} stays {f.default!r})"

