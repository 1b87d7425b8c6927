"""TL225: a number that reaches a numeric TrainingArguments field as a string."""

from __future__ import annotations

import json
import re
from typing import Iterator

from trainlint.lazyre import lazy
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._versioned import SiteRule, fields_for
from trainlint.rules.base import Case
from trainlint.setup import ARGSFILE, PYTHON, ArgsSite, Setup, Value

# A decimal number as people write it: 5e-5, 1E3, 2.5e3, .5, 1_000, -0.1.
_NUMBER = lazy(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?$")
# compiled on first use (re's cache): only a fix writes a number
_JSON_NUMBER = r"^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?$"
_PYTHON_NUMBER = r"^(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?$"
_SCIENTIFIC = r"^([-+]?)([0-9]+)(?:\.([0-9]*))?([eE])([-+]?)([0-9]+)$"
_WORD = lazy(r"[A-Za-z_][A-Za-z_0-9]*")


def _may_be_number(text: str) -> bool:
    """What ``_NUMBER`` needs first: a sign or none, then a digit or a dot and a digit (most
    string values fail here, and the pattern is not compiled for them)."""
    rest = text[1:] if text[:1] in ("+", "-") else text
    head = rest[1:2] if rest[:1] == "." else rest[:1]
    return head in _DIGITS


_DIGITS = frozenset("0123456789")

HF_SCRIPT = ("import sys\nfrom transformers import HfArgumentParser, TrainingArguments\n"
             "parser = HfArgumentParser((TrainingArguments,))\n"
             "(args,) = parser.parse_yaml_file(sys.argv[1])\n")
TRL_SCRIPT = ("from trl import SFTConfig, TrlParser\n"
              "parser = TrlParser((SFTConfig,))\n"
              "(args,) = parser.parse_args_and_config()\n")


_NUMERIC_WORDS = {"int", "float", "Optional", "Union", "None", "NoneType", "typing"}


def numeric_kinds(annotation: str) -> set[str]:
    """``{"int"}``, ``{"float"}`` or both for an annotation made only of ``int``/``float``
    (optionally with None: ``Optional[float]``, ``int | None``); empty for anything that also
    admits a string, an enum or another type."""
    words = set(_WORD.findall(annotation))
    if not words or not words <= _NUMERIC_WORDS:
        return set()
    return words & {"int", "float"}


class NumberReadAsString(SiteRule):
    """
    ## What it does
    Flags a numeric TrainingArguments field (`learning_rate`, `weight_decay`, `max_steps`,
    `warmup_steps`, ...) whose value is a string that spells a number: `learning_rate: 1e-5`
    in a YAML args file, `"learning_rate": "1e-5"` in a JSON one, or
    `learning_rate="1e-5"` in Python.

    ## Why is this bad?
    `HfArgumentParser.parse_yaml_file` reads the file with PyYAML's `safe_load`, which follows
    YAML 1.1: a float needs a dot and a signed exponent, so `1e-5`, `5E-4` and `2.5e3` are
    *strings* (`1.0e-5` is a float). `parse_json_file`, `parse_dict` and the dataclass itself
    pass values through unchanged, so `TrainingArguments.learning_rate` becomes `"1e-5"`. Nothing
    complains until the value is compared with a number: `TypeError: '<=' not supported between
    instances of 'float' and 'str'` when the Trainer builds the optimizer (after the model and
    the data are loaded), or in `__post_init__` for `warmup_steps`.

    Launch-line flags are converted by argparse (`type=float`), and so are the YAML values that
    `TrlParser` (`--config`) sets as argparse defaults: those are not flagged. A YAML file that no
    launch line links to a script is judged when the Python files beside it call
    `parse_yaml_file` (and none uses `TrlParser`).

    ## Example
    ```yaml
    # args.yaml, run as `python train.py args.yaml`
    learning_rate: 1e-5
    ```

    ## Use instead
    ```yaml
    learning_rate: 1.0e-5
    ```

    ## Fix safety
    Safe: the number written is the value the user meant, in a notation the reader turns into a
    number (a YAML 1.1 float, a JSON or Python number literal; a whole number for an `int`
    field). No fix for a value that is not a whole number in an `int` field.

    ## References
    - PyYAML `resolver.py` (the YAML 1.1 float pattern); transformers
      `HfArgumentParser.parse_yaml_file` / `parse_dict`; torch `AdamW` (`0.0 <= lr`)
    """

    code = "TL225"
    name = "number-read-as-string"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "a numeric argument that reaches TrainingArguments as a string (YAML 1e-5)"
    cases = [
        Case(files={"run.sh": "python train.py args.yaml\n", "train.py": HF_SCRIPT,
                    "args.yaml": "output_dir: out\nlearning_rate: 1e-5  # the usual notation\nmax_steps: 1e3\n"},
             fixed_path="args.yaml",
             fixed="output_dir: out\nlearning_rate: 1.0e-5  # the usual notation\nmax_steps: 1000\n"),
        Case(files={"run.sh": "python train.py args.json\n", "train.py": HF_SCRIPT,
                    "args.json": '{"output_dir": "out", "weight_decay": "1e-2"}\n'},
             fixed_path="args.json", fixed='{"output_dir": "out", "weight_decay": 1e-2}\n'),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", learning_rate="5e-5")
            """, fixed="from transformers import TrainingArguments\n"
                       "args = TrainingArguments(output_dir=\"o\", learning_rate=5e-5)\n"),
        Case(files={"run.sh": "python train.py args.yaml\n", "train.py": HF_SCRIPT,
                    "args.yaml": "output_dir: out\nlearning_rate: '2e-5'\n"},
             fixed_path="args.yaml", fixed="output_dir: out\nlearning_rate: 2.0e-5\n", note="quoted"),
        Case(files={"train.py": HF_SCRIPT.replace("sys.argv[1]", "'args.yaml'"),
                    "args.yaml": "output_dir: out\nlearning_rate: 1e-5\n"},
             note="no launch line: the script beside it calls parse_yaml_file"),
        # must not flag
        Case(files={"run.sh": "python train.py args.yaml\n", "train.py": HF_SCRIPT,
                    "args.yaml": "output_dir: out\nlearning_rate: 1.0e-5\nmax_steps: 1000\nlr_scheduler_type: cosine\n"},
             flags=False, note="PyYAML reads these as numbers"),
        Case(files={"run.sh": "python train.py --config args.yaml\n", "train.py": TRL_SCRIPT,
                    "args.yaml": "output_dir: out\nlearning_rate: 1e-5\n"},
             flags=False, note="TrlParser sets YAML values as argparse defaults, which argparse converts"),
        Case(files={"args.yaml": "output_dir: out\nlearning_rate: 1e-5\n"}, flags=False,
             note="no script: which parser reads it is unknown"),
        Case(files={"args.yaml": "output_dir: out\nlearning_rate: 1e-5\n", "train.py": TRL_SCRIPT},
             flags=False, note="the script beside it uses TrlParser"),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", learning_rate=5e-5, optim="adamw_torch", run_name="1e-5")
            """, flags=False),
        Case(files={"run.sh": "python train.py --learning_rate 1e-5 --output_dir o\n", "train.py": HF_SCRIPT},
             flags=False, note="argparse converts flags"),
    ]

    def site_check(self, setup: Setup, site: ArgsSite) -> Iterator[Diagnostic]:
        fields = fields_for(setup, site.class_name) or {}
        yaml_read_by_pyyaml: bool | None = None
        for name, v in site.values.items():
            if v.origin not in (PYTHON, ARGSFILE) or not isinstance(v.value, str):
                continue
            text = v.value.strip()
            f = fields.get(name)
            if f is None or not f.init or not _may_be_number(text) or not _NUMBER.match(text):
                continue
            kinds = numeric_kinds(f.type)
            if not kinds:
                continue
            path = v.span.path if v.span is not None else site.path
            is_yaml = v.origin == ARGSFILE and path.endswith((".yaml", ".yml"))
            if is_yaml:
                if yaml_read_by_pyyaml is None:
                    yaml_read_by_pyyaml = _yaml_read_by_parse_yaml_file(setup)
                if not yaml_read_by_pyyaml:
                    continue
            number = float(text.replace("_", ""))
            new = _literal(number, kinds, "yaml" if is_yaml else "json" if v.origin == ARGSFILE else "python", text)
            span = v.edit_span() if v.origin == PYTHON else v.span
            if span is None:
                continue
            if is_yaml:
                why = (f"{name}: {_shown(setup, v)} is read by parse_yaml_file (PyYAML, YAML 1.1) as the string "
                       f"{v.value!r}: a YAML 1.1 float needs a dot and a signed exponent")
            elif v.origin == ARGSFILE:
                why = f"\"{name}\" is the JSON string {v.value!r}, not a number"
            else:
                why = f"{name}={v.value!r} is a string, not a number"
            message = (f"{why}; TrainingArguments keeps it as a string ({f.type} expected) and training fails "
                       f"with TypeError when it is compared with a number")
            if new is not None:
                message += f": write {new}"
            yield self.diagnostic(span, message, edits=[span.edit(new)] if new is not None else None,
                                  fix_message=f"write {name} as the number {new}" if new else "")


def _yaml_read_by_parse_yaml_file(setup: Setup) -> bool:
    """A YAML args file reaches the dataclass unconverted when the setup's script reads it
    with ``parse_yaml_file``/``parse_dict`` (a launch line ``python run.py args.yaml``), or,
    for a stand-alone file, when the scripts beside it call ``parse_yaml_file``; ``TrlParser``
    hands YAML values to argparse as defaults, which converts them."""
    if setup.scripts:
        return not any("TrlParser" in pf.text for pf in setup.scripts)
    readers = setup.extra.get("args_readers") or frozenset()
    return "parse_yaml_file" in readers and "TrlParser" not in readers


def _shown(setup: Setup, v: Value) -> str:
    """The value as written in the file (quotes included)."""
    af = setup.extra.get("args_file")
    node = af.node(v.name) if af is not None else None
    return node.raw.strip() if node is not None else v.value


def _literal(number: float, kinds: set[str], syntax: str, written: str) -> str | None:
    """``number`` written so that the file's reader produces a number of the field's type."""
    if "float" not in kinds:
        if not number.is_integer():
            return None
        return str(int(number))
    if syntax == "yaml":
        from trainlint.sources.yamldoc import resolve_plain, yaml_scalar_text

        m = re.match(_SCIENTIFIC, written)
        if m:  # keep the digits as written: 1e-5 -> 1.0e-5, 2.5e3 -> 2.5e+3
            sign, whole, frac, e, esign, exp = m.groups()
            out = f"{sign}{whole}.{frac or '0'}{e}{esign or '+'}{exp}"
            if resolve_plain(out) == number:
                return out
        out = yaml_scalar_text(number)
        return out if isinstance(resolve_plain(out), float) else None
    if syntax == "json":
        return written if re.match(_JSON_NUMBER, written) else json.dumps(number)
    return written if re.match(_PYTHON_NUMBER, written) else repr(number)
