"""Reading a released wheel's sources with ``ast`` (nothing is imported): the helpers shared by
``gen_trl_trainers.py``, ``gen_public_names.py`` and ``gen_model_api.py``.

* :class:`Wheel`: the ``.py`` files of one wheel, parsed on demand, with class lookup that
  follows ``from .x import Name as Alias`` chains across the wheel's modules;
* :func:`signature`: the parameters of a ``def`` (names in order, ``*args``/``**kwargs``), and
  the keyword aliases its decorators add (``deprecate_kwarg``, ``_deprecate_arguments``);
* :func:`ranges`: the compaction of a per-version value into ``[first, last, value]`` runs of
  version numbers, as ``training_args.json`` does.
"""

from __future__ import annotations

import ast
import zipfile
from pathlib import Path
from typing import Any, Iterable


class Wheel:
    """The Python modules of one wheel, keyed by dotted module name (``trl.trainer.sft_trainer``;
    a package's ``__init__.py`` is the package's name)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._zip = zipfile.ZipFile(path)
        self.files: dict[str, str] = {}
        for name in self._zip.namelist():
            if name.endswith(".py") and ".dist-info/" not in name:
                mod = name[:-3].replace("/", ".")
                if mod.endswith(".__init__"):
                    mod = mod[: -len(".__init__")]
                self.files[mod] = name
        self._trees: dict[str, ast.Module | None] = {}

    def is_package(self, module: str) -> bool:
        return self.files.get(module, "").endswith("__init__.py")

    def source(self, module: str) -> str | None:
        f = self.files.get(module)
        if f is None:
            return None
        return self._zip.read(f).decode("utf-8", errors="replace")

    def tree(self, module: str) -> ast.Module | None:
        if module not in self._trees:
            src = self.source(module)
            try:
                self._trees[module] = ast.parse(src) if src is not None else None
            except SyntaxError:
                self._trees[module] = None
        return self._trees[module]

    def absolute(self, module: str, node: ast.ImportFrom) -> str:
        """The absolute module an ``ImportFrom`` in ``module`` names."""
        if not node.level:
            return node.module or ""
        base = module if self.is_package(module) else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            base = base.rpartition(".")[0]
        return f"{base}.{node.module}" if node.module else base

    def find_class(self, module: str, name: str, depth: int = 0) -> tuple[str, ast.ClassDef] | None:
        """The ``ClassDef`` that ``name`` is in ``module``: defined there (the last definition at
        module level or under a module-level if/try), or imported from another module of the
        wheel (followed through re-exports). None when it comes from outside the wheel."""
        if depth > 12:
            return None
        tree = self.tree(module)
        if tree is None:
            return None
        found: tuple[str, ast.ClassDef] | None = None
        imported: tuple[str, str] | None = None
        for node in _module_level(tree.body):
            if isinstance(node, ast.ClassDef) and node.name == name:
                found, imported = (module, node), None
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if (a.asname or a.name) == name:
                        imported, found = (self.absolute(module, node), a.name), None
        if found is not None:
            return found
        if imported is not None:
            target, orig = imported
            if target in self.files:
                hit = self.find_class(target, orig, depth + 1)
                if hit is not None:
                    return hit
            sub = f"{target}.{orig}"
            if sub in self.files:
                return None  # a module, not a class
        return None

    def imported_from(self, module: str, name: str) -> str | None:
        """The absolute module ``name`` is imported from in ``module`` (None: not imported)."""
        tree = self.tree(module)
        if tree is None:
            return None
        out = None
        for node in _module_level(tree.body):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if (a.asname or a.name) == name:
                        out = self.absolute(module, node)
        return out


def _module_level(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Statements at module level, including those under if/try/with at module level."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _module_level(stmt.body)
            yield from _module_level(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from _module_level(stmt.body)
            for h in stmt.handlers:
                yield from _module_level(h.body)
            yield from _module_level(stmt.orelse)
        elif isinstance(stmt, ast.With):
            yield from _module_level(stmt.body)


module_level = _module_level


def method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
            return stmt  # type: ignore[return-value]
    return None


def base_names(cls: ast.ClassDef) -> list[str]:
    return [ast.unparse(b) for b in cls.bases]


def signature(func: ast.FunctionDef) -> dict[str, Any]:
    """``{"params": [names...], "varargs": bool, "varkw": bool, "aliases": {old: new|None},
    "deprecated": [names...]}`` of a ``def`` (``self``/``cls`` left out). ``aliases`` are the
    keywords a ``deprecate_kwarg("old", new_name="new")`` decorator accepts besides the
    parameters; ``deprecated`` the parameters a ``_deprecate_arguments(deprecated_args=[...])``
    decorator warns about."""
    a = func.args
    params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    aliases: dict[str, str | None] = {}
    deprecated: list[str] = []
    for d in func.decorator_list:
        if not isinstance(d, ast.Call):
            continue
        fname = ast.unparse(d.func).split(".")[-1]
        kws = {k.arg: k.value for k in d.keywords if k.arg}
        if fname == "deprecate_kwarg" and d.args and isinstance(d.args[0], ast.Constant):
            old = d.args[0].value
            # deprecate_kwarg(old_name, version, new_name=None, ...)
            new = kws.get("new_name", d.args[2] if len(d.args) > 2 else None)
            aliases[str(old)] = new.value if isinstance(new, ast.Constant) else None
        elif fname == "_deprecate_arguments":
            v = kws.get("deprecated_args")
            if isinstance(v, (ast.List, ast.Tuple)):
                deprecated += [e.value for e in v.elts if isinstance(e, ast.Constant)]
    return {
        "params": params,
        "varargs": a.vararg is not None,
        "varkw": a.kwarg is not None,
        "aliases": aliases,
        "deprecated": deprecated,
    }


def string_list(node: ast.AST | None) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        out = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return out
    return None


def dunder_all(tree: ast.Module) -> list[str] | None:
    """The module's ``__all__`` when it is a literal list (``+=`` of literal lists included)."""
    out: list[str] | None = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            out = string_list(node.value) or []
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__":
            out = (out or []) + (string_list(node.value) or [])
    return out


def ranges(per_version: list[Any]) -> list[list]:
    """``[v0, v1, ...]`` (one value per version number; None: absent) -> ``[[first, last,
    value], ...]`` runs of equal, present values."""
    out: list[list] = []
    for i, value in enumerate(per_version):
        if value is None:
            continue
        if out and out[-1][1] == i - 1 and out[-1][2] == value:
            out[-1][1] = i
        else:
            out.append([i, i, value])
    return out


def present_ranges(flags: list[bool]) -> list[list[int]]:
    """``[True, True, False, True]`` -> ``[[0, 1], [3, 3]]``."""
    out: list[list[int]] = []
    for i, f in enumerate(flags):
        if not f:
            continue
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out
