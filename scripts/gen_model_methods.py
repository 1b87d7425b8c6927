"""Write trainlint/knowledge/data/model_methods.json: the signatures of the ``PreTrainedModel``
methods that fixes rename calls to, per transformers release, read from the real wheels.

A fix that renames a call (``gradient_checkpointing_enable`` -> ``activation_checkpointing_enable``)
must only hand the new method keywords it accepts; which ones it accepts is read here from
``transformers/modeling_utils.py`` of each released wheel with ``ast`` (nothing is imported).

For every version: per method of ``PreTrainedModel`` named in ``METHODS``, the parameters after
``self`` in order (``name``, ``kind``: positional/keyword/var_positional/var_keyword,
``default``: whether it has one), or absent when the version has no such method. Versions with
the same signatures are merged into ranges (``first``..``last`` of the versions read).

Run: python scripts/gen_model_methods.py [--versions 5.22.0 5.23.0 ...] [--wheel-dir DIR]
(default: the 5.x releases from 5.20.0 listed by ``pip index versions transformers``)
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "trainlint" / "knowledge" / "data" / "model_methods.json"
METHODS = ("gradient_checkpointing_enable", "gradient_checkpointing_disable",
           "activation_checkpointing_enable", "activation_checkpointing_disable")
FIRST = (5, 20, 0)


def vkey(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def pip_versions() -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "transformers"],
                         capture_output=True, text=True, check=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("Available versions:"))
    vs = [v.strip() for v in line.split(":", 1)[1].split(",")]
    return sorted((v for v in vs if v.replace(".", "").isdigit() and vkey(v) >= FIRST), key=vkey)


def wheel(version: str, dest: Path) -> Path:
    found = list(dest.glob(f"transformers-{version}-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                        "--disable-pip-version-check", "-q", "-d", str(dest), f"transformers=={version}"],
                       check=True)
        found = list(dest.glob(f"transformers-{version}-*.whl"))
    if not found:
        raise SystemExit(f"pip download did not produce a wheel for transformers=={version}")
    return found[0]


def signature(fn: ast.FunctionDef) -> list[dict]:
    a = fn.args
    params: list[dict] = []
    positional = a.posonlyargs + a.args
    n_defaults = len(a.defaults)
    for i, arg in enumerate(positional):
        if i == 0 and arg.arg == "self":
            continue
        params.append({"name": arg.arg, "kind": "positional",
                       "default": i >= len(positional) - n_defaults})
    if a.vararg is not None:
        params.append({"name": a.vararg.arg, "kind": "var_positional", "default": True})
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append({"name": arg.arg, "kind": "keyword", "default": d is not None})
    if a.kwarg is not None:
        params.append({"name": a.kwarg.arg, "kind": "var_keyword", "default": True})
    return params


def methods_of(source: str) -> dict[str, list[dict]]:
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "PreTrainedModel")
    out = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name in METHODS:
            out[stmt.name] = signature(stmt)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--versions", nargs="*")
    ap.add_argument("--wheel-dir")
    ap.add_argument("--out", default=str(OUT))
    opts = ap.parse_args()
    versions = sorted(opts.versions or pip_versions(), key=vkey)
    tmp = tempfile.TemporaryDirectory() if not opts.wheel_dir else None
    dest = Path(opts.wheel_dir or tmp.name)  # type: ignore[union-attr]
    dest.mkdir(parents=True, exist_ok=True)
    ranges: list[dict] = []
    for v in versions:
        with zipfile.ZipFile(wheel(v, dest)) as z:
            methods = methods_of(z.read("transformers/modeling_utils.py").decode("utf-8"))
        if ranges and ranges[-1]["methods"] == methods:
            ranges[-1]["last"] = v
        else:
            ranges.append({"first": v, "last": v, "methods": methods})
        print(v, sorted(methods), file=sys.stderr)
    data = {"generator": "python scripts/gen_model_methods.py", "class": "PreTrainedModel",
            "versions": versions, "ranges": ranges}
    Path(opts.out).write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
