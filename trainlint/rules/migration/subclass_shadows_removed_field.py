"""TL613 subclass-shadows-removed-field: a TrainingArguments subclass field that the target version removed from the parent"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Related, Severity
from trainlint.knowledge import training_args as ta
from trainlint.rules._versioned import target, target_text
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup
from trainlint.sources.python import PythonFile


def _reads_attribute(setup: Setup, name: str) -> bool:
    """Whether some script of the setup reads ``<x>.name`` (the script then uses the value
    itself) or a ``getattr(x, "name")``."""
    for pf in setup.scripts:
        if name not in pf.text:
            continue
        if any(isinstance(n.ctx, ast.Load) for n in pf.attributes(name)):
            return True
        for n in pf.of_type(ast.Call):
            if isinstance(n.func, ast.Name) and n.func.id in ("getattr", "hasattr") \
                    and len(n.args) >= 2 and isinstance(n.args[1], ast.Constant) and n.args[1].value == name:
                return True
    return False


def _package_reads(declared_in: str, name: str) -> bool:
    """Whether another module of the package that declares the class reads the field
    (``files.package_reads``); the answer is a dependency of the result (a warm run asks again)."""
    from trainlint import reads
    from trainlint.sources.files import package_reads

    reads.note(reads.virtual(reads.PACKAGE_READS, declared_in, name))
    return package_reads(declared_in, name)


class SubclassShadowsRemovedField(Rule):
    """
    ## What it does
    Flags a field declared by a dataclass that derives from `TrainingArguments` (or a TRL config)
    when the target version removed the parent's field of that name: `warmup_ratio` or
    `group_by_length` re-declared on a `MyArgs(TrainingArguments)` (removed from the parent in
    transformers 5.2 and 5.15), `max_seq_length` on a `MyConfig(SFTConfig)` for TRL 0.20 and later. Launch flags,
    args-file keys and keywords that set the field are shown with it. A field that the setup's
    own code reads (`args.warmup_ratio`) is left alone: the script then uses it itself. So is
    one that another module of the class's own package reads (`args.ref_adapter_name`,
    `getattr(args, "ref_adapter_name", None)` or `vars(args)["ref_adapter_name"]` in the
    project's trainer subclass).

    ## Why is this bad?
    The subclass keeps the name alive, so `--warmup_ratio 0.1` is accepted without any error,
    but nothing in the `Trainer` reads it any more: the setting is silently ignored (no warmup,
    no length grouping).

    ## Example
    ```python
    @dataclass
    class MyArgs(TrainingArguments):
        warmup_ratio: float = 0.03
    ```

    ## Use instead
    ```python
    @dataclass
    class MyArgs(TrainingArguments):
        warmup_steps: float = 0.03  # a float below 1 is a ratio of the total steps
    ```

    ## Fix safety
    No automatic fix: the replacement may take another value (a step count, a sampling
    strategy), and the launch lines that set the field must change with it.

    ## References
    - transformers 5.2.0 and 5.15.0 `training_args.py` (`group_by_length`, then `warmup_ratio` gone;
      `warmup_steps` takes a float ratio), read in the released wheels
    """

    code = "TL613"
    name = "subclass-shadows-removed-field"
    severity = Severity.WARNING
    triggers = SETUP_NAMES
    fix_safety = "none"
    summary = "a TrainingArguments subclass re-declares a field the target version removed (ignored)"

    cases = [
        Case("""
            from dataclasses import dataclass, field
            from transformers import TrainingArguments
            @dataclass
            class MyArgs(TrainingArguments):
                warmup_ratio: float = field(default=0.03)
                lora_r: int = 8
            """, options={"transformers_version": "5.24.0"}),
        Case(files={
            "train.py": "from dataclasses import dataclass\nfrom transformers import HfArgumentParser, TrainingArguments\n"
                        "@dataclass\nclass MyArgs(TrainingArguments):\n    group_by_length: bool = False\n"
                        "(args,) = HfArgumentParser(MyArgs).parse_args_into_dataclasses()\n",
            "run.sh": "python train.py --output_dir o --group_by_length True\n",
        }, options={"transformers_version": "5.24.0"}, note="set by a launch flag"),
        Case("""
            from dataclasses import dataclass
            from trl import SFTConfig
            @dataclass
            class MyConfig(SFTConfig):
                max_seq_length: int = 2048
            """, options={"trl_version": "0.20.0"}),
        Case(files={
            "proj/__init__.py": "",
            "proj/arguments.py": "from dataclasses import dataclass\nfrom transformers import TrainingArguments\n"
                                 "@dataclass\nclass MyArgs(TrainingArguments):\n    warmup_ratio: float = 0.03\n",
            "proj/launch.py": "def tune(args):\n    args.warmup_ratio = 0.1  # set, never read\n    return args\n",
        }, options={"transformers_version": "5.24.0"},
            note="the package only sets it: still ignored"),
        # must not flag
        Case("""
            from dataclasses import dataclass
            from transformers import TrainingArguments
            @dataclass
            class MyArgs(TrainingArguments):
                warmup_ratio: float = 0.03
            """, options={"transformers_version": "4.57.6"}, flags=False, note="the parent still has it"),
        Case("""
            from dataclasses import dataclass
            from transformers import TrainingArguments
            @dataclass
            class MyArgs(TrainingArguments):
                warmup_ratio: float = 0.03
                def __post_init__(self):
                    super().__post_init__()
                    self.warmup_steps = self.warmup_ratio
            """, options={"transformers_version": "5.24.0"}, flags=False, note="the script reads it itself"),
        Case(files={
            "proj/__init__.py": "",
            "proj/arguments.py": "from dataclasses import dataclass\nfrom transformers import TrainingArguments\n"
                                 "@dataclass\nclass MyArgs(TrainingArguments):\n    warmup_ratio: float = 0.03\n",
            "proj/trainer.py": "from transformers import Trainer\nclass MyTrainer(Trainer):\n"
                               "    def create_scheduler(self, num_training_steps, optimizer=None):\n"
                               "        ratio = getattr(self.args, 'warmup_ratio', 0.0)\n"
                               "        return super().create_scheduler(num_training_steps, optimizer)\n",
        }, options={"transformers_version": "5.24.0"}, flags=False,
            note="the package's own trainer reads it"),
        Case("""
            from dataclasses import dataclass
            from transformers import TrainingArguments
            @dataclass
            class MyArgs(TrainingArguments):
                lora_r: int = 8
            """, options={"transformers_version": "5.24.0"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        tf, _, trl, _ = target(setup)
        for pf in setup.scripts:
            for cls_name, (kind, base) in pf.local_classes.items():
                if kind != "args":
                    continue
                yield from self._class(setup, pf, cls_name, base, tf, trl)

    def _class(self, setup: Setup, pf: PythonFile, cls_name: str, base: str, tf: str, trl: str
               ) -> Iterable[Diagnostic]:
        defs = [n for n in pf.of_type(ast.ClassDef) if n.name == cls_name]
        if len(defs) != 1:
            return
        try:
            names = ta.field_names(base, tf, trl)
        except ta.UnknownClassError:
            return
        for stmt in defs[0].body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            field = stmt.target.id
            if field in names or "ClassVar" in ast.unparse(stmt.annotation):
                continue
            try:
                h = ta.history(base, field)
            except ta.UnknownClassError:
                continue
            version = trl if h.package == "trl" else tf
            if not h.known or h.present_in(version) or ta.vkey(version) < ta.vkey(h.first):  # type: ignore[arg-type]
                continue
            if _reads_attribute(setup, field) or _package_reads(pf.path, field):
                continue
            removed = next((v for v in (ta.known_versions() if h.package == "transformers" else ta.trl_known_versions())
                            if ta.vkey(v) > ta.vkey(h.last)), h.removed_in)  # type: ignore[arg-type]
            r = ta.rename_for(base, field)
            if r is not None and r.new and r.kind == "field":
                advice = f"declare or set {r.new} instead" + (f" ({r.note})" if r.note else "")
            elif r is not None and r.new and r.kind == "value":
                advice = f"set {r.new}={r.value!r} instead"
            elif r is not None and r.note:
                advice = r.note
            else:
                advice = "drop it, or read it in your own code"
            if field == "warmup_ratio":
                advice = "use warmup_steps, which takes a float below 1 as a ratio of the total steps"
            related = []
            for site in setup.sites:
                v = site.get(field)
                if v is not None and site.class_name == cls_name or (v is not None and site.call is None):
                    sp = v.key_span or v.span
                    if sp is not None:
                        related.append(Related(path=sp.path, line=sp.line, column=sp.column,
                                               message=f"sets {field} (ignored)"))
            where = target_text(setup, h.package)
            yield self.diagnostic(
                pf.span(stmt.target),
                f"{cls_name}.{field} re-declares {base}.{field}, which {h.package} {removed} removed ({where}): "
                f"the value is accepted, but nothing in the Trainer reads it any more, so it is silently ignored; "
                f"{advice}", related=related)
