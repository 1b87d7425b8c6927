#!/usr/bin/env python
"""Generate trainlint's knowledge of TRL's other parser dataclasses, per TRL release.

Regenerate with ONE command, from the repository root::

    python scripts/gen_trl_script_args.py [--wheel-dir /tmp/trainlint-wheels]

``TrlParser((ScriptArguments, SFTConfig, ModelConfig))``: a launch line's flags and the
``--config`` YAML are read by every dataclass of the parser. The config classes (derived from
``TrainingArguments``) are in ``trl_args.json``; this file holds the others TRL ships:
``ScriptArguments``, ``ModelConfig``, ``GRPOScriptArguments``, ``DatasetMixtureConfig``,
``DDPOConfig``... so that a name none of them has is an unknown argument.

What it does:

1. Takes the TRL releases of ``trl_args.json`` (every release from 0.12.0, listed by
   ``gen_training_args.py`` with ``pip index versions``; ``--trl V ...`` to choose) and downloads
   each wheel with ``pip download --no-deps``.
2. Reads every public ``@dataclass`` of the wheel's modules with :mod:`ast` (nothing is
   imported) that does not derive from ``TrainingArguments``, its fields flattened over its
   bases inside the wheel (a class with a base from outside the wheel, such as a data collator
   on ``DataCollatorMixin``, is left out: its fields are not all known). Per field: type,
   default, choices, ``init`` and a deprecation message (``gen_training_args.parse_field``; the
   help texts are not kept).
3. Records every dotted name each class can be imported as in that release: the module that
   defines it and every module of the wheel that re-exports it (``from .scripts import
   ScriptArguments`` in ``trl/__init__.py``, also under ``if TYPE_CHECKING:``), so that
   ``trl.ScriptArguments`` and ``trl.scripts.utils.ScriptArguments`` both resolve.
4. Writes ``trainlint/knowledge/data/trl_script_args.json``: ``versions`` (TRL, oldest first),
   ``names`` (``{dotted name: [[first, last, class key], ...]}``, indexes into ``versions``),
   ``classes`` (``{class key: {"modules", "bases", "fields"}}`` in ``trl_args.json``'s variant
   format, the key being the defining ``module.Class``) and ``texts``. Read by
   ``trainlint.knowledge.trl_script_args``.
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
from wheel_ast import Wheel, module_level, ranges  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "trainlint" / "knowledge" / "data" / "trl_script_args.json"
TRL_ARGS = ROOT / "trainlint" / "knowledge" / "data" / "trl_args.json"


def _dataclasses(wheel: Wheel) -> dict[str, tuple[str, ast.ClassDef]]:
    """{"module.Class": (module, ClassDef)} of every public module-level dataclass."""
    out: dict[str, tuple[str, ast.ClassDef]] = {}
    for mod in sorted(wheel.files):
        if not mod.startswith("trl"):
            continue
        src = wheel.source(mod) or ""
        if "dataclass" not in src:
            continue
        tree = wheel.tree(mod)
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and g.is_dataclass(node) and not node.name.startswith("_"):
                out[f"{mod}.{node.name}"] = (mod, node)
    return out


def _chain(wheel: Wheel, mod: str, cls: ast.ClassDef, depth: int = 0) -> list[tuple[str, ast.ClassDef]] | None:
    """The class and its bases inside the wheel, base first; None when a base is outside the
    wheel (``TrainingArguments``, ``DataCollatorMixin``...) or cannot be found."""
    if depth > 10:
        return None
    out: list[tuple[str, ast.ClassDef]] = []
    for b in cls.bases:
        text = ast.unparse(b)
        if text in ("object", "Generic") or text.startswith("Generic["):
            continue
        hit = wheel.find_class(mod, text.split(".")[-1])
        if hit is None:
            return None
        up = _chain(wheel, hit[0], hit[1], depth + 1)
        if up is None:
            return None
        out += [c for c in up if c not in out]
    return out + [(mod, cls)]


def extract(wheel_path: Path) -> tuple[dict[str, dict], dict[str, str]]:
    """({class key: {"module", "bases", "fields", "deprecations"}}, {dotted name: class key}) of
    one TRL wheel."""
    wheel = Wheel(wheel_path)
    enums: dict[str, list] = {}
    found = _dataclasses(wheel)
    for mod, _ in found.values():
        enums.update(g.enums_of(wheel.tree(mod)))  # type: ignore[arg-type]
    classes: dict[str, dict] = {}
    for key, (mod, node) in found.items():
        chain = _chain(wheel, mod, node)
        if chain is None:
            continue
        names_all = {s.target.id for _, c in chain for s in g._annotated_assigns(c.body)}
        fields: dict[str, dict] = {}
        deps: dict[str, str] = {}
        for cmod, c in chain:
            consts = {**g.module_constants(wheel.tree(cmod)), **g.class_constants(c),  # type: ignore[arg-type]
                      **g.enum_names(enums)}
            for stmt in g._annotated_assigns(c.body):
                if "ClassVar" in ast.unparse(stmt.annotation):
                    continue
                fields.pop(stmt.target.id, None)
                fields[stmt.target.id] = g.parse_field(stmt, consts, enums)
            deps.update(g.post_init_deprecations(c, names_all))
        for fname, info in fields.items():
            hd = g.help_deprecation(fname, info.pop("help", None), names_all)
            if hd and fname not in deps:
                deps[fname] = hd
        classes[key] = {"module": mod, "bases": [ast.unparse(b) for b in node.bases], "fields": fields,
                        "deprecations": deps}
    names: dict[str, str] = {}
    for mod in sorted(wheel.files):
        if not mod.startswith("trl"):
            continue
        src = wheel.source(mod) or ""
        if not any(key.rsplit(".", 1)[1] in src for key in classes):
            continue
        tree = wheel.tree(mod)
        if tree is None:
            continue
        bound: set[str] = set()
        for stmt in module_level(tree.body):
            if isinstance(stmt, ast.ClassDef):
                bound.add(stmt.name)
            elif isinstance(stmt, ast.ImportFrom):
                bound.update(a.asname or a.name for a in stmt.names)
        for name in sorted(bound):
            hit = wheel.find_class(mod, name)
            if hit is None:
                continue
            key = f"{hit[0]}.{hit[1].name}"
            if key in classes:
                names[f"{mod}.{name}"] = key
    return classes, names


def build(versions: list[str], wheels: dict[str, Path]) -> dict:
    per_version: dict[str, dict[str, dict]] = {}
    name_rows: list[dict[str, str]] = []
    for v in versions:
        classes, names = extract(wheels[v])
        per_version[v] = classes
        name_rows.append(names)
    texts = g.Texts()
    classes = g.compact(per_version, versions, texts)
    all_names = sorted({n for row in name_rows for n in row})
    names = {n: ranges([row.get(n) for row in name_rows]) for n in all_names}
    return {"schema": 1, "generator": "python scripts/gen_trl_script_args.py", "versions": versions,
            "names": names, "classes": classes, "texts": texts.items}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel-dir", type=Path, help="download wheels here and reuse them (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--trl", nargs="*", help="explicit trl versions")
    args = ap.parse_args(argv)
    # the TRL versions of trl_args.json, so that both files describe the same releases
    known = json.loads(TRL_ARGS.read_text(encoding="utf-8"))["trl"]["versions"]
    versions = sorted(args.trl or known, key=g.vkey)
    print(f"trl: {len(versions)} versions {versions[0]}..{versions[-1]}")
    with tempfile.TemporaryDirectory(prefix="trainlint-wheels-") as tmp:
        wheel_dir = args.wheel_dir or Path(tmp)
        wheel_dir.mkdir(parents=True, exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            wheels = dict(zip(versions, pool.map(lambda v: g.download("trl", v, wheel_dir), versions)))
        doc = build(versions, wheels)
    payload = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    args.out.write_text(payload + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(payload.encode()) / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
