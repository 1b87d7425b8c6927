#!/usr/bin/env python
"""Generate trainlint's versioned knowledge of TrainingArguments and TRL configs.

Regenerate with ONE command, from the repository root::

    python scripts/gen_training_args.py

What it does:

1. Lists the released versions of ``transformers`` and ``trl`` with ``pip index versions``.
2. Downloads the real wheels with ``pip download --no-deps`` into a temporary folder (or into
   ``--wheel-dir`` to keep them between runs).
3. Reads the sources straight out of each wheel (zip) and extracts, with :mod:`ast` only (nothing
   is imported), every field of ``TrainingArguments``, ``Seq2SeqTrainingArguments`` and every
   TRL dataclass that derives from ``TrainingArguments`` (``SFTConfig``, ``DPOConfig``,
   ``GRPOConfig``, ...): name, type annotation (text), default (the literal value when it is a
   literal, else the expression text), help text, choices (``metadata["choices"]``, a
   ``Literal[...]`` annotation, or the values of an Enum named in the annotation) and
   ``init``. Deprecation messages that name a field are taken from ``__post_init__`` (any
   string containing "deprecat" passed to a call) and from help texts that say the field
   itself is deprecated.
4. Writes ``trainlint/knowledge/data/training_args.json`` (transformers) and
   ``trl_args.json`` (TRL): per class, per field, a list of variants, each valid for a range
   of versions, plus one table of texts (help and deprecation messages) that variants refer
   to by index. Identical variants in consecutive versions are merged, so the files stay
   small. Two files, because a check of a script that uses no TRL class reads only the first
   (about 70 KiB instead of about 420 KiB).

Versions covered (see ``select_transformers`` / ``select_trl``):

* transformers: 4.40.0, 4.46.0, 4.51.0, the newest 4.57.x (the required anchors), plus the
  ``.0`` and the newest patch of every 4.40-4.57 minor (so "removed in" is exact to the minor),
  and every 5.x release.
* trl: every release from 0.12.0 up to the newest.

Options: ``--wheel-dir DIR`` (keep/reuse downloaded wheels), ``--out FILE`` (the transformers
file; ``trl_args.json`` is written beside it), ``--jobs N``,
``--transformers V ...`` / ``--trl V ...`` (explicit version lists, for testing the generator).
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "trainlint" / "knowledge" / "data" / "training_args.json"

SCHEMA = 2
TRL_FILE_NAME = "trl_args.json"

# Modules of transformers whose sources are read: the two argument classes and the modules
# that define the Enums their annotations name (for choices).
TF_ARG_MODULES = {
    "transformers/training_args.py": "transformers.training_args",
    "transformers/training_args_seq2seq.py": "transformers.training_args_seq2seq",
}
TF_ENUM_MODULES = [
    "transformers/trainer_utils.py",
    "transformers/debug_utils.py",
    "transformers/utils/generic.py",
    "transformers/training_args.py",
]
TF_CLASSES = ("TrainingArguments", "Seq2SeqTrainingArguments")


# --------------------------------------------------------------------------------------------
# versions


def vkey(v: str) -> tuple:
    """Sort key of a plain release version (``4.57.1``); pre-releases are not selected."""
    return tuple(int(p) for p in v.split("."))


def is_release(v: str) -> bool:
    return re.fullmatch(r"\d+(\.\d+)*", v) is not None


def pip_versions(package: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", package],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    m = re.search(r"Available versions:\s*(.*)", out)
    if not m:
        raise SystemExit(f"cannot read the versions of {package} from pip index:\n{out}")
    vs = [v.strip() for v in m.group(1).split(",")]
    return sorted({v for v in vs if is_release(v)}, key=vkey)


def select_transformers(available: list[str]) -> list[str]:
    # The anchors are always taken: 4.46.0 is yanked on PyPI (so `pip index` does not list it),
    # but `pip download transformers==4.46.0` still fetches it.
    chosen: set[str] = {"4.40.0", "4.46.0", "4.51.0"}
    by_minor: dict[tuple[int, int], list[str]] = {}
    for v in available:
        k = vkey(v)
        by_minor.setdefault(k[:2], []).append(v)
    for (major, minor), vs in by_minor.items():
        if major == 4 and 40 <= minor <= 57:
            vs = sorted(vs, key=vkey)
            chosen.add(vs[0])  # the first release of the minor (x.y.0 normally)
            chosen.add(vs[-1])  # and its newest patch (4.57.x newest is the required anchor)
        if major >= 5:
            chosen.update(vs)
    return sorted(chosen, key=vkey)


def select_trl(available: list[str]) -> list[str]:
    return [v for v in available if vkey(v) >= (0, 12, 0)]


def download(package: str, version: str, dest: Path) -> Path:
    name = package.replace("-", "_")
    for existing in dest.glob(f"{name}-{version}-*.whl"):
        return existing
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--quiet",
            "--disable-pip-version-check",
            f"{package}=={version}",
            "-d",
            str(dest),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    found = list(dest.glob(f"{name}-{version}-*.whl"))
    if not found:
        raise SystemExit(f"pip download did not produce a wheel for {package}=={version}")
    return found[0]


# --------------------------------------------------------------------------------------------
# ast helpers

_NO = object()


def literal(node: ast.AST | None, names: dict[str, object] | None = None):
    """The Python value of a literal expression, or ``_NO``."""
    if node is None:
        return _NO
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.Name) and names and node.id in names:
        return names[node.id]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and names:
        key = f"{node.value.id}.{node.attr}"
        if key in names:
            return names[key]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = literal(node.left, names), literal(node.right, names)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
    return _NO


def text_of(node: ast.AST) -> str:
    """The text of a message-like expression: literal strings kept, f-string holes as {expr}."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            elif isinstance(v, ast.FormattedValue):
                parts.append("{" + ast.unparse(v.value) + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return text_of(node.left) + text_of(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return text_of(node.left)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return text_of(node.func.value)
    return ""


def jsonable(value) -> bool:
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, (list, tuple)):
        return all(jsonable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and jsonable(v) for k, v in value.items())
    return False


def to_json(value):
    if isinstance(value, tuple):
        return [to_json(v) for v in value]
    if isinstance(value, list):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    return value


def module_constants(tree: ast.Module) -> dict[str, object]:
    """Module-level names bound exactly once, unconditionally, to a literal."""
    counts: dict[str, int] = {}
    values: dict[str, object] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    counts[t.id] = counts.get(t.id, 0) + 1
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            v = literal(node.value)
            if v is not _NO:
                values[node.targets[0].id] = v
    return {k: v for k, v in values.items() if counts.get(k) == 1}


def dict_keys(tree: ast.Module, helpers: dict[str, list] | None = None) -> dict[str, list]:
    """``{"NAME.keys()": [keys]}`` for module-level dicts whose keys are known statically:
    a dict display with literal keys, ``dict(**OTHER, key=...)``, ``OTHER.copy()``, or a call of
    a helper function known to return such a dict (``helpers``: function name -> keys)."""
    helpers = helpers or {}
    known: dict[str, list] = {}

    def keys(node: ast.AST) -> list | None:
        if isinstance(node, ast.Dict):
            ks = [literal(k) for k in node.keys if k is not None]
            return ks if all(isinstance(k, str) for k in ks) and None not in node.keys else None
        if isinstance(node, ast.Name):
            return known.get(node.id)
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr == "copy" and not node.args:
                return keys(f.value)
            fname = ast.unparse(f).split(".")[-1]
            if fname == "dict" and not node.args:
                out: list = []
                for kw in node.keywords:
                    if kw.arg is None:
                        sub = keys(kw.value)
                        if sub is None:
                            return None
                        out += [k for k in sub if k not in out]
                    elif kw.arg not in out:
                        out.append(kw.arg)
                return out
            if fname in helpers and not node.args:
                return list(helpers[fname])
        return None

    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            k = keys(node.value)
            if k is not None:
                known[node.targets[0].id] = k
    return {f"{n}.keys()": k for n, k in known.items()}


def returned_dicts(tree: ast.Module) -> dict[str, list]:
    """Functions ``def f(): return NAME`` of a module whose NAME is a dict with known keys."""
    table = {k[: -len(".keys()")]: v for k, v in dict_keys(tree).items()}
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and len(node.body) >= 1:
            last = node.body[-1]
            if isinstance(last, ast.Return) and isinstance(last.value, ast.Name) and last.value.id in table:
                out[node.name] = table[last.value.id]
    return out


def enums_of(tree: ast.Module) -> dict[str, list[str]]:
    """Enum-like classes (a base named *Enum) -> their string member values, in order."""
    out: dict[str, list[str]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = [ast.unparse(b) for b in node.bases]
        if not any(b.endswith("Enum") for b in bases):
            continue
        members = []
        for stmt in node.body:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            ):
                members.append((stmt.targets[0].id, stmt.value.value))
        if members:
            out[node.name] = members  # type: ignore[assignment]
    return out


def is_dataclass(cls: ast.ClassDef) -> bool:
    for d in cls.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if ast.unparse(target).split(".")[-1] == "dataclass":
            return True
    return False


def _annotated_assigns(body: list[ast.stmt]):
    """AnnAssigns of a class body, including those under if/else/try at class level."""
    for stmt in body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            yield stmt
        elif isinstance(stmt, ast.If):
            yield from _annotated_assigns(stmt.body)
            yield from _annotated_assigns(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from _annotated_assigns(stmt.body)


def class_constants(cls: ast.ClassDef) -> dict[str, object]:
    """Class-body names bound once to a literal and never rebound (also not conditionally)."""
    counts: dict[str, int] = {}
    values: dict[str, object] = {}
    for node in ast.walk(cls):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    counts[t.id] = counts.get(t.id, 0) + 1
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            v = literal(stmt.value)
            if v is not _NO:
                values[stmt.targets[0].id] = v
    return {k: v for k, v in values.items() if counts.get(k) == 1}


def annotation_choices(annotation: ast.AST, enums: dict[str, list]) -> list[str] | None:
    """Choices implied by an annotation: ``Literal["a", "b"]`` or an Enum class it names."""
    for node in ast.walk(annotation):
        if isinstance(node, ast.Subscript) and ast.unparse(node.value).split(".")[-1] == "Literal":
            v = literal(node.slice)
            if v is not _NO:
                vals = list(v) if isinstance(v, tuple) else [v]
                if all(isinstance(x, (str, int, bool)) or x is None for x in vals):
                    return vals
    for node in ast.walk(annotation):
        name = None
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Attribute):
            name = node.attr
        if name in enums:
            return [value for _, value in enums[name]]
    return None


def parse_field(stmt: ast.AnnAssign, names: dict[str, object], enums: dict[str, list]) -> dict:
    """One dataclass field -> {type, default | default_expr | required, help, choices, init}."""
    info: dict = {"type": ast.unparse(stmt.annotation)}
    value = stmt.value
    default_node = None
    factory_node = None
    metadata = None
    init = True
    if (
        isinstance(value, ast.Call)
        and ast.unparse(value.func).split(".")[-1] == "field"
    ):
        for kw in value.keywords:
            if kw.arg == "default":
                default_node = kw.value
            elif kw.arg == "default_factory":
                factory_node = kw.value
            elif kw.arg == "metadata":
                metadata = kw.value
            elif kw.arg == "init":
                init = literal(kw.value) is not False
    elif value is not None:
        default_node = value

    if default_node is not None:
        v = literal(default_node, names)
        if v is not _NO and jsonable(v):
            info["default"] = to_json(v)
        else:
            info["default_expr"] = ast.unparse(default_node)
    elif factory_node is not None:
        f = ast.unparse(factory_node)
        if f in ("list", "dict", "tuple"):
            info["default"] = {"list": [], "dict": {}, "tuple": []}[f]
        elif isinstance(factory_node, ast.Lambda) and literal(factory_node.body, names) is not _NO:
            v = literal(factory_node.body, names)
            if jsonable(v):
                info["default"] = to_json(v)
            else:
                info["default_expr"] = f"{f}()"
        else:
            info["default_expr"] = f"{f}()"
    else:
        info["required"] = True

    help_text = None
    choices = None
    if isinstance(metadata, ast.Dict):
        for k, v in zip(metadata.keys, metadata.values):
            key = literal(k)
            if key == "help":
                h = literal(v, names)
                help_text = h if isinstance(h, str) else (text_of(v) or ast.unparse(v))
            elif key == "choices":
                c = literal(v, names)
                if c is not _NO and jsonable(c):
                    choices = list(c)
                elif ast.unparse(v) in names:  # e.g. `trainer_log_levels.keys()`
                    choices = list(names[ast.unparse(v)])  # type: ignore[arg-type]
    if choices is None:
        choices = annotation_choices(stmt.annotation, enums)
    if help_text is not None:
        info["help"] = help_text
    if choices is not None:
        info["choices"] = choices
    if not init:
        info["init"] = False
    return info


# --------------------------------------------------------------------------------------------
# deprecations

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CUT = re.compile(r"\b(use|instead|please|in favou?r|replaced by|set|pass)\b", re.IGNORECASE)


def deprecated_subjects(message: str, fields: set[str]) -> list[str]:
    """The fields a deprecation message is about.

    Take the sentence that contains "deprecat", stop it at the replacement advice ("Use ...",
    "instead", ...), and keep the field names written there, except those introduced by "for"
    or "with" (``using `EvaluationStrategy` for `eval_strategy` is deprecated`` is about the
    enum, not the field).
    """
    low = message.lower()
    i = low.find("deprecat")
    if i < 0:
        return []
    said = re.findall(r"`-*([^`]+?)`\s+(?:is|are)\s+deprecat", message)
    if said and not any(w in fields for w in said):
        return []  # "`FDivergenceType` is deprecated": about a type or value, not a field
    start = max(message.rfind(". ", 0, i) + 2 if message.rfind(". ", 0, i) >= 0 else 0, 0)
    end = message.find(". ", i)
    sentence = message[start : end if end >= 0 else len(message)]
    j = sentence.lower().find("deprecat")
    cut = _CUT.search(sentence, j)
    if cut:
        sentence = sentence[: cut.start()]
    out = []
    for m in _WORD.finditer(sentence):
        w = m.group(0)
        if w not in fields or w in out:
            continue
        before = sentence[: m.start()].rstrip("`'\" -").lower()
        if before.endswith((" for", " with")):
            continue
        if sentence[m.end() :].lstrip(" ").startswith(("=", "==")):
            continue  # `loss_type='x'` is deprecated: a value, not the field
        out.append(w)
    return out


def _call_messages(func: ast.FunctionDef):
    """(message, self-attributes tested by enclosing ifs) for each call with a text argument."""
    stack: list[set[str]] = []

    def attrs(test: ast.AST) -> set[str]:
        return {
            n.attr
            for n in ast.walk(test)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
        }

    def visit(node: ast.AST):
        if isinstance(node, ast.If):
            stack.append(attrs(node.test))
            for s in node.body:
                visit(s)
            stack.pop()
            for s in node.orelse:
                visit(s)
            return
        if isinstance(node, ast.Call):
            for arg in node.args[:1]:
                msg = text_of(arg)
                if msg:
                    yield_list.append((msg, set().union(*stack) if stack else set()))
        for child in ast.iter_child_nodes(node):
            visit(child)

    yield_list: list[tuple[str, set[str]]] = []
    for s in func.body:
        visit(s)
    return yield_list


def post_init_deprecations(cls: ast.ClassDef, fields: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "__post_init__":
            for msg, tested in _call_messages(stmt):
                if "deprecat" not in msg.lower():
                    continue
                subjects = deprecated_subjects(msg, fields)
                if tested & set(subjects):
                    subjects = [s for s in subjects if s in tested]
                for s in subjects:
                    out.setdefault(s, " ".join(msg.split()))
    return out


def help_deprecation(name: str, help_text: str | None, fields: set[str]) -> str | None:
    """A help text that says its own field is deprecated.

    Accepted: a sentence that starts with "Deprecated" ("Deprecated, the use of ... is
    preferred", "Deprecated alias of ..."), "This argument/parameter is deprecated", or
    "`name` is deprecated". A help that only mentions something else being deprecated
    ("When using torch.distributed.launch (Deprecated), ...") is not a deprecation of the field.
    """
    if not help_text or "deprecat" not in help_text.lower():
        return None
    pat = re.compile(
        r"(^|[.!]\s+)(deprecat|this (argument|parameter|field|option|flag) is deprecat|`?(--)?"
        + re.escape(name)
        + r"`? (is|are) deprecat)",
        re.IGNORECASE,
    )
    if pat.search(help_text.strip()):
        return " ".join(help_text.split())
    return None


# --------------------------------------------------------------------------------------------
# per wheel extraction


def parse_module(source: str) -> ast.Module:
    return ast.parse(source)


def extract_transformers(wheel: Path) -> dict[str, dict]:
    """{class: {"fields": {name: info}, "deprecations": {name: msg}}} for one wheel."""
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        enums: dict[str, list] = {}
        for path in TF_ENUM_MODULES:
            if path in names:
                enums.update(enums_of(ast.parse(z.read(path).decode("utf-8"))))
        trees = {p: ast.parse(z.read(p).decode("utf-8")) for p in TF_ARG_MODULES if p in names}
        helpers: dict[str, list] = {}
        if "transformers/utils/logging.py" in names:
            helpers = returned_dicts(ast.parse(z.read("transformers/utils/logging.py").decode("utf-8")))
    classes: dict[str, ast.ClassDef] = {}
    consts: dict[str, dict] = {}
    for path, tree in trees.items():
        mconst = {**module_constants(tree), **dict_keys(tree, helpers)}
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name in TF_CLASSES:
                classes[node.name] = node
                consts[node.name] = {**mconst, **class_constants(node), **enum_names(enums)}
    out: dict[str, dict] = {}
    ta_fields: set[str] = set()
    for cname in TF_CLASSES:
        node = classes[cname]
        fields = {}
        for stmt in _annotated_assigns(node.body):
            if "ClassVar" in ast.unparse(stmt.annotation):
                continue
            fields[stmt.target.id] = parse_field(stmt, consts[cname], enums)
        if cname == "TrainingArguments":
            ta_fields = set(fields)
        all_fields = ta_fields | set(fields)
        deps = post_init_deprecations(node, all_fields)
        for fname, info in fields.items():
            hd = help_deprecation(fname, info.get("help"), all_fields)
            if hd and fname not in deps:
                deps[fname] = hd
        out[cname] = {
            "module": TF_ARG_MODULES[
                "transformers/training_args.py" if cname == "TrainingArguments" else "transformers/training_args_seq2seq.py"
            ],
            "bases": [ast.unparse(b).split(".")[-1] for b in node.bases],
            "fields": fields,
            "deprecations": deps,
        }
    return out


def enum_names(enums: dict[str, list]) -> dict[str, object]:
    """``Enum.MEMBER`` -> value, for defaults such as ``IntervalStrategy.NO``."""
    return {f"{cls}.{member}": value for cls, members in enums.items() for member, value in members}


def extract_trl(wheel: Path, ta_fields: set[str], tf_enums: dict[str, list]) -> dict[str, dict]:
    """Every dataclass in the trl wheel that derives from TrainingArguments, flattened over its
    TRL bases (TrainingArguments' own fields are not included: they come from transformers)."""
    modules: dict[str, ast.Module] = {}
    with zipfile.ZipFile(wheel) as z:
        for path in z.namelist():
            if not (path.startswith("trl/") and path.endswith(".py")):
                continue
            src = z.read(path).decode("utf-8")
            if "dataclass" not in src:
                continue
            try:
                modules[path] = ast.parse(src)
            except SyntaxError:
                continue
    enums = dict(tf_enums)
    for tree in modules.values():
        enums.update(enums_of(tree))
    found: dict[str, list[tuple[str, ast.ClassDef, dict]]] = {}
    aliases: dict[str, dict[str, str]] = {}  # module path -> {local name: imported name}
    for path, tree in modules.items():
        mconst = module_constants(tree)
        aliases[path] = {
            a.asname: a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names if a.asname
        }
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and is_dataclass(node):
                found.setdefault(node.name, []).append((path, node, mconst))

    def candidates(name: str):
        # prefer the stable trl.trainer module over trl.experimental (same name in both)
        return sorted(found.get(name, []), key=lambda c: ("experimental" in c[0], c[0]))

    def chain_of(cand, seen: tuple) -> list[tuple[str, ast.ClassDef, dict]] | None:
        """The TRL classes from `cand` up to (excluding) TrainingArguments, base first."""
        path, node, _ = cand
        for b in node.bases:
            base = ast.unparse(b).split(".")[-1]
            base = aliases[path].get(base, base)
            if base == "TrainingArguments":
                return [cand]
            for up in candidates(base):
                if id(up[1]) in seen:
                    continue
                ch = chain_of(up, seen + (id(up[1]),))
                if ch is not None:
                    return ch + [cand]
        return None

    def chain(name: str):
        for cand in candidates(name):
            ch = chain_of(cand, (id(cand[1]),))
            if ch:
                return ch
        return None

    out: dict[str, dict] = {}
    for name in sorted(found):
        if name.startswith("_"):
            continue
        ch = chain(name)
        if not ch:
            continue
        fields: dict[str, dict] = {}
        names_all: set[str] = set(ta_fields)
        for _, node, _ in ch:
            names_all |= {s.target.id for s in _annotated_assigns(node.body)}
        deps: dict[str, str] = {}
        for path, node, mconst in ch:
            cconst = {**mconst, **class_constants(node), **enum_names(enums)}
            for stmt in _annotated_assigns(node.body):
                if "ClassVar" in ast.unparse(stmt.annotation):
                    continue
                fields.pop(stmt.target.id, None)
                fields[stmt.target.id] = parse_field(stmt, cconst, enums)
            for k, v in post_init_deprecations(node, names_all).items():
                deps[k] = v
        for fname, info in fields.items():
            hd = help_deprecation(fname, info.get("help"), names_all)
            if hd and fname not in deps:
                deps[fname] = hd
        path = ch[-1][0]
        out[name] = {
            "module": path[:-3].replace("/", ".").removesuffix(".__init__"),
            "bases": [ast.unparse(b).split(".")[-1] for b in ch[-1][1].bases],
            "fields": fields,
            "deprecations": deps,
        }
    return out


def tf_enums_of(wheel: Path) -> dict[str, list]:
    enums: dict[str, list] = {}
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for path in TF_ENUM_MODULES:
            if path in names:
                enums.update(enums_of(ast.parse(z.read(path).decode("utf-8"))))
    return enums


# --------------------------------------------------------------------------------------------
# compaction


class Texts:
    def __init__(self) -> None:
        self.items: list[str] = []
        self.index: dict[str, int] = {}

    def ref(self, s: str) -> int:
        if s not in self.index:
            self.index[s] = len(self.items)
            self.items.append(s)
        return self.index[s]


def compact(per_version: dict[str, dict[str, dict]], versions: list[str], texts: Texts) -> dict:
    """{version: {class: extracted}} -> {class: {"module", "fields": {name: [variant...]}}}.

    A variant is ``{"v": [first_index, last_index], "type", "default"|"default_expr"|"required",
    "help": text_index, "choices", "init", "deprecated": text_index}`` over the ``versions``
    list; consecutive versions with the same variant share one entry.
    """
    classes: dict[str, dict] = {}
    for i, ver in enumerate(versions):
        for cname, data in per_version[ver].items():
            entry = classes.setdefault(cname, {"modules": [], "bases": [], "fields": {}})
            _range_append(entry["modules"], i, data["module"])
            _range_append(entry["bases"], i, data["bases"])
            for fname, info in data["fields"].items():
                variant = {k: v for k, v in info.items() if k != "help"}
                if "help" in info:
                    variant["help"] = texts.ref(info["help"])
                dep = data["deprecations"].get(fname)
                if dep:
                    variant["deprecated"] = texts.ref(dep)
                variants = entry["fields"].setdefault(fname, [])
                last = variants[-1] if variants else None
                body = {k: v for k, v in variant.items()}
                if last is not None and last["v"][1] == i - 1 and _same(last, body):
                    last["v"][1] = i
                else:
                    variants.append({"v": [i, i], **body})
    return classes


def _same(variant: dict, body: dict) -> bool:
    return {k: v for k, v in variant.items() if k != "v"} == body


def _range_append(ranges: list, i: int, value) -> None:
    if ranges and ranges[-1][1] == i - 1 and ranges[-1][2] == value:
        ranges[-1][1] = i
    else:
        ranges.append([i, i, value])


# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel-dir", type=Path, help="download wheels here and reuse them (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--transformers", nargs="*", help="explicit transformers versions")
    ap.add_argument("--trl", nargs="*", help="explicit trl versions")
    args = ap.parse_args(argv)

    tf_versions = sorted(args.transformers or select_transformers(pip_versions("transformers")), key=vkey)
    trl_versions = sorted(args.trl or select_trl(pip_versions("trl")), key=vkey)
    print(f"transformers: {len(tf_versions)} versions {tf_versions[0]}..{tf_versions[-1]}")
    print(f"trl: {len(trl_versions)} versions {trl_versions[0]}..{trl_versions[-1]}")

    with tempfile.TemporaryDirectory(prefix="trainlint-wheels-") as tmp:
        wheel_dir = args.wheel_dir or Path(tmp)
        wheel_dir.mkdir(parents=True, exist_ok=True)
        jobs = [("transformers", v) for v in tf_versions] + [("trl", v) for v in trl_versions]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            wheels = dict(zip(jobs, pool.map(lambda j: download(j[0], j[1], wheel_dir), jobs)))

        tf_data: dict[str, dict] = {}
        for v in tf_versions:
            tf_data[v] = extract_transformers(wheels[("transformers", v)])
        newest_tf = wheels[("transformers", tf_versions[-1])]
        ta_all: set[str] = set()
        for d in tf_data.values():
            ta_all |= set(d["TrainingArguments"]["fields"])
        enums = tf_enums_of(newest_tf)
        trl_data: dict[str, dict] = {}
        for v in trl_versions:
            trl_data[v] = extract_trl(wheels[("trl", v)], ta_all, enums)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    for package, versions, data, out in (("transformers", tf_versions, tf_data, args.out),
                                         ("trl", trl_versions, trl_data, args.out.parent / TRL_FILE_NAME)):
        texts = Texts()
        doc = {
            "schema": SCHEMA,
            "generator": "python scripts/gen_training_args.py",
            package: {"versions": versions, "classes": compact(data, versions, texts)},
        }
        if package == "transformers":
            # resolving the target TRL version needs only this list, not the TRL file
            doc["trl_versions"] = trl_versions
        doc["texts"] = texts.items
        payload = json.dumps(doc, ensure_ascii=False, separators=(",", ":"), sort_keys=False)
        out.write_text(payload + "\n", encoding="utf-8")
        print(f"wrote {out} ({len(payload.encode()) / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
