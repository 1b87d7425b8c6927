#!/usr/bin/env python
"""Generate trainlint's knowledge of transformers' model API, per released version: the public
methods of ``PreTrainedModel`` (``gradient_checkpointing_enable``,
``activation_checkpointing_enable``, ...) and the ``forward`` parameters of the model classes of
the shipped model table.

Regenerate with ONE command, from the repository root::

    python scripts/gen_model_api.py [--wheel-dir /tmp/trainlint-wheels]

What it does:

1. Lists the transformers releases with ``pip index versions`` and downloads the wheels of the
   versions ``training_args.json`` covers (``gen_training_args.select_transformers``: the first
   and newest patch of every 4.40-4.57 minor and every 5.x release).
2. Reads, with :mod:`ast` only (nothing is imported):
   * ``PreTrainedModel`` in ``transformers/modeling_utils.py`` and its bases (followed through
     the wheel's imports): every public method and property, its parameters, ``**kwargs``,
     whether its body warns that it is deprecated (the message is kept) and, for a deprecated
     one, the ``self.<method>`` it forwards to (``alias_of``);
   * for every ``model_type`` of ``data/models.json`` and ``data/model_facts.json``, the classes
     of ``transformers/models/<type>/modeling_<type>.py`` (its ``__all__``; before transformers 5
     the classes derived from a ``*PreTrainedModel``), and each one's ``forward`` (its own or the
     nearest base's, also across modules, such as ``GenericForSequenceClassification`` in
     ``modeling_layers.py``): parameter names, ``**kwargs``, decorator aliases
     (``deprecate_kwarg("num_logits_to_keep", new_name="logits_to_keep")``).
   * the loaders and hub methods of ``LOADERS`` (``PreTrainedTokenizerBase.from_pretrained``,
     ``PreTrainedConfig.from_pretrained``, ``ProcessorMixin``/``FeatureExtractionMixin``/
     ``ImageProcessingMixin.from_pretrained``, ``PreTrainedModel.from_pretrained``,
     ``Trainer.push_to_hub``/``create_model_card``, ``Trainer.__init__`` /
     ``Seq2SeqTrainer.__init__``): parameters, the keys their body (and the same class's helpers
     it hands ``**kwargs`` to) reads out of ``**kwargs``
     (``use_auth_token = kwargs.pop("use_auth_token", None)``), the methods they pass
     ``**kwargs`` on to, and the keyword aliases of their decorators
     (``deprecate_kwarg("tokenizer", new_name="processing_class")``).
3. Writes ``trainlint/knowledge/data/model_api.json``: ``versions`` (oldest first),
   ``methods`` (``{name: {"kind", "params", "varkw", "deprecated", "alias_of"}}``) and ``loaders``
   (``{"Class.method": {"params", "varkw", "kwargs_keys", "forwards", "aliases"}}``); and
   ``model_forward.json`` (``versions``, ``forward``: ``{class: {"model_type", "params",
   "varkw", "aliases"}}``), apart because only the dataset-columns check reads it. Every value is
   a list of ``[first, last, value]`` runs of version numbers. ``model_forward.json`` also holds
   ``forward_any``: ``{class: "names"}`` for every other class of
   ``transformers/models/*/modeling_*.py`` that defines ``forward`` in a covered version, the
   union of its parameter names over the versions (``SpeechT5ForTextToSpeech`` takes
   ``speaker_embeddings``). ``--only-any-forward`` recomputes that part alone from the same
   wheels.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import json
import re
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_training_args as g  # noqa: E402
from wheel_ast import Wheel, base_names, dunder_all, method, ranges, signature  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "trainlint" / "knowledge" / "data"
OUT = DATA / "model_api.json"
FORWARD_NAME = "model_forward.json"


def model_types() -> list[str]:
    types = {m["model_type"] for m in json.loads((DATA / "models.json").read_text())["models"]}
    types |= set(json.loads((DATA / "model_facts.json").read_text())["layer_classes"])
    return sorted({t.replace("-", "_") for t in types})


def _mro(wheel: Wheel, module: str, cls: ast.ClassDef, limit: int = 30) -> list[tuple[str, ast.ClassDef]]:
    """The class and its bases found in the wheel, depth first, left to right (each once)."""
    out: list[tuple[str, ast.ClassDef]] = []
    seen: set[int] = set()

    def visit(mod: str, node: ast.ClassDef) -> None:
        if id(node) in seen or len(out) >= limit:
            return
        seen.add(id(node))
        out.append((mod, node))
        for b in base_names(node):
            hit = wheel.find_class(mod, b.split(".")[-1])
            if hit is not None:
                visit(*hit)

    visit(module, cls)
    return out


def _deprecation(func: ast.FunctionDef) -> str | None:
    """A warning in the body that says the method itself is deprecated (it names the method;
    a warning about one of its arguments or an old model format does not count)."""
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and node.args:
            text = g.text_of(node.args[0])
            low = text.lower()
            if "deprecat" in low and func.name in text:
                return " ".join(text.split())
    return None


def _forwards_to(func: ast.FunctionDef, methods: set[str], message: str) -> str | None:
    """The method a deprecated one hands over to: a ``self.<m>(...)`` call (or, for a property,
    ``return self.<m>``) whose name the deprecation message names."""
    for node in ast.walk(func):
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Attribute):
            target = node.value
        if target is not None and isinstance(target.value, ast.Name) and target.value.id == "self" \
                and target.attr in methods and target.attr != func.name and target.attr in message:
            return target.attr
    return None


def pretrained_methods(wheel: Wheel) -> dict[str, dict]:
    hit = wheel.find_class("transformers.modeling_utils", "PreTrainedModel")
    if hit is None:
        raise SystemExit(f"{wheel.path}: no PreTrainedModel")
    found: dict[str, ast.FunctionDef] = {}
    for _, node in _mro(wheel, *hit):
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and not stmt.name.startswith("_") \
                    and stmt.name not in found:
                found[stmt.name] = stmt  # type: ignore[assignment]
    names = set(found)
    out = {}
    for name, func in found.items():
        decos = {ast.unparse(d).split(".")[-1] for d in func.decorator_list}
        if any(d.endswith("setter") or d.endswith("deleter") for d in decos):
            continue
        sig = signature(func)
        dep = _deprecation(func)
        out[name] = {
            "kind": "property" if "property" in decos else "classmethod" if "classmethod" in decos
            else "staticmethod" if "staticmethod" in decos else "method",
            "params": sig["params"],
            "varkw": sig["varkw"],
            "deprecated": dep,
            "alias_of": _forwards_to(func, names, dep) if dep else None,
        }
    return out


def _model_classes(wheel: Wheel, module: str) -> list[tuple[str, ast.ClassDef]]:
    tree = wheel.tree(module)
    if tree is None:
        return []
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    listed = dunder_all(tree)
    if listed:
        names = [n for n in listed if n in classes]
    else:
        def is_model(n: ast.ClassDef, depth: int = 0) -> bool:
            for b in base_names(n):
                b = b.split(".")[-1]
                if b.endswith("PreTrainedModel") or b == "PreTrainedModel":
                    return True
                if b in classes and depth < 10 and is_model(classes[b], depth + 1):
                    return True
            return False

        names = [n for n, c in classes.items() if not n.startswith("_") and is_model(c)]
    # model classes only (a modeling file's __all__ may also list building blocks such as an RMSNorm)
    return [(module, classes[n]) for n in names
            if not n.endswith("PreTrainedModel") and (n.endswith("Model") or "For" in n)]


def forward_of(wheel: Wheel, module: str, cls: ast.ClassDef) -> dict | None:
    for _, node in _mro(wheel, module, cls):
        f = method(node, "forward")
        if f is not None:
            sig = signature(f)  # type: ignore[arg-type]
            return {"params": sig["params"], "varkw": sig["varkw"], "aliases": sig["aliases"]}
    return None


# Entry points whose keywords the migration rules judge: (modules to try, class names to try,
# method). What they accept is their parameters, plus the keys their body (or a method of the
# same class it calls) reads out of ``**kwargs``, plus what they pass ``**kwargs`` on to.
LOADERS = [
    (("transformers.tokenization_utils_base",), ("PreTrainedTokenizerBase",), "from_pretrained"),
    (("transformers.configuration_utils",), ("PreTrainedConfig", "PretrainedConfig"), "from_pretrained"),
    (("transformers.processing_utils",), ("ProcessorMixin",), "from_pretrained"),
    (("transformers.feature_extraction_utils",), ("FeatureExtractionMixin",), "from_pretrained"),
    (("transformers.image_processing_base", "transformers.image_processing_utils"), ("ImageProcessingMixin",),
     "from_pretrained"),
    (("transformers.modeling_utils",), ("PreTrainedModel",), "from_pretrained"),
    (("transformers.trainer",), ("Trainer",), "push_to_hub"),
    (("transformers.trainer",), ("Trainer",), "create_model_card"),
    (("transformers.trainer",), ("Trainer",), "__init__"),
    (("transformers.trainer_seq2seq",), ("Seq2SeqTrainer",), "__init__"),
]


def _kwargs_keys(func: ast.FunctionDef, kwarg: str | None) -> set[str]:
    """String keys read from the ``**kwargs`` dict: ``kwargs.pop("k")``, ``kwargs.get("k")``,
    ``kwargs["k"]``, ``"k" in kwargs``."""
    if not kwarg:
        return set()
    out: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("pop", "get") \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == kwarg and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            out.add(node.args[0].value)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == kwarg \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            out.add(node.slice.value)
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str) \
                and any(isinstance(c, ast.Name) and c.id == kwarg for c in node.comparators):
            out.add(node.left.value)
    return out


def _self_calls_with_kwargs(func: ast.FunctionDef, kwarg: str | None) -> list[tuple[str, int | None]]:
    """``self.m(..., **kwargs)`` / ``cls.m(..., **kwargs)`` (index None) and ``cls.m(kwargs)``
    (the dict itself as positional argument ``i``): where the kwargs go on to."""
    out: list[tuple[str, int | None]] = []
    if not kwarg:
        return out
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in ("self", "cls"):
            if any(k.arg is None and isinstance(k.value, ast.Name) and k.value.id == kwarg for k in node.keywords):
                item = (node.func.attr, None)
            else:
                idx = next((i for i, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id == kwarg), None)
                if idx is None:
                    continue
                item = (node.func.attr, idx)
            if item not in out:
                out.append(item)
    return out


def _dict_param(helper: ast.FunctionDef, index: int | None) -> str | None:
    """The name under which ``helper`` receives the caller's kwargs dict."""
    if index is None:
        return helper.args.kwarg.arg if helper.args.kwarg else None
    params = [a.arg for a in helper.args.posonlyargs + helper.args.args]
    static = any(ast.unparse(d).endswith("staticmethod") for d in helper.decorator_list)
    if not static:
        params = params[1:]
    return params[index] if index < len(params) else None


def loader_facts(wheel: Wheel) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for modules, classes, meth in LOADERS:
        hit = None
        for m in modules:
            for c in classes:
                hit = hit or wheel.find_class(m, c)
        if hit is None:
            continue
        mro = _mro(wheel, *hit)
        func = next((method(n, meth) for _, n in mro if method(n, meth) is not None), None)
        if func is None:
            continue
        sig = signature(func)  # type: ignore[arg-type]
        kwarg = func.args.kwarg.arg if func.args.kwarg else None
        keys = _kwargs_keys(func, kwarg)  # type: ignore[arg-type]
        # one level down into the class's own helpers that get **kwargs (get_config_dict ...)
        calls = _self_calls_with_kwargs(func, kwarg)  # type: ignore[arg-type]
        forwards = [name for name, idx in calls if idx is None]
        seen: set[tuple[str, int | None]] = set()
        todo = list(calls)
        while todo:
            item = todo.pop()
            if item in seen or item[0] == meth:
                continue
            seen.add(item)
            helper = next((method(n, item[0]) for _, n in mro if method(n, item[0]) is not None), None)
            if helper is None:
                continue
            hk = _dict_param(helper, item[1])  # type: ignore[arg-type]
            keys |= _kwargs_keys(helper, hk)  # type: ignore[arg-type]
            todo += _self_calls_with_kwargs(helper, hk)  # type: ignore[arg-type]
        out[f"{hit[1].name if hit[1].name != 'PretrainedConfig' else 'PreTrainedConfig'}.{meth}"] = {
            "params": sig["params"], "varkw": sig["varkw"], "kwargs_keys": sorted(keys), "forwards": forwards,
            "aliases": sig["aliases"]}
    return out


def extract(wheel_path: Path, types: list[str]) -> tuple[dict, dict, dict]:
    wheel = Wheel(wheel_path)
    methods = pretrained_methods(wheel)
    loaders = loader_facts(wheel)
    forward: dict[str, dict] = {}
    for t in types:
        module = f"transformers.models.{t}.modeling_{t}"
        for mod, cls in _model_classes(wheel, module):
            info = forward_of(wheel, mod, cls)
            if info is not None:
                forward[cls.name] = {"model_type": t, **info}
    return methods, forward, loaders


_DEF_FORWARD = re.compile(r"^[ \t]+(?:async[ \t]+)?def[ \t]+forward[ \t]*\(", re.M)
_CLASS = re.compile(r"^class[ \t]+(\w+)", re.M)


def class_forward_params(wheel_path: Path) -> dict[str, set[str]]:
    """For every class of the wheel's ``models/*/modeling_*.py`` that defines ``forward``: its
    parameter names (the signature alone is parsed: the text from ``def forward(`` to its
    closing parenthesis)."""
    out: dict[str, set[str]] = {}
    with zipfile.ZipFile(wheel_path) as z:
        for name in z.namelist():
            parts = name.split("/")
            if len(parts) != 4 or parts[:2] != ["transformers", "models"] or not parts[3].startswith("modeling_") \
                    or not parts[3].endswith(".py") or parts[3].startswith(("modeling_tf_", "modeling_flax_")):
                continue
            text = z.read(name).decode("utf-8", "replace")
            classes = [(m.start(), m.group(1)) for m in _CLASS.finditer(text)]
            for m in _DEF_FORWARD.finditer(text):
                owner = [c for at, c in classes if at < m.start()]
                if not owner:
                    continue
                end, depth = m.end(), 1
                while end < len(text) and depth:
                    depth += {"(": 1, ")": -1}.get(text[end], 0)
                    end += 1
                try:
                    fn = ast.parse("def forward(" + text[m.end():end] + ": pass").body[0]
                except SyntaxError:
                    continue
                a = fn.args  # type: ignore[attr-defined]
                names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} - {"self"}
                out.setdefault(owner[-1], set()).update(names)
    return out


def forward_any(per_version: list[dict[str, set[str]]], table: set[str]) -> dict[str, str]:
    """``{class: "name name ..."}``: the forward parameters of every model class (``XModel``,
    ``XForY``) with its own ``forward`` in any covered version, the classes of the table
    (``forward``) left out."""
    merged: dict[str, set[str]] = {}
    for d in per_version:
        for cls, names in d.items():
            merged.setdefault(cls, set()).update(names)
    return {cls: " ".join(sorted(names)) for cls, names in sorted(merged.items())
            if cls not in table and names and _MODEL_CLASS.fullmatch(cls)}


# the model classes a script loads (``XModel``, ``XForY``), not their layers (``XAttention``)
_MODEL_CLASS = re.compile(r"\w*(?:For[A-Z]\w*|Model)")


def build(versions: list[str], wheels: dict[str, Path]) -> dict:
    types = model_types()
    per = [extract(wheels[v], types) for v in versions]
    methods: dict[str, dict] = {}
    for name in sorted({n for m, _, _ in per for n in m}):
        rows = [m.get(name) for m, _, _ in per]
        entry = {}
        for key in ("kind", "params", "varkw", "deprecated", "alias_of"):
            runs = ranges([None if r is None else r[key] for r in rows])
            if key in ("deprecated", "alias_of") and not runs:
                continue
            entry[key] = runs
        # presence: kind runs cover every version the method exists in
        methods[name] = entry
    forward: dict[str, dict] = {}
    for cls in sorted({c for _, f, _ in per for c in f}):
        rows = [f.get(cls) for _, f, _ in per]
        mt = next(r["model_type"] for r in rows if r)
        entry = {"model_type": mt}
        for key in ("params", "varkw", "aliases"):
            runs = ranges([None if r is None else r[key] for r in rows])
            if key == "aliases" and all(not v for _, _, v in runs):
                continue
            entry[key] = runs
        forward[cls] = entry
    loaders: dict[str, dict] = {}
    for key in sorted({k for _, _, lo in per for k in lo}):
        rows = [lo.get(key) for _, _, lo in per]
        loaders[key] = {f: ranges([None if r is None else r[f] for r in rows])
                        for f in ("params", "varkw", "kwargs_keys", "forwards", "aliases")}
    any_forward = forward_any([class_forward_params(wheels[v]) for v in versions], set(forward))
    return {"schema": 1, "generator": "python scripts/gen_model_api.py", "versions": versions,
            "methods": methods, "loaders": loaders}, \
        {"schema": 1, "generator": "python scripts/gen_model_api.py", "versions": versions, "forward": forward,
         "forward_any": any_forward}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel-dir", type=Path, help="download wheels here and reuse them (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--transformers", nargs="*", help="explicit transformers versions")
    ap.add_argument("--only-any-forward", action="store_true",
                    help="recompute only model_forward.json's forward_any (the rest as it is)")
    args = ap.parse_args(argv)
    versions = sorted(args.transformers or g.select_transformers(g.pip_versions("transformers")), key=g.vkey)
    print(f"transformers: {len(versions)} versions {versions[0]}..{versions[-1]}")
    with tempfile.TemporaryDirectory(prefix="trainlint-wheels-") as tmp:
        wheel_dir = args.wheel_dir or Path(tmp)
        wheel_dir.mkdir(parents=True, exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            wheels = dict(zip(versions, pool.map(lambda v: g.download("transformers", v, wheel_dir), versions)))
        if args.only_any_forward:
            path = args.out.parent / FORWARD_NAME
            fwd = json.loads(path.read_text(encoding="utf-8"))
            if fwd.get("versions") != versions:
                raise SystemExit("the versions differ from model_forward.json's: regenerate everything")
            fwd.pop("any_forward", None)
            with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
                fwd["forward_any"] = forward_any(list(pool.map(class_forward_params, [wheels[v] for v in versions])),
                                                 set(fwd["forward"]))
            path.write_text(json.dumps(fwd, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
            print(f"forward_any: {len(fwd['forward_any'])} classes")
            return 0
        api, fwd = build(versions, wheels)
    for doc, out in ((api, args.out), (fwd, args.out.parent / FORWARD_NAME)):
        payload = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        out.write_text(payload + "\n", encoding="utf-8")
        print(f"wrote {out} ({len(payload.encode()) / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
