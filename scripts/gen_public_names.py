#!/usr/bin/env python
"""Generate trainlint's knowledge of what ``from transformers|trl|peft import Name`` can import,
per released version.

Regenerate with ONE command, from the repository root::

    python scripts/gen_public_names.py [--wheel-dir /tmp/trainlint-wheels]

What it does:

1. Lists the releases with ``pip index versions`` and downloads the wheels with ``pip download
   --no-deps``: transformers at the versions ``training_args.json`` covers (its
   ``select_transformers``), trl every release from 0.12.0 (as ``trl_args.json``), peft every
   release from 0.10.0 plus 0.9.0, the release before, so that a removal in 0.10.0 is visible.
2. Reads each package's ``__init__.py`` with :mod:`ast` (nothing is imported) and collects the
   names a ``from X import Name`` finds:
   * the lazy import structure: the keys (submodules) and listed names of ``_import_structure``
     (the dict literal, ``_import_structure["k"] = [...]``, ``.append``/``.extend``/``+=``,
     in every branch, the optional-dependency ones included);
   * ``define_import_structure(<dir>)`` (transformers 5: every ``__all__`` of the modules under
     ``models/``, recursively, except ``convert_*``/``modular_*`` files, as
     ``transformers.utils.import_utils.create_import_structure_from_path`` does);
   * for a package that is not a ``_LazyModule`` (peft): names bound at module level of
     ``__init__.py`` (imports, classes, functions, assignments; ``from .m import *`` expanded
     with ``m``'s ``__all__`` or public names);
   * the names the lazy module's ``__getattr__`` serves on access without listing them
     (transformers 5: ``XTokenizerFast`` -> ``XTokenizer``, ``XImageProcessorFast`` ->
     ``XImageProcessor``, a tokenizer of ``SLOW_TO_FAST_CONVERTERS`` -> its converter's
     tokenizer: ``lazy_fallbacks``);
   * the package's top-level submodules (a ``from X import submodule`` imports it);
   * ``__version__``.
3. Writes ``trainlint/knowledge/data/public_names.json``: per package ``versions`` (oldest
   first), ``always`` (names present in every version) and ``changed`` (every other name, with
   its ``[[first, last], ...]`` runs of version numbers). Names starting with ``_`` are left out
   (``__version__`` excepted). And ``removed_names.json``, what the rules read: per package only
   the names that some known version has and a later one lacks (re-added later or not: a
   version in the gap lacks it all the same), and for trl and peft, where
   each can be imported from instead in the versions without it (``elsewhere``: the shortest
   sub-package whose ``__init__`` exports it, such as ``trl.experimental.bco``).
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_training_args as g  # noqa: E402
from wheel_ast import Wheel, dunder_all, module_level, present_ranges, ranges, string_list  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "trainlint" / "knowledge" / "data" / "public_names.json"
REMOVED_NAME = "removed_names.json"
PACKAGES = ("transformers", "trl", "peft")


def select_peft(available: list[str]) -> list[str]:
    return [v for v in available if g.vkey(v) >= (0, 10, 0)] + (["0.9.0"] if "0.9.0" in available else [])


def _is_structure(node: ast.AST) -> bool:
    """``_import_structure`` or ``_import_structure["k"]``."""
    if isinstance(node, ast.Name):
        return node.id == "_import_structure"
    return isinstance(node, ast.Subscript) and _is_structure(node.value)


def _key_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    return None


def import_structure_names(tree: ast.Module) -> set[str]:
    """Names of the lazy ``_import_structure``: its keys' first parts and every listed name."""
    out: set[str] = set()

    def add_key(k: str | None) -> None:
        if k:
            out.add(k.split(".")[0])

    def add_values(node: ast.AST | None) -> None:
        vals = string_list(node)
        if vals is not None:
            out.update(vals)

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == "_import_structure" and isinstance(node.value, ast.Dict):
                    for k, v in zip(node.value.keys, node.value.values):
                        if isinstance(k, ast.Constant) and isinstance(k.value, str):
                            add_key(k.value)
                            add_values(v)
                elif _is_structure(t) and _key_of(t):
                    add_key(_key_of(t))
                    add_values(node.value)
        elif isinstance(node, ast.AugAssign) and _is_structure(node.target):
            add_key(_key_of(node.target))
            add_values(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if node.func.attr in ("append", "extend") and _is_structure(owner):
                add_key(_key_of(owner))
                for a in node.args:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str):
                        out.add(a.value)
                    else:
                        add_values(a)
            elif node.func.attr == "setdefault" and _is_structure(owner) and node.args:
                a = node.args[0]
                if isinstance(a, ast.Constant) and isinstance(a.value, str):
                    add_key(a.value)
    return out


def _uses_define_import_structure(tree: ast.Module) -> list[str]:
    """Folders (relative to the package) passed to ``define_import_structure(Path(__file__)
    .parent / "dir")`` at module level."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "define_import_structure" \
                and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.BinOp) and isinstance(arg.right, ast.Constant) and isinstance(arg.right.value, str):
                out.append(arg.right.value)
    return out


def _all_of_source(src: str) -> list[str]:
    """``__all__`` of a module from its text: the statement that starts a line with
    ``__all__`` parsed alone (as ``fetch__all__`` in transformers' ``import_utils`` reads it;
    parsing the whole of every model file of every version would take minutes)."""
    if "__all__" not in src:
        return []
    lines = src.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("__all__")]
    out: list[str] = []
    for i in starts:
        for j in range(i + 1, min(len(lines), i + 2000) + 1):
            try:
                tree = ast.parse("\n".join(lines[i:j]))
            except SyntaxError:
                continue
            out += dunder_all(tree) or []
            break
    return out


def _all_under(wheel: Wheel, package: str, folder: str) -> set[str]:
    prefix = f"{package}.{folder}."
    out: set[str] = set()
    for mod, path in wheel.files.items():
        if not mod.startswith(prefix) or path.endswith("__init__.py"):
            continue
        leaf = path.rsplit("/", 1)[-1]
        if leaf.startswith(("convert_", "modular_")):
            continue
        out.update(_all_of_source(wheel.source(mod) or ""))
    return out


def _public_of_module(wheel: Wheel, module: str) -> set[str]:
    tree = wheel.tree(module)
    if tree is None:
        return set()
    names = dunder_all(tree)
    if names is not None:
        return set(names)
    return {n for n in _bound(wheel, module, tree, star=False) if not n.startswith("_")}


def _bound(wheel: Wheel, module: str, tree: ast.Module, star: bool = True) -> set[str]:
    out: set[str] = set()
    for node in module_level(tree.body):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out.add(t.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, ast.Import):
            for a in node.names:
                out.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name == "*":
                    if star and node.level:
                        out |= _public_of_module(wheel, wheel.absolute(module, node))
                else:
                    out.add(a.asname or a.name)
    return out


def public_names(wheel_path: Path, package: str) -> set[str]:
    wheel = Wheel(wheel_path)
    tree = wheel.tree(package)
    if tree is None:
        raise SystemExit(f"{wheel_path}: no {package}/__init__.py")
    names = import_structure_names(tree)
    for folder in _uses_define_import_structure(tree):
        names |= _all_under(wheel, package, folder)
        names.add(folder.split("/")[0])
    if "_LazyModule(" not in (wheel.source(package) or ""):
        # a plain package: what its __init__ binds (a lazy one replaces itself in sys.modules,
        # so its own imports such as `sys` or `TYPE_CHECKING` are not reachable)
        names |= _bound(wheel, package, tree)
    # submodules: a `from package import submodule` imports it
    for mod in wheel.files:
        parts = mod.split(".")
        if len(parts) == 2 and parts[0] == package:
            names.add(parts[1])
    names |= lazy_fallbacks(wheel, package, names)
    names.add("__version__")
    return {n for n in names if not n.startswith("_") or n == "__version__"}


def _converters(wheel: Wheel, package: str) -> dict[str, str]:
    """``SLOW_TO_FAST_CONVERTERS`` of ``<package>.convert_slow_tokenizer``: {tokenizer name:
    converter class name}, from the dict literal."""
    tree = wheel.tree(f"{package}.convert_slow_tokenizer")
    out: dict[str, str] = {}
    for node in module_level(tree.body) if tree is not None else []:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and any(
                isinstance(t, ast.Name) and t.id == "SLOW_TO_FAST_CONVERTERS" for t in node.targets):
            for k, v in zip(node.value.keys, node.value.values):
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and isinstance(v, ast.Name):
                    out[k.value] = v.id
    return out


def lazy_fallbacks(wheel: Wheel, package: str, names: set[str]) -> set[str]:
    """The names the lazy module's ``__getattr__`` serves without listing them (transformers
    5, ``utils/import_utils.py``): ``XTokenizerFast`` falls back to ``XTokenizer``,
    ``XImageProcessorFast`` to ``XImageProcessor`` (with a deprecation warning), and a
    tokenizer that ``SLOW_TO_FAST_CONVERTERS`` maps to a converter resolves to the tokenizer of
    that converter (``LayoutLMTokenizer`` -> ``BertTokenizer``: ``BertConverter``) or to
    another tokenizer of the same converter, when that one is listed. Each fallback counts only
    in a version whose ``import_utils`` has it."""
    src = wheel.source(f"{package}.utils.import_utils") or ""
    out: set[str] = set()
    if 'name.endswith("TokenizerFast")' in src:
        out |= {n + "Fast" for n in names if n.endswith("Tokenizer")}
    if 'name.endswith("ImageProcessorFast")' in src:
        out |= {n + "Fast" for n in names if n.endswith("ImageProcessor")}
    if "SLOW_TO_FAST_CONVERTERS" in src:
        conv = _converters(wheel, package)
        for tok, c in conv.items():
            candidates = [c.removesuffix("Converter") + "Tokenizer"] + [t for t, c2 in conv.items()
                                                                        if c2 == c and t != tok]
            if any(x in names or x in out for x in candidates):
                out |= {tok, tok + "Fast"} if 'name.endswith("TokenizerFast")' in src else {tok}
    return out


def _exporters(wheel_path: Path, package: str, wanted: set[str]) -> dict[str, str]:
    """{name: the shortest sub-package of ``package`` (``trl.experimental.bco``) whose
    ``__init__`` exports it} for the ``wanted`` names."""
    wheel = Wheel(wheel_path)
    out: dict[str, str] = {}
    for mod in sorted(wheel.files, key=lambda m: (m.count("."), m)):
        if mod == package or not mod.startswith(package + ".") or not wheel.is_package(mod) or mod.count(".") > 3:
            continue
        tree = wheel.tree(mod)
        if tree is None:
            continue
        src = wheel.source(mod) or ""
        names = import_structure_names(tree) | (_bound(wheel, mod, tree) if "_LazyModule(" not in src else set())
        for n in wanted & names:
            out.setdefault(n, mod)
    return out


def has_gap(runs: list[list[int]], count: int) -> bool:
    """Whether a name with these ``[first, last]`` runs (of ``count`` versions) is missing from
    some version after one that has it: a run ends before the newest. A name removed and
    re-added later (``[[0, 4], [9, newest]]``) counts: a project pinned in the gap lacks it."""
    return any(b < count - 1 for _, b in runs)


def build(per_package: dict[str, tuple[list[str], dict[str, Path]]]) -> tuple[dict, dict]:
    """(the full table, the table of removed names) over every package."""
    doc: dict = {"schema": 1, "generator": "python scripts/gen_public_names.py"}
    removed_doc: dict = {"schema": 1, "generator": "python scripts/gen_public_names.py"}
    for package, (versions, wheels) in per_package.items():
        sets = [public_names(wheels[v], package) for v in versions]
        every = sorted(set.intersection(*sets))
        changed = {}
        for name in sorted(set.union(*sets) - set(every)):
            changed[name] = present_ranges([name in s for s in sets])
        doc[package] = {"versions": versions, "always": every, "changed": changed}
        removed = {n: r for n, r in changed.items() if has_gap(r, len(versions))}
        entry: dict = {"versions": versions, "removed": removed}
        if package != "transformers":
            # where a name that left the top level can be imported from instead
            elsewhere: dict[str, list] = {}
            for i, v in enumerate(versions):
                gone = {n for n in removed if n not in sets[i] and any(r[0] < i for r in removed[n])}
                if not gone:
                    continue
                found = _exporters(wheels[v], package, gone)
                for n in gone:
                    elsewhere.setdefault(n, [None] * len(versions))[i] = found.get(n)
            entry["elsewhere"] = {n: ranges(vals) for n, vals in sorted(elsewhere.items()) if any(vals)}
        removed_doc[package] = entry
    return doc, removed_doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel-dir", type=Path, help="download wheels here and reuse them (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--transformers", nargs="*", help="explicit transformers versions")
    ap.add_argument("--trl", nargs="*", help="explicit trl versions")
    ap.add_argument("--peft", nargs="*", help="explicit peft versions")
    args = ap.parse_args(argv)
    chosen = {
        "transformers": sorted(args.transformers or g.select_transformers(g.pip_versions("transformers")), key=g.vkey),
        "trl": sorted(args.trl or g.select_trl(g.pip_versions("trl")), key=g.vkey),
        "peft": sorted(args.peft or select_peft(g.pip_versions("peft")), key=g.vkey),
    }
    for p, vs in chosen.items():
        print(f"{p}: {len(vs)} versions {vs[0]}..{vs[-1]}")
    with tempfile.TemporaryDirectory(prefix="trainlint-wheels-") as tmp:
        wheel_dir = args.wheel_dir or Path(tmp)
        wheel_dir.mkdir(parents=True, exist_ok=True)
        jobs = [(p, v) for p, vs in chosen.items() for v in vs]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            got = dict(zip(jobs, pool.map(lambda j: g.download(j[0], j[1], wheel_dir), jobs)))
        doc, removed = build({p: (vs, {v: got[(p, v)] for v in vs}) for p, vs in chosen.items()})
    for data, out in ((doc, args.out), (removed, args.out.parent / REMOVED_NAME)):
        payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        out.write_text(payload + "\n", encoding="utf-8")
        print(f"wrote {out} ({len(payload.encode()) / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
