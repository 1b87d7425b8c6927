"""The repository's own Python modules, for values and classes that cross files (issue:
"values across the repository's modules").

``link_modules(ws)`` resolves, in every parsed script, what it imports from other modules *of
the repository* (never installed packages; nothing is imported or executed):

* classes that subclass a library class (``from .trainers import MyTrainer``,
  ``helpers.CustomTrainer(...)``, a project ``TrainingArguments`` subclass), through
  re-exports in ``__init__.py`` and chains of subclasses across modules;
* TrainingArguments-like objects built at module level elsewhere (``from config import
  training_args``), so a Trainer that receives one is configured by that call;
* dataclasses an ``HfArgumentParser`` parses, for their field defaults;
* functions that build and return a TrainingArguments-like object (``from utils import
  make_args; args = make_args(out, lr=1e-4)`` where ``utils.py`` has ``def make_args(out, lr=2e-5):
  return TrainingArguments(output_dir=out, learning_rate=lr, ...)``): the Trainer that receives
  the result is configured by the returned call, its literal keywords at their line in
  ``utils.py``, and the keywords that take a parameter by what the call passes (a literal where
  it is one) or else the parameter's default; ``**kwargs`` handed on to the call take the call's
  other keywords (the site stays open-ended: other calls may pass others).

A module name is looked up the way Python would find the repository's own code when the
script runs: relative imports from the importing file's package; absolute ones from the
script's folder, the folders above it up to the repository root, and ``src/`` there. The
modules found are read through ``workspace.read_file`` (parsed once) even when a folder walk
skipped them; one that no selected rule can report on and whose text names no library class
or parser (a package's ``__init__.py`` re-exporting ``LoraConfig``) is only parsed
(``workspace.read_linked_module``, ``_Light``), and becomes a file of the workspace only when
a script uses one of its definitions (``Modules.full``).
"""

from __future__ import annotations

import ast
import os
from typing import TYPE_CHECKING

from trainlint.workspace import PARSER_NAMES

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.workspace import Workspace
    from trainlint.sources.python import PythonFile, TrainingArgsCall

MAX_DEPTH = 6
_UNASKED = object()
_ANY: frozenset[str] = frozenset({"\0"})  # a folder that could not be listed: it may hold anything


class Modules:
    """Module lookup for one workspace (cached per importing folder and module name)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._cache: dict[tuple[str, str, int], PythonFile | None] = {}
        self._in_bases: dict[tuple[str, str], PythonFile | None] = {}  # (folder, module): ``_in_base``
        self._roots_of: dict[str, list[str]] = {}  # by folder: where an absolute import may start
        self._not_files: set[str] = set()  # paths looked at that are no file
        self._tops: dict[int, tuple[PythonFile, _Top]] = {}  # by id of the file (kept alive here)
        self._light: dict[str, _Light] = {}  # modules read only to follow names (``read_linked_module``)
        self._listings: dict[str, frozenset[str]] = {}  # by folder: its names, casefolded (``_may_hold``)
        self._file_names: dict[str, set[str]] | None = None  # the same of the workspace's files
        # while ``link_modules`` asks ``_what_is_named``: the ids of the modules whose linked
        # state (``library_class``, ``args_calls``: what ``link_repository`` changes) the answer read
        self.asked: set[int] | None = None

    def full(self, pf: PythonFile | _Light) -> PythonFile | None:
        """``pf`` as a file of the workspace: a module read only to follow names through
        (``_Light``) becomes one when a script uses one of its definitions (None: its reader
        failed, reported as TL000)."""
        if type(pf) is not _Light:
            return pf  # type: ignore[return-value]
        if pf.full is None:
            from trainlint.workspace import adopt_linked_module

            pf.full = adopt_linked_module(self.ws, pf.path, pf.tf, pf.tree) or False
            if pf.full:  # the lookups kept give the file from now on (one object per module)
                kept = self._tops.get(id(pf))
                if kept is not None:
                    self._tops[id(pf.full)] = (pf.full, kept[1])
                for cache in (self._cache, self._in_bases):
                    for k, v in cache.items():
                        if v is pf:
                            cache[k] = pf.full
        return pf.full or None

    def _top(self, pf: PythonFile) -> _Top:
        kept = self._tops.get(id(pf))
        if kept is None:
            kept = self._tops[id(pf)] = (pf, _Top(pf.tree))
        return kept[1]

    def _roots(self, from_file: str) -> list[str]:
        folder = os.path.dirname(from_file)  # ``reference_folders`` depends on the folder alone
        found = self._roots_of.get(folder)
        if found is None:
            found = self._roots_of[folder] = self._roots_in(from_file)
        return found

    def _roots_in(self, from_file: str) -> list[str]:
        from trainlint.folders import reference_folders

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
        if level > 0:
            base = os.path.dirname(from_file)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            bases = [base]
        else:
            bases = self._roots(from_file)
        for base in bases:
            found = self._in_base(base, module)
            if found is not None:
                break
        self._cache[key] = found
        return found

    def _in_base(self, base: str, module: str) -> PythonFile | None:
        """``module`` under the folder ``base`` (``a/b.py`` or ``a/b/__init__.py``; the folder's
        own ``__init__.py`` for no module). Kept per (folder, module): an absolute import is looked
        up from each importing folder, and the folders above it (the repository root, ``src/``)
        are the same for every folder below them."""
        key = (base, module)
        if key in self._in_bases:
            return self._in_bases[key]
        if not self._may_hold(base, module.partition(".")[0]):
            self._in_bases[key] = None
            return None
        if module:
            stem = os.path.join(base, *module.split("."))
            found = self._load(stem + ".py")
            if found is None:
                found = self._load(os.path.join(stem, "__init__.py"))
        else:
            found = self._load(os.path.join(base, "__init__.py"))
        self._in_bases[key] = found
        return found

    def _may_hold(self, base: str, top: str) -> bool:
        """Whether ``base`` may hold the module or package ``top`` (``top.py``, ``top/``; its
        ``__init__.py`` for no name): false only when one listing of ``base`` (kept per folder)
        names neither, compared case-insensitively (a case-insensitive file system finds
        ``Config.py`` for ``config``). Most absolute imports name installed packages (``torch``,
        ``transformers.utils``), looked up under each folder an import may start from: each
        lookup looked for two files that are not there (peft: 4,400 of them). The files of the
        workspace count as listed (one given without a file on disk). Not asked when the run has
        unsaved texts (``overlay``: a file may be there without being on disk), nor for a name
        that is not ASCII (a file system may store it in another normal form)."""
        if self.ws.overlay or not top.isascii():
            return True
        names = self._listings.get(base)
        if names is None:
            from trainlint.workspace import norm

            if self._file_names is None:
                self._file_names = _names_by_folder(self.ws.files)
            try:
                listed = {n.casefold() for n in os.listdir(base or ".")}
            except OSError:  # not a folder, or not listable: the files are looked for one by one
                listed = None
            if listed is not None:
                listed.update(self._file_names.get(norm(base), ()))
            names = self._listings[base] = _ANY if listed is None else frozenset(listed)
        if names is _ANY:
            return True
        if not top:
            return "__init__.py" in names
        top = top.casefold()
        return top in names or top + ".py" in names

    def _load(self, path: str) -> PythonFile | None:
        from trainlint.workspace import norm, read_file, read_linked_module

        path = norm(path)
        f = self.ws.files.get(path)
        if f is None:
            light = self._light.get(path)
            if light is not None:
                return light  # type: ignore[return-value]
            if path in self.ws.unparsable or path in self._not_files:
                return None
            if not os.path.isfile(path):
                self._not_files.add(path)
                return None
            read = read_linked_module(self.ws, path)
            if read is not None:
                light = self._light[path] = _Light(path, *read)
                return light  # type: ignore[return-value]
            f = self.ws.files.get(path)  # one that does not parse, reported there
            if f is None:
                f = read_file(self.ws, path, explicit=True)
        if f is None or f.kind != "python":
            return None
        return f.doc

    # -- names -----------------------------------------------------------------------------

    def imported(self, pf: PythonFile, name: str) -> tuple[PythonFile, str] | None:
        """(module file, name there) for a module-level ``from X import name`` of ``pf`` whose
        module is in the repository."""
        for node, a in self._top(pf).imports_from.get(name, ()):
            other = self.module(pf.path, node.module or "", node.level)
            if other is not None and other.path != pf.path:  # a ``_Light`` and its file are one module
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
        defs = self._top(pf).classes.get(name, ())
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
        if self.asked is not None:
            self.asked.add(id(pf))
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

    def parser_base(self, pf: PythonFile, cd: ast.ClassDef, depth: int = 0) -> str | None:
        """``HfArgumentParser`` / ``TrlParser`` when ``cd`` derives from one (alignment-handbook's
        and SimPO's ``H4ArgumentParser(HfArgumentParser)``), through repository bases."""
        if depth > MAX_DEPTH:
            return None
        for base in cd.bases:
            qn = pf.qualname(base) or ""
            head, _, last = qn.rpartition(".")
            if last in PARSER_NAMES and head.split(".", 1)[0] in ("transformers", "trl"):
                return last
            target = self.class_in(pf, base.id, depth + 1) if isinstance(base, ast.Name) else None
            if target is not None:
                found = self.parser_base(target[0], target[1], depth + 1)
                if found is not None:
                    return found
        return None

    def args_function(self, pf: PythonFile, name: str, depth: int = 0
                      ) -> tuple[PythonFile, ast.FunctionDef, TrainingArgsCall] | None:
        """The module-level ``def name(...)`` of ``pf`` (or imported there from another
        repository module) that returns a TrainingArguments-like call it makes, with that call."""
        if depth > MAX_DEPTH:
            return None
        if self.asked is not None:
            self.asked.add(id(pf))
        defs = self._top(pf).functions.get(name, ())
        if len(defs) == 1:
            tac = returned_args_call(pf, defs[0])  # type: ignore[arg-type]
            return (pf, defs[0], tac) if tac is not None else None  # type: ignore[return-value]
        if defs:
            return None
        found = self.imported(pf, name)
        if found is None:
            return None
        return self.args_function(found[0], found[1], depth + 1)

    def args_object(self, pf: PythonFile, name: str, depth: int = 0) -> TrainingArgsCall | None:
        """The module-level ``name = TrainingArguments(...)`` that ``name`` names in ``pf``."""
        if depth > MAX_DEPTH:
            return None
        if self.asked is not None:
            self.asked.add(id(pf))
        for tac in pf.args_calls:
            if tac.bound_to == name and tac.site.scope is pf.module_scope:
                return tac
        found = self.imported(pf, name)
        if found is None:
            return None
        return self.args_object(found[0], found[1], depth + 1)


def _names_by_folder(paths) -> dict[str, set[str]]:
    """By folder (normalized), the names in it of ``paths`` and of the folders that hold them,
    casefolded."""
    out: dict[str, set[str]] = {}
    for path in paths:
        folder, name = os.path.split(os.path.normpath(path))
        while name:
            out.setdefault(os.path.normpath(folder) if folder else ".", set()).add(name.casefold())
            folder, name = os.path.split(folder)
    return out


class _Light:
    """A repository module linking reads only to follow names through it (``from .lora import
    LoraConfig`` in a package's ``__init__.py``): its text and syntax tree, no ``PythonFile``
    (``workspace.read_linked_module`` says when). Its text names no TrainingArguments-like or
    Trainer-like class and no parser, so what a ``PythonFile`` of it would answer is known:
    no training call (``args_calls``), no library class (``library_class``), no qualified
    name of a parser (``qualname``, asked only for that). ``Modules.full`` makes it a file of
    the workspace when a script uses one of its definitions (the same tree: its ``ClassDef``
    nodes stay those the lookups found)."""

    __slots__ = ("path", "tf", "tree", "full")
    args_calls: tuple = ()

    def __init__(self, path: str, tf, tree: ast.Module) -> None:
        self.path = path
        self.tf = tf
        self.tree = tree
        self.full: PythonFile | None | bool = None  # False: the reader failed

    @property
    def text(self) -> str:
        return self.tf.text

    def library_class(self, expr: ast.AST) -> None:
        return None

    def qualname(self, expr: ast.AST) -> None:
        return None


class _Top:
    """A module's top-level statements by name, in order: ``from X import a as b`` by ``b``
    (not ``*``), classes and functions (sync or async) by name. Each lookup of a name was a scan
    of every top-level statement (peft: 5,600 lookups over 136 modules)."""

    __slots__ = ("imports_from", "classes", "functions")

    def __init__(self, tree: ast.Module) -> None:
        self.imports_from: dict[str, list[tuple[ast.ImportFrom, ast.alias]]] = {}
        self.classes: dict[str, list[ast.ClassDef]] = {}
        self.functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        for node in tree.body:
            t = type(node)
            if t is ast.ImportFrom:
                for a in node.names:  # type: ignore[attr-defined]
                    if a.name != "*":
                        self.imports_from.setdefault(a.asname or a.name, []).append((node, a))  # type: ignore[arg-type]
            elif t is ast.ClassDef:
                self.classes.setdefault(node.name, []).append(node)  # type: ignore[attr-defined, arg-type]
            elif t is ast.FunctionDef or t is ast.AsyncFunctionDef:
                self.functions.setdefault(node.name, []).append(node)  # type: ignore[attr-defined, arg-type]


def _module_level_bases(pf: PythonFile) -> frozenset[str]:
    """The plain names that the module-level classes of ``pf`` derive from."""
    return frozenset(b.id for node in pf.tree.body if type(node) is ast.ClassDef
                     for b in node.bases if type(b) is ast.Name)


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
    named: dict[tuple[int, str], tuple] = {}  # (id of a module, name): (the module, ``_what_is_named``)
    readers: dict[int, list[tuple[int, str]]] = {}  # id of a module: the keys of ``named`` that read it
    for f in list(ws.files.values()):
        pf = f.doc
        if f.kind != "python" or not isinstance(pf, PythonFile) or not _might_import_repository(pf):
            continue
        classes: dict[str, tuple[tuple[str, str], PythonFile, ast.ClassDef]] = {}
        qualified: dict[str, tuple[str, str]] = {}
        objects: dict[str, TrainingArgsCall] = {}
        functions: dict[str, tuple[PythonFile, ast.FunctionDef, TrainingArgsCall]] = {}
        used: list[str] = []
        # imported dataclasses: a script uses one only if a parser reads it (``consumers.parser_uses``,
        # ``PythonFile.dataclass_option``: "Parser" in its text, or an imported repository subclass
        # of a parser) or it is a base of one of its module-level classes (``class_def`` of a base:
        # the fields of a project subclass, ``_field_default``); else neither its definition nor its
        # module is kept (peft's tests import ~100 config dataclasses through ``peft``: each joined
        # the test's setups, where the rules ran over it again)
        defs: list[tuple[str, tuple[PythonFile, ast.ClassDef], bool]] = []  # (local name, class, dataclass)
        reads_dataclasses = "Parser" in pf.text
        for node in pf.tree.body:
            if isinstance(node, ast.ImportFrom):
                other = _UNASKED  # the module, looked up at the first name that needs it
                for a in node.names:
                    local = a.asname or a.name
                    if a.name == "*" or local in pf.local_classes:
                        continue
                    if other is _UNASKED:
                        other = mods.module(pf.path, node.module or "", node.level)
                    elif type(other) is _Light and other.full:  # made a file by the name before
                        other = other.full
                    if other is None or other is pf:
                        continue
                    key = (id(other), a.name)
                    kept = named.get(key)
                    if kept is None or kept[0] is not other:
                        mods.asked = asked = set()
                        try:
                            kept = named[key] = (other, _what_is_named(mods, other, a.name))
                        finally:
                            mods.asked = None
                        for read in asked:
                            readers.setdefault(read, []).append(key)
                    what = kept[1]
                    kind = what[0]
                    if kind == "class":
                        lib, found = what[1], what[2]
                        if lib is not None:
                            owner = mods.full(found[0])
                            if owner is not None:
                                classes[local] = (lib, owner, found[1])
                                used.append(owner.path)
                        elif what[3] is not None:
                            # parsed by HfArgumentParser, or the repository's subclass of the parser
                            dataclass = what[3]
                            defs.append((local, found, dataclass))
                            if not dataclass:
                                reads_dataclasses = True  # a parser: it may parse any of them
                        continue
                    if kind == "object":
                        obj = what[1]
                        objects[local] = obj
                        used.append(obj.args.path)
                        continue
                    if kind == "function":
                        fn = what[1]
                        functions[local] = fn
                        used.append(fn[0].path)
                        continue
                    sub = mods.module(pf.path, f"{node.module}.{a.name}" if node.module else a.name, node.level)
                    if sub is not None and sub is not pf:  # from proj import helpers; helpers.CustomTrainer(...)
                        _qualify(mods, sub, pf.imports.get(local, local), qualified, used, functions)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    top = a.asname or a.name.split(".", 1)[0]
                    if top in _THIRD_PARTY:
                        continue
                    other = mods.module(pf.path, a.name if a.asname else top, 0)
                    if other is None or other is pf:
                        continue
                    _qualify(mods, other, pf.imports.get(top, top), qualified, used, functions)
        bases = None if reads_dataclasses or not defs else _module_level_bases(pf)
        for local, found, dataclass in defs:  # in the order of the imports, as ``setdefault`` keeps the first
            if dataclass and bases is not None and local not in bases \
                    and mods.parser_base(found[0], found[1]) is None:
                continue
            owner = mods.full(found[0])
            if owner is None:
                continue
            pf.external_defs.setdefault(local, (owner, found[1]))
            used.append(owner.path)
        if used:
            pf.link_repository(classes, qualified, objects)
            if functions:
                _follow_functions(pf, functions)
            uses[pf.path] = sorted(set(used))
            # what a linked file defines and builds may answer otherwise now: the answers that
            # read it are asked again (the others stay: peft's and TRL's tests import the same
            # names from modules that are linked, if at all, before them)
            for key in readers.pop(id(pf), ()):
                named.pop(key, None)
    return uses


def _what_is_named(mods: Modules, other: PythonFile, name: str) -> tuple:
    """What ``from <other> import name`` brings, for ``link_modules``: ``("class", library
    class or None, (module, ClassDef), dataclass)`` (``dataclass``: True for a dataclass,
    False for a parser subclass, None for neither; asked only without a library class),
    ``("object", TrainingArgsCall)``, ``("function", (module, FunctionDef, TrainingArgsCall))``
    or ``("other",)``. The same names are imported by many scripts (peft's tests: ``from peft
    import LoraConfig, get_peft_model``); the answer is kept until a module whose linked state
    it read (``Modules.asked``) is linked (its classes, calls and objects may answer otherwise
    then)."""
    found = mods.class_in(other, name)
    if found is not None:
        lib = mods.library_base(found[0], found[1])
        if lib is not None:
            return ("class", lib, found, None)
        dataclass: bool | None = None
        if _is_dataclass(found[1]):
            dataclass = True
        elif mods.parser_base(found[0], found[1]) is not None:
            dataclass = False
        return ("class", None, found, dataclass)
    obj = mods.args_object(other, name)
    if obj is not None:
        return ("object", obj)
    fn = mods.args_function(other, name)
    if fn is not None:
        return ("function", fn)
    return ("other",)


def _qualify(mods: Modules, module: PythonFile, prefix: str, qualified: dict[str, tuple[str, str]],
             used: list[str], functions: dict | None = None) -> None:
    """``prefix.Class`` for each class of ``module`` that derives from a library class (and
    ``prefix.func`` for each function that returns a TrainingArguments-like call)."""
    for cd in (n for n in module.tree.body if isinstance(n, ast.ClassDef)):
        lib = mods.library_base(module, cd)
        if lib is not None and mods.full(module) is not None:
            qualified[f"{prefix}.{cd.name}"] = lib
            used.append(module.path)
    if functions is None or not module.args_calls:
        return
    for fn in (n for n in module.tree.body if isinstance(n, ast.FunctionDef)):
        tac = returned_args_call(module, fn)
        if tac is not None:
            functions[f"{prefix}.{fn.name}"] = (module, fn, tac)
            used.append(module.path)


def _own_nodes(fn: ast.FunctionDef):
    """The nodes of ``fn``'s body outside nested functions, classes and lambdas."""
    todo = list(fn.body)
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                todo.append(child)


def returned_args_call(pf: PythonFile, fn: ast.FunctionDef) -> TrainingArgsCall | None:
    """The TrainingArguments-like call ``fn`` returns: its only ``return`` gives the call
    itself, or a name bound once in ``fn`` to it; None otherwise."""
    calls = [t for t in pf.args_calls if t.site.in_def is fn]
    if not calls:
        return None
    returns = [n for n in _own_nodes(fn) if isinstance(n, ast.Return)]
    if len(returns) != 1 or returns[0].value is None:
        return None
    value = returns[0].value
    if isinstance(value, ast.Call):
        return next((t for t in calls if t.site.node is value), None)
    if isinstance(value, ast.Name):
        bound = [n for n in _own_nodes(fn) if isinstance(n, ast.Name) and n.id == value.id
                 and isinstance(n.ctx, ast.Store)]
        tac = next((t for t in calls if t.bound_to == value.id), None)
        if tac is not None and len(bound) == 1:
            return tac
    return None


def _follow_functions(pf: PythonFile, functions: dict[str, tuple[PythonFile, ast.FunctionDef, TrainingArgsCall]]
                      ) -> None:
    """Give each Trainer of ``pf`` whose ``args`` is the result of an imported function that
    returns a TrainingArguments-like call (``args=make_args(...)``, or a name bound once to that
    result) the call's site, with what this call passes to the function's parameters."""
    for tc in pf.trainer_calls:
        if tc.args_call is not None:
            continue
        expr = tc.keywords.get("args")
        scope = tc.site.scope
        for _ in range(3):
            if not isinstance(expr, ast.Name):
                break
            b = pf.binding_of(expr.id, scope)
            if b is None or b.kind not in ("assign", "annassign") or b.value is None:
                expr = None
                break
            expr = b.value
        if not isinstance(expr, ast.Call):
            continue
        func = expr.func
        key = func.id if isinstance(func, ast.Name) else pf.qualname(func) if isinstance(func, ast.Attribute) else None
        found = functions.get(key) if key else None
        if found is None:
            continue
        cs = next((c for c in pf.calls if c.node is expr), None)
        tc.args_call = _called_site(pf, expr, cs.scope if cs is not None else scope, *found)


def _called_site(pf: PythonFile, call: ast.Call, scope, owner: PythonFile, fn: ast.FunctionDef,
                 tac: TrainingArgsCall) -> TrainingArgsCall:
    """``tac`` (the call ``fn`` returns, in ``owner``) as configured by this ``call`` of ``fn``."""
    import os
    from trainlint.record import replace

    from trainlint.setup import ArgsSite

    a = fn.args
    positional = [p.arg for p in a.posonlyargs + a.args]
    kwonly = [p.arg for p in a.kwonlyargs]
    defaults: dict[str, ast.expr] = dict(zip(positional[len(positional) - len(a.defaults):], a.defaults))
    defaults.update({p: d for p, d in zip(kwonly, a.kw_defaults) if d is not None})
    varkw = a.kwarg.arg if a.kwarg is not None else None
    passed: dict[str, ast.expr] = {}
    extra: list[ast.keyword] = []
    unknown_args = False  # *args / **kwargs at the call: any parameter may be set
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            unknown_args = True
            break
        if i < len(positional):
            passed[positional[i]] = arg
    for kw in call.keywords:
        if kw.arg is None:
            unknown_args = True
        elif kw.arg in positional or kw.arg in kwonly:
            passed[kw.arg] = kw.value
        else:
            extra.append(kw)
    rebound = {n.id for n in _own_nodes(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    via = f"passed to {fn.name}() at {os.path.basename(pf.path)}:{call.lineno}"
    values = dict(tac.args.values)
    for kw in tac.site.node.keywords:
        if not (kw.arg and isinstance(kw.value, ast.Name)) or kw.value.id not in positional + kwonly \
                or kw.value.id in rebound or kw.arg not in values:
            continue
        own = values[kw.arg]
        param = kw.value.id
        if param in passed:
            v = pf.value_of(kw.arg, passed[param], passed[param], scope)
            v = replace(v, key_span=own.key_span, key_text=own.key_text, note=via)
        elif unknown_args:
            v = own
        elif param in defaults:
            v = owner.value_of(kw.arg, kw, defaults[param], owner.module_scope)
            v = replace(v, key_span=own.key_span, key_text=own.key_text,
                        note=f"default of {fn.name}()'s {param}")
        else:
            v = own
        values[kw.arg] = v
    open_ended = tac.args.open_ended or unknown_args
    splats = [kw for kw in tac.site.node.keywords if kw.arg is None]
    if varkw and splats and all(isinstance(k.value, ast.Name) and k.value.id == varkw for k in splats) \
            and not any(isinstance(x, ast.Starred) for x in tac.site.node.args) and varkw not in rebound:
        # ``TrainingArguments(..., **kwargs)`` with the function's own ``**kwargs``: the call's
        # other keywords are the arguments' keywords. The site stays open-ended: another call
        # of the function may pass any other keyword, so nothing is judged (or added) as unset.
        for kw in extra:
            values.setdefault(kw.arg, replace(pf.value_of(kw.arg, kw, kw.value, scope), note=via))  # type: ignore[arg-type]
    site = ArgsSite(path=tac.args.path, class_name=tac.class_name, values=values, open_ended=open_ended,
                    span=tac.args.span, consumer=tac.args.consumer)
    from trainlint.sources.python import TrainingArgsCall as _Tac

    derived = _Tac(tac.site, tac.class_name, site, tac.bound_to)
    site.call = derived
    return derived


def _is_dataclass(cd: ast.ClassDef) -> bool:
    for d in cd.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
        if name == "dataclass":
            return True
    return False
