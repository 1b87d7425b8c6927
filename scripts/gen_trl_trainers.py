#!/usr/bin/env python
"""Generate trainlint's knowledge of the TRL trainers' constructor keywords, per TRL release.

Regenerate with ONE command, from the repository root::

    python scripts/gen_trl_trainers.py [--wheel-dir /tmp/trainlint-wheels]

What it does:

1. Lists the TRL releases with ``pip index versions`` (every release from 0.12.0, as
   ``gen_training_args.py`` does for the config data) and downloads each wheel with
   ``pip download --no-deps``.
2. Reads every public class named ``*Trainer`` out of each wheel with :mod:`ast` (nothing is
   imported) and its ``__init__``: the parameter names, ``**kwargs``, the keywords that
   decorators accept or deprecate (``deprecate_kwarg("tokenizer", new_name=...)``,
   ``_deprecate_arguments(deprecated_args=[...])``), and the config class its ``args``
   parameter is annotated with (``SFTConfig``...). A class without ``__init__`` (or a stub whose
   ``__init__(*args, **kwargs)`` only warns and calls ``super().__init__``, as the 0.26-0.28
   re-exports of the experimental trainers do) takes its base class's; the stub's warning text
   is kept.
3. Works out where each keyword that a trainer stopped accepting went: the field of the same
   name of the trainer's config class (its TRL fields, read with ``gen_training_args``'s
   extractor, or a ``TrainingArguments`` field from ``training_args.json``) in the release that
   removed it.
4. Writes ``trainlint/knowledge/data/trl_trainers.json``: ``versions`` (TRL, oldest first) and
   per trainer ``module``, ``params``, ``varkw``, ``aliases``, ``deprecated``, ``config``,
   ``stub`` as ``[first, last, value]`` runs of version numbers (indexes into ``versions``), and
   ``moved``: ``{keyword: {"config", "removed_in", "deprecated_in"}}``.
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
from wheel_ast import Wheel, base_names, method, ranges, signature  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "trainlint" / "knowledge" / "data" / "trl_trainers.json"
TA_DATA = ROOT / "trainlint" / "knowledge" / "data" / "training_args.json"


def _is_stub(func: ast.FunctionDef, sig: dict) -> bool:
    """``def __init__(self, *args, **kwargs)`` that only warns and calls ``super().__init__``."""
    return not sig["params"] and sig["varargs"] and sig["varkw"]


def _warning_text(func: ast.FunctionDef) -> str | None:
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("warn") and node.args:
            text = g.text_of(node.args[0])
            if text:
                return " ".join(text.split())
    return None


def _config_of(func: ast.FunctionDef) -> str | None:
    """The config class the ``args`` parameter (``config`` in the older PPO/RLOO/DDPO/AlignProp
    trainers) is annotated with."""
    params = {a.arg: a for a in func.args.args + func.args.kwonlyargs}
    for name in ("args", "config"):
        a = params.get(name)
        if a is not None and a.annotation is not None:
            names = [n.id if isinstance(n, ast.Name) else n.value if isinstance(n, ast.Constant) else None
                     for n in ast.walk(a.annotation)]
            names = [n for n in names if isinstance(n, str)]
            for n in names:
                if n.endswith("Config") and n != "TrainingArguments":
                    return n
            if "TrainingArguments" in names:
                return "TrainingArguments"
    return None


def trainer_info(wheel: Wheel, module: str, cls: ast.ClassDef) -> dict:
    """The constructor facts of one trainer class (its own ``__init__`` or the nearest base's)."""
    stub = None
    seen = 0
    cur_mod, cur = module, cls
    while cur is not None and seen < 10:
        seen += 1
        init = method(cur, "__init__")
        if init is not None:
            sig = signature(init)  # type: ignore[arg-type]
            if _is_stub(init, sig):  # type: ignore[arg-type]
                stub = stub or _warning_text(init)  # type: ignore[arg-type]
            else:
                return {"module": module, "params": sig["params"], "varkw": sig["varkw"],
                        "aliases": sig["aliases"], "deprecated": sig["deprecated"],
                        "config": _config_of(init), "stub": stub}  # type: ignore[arg-type]
        nxt = None
        for b in base_names(cur):
            hit = wheel.find_class(cur_mod, b.split(".")[-1])
            if hit is not None:
                nxt = hit
                break
        if nxt is None:
            # the base is outside the wheel (transformers.Trainer): its signature is not TRL's
            return {"module": module, "params": None, "varkw": None, "aliases": {}, "deprecated": [],
                    "config": None, "stub": stub, "base": base_names(cur)[0] if cur.bases else None}
        cur_mod, cur = nxt
    return {"module": module, "params": None, "varkw": None, "aliases": {}, "deprecated": [], "config": None,
            "stub": stub}


def extract(wheel_path: Path) -> dict[str, dict]:
    """{trainer name: facts} of one TRL wheel. A name defined in several modules (the stable
    ``trl.trainer`` re-export and ``trl.experimental``) is taken from the stable one."""
    wheel = Wheel(wheel_path)
    defs: dict[str, list[tuple[str, ast.ClassDef]]] = {}
    for mod in wheel.files:
        if not mod.startswith("trl."):
            continue
        src = wheel.source(mod) or ""
        if "Trainer" not in src:
            continue
        tree = wheel.tree(mod)
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Trainer") and not node.name.startswith("_"):
                defs.setdefault(node.name, []).append((mod, node))
    out = {}
    for name, cands in sorted(defs.items()):
        cands.sort(key=lambda c: ("experimental" in c[0], c[0]))
        mod, node = cands[0]
        out[name] = trainer_info(wheel, mod, node)
    return out


def config_fields(wheel_path: Path) -> dict[str, set[str]]:
    """{TRL config class: its own field names} (TrainingArguments' fields not included)."""
    data = g.extract_trl(wheel_path, set(), {})
    return {cls: set(d["fields"]) for cls, d in data.items()}


def build(versions: list[str], wheels: dict[str, Path]) -> dict:
    per_version = [extract(wheels[v]) for v in versions]
    cfg_fields = [config_fields(wheels[v]) for v in versions]
    ta_doc = json.loads(TA_DATA.read_text(encoding="utf-8"))
    ta_fields = set(ta_doc["transformers"]["classes"]["TrainingArguments"]["fields"])
    names = sorted({n for d in per_version for n in d})
    trainers: dict[str, dict] = {}
    for name in names:
        rows = [d.get(name) for d in per_version]
        entry: dict = {}
        for key in ("module", "params", "varkw", "aliases", "deprecated", "config", "stub", "base"):
            vals = [None if r is None else r.get(key) for r in rows]
            if key == "aliases":
                vals = [None if r is None else (r.get(key) or {}) for r in rows]
            elif key == "deprecated":
                vals = [None if r is None else (r.get(key) or []) for r in rows]
            if key in ("stub", "base", "config") and all(v is None for v in vals):
                continue
            entry[key] = ranges(vals)
        # where the keywords a trainer stopped accepting went
        moved: dict[str, dict] = {}
        for i in range(1, len(versions)):
            prev, cur = rows[i - 1], rows[i]
            if not prev or not cur or prev.get("params") is None or cur.get("params") is None:
                continue
            accepted = set(cur["params"]) | set(cur["aliases"])
            for kw in prev["params"]:
                if kw in accepted or kw in moved:
                    continue
                cfg = cur.get("config") or prev.get("config")
                if not cfg:
                    continue
                own = cfg_fields[i].get(cfg, set())
                if kw in own or kw in ta_fields:
                    dep = next((versions[j] for j in range(i) if rows[j] and kw in (rows[j].get("deprecated") or [])),
                               None)
                    moved[kw] = {"config": cfg, "removed_in": versions[i], "deprecated_in": dep}
        if moved:
            entry["moved"] = moved
        trainers[name] = entry
    return {"schema": 1, "generator": "python scripts/gen_trl_trainers.py", "versions": versions,
            "trainers": trainers}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel-dir", type=Path, help="download wheels here and reuse them (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--trl", nargs="*", help="explicit trl versions")
    args = ap.parse_args(argv)
    versions = sorted(args.trl or g.select_trl(g.pip_versions("trl")), key=g.vkey)
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
