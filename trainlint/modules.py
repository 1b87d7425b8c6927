"""The repository's own Python modules, for values and classes that cross files (issue:
"values across the repository's modules").

``link_modules(ws)`` resolves, in every parsed script, what it imports from other modules *of
the repository* (never installed packages; nothing is imported or executed):

* classes that subclass a library class (``from .trainers import MyTrainer``,
  ``helpers.CustomTrainer(...)``, a project ``TrainingArguments`` subclass), through
  re-exports in ``__init__.py`` and chains of subclasses across modules;
* TrainingArguments-like objects built at module level elsewhere (``from config import
  training_args``), so a Trainer that receives one is configured by that call;
* dataclasses an ``HfArgumentParser`` parses, for their field defaults.

A module name is looked up the way Python would find the repository's own code when the
script runs: relative imports from the importing file's package; absolute ones from the
script's folder, the folders above it up to the repository root, and ``src/`` there. The
modules found are read through ``resolve.read_file`` (parsed once) even when a folder walk
skipped them.
"""

from __future__ import annotations

import ast
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.workspace import Workspace
    from trainlint.sources.python import PythonFile, TrainingArgsCall

MAX_DEPTH = 6


class Modules:
    """Module lookup for one workspace (cached per importing folder and module name)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._cache: dict[tuple[str, str, int], PythonFile | None] = {}

    def _roots(self, from_file: str) -> list[str]:
        from trainlint.workspace import reference_folders

        folders = reference_folders(from_file)
        out = []
        for f in folders:
            out.append(f)
        last = folders[-1] if folders else ""
        src = os.path.join(last, "src")
        if os.path.isdir(src):
            out.append(src)
        return out

    def module(self, from_file: str, module: str, level: int) -> PythonFile | None:
        """The repository file of ``module`` as imported from ``from_file`` (``level`` dots)."""
        key = (os.path.dirname(from_file), module, level)
        if key in self._cache:
            return self._cache[key]
        found = None
        parts = module.split(".") if module else []
        if level > 0:
            base = os.path.dirname(from_file)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            bases = [base]
        else:
            bases = self._roots(from_file)
        for base in bases:
            stem = os.path.join(base, *parts) if parts else base
            for cand in (stem + ".py", os.path.join(stem, "__init__.py")):
                if parts or cand.endswith("__init__.py"):
                    pf = self._load(cand)
                    if pf is not None:
                        found = pf
                        break
            if found is not None:
                break
        self._cache[key] = found
        return found

    def _load(self, path: str) -> PythonFile | None:
        from trainlint.workspace import norm, read_file

        path = norm(path)
        f = self.ws.files.get(path)
        if f is None:
            if path in self.ws.unparsable or not os.path.isfile(path):
                return None
            f = read_file(self.ws, path, explicit=True)
        if f is None or f.kind != "python":
            return None
        return f.doc

    # -- names -----------------------------------------------------------------------------

    def imported(self, pf: PythonFile, name: str) -> tuple[PythonFile, str] | None:
        """(module file, name there) for a module-level ``from X import name`` of ``pf`` whose
        module is in the repository."""
        for node in pf.tree.body:
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if (a.asname or a.name) == name and a.name != "*":
                        other = self.module(pf.path, node.module or "", node.level)
                        if other is not None and other is not pf:
                            return other, a.name
        return None

    def module_of_name(self, pf: PythonFile, name: str) -> PythonFile | None:
        """The repository module bound to ``name`` by ``import helpers`` / ``from . import helpers``."""
        for node in pf.tree.body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if (a.asname or a.name.split(".", 1)[0]) == name:
                        return self.module(pf.path, a.name if a.asname else a.name.split(".", 1)[0], 0)
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if (a.asname or a.name) == name:
                        mod = f"{node.module}.{a.name}" if node.module else a.name
                        found = self.module(pf.path, mod, node.level)
                        if found is not None:
                            return found
        return None

    def class_in(self, pf: PythonFile, name: str, depth: int = 0) -> tuple[PythonFile, ast.ClassDef] | None:
        """The ``ClassDef`` that ``name`` names in module ``pf`` (defined there, or imported
        from another repository module)."""
        if depth > MAX_DEPTH:
            return None
        defs = [n for n in pf.tree.body if isinstance(n, ast.ClassDef) and n.name == name]
        if len(defs) == 1:
            return pf, defs[0]
        found = self.imported(pf, name)
        if found is None:
            return None
        return self.class_in(found[0], found[1], depth + 1)

    def library_base(self, pf: PythonFile, cd: ast.ClassDef, depth: int = 0) -> tuple[str, str] | None:
        """The library class (("args"|"trainer", name)) ``cd`` derives from, through bases
        defined in the same or other repository modules."""
        if depth > MAX_DEPTH:
            return None
        for base in cd.bases:
            lib = pf.library_class(base)
            if lib is not None:
                return lib
            target = None
            if isinstance(base, ast.Name):
                target = self.class_in(pf, base.id, depth + 1)
            elif isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
                mod = self.module_of_name(pf, base.value.id)
                target = self.class_in(mod, base.attr, depth + 1) if mod is not None else None
            if target is not None:
                lib = self.library_base(target[0], target[1], depth + 1)
                if lib is not None:
                    return lib
        return None

    def args_object(self, pf: PythonFile, name: str, depth: int = 0) -> TrainingArgsCall | None:
        """The module-level ``name = TrainingArguments(...)`` that ``name`` names in ``pf``."""
        if depth > MAX_DEPTH:
            return None
        for tac in pf.args_calls:
            if tac.bound_to == name and tac.site.scope is pf.module_scope:
                return tac
        found = self.imported(pf, name)
        if found is None:
            return None
        return self.args_object(found[0], found[1], depth + 1)


def _might_import_repository(pf: PythonFile) -> bool:
    for node in pf.tree.body:
        if isinstance(node, ast.ImportFrom):
            root = (node.module or "").split(".", 1)[0]
            if node.level > 0 or root not in _THIRD_PARTY:
                return True
        elif isinstance(node, ast.Import):
            if any(a.name.split(".", 1)[0] not in _THIRD_PARTY for a in node.names):
                return True
    return False


# Top-level names that are never the repository's own modules (checked first, cheaply).
_THIRD_PARTY = frozenset({
    "__future__", "abc", "argparse", "ast", "collections", "contextlib", "copy", "dataclasses", "datetime",
    "enum", "functools", "gc", "glob", "importlib", "inspect", "io", "itertools", "json", "logging", "math",
    "os", "pathlib", "pickle", "random", "re", "shutil", "signal", "subprocess", "sys", "tempfile", "time",
    "typing", "typing_extensions", "unittest", "uuid", "warnings", "yaml", "numpy", "np", "torch", "transformers",
    "trl", "peft", "accelerate", "deepspeed", "datasets", "evaluate", "tqdm", "wandb", "huggingface_hub",
    "safetensors", "tokenizers", "sentencepiece", "bitsandbytes", "pandas", "sklearn", "scipy", "einops",
    "omegaconf", "hydra", "fire", "tyro", "rich", "packaging", "requests", "unsloth", "vllm", "flash_attn",
})


def link_modules(ws: Workspace) -> dict[str, list[str]]:
    """Resolve every parsed script's imports from the repository (see the module docstring)
    and hand them to the script (``PythonFile.link_repository``). Returns, per script, the
    other files whose definitions it now uses (they belong to its setups)."""
    from trainlint.sources.python import PythonFile

    mods = Modules(ws)
    uses: dict[str, list[str]] = {}
    for f in list(ws.files.values()):
        pf = f.doc
        if f.kind != "python" or not isinstance(pf, PythonFile) or not _might_import_repository(pf):
            continue
        classes: dict[str, tuple[tuple[str, str], PythonFile, ast.ClassDef]] = {}
        qualified: dict[str, tuple[str, str]] = {}
        objects: dict[str, TrainingArgsCall] = {}
        used: list[str] = []
        for node in pf.tree.body:
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    local = a.asname or a.name
                    if a.name == "*" or local in pf.local_classes:
                        continue
                    other = mods.module(pf.path, node.module or "", node.level)
                    if other is None or other is pf:
                        continue
                    found = mods.class_in(other, a.name)
                    if found is not None:
                        lib = mods.library_base(found[0], found[1])
                        if lib is not None:
                            classes[local] = (lib, found[0], found[1])
                            used.append(found[0].path)
                        elif _is_dataclass(found[1]):
                            pf.external_defs.setdefault(local, found)  # parsed by HfArgumentParser
                            used.append(found[0].path)
                        continue
                    obj = mods.args_object(other, a.name)
                    if obj is not None:
                        objects[local] = obj
                        used.append(obj.args.path)
                        continue
                    sub = mods.module(pf.path, f"{node.module}.{a.name}" if node.module else a.name, node.level)
                    if sub is not None and sub is not pf:  # from proj import helpers; helpers.CustomTrainer(...)
                        _qualify(mods, sub, pf.imports.get(local, local), qualified, used)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    top = a.asname or a.name.split(".", 1)[0]
                    if top in _THIRD_PARTY:
                        continue
                    other = mods.module(pf.path, a.name if a.asname else top, 0)
                    if other is None or other is pf:
                        continue
                    _qualify(mods, other, pf.imports.get(top, top), qualified, used)
        if used:
            pf.link_repository(classes, qualified, objects)
            uses[pf.path] = sorted(set(used))
    return uses


def _qualify(mods: Modules, module: PythonFile, prefix: str, qualified: dict[str, tuple[str, str]],
             used: list[str]) -> None:
    """``prefix.Class`` for each class of ``module`` that derives from a library class."""
    for cd in (n for n in module.tree.body if isinstance(n, ast.ClassDef)):
        lib = mods.library_base(module, cd)
        if lib is not None:
            qualified[f"{prefix}.{cd.name}"] = lib
            used.append(module.path)


def _is_dataclass(cd: ast.ClassDef) -> bool:
    for d in cd.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
        if name == "dataclass":
            return True
    return False
