"""Shared helpers of the version-aware rules (TL2xx construction checks, TL6xx migration).

* :func:`target` / :func:`target_text`: the target transformers / TRL versions of a setup and how
  to word them ("target transformers 5.24.0, installed");
* :func:`valid_names`: the names a site may set in the target version (the class's fields, plus
  a local subclass's own annotated fields, plus the other dataclasses of an ``HfArgumentParser``
  for launch flags and args files), or None when that cannot be known;
* :func:`effective`: the value a site gives a field: written, else the target version's
  default (None when an unresolved ``**kwargs`` or flag may set it);
* edit builders that work for Python keywords, launch-line flags and args-file keys alike;
* :class:`SiteRule`: the base of rules that judge each TrainingArguments-like site.
"""

from __future__ import annotations

import ast
import json
from functools import lru_cache
from typing import Any, Iterable, Iterator

from trainlint import reads
from trainlint.consumers import library_dataclass
from trainlint.diagnostics import OLDER_THAN_DATA, Diagnostic, Edit, Span
from trainlint.knowledge import training_args as ta
from trainlint.knowledge import trl_script_args
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Rule
from trainlint.setup import ARGSFILE, FLAG, PYTHON, UNKNOWN, ArgsSite, Setup, Value
from trainlint.sources.python import PythonFile


def target(setup: Setup) -> tuple[str, str, str, str]:
    """(transformers version, where it came from, TRL version, where it came from)."""
    tf = setup.transformers_version
    trl = setup.trl_version
    return (tf.value if tf else ta.newest(), tf.note if tf else "newest known",
            trl.value if trl else ta.trl_newest(), trl.note if trl else "newest known")


def behaviour_holds(setup: Setup, marker: str) -> bool:
    """Whether the target version (of the marker's package) has the start-up check ``marker``
    of ``knowledge/data/behaviour_markers.json`` (generated from the released sources)."""
    from trainlint.knowledge import behaviour

    tf, _, trl, _ = target(setup)
    return behaviour.holds(marker, trl if behaviour.package(marker) == "trl" else tf)


def transformers_at_least(setup: Setup, version: str) -> bool:
    """Whether the target transformers version is ``version`` or newer."""
    return ta.vkey(target(setup)[0]) >= ta.vkey(version)


def _source(note: str) -> str:
    if note.startswith("installed, within "):
        return f"the installed package (inside the range declared in {note[len('installed, within '):]})"
    return {"installed": "the installed package", "newest known": "the newest the data knows"}.get(note, note)


def older_than_data(setup: Setup, package: str = "transformers") -> str | None:
    """The oldest release the data knows when the target ``package`` version is older than it
    (trl 0.7.11 against TRL data from 0.12.0): rules judge that release instead, an assumption."""
    tf, _, trl, _ = target(setup)
    v, known = (trl, ta.trl_known_versions) if package == "trl" else (tf, ta.known_versions)
    try:
        oldest = known()[0]
        return oldest if ta.vkey(v) < ta.vkey(oldest) else None
    except (ValueError, IndexError):
        return None


def target_text(setup: Setup, package: str = "transformers") -> str:
    """``target transformers 5.24.0 from the installed package``; for a target older than the
    data, with the release judged instead (``checking`` then reports such findings as info)."""
    tf, tf_note, trl, trl_note = target(setup)
    if package == "trl":
        text = f"target trl {trl} from {_source(trl_note)}"
    else:
        text = f"target transformers {tf} from {_source(tf_note)}"
    oldest = older_than_data(setup, package)
    if oldest is not None:
        text += f" ({OLDER_THAN_DATA}, which starts at {oldest}: judged as {oldest})"
    return text


def is_known_class(cls: str) -> bool:
    return cls in ta.TRANSFORMERS_CLASSES or ta.is_trl_class(cls)


def fields_for(setup: Setup, cls: str) -> dict[str, ta.FieldInfo] | None:
    tf, _, trl, _ = target(setup)
    key = (cls, tf, trl)
    found = _FIELDS_FOR.get(key, _MISSING)
    if found is _MISSING:
        try:
            found = ta.fields(cls, tf, trl)
        except ta.UnknownClassError:
            found = None
        if len(_FIELDS_FOR) >= 1024:
            _FIELDS_FOR.clear()
        _FIELDS_FOR[key] = found
    return found  # type: ignore[return-value]


# (class, transformers, trl) -> fields: every site rule asks of every site of every setup
_FIELDS_FOR: dict[tuple[str, str, str], Any] = {}
_MISSING: Any = object()


def python_file(setup: Setup, path: str) -> PythonFile | None:
    for pf in setup.scripts:
        if pf.path == path:
            return pf
    return None


def _class_fields(pf: PythonFile, name: str, trl: str | None = None,
                  seen: set[str] | None = None) -> set[str] | None:
    """Annotated class-level names of class ``name`` (defined in ``pf`` or imported from
    another repository module) and its repository bases, and with a TRL version ``trl``, the
    fields of TRL parser dataclasses among its bases (``class ScriptArguments(trl.ScriptArguments)``)
    in that version; None when a base is neither the repository's nor a library arguments class
    (its fields are not known). Worked out once per check (``reads.kept``) for a file, class
    and version: every setup that holds the file asks, for each of its sites, from several
    rules."""
    if seen is None:
        found = reads.kept(("_class_fields", pf, name, trl), lambda: _class_fields_of(pf, name, trl, set()))
        return None if found is None else set(found)
    return _class_fields_of(pf, name, trl, seen)


def _class_fields_of(pf: PythonFile, name: str, trl: str | None, seen: set[str]) -> set[str] | None:
    found = pf.class_def(name)
    if found is None:
        return None
    owner, cd = found
    key = f"{owner.path}:{cd.name}"
    if key in seen:
        return set()
    seen.add(key)
    out: set[str] = set()
    if any(isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "__init__" for stmt in cd.body):
        return None  # its own __init__ decides what it accepts
    for stmt in cd.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            out.add(stmt.target.id)
    for base in cd.bases:
        if isinstance(base, ast.Name) and owner.class_def(base.id) is not None:
            inner = _class_fields(owner, base.id, trl, seen)
            if inner is None:
                return None
            out |= inner
        elif owner.library_class(base) is not None or (isinstance(base, ast.Name) and base.id == "object"):
            continue
        elif trl is not None and library_dataclass(owner, base) is not None:
            lib = trl_script_args.field_names(library_dataclass(owner, base), trl)  # type: ignore[arg-type]
            if lib is None:
                return None
            out |= lib
        else:
            return None
    return out


def own_fields(setup: Setup, site: ArgsSite) -> frozenset[str]:
    """The fields a project subclass of the site's class declares itself (``class
    MyArgs(TrainingArguments): warmup_ratio: float = 0.1``), empty for the library class."""
    if site.call is None:
        return frozenset()
    func = site.call.site.node.func
    pf = python_file(setup, site.path)
    if pf is None or not isinstance(func, ast.Name) or func.id not in pf.local_classes:
        return frozenset()
    return frozenset(_class_fields(pf, func.id) or ())


def redeclared_removed(setup: Setup, site: ArgsSite) -> dict[str, ta.FieldHistory]:
    """Fields a project subclass re-declares that its library class no longer has in the
    target version (``warmup_ratio`` on transformers 5): the subclass accepts them, and
    nothing in the library reads them. Name -> the field's history in the library class."""
    mine = own_fields(setup, site)
    if not mine:
        return {}
    tf, _, trl, _ = target(setup)
    try:
        library = ta.field_names(site.class_name, tf, trl)
    except ta.UnknownClassError:
        return {}
    out: dict[str, ta.FieldHistory] = {}
    for name in sorted(mine - library):
        try:
            h = ta.history(site.class_name, name)
        except ta.UnknownClassError:
            continue
        if h.known:
            out[name] = h
    return out


def local_class_accepts_anything(pf: PythonFile, func: ast.AST) -> bool:
    """Whether ``func`` names a local class whose fields/``__init__`` cannot be read."""
    return isinstance(func, ast.Name) and func.id in pf.local_classes and _class_fields(pf, func.id) is None


def tolerant_parse(setup: Setup) -> tuple[PythonFile, ast.Call, str] | None:
    """The first call of the setup's scripts that lets unknown arguments through instead of
    rejecting them: ``parse_args_into_dataclasses(return_remaining_strings=True)``,
    ``parse_known_args(...)``, ``parse_json_file/parse_yaml_file/parse_dict(allow_extra_keys=True)``
    (with the call's text, for messages); None when there is none."""
    for pf in setup.scripts:
        for cs in pf.calls_named(*_TOLERANT_CALLS):
            func = cs.node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name == "parse_known_args":
                return pf, cs.node, f"{name}()"
            key = "return_remaining_strings" if name == "parse_args_into_dataclasses" else \
                "allow_extra_keys" if name in ("parse_json_file", "parse_yaml_file", "parse_dict") else None
            if key is None:
                continue
            kw = next((k for k in cs.node.keywords if k.arg == key), None)
            if kw is not None and not (isinstance(kw.value, ast.Constant) and not kw.value.value):
                return pf, cs.node, f"{name}({key}={pf.source_of(kw.value)})"
    return None


_TOLERANT_CALLS = ("parse_known_args", "parse_args_into_dataclasses", "parse_json_file", "parse_yaml_file",
                   "parse_dict")


def _parser_extra_fields(setup: Setup, strict: bool = True) -> set[str] | None:
    """The fields of every dataclass an ``HfArgumentParser`` / ``TrlParser`` of the setup's
    scripts parses into, besides the library class: the project's own dataclasses and TRL's
    parser dataclasses (``ScriptArguments``, ``ModelConfig``: their fields at the target TRL
    version); None when one of them is not readable or (``strict``) the parser tolerates
    unknown arguments."""
    from trainlint.consumers import parser_uses

    if strict and tolerant_parse(setup) is not None:
        return None
    trl = target(setup)[2]
    out: set[str] = set()
    found = False
    for pf in setup.scripts:
        for use in parser_uses(pf):
            found = True
            if use.opaque_classes or (strict and not use.strict):
                return None
            for name in use.local_classes:
                own = _class_fields(pf, name, trl)
                if own is None:
                    return None
                out |= own
            for name in use.library_dataclasses:
                names = trl_script_args.field_names(name, trl)
                if names is None:
                    return None
                out |= names
    return out if found else None


def parser_library_dataclasses(setup: Setup) -> list[str]:
    """The TRL parser dataclasses (``trl.ModelConfig``...) the setup's parsers read."""
    from trainlint.consumers import parser_uses

    out: list[str] = []
    for pf in setup.scripts:
        for use in parser_uses(pf):
            out += [n for n in use.library_dataclasses if n not in out]
    return out


def parser_library_fields(setup: Setup) -> frozenset[str]:
    """Every field any release of the TRL parser dataclasses of the setup's parsers has had
    (``ModelConfig.torch_dtype``, gone in later releases): such a name is not an unknown
    argument of the config class, whatever the target version."""
    from trainlint.consumers import parser_uses

    out: set[str] = set()
    for pf in setup.scripts:
        for use in parser_uses(pf):
            for name in use.library_dataclasses:
                out |= trl_script_args.ever_fields(name)
    return frozenset(out)


def parser_dataclasses(setup: Setup) -> tuple[list[str], list[str]]:
    """The names of the dataclasses the setup's parsers read besides the library class: the
    project's own, and TRL's (``ScriptArguments``, ``ModelConfig``), for messages."""
    from trainlint.consumers import parser_uses

    own: list[str] = []
    lib: list[str] = []
    for pf in setup.scripts:
        for use in parser_uses(pf):
            own += [n for n in use.local_classes if n != use.project_class and n not in own]
            lib += [short for short in (n.rsplit(".", 1)[1] for n in use.library_dataclasses)
                    if short not in lib and short not in own]  # a project subclass of the same name
    return own, lib


def valid_names(setup: Setup, site: ArgsSite, strict: bool = True) -> frozenset[str] | None:
    """Every name ``site`` may set in the target version, or None when unknowable: the
    class's fields, plus what its consumer accepts besides (a framework's patched fields, the
    parser's other dataclasses); None when the consumer also reads dataclasses whose fields
    cannot be known (a library's ``ModelConfig``) or tolerates unknown names. With
    ``strict=False`` a parser that lets unknown flags through still has its names (what it
    would have accepted had it been strict). Worked out once per setup and site (every
    argument of every site asks, from several rules)."""
    memo = setup.extra.get("_valid_names")
    if memo is None:
        memo = setup.extra["_valid_names"] = {}
    key = (id(site), strict)
    found = memo.get(key, memo)
    if found is memo:
        found = memo[key] = (site, _valid_names(setup, site, strict))  # the site is kept: its id stays its own
    return found[1]


def _valid_names(setup: Setup, site: ArgsSite, strict: bool) -> frozenset[str] | None:
    tf, _, trl, _ = target(setup)
    try:
        base, no_flags = _library_names(site.class_name, tf, trl)
    except ta.UnknownClassError:
        return None
    consumer = site.reader
    base = base | consumer.extra_fields
    if not consumer.extra_fields_known and site.call is None:
        # the reader also parses dataclasses whose fields are not known (TRL's ModelConfig,
        # a framework's own arguments): a name outside the class may be theirs, so only names
        # the class itself has had can be judged (see ``names_open``)
        return base | no_flags
    if site.call is not None:
        pf = python_file(setup, site.path)
        func = site.call.site.node.func
        if pf is not None and isinstance(func, ast.Name) and func.id in pf.local_classes:
            own = _class_fields(pf, func.id)
            if own is None:
                return None
            return base | own
        if pf is None and isinstance(func, ast.Name) and func.id not in ta.classes():
            return None
        return base
    if site.assumed:
        # a parser that is not in the repository: the site holds only fields the class has
        # had (the other keys belong to its other dataclasses), judged against the target
        return base | no_flags
    extra = _parser_extra_fields(setup, strict)
    if extra is None:
        return None
    return base | extra | no_flags


def names_open(site: ArgsSite) -> bool:
    """Whether a name the class never had may still be valid for ``site``'s reader (it parses
    other dataclasses whose fields are not known): "unknown argument" cannot be told."""
    return not site.reader.extra_fields_known


@lru_cache(maxsize=256)
def _library_names(cls: str, tf: str, trl: str) -> tuple[frozenset[str], frozenset[str]]:
    """The constructor's names for ``cls`` in these versions, and the ``--no_X`` flags
    HfArgumentParser adds for every bool field whose default is True (computed once: rules
    ask for every site, many times)."""
    return (ta.field_names(cls, tf, trl),
            frozenset(f"no_{n}" for n, f in ta.fields(cls, tf, trl).items() if f.default is True))


def effective(setup: Setup, site: ArgsSite, name: str) -> Any:
    """The value ``site`` gives field ``name``: as written (UNKNOWN if unresolved), else the
    target version's default; UNKNOWN when an unresolved ``**kwargs`` may set it or the
    default is not a literal."""
    v = site.get(name)
    if v is not None:
        return v.value
    if name == "eval_strategy" and site.get("evaluation_strategy") is not None:
        # the old name sets it where it exists; where it is removed, the intent is unclear
        fields = fields_for(setup, site.class_name) or {}
        if "evaluation_strategy" in fields:
            return site.get("evaluation_strategy").value  # type: ignore[union-attr]
        return UNKNOWN
    if site.open_ended:
        return UNKNOWN
    fields = fields_for(setup, site.class_name)
    if fields is None or name not in fields:
        return UNKNOWN
    f = fields[name]
    if not f.default_is_literal:
        return UNKNOWN
    return f.default


def strategy(value: Any) -> Any:
    """A strategy value as its lower-case string (enum members resolve to their names)."""
    if isinstance(value, str):
        return value.lower()
    return value


def is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def dict_literal(setup: Setup, value: Value) -> Any:
    """A Python dict display's value (ast.literal_eval of its source), else UNKNOWN."""
    if value.origin != PYTHON or value.use_span is None:
        return UNKNOWN
    for pf in setup.scripts:
        if pf.path != value.use_span.path:
            continue
        sp = value.use_span
        lines = pf.lines[sp.line - 1:sp.end_line]
        if not lines:
            return UNKNOWN
        if len(lines) == 1:
            text = lines[0][sp.column - 1:sp.end_column - 1]
        else:
            text = lines[0][sp.column - 1:] + "".join(lines[1:-1]) + lines[-1][:sp.end_column - 1]
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return UNKNOWN
    return UNKNOWN


def python_dict(setup: Setup, site: ArgsSite, name: str) -> dict[str, Any] | None:
    """The dict a Python site passes for ``name`` (a display, ``dict(...)``, or a name bound
    once to one), its keys known and each value resolved (UNKNOWN where it cannot be); None when
    it is not a statically known dict."""
    if site.call is None:
        return None
    pf = python_file(setup, site.path)
    if pf is None:
        return None
    node = next((kw.value for kw in site.call.site.node.keywords if kw.arg == name), None)
    scope = site.call.site.scope
    if node is None:
        v = site.get(name)
        if v is None or v.use_span is None:
            return None
        node = next((n for n in pf.nodes if isinstance(n, ast.expr) and pf.span(n) == v.use_span), None)
        if node is None:
            return None
    entries = pf.resolve_dict(node, scope)
    if entries is None:
        return None
    return {k: pf.resolve(vn, scope).value for k, _kn, vn, _s in entries}


def fsdp_enabled(v: Value | None) -> bool | None:
    """Whether a written ``fsdp`` value turns FSDP on: True, a non-empty option string
    ("full_shard auto_wrap") or list; None when unknown."""
    if v is None:
        return False
    if not v.known:
        return None
    value = v.value
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return bool(value.strip()) and value.strip().lower() not in ("false", "no", "none", "0")
    if isinstance(value, (list, tuple)):
        return bool(value)
    return None


def wrapper_of(setup: Setup, site: ArgsSite) -> tuple[str, Value | None] | None:
    """("DeepSpeed" | "FSDP", the value that turns it on) when the run is wrapped; None when
    neither is configured (or it cannot be told)."""
    ds = site.get("deepspeed")
    if ds is not None and ds.known and ds.value not in (None, "", False):
        return "DeepSpeed", ds
    if setup.extra.get("deepspeed") is not None:
        return "DeepSpeed", None
    fsdp = site.get("fsdp")
    if fsdp_enabled(fsdp):
        return "FSDP", fsdp
    acc = setup.extra.get("accelerate")
    kind = acc.distributed_type if acc is not None else None
    if kind is not None and isinstance(kind.value, str) and kind.value.upper() in ("DEEPSPEED", "FSDP"):
        return ("DeepSpeed" if kind.value.upper() == "DEEPSPEED" else "FSDP"), kind
    launch = setup.extra.get("launch")
    if launch is not None and getattr(launch, "launcher", None) == "accelerate":
        if launch.launcher_arg("use_deepspeed") is not None:
            return "DeepSpeed", None
        if launch.launcher_arg("use_fsdp") is not None:
            return "FSDP", None
    return None


# -- edits ---------------------------------------------------------------------------------------


def python_keyword(setup: Setup, site: ArgsSite, name: str) -> tuple[PythonFile, ast.keyword] | None:
    """The ``name=`` keyword written directly in the site's call."""
    if site.call is None:
        return None
    pf = python_file(setup, site.path)
    if pf is None:
        return None
    for kw in site.call.site.node.keywords:
        if kw.arg == name:
            return pf, kw
    return None


def _inline_dict_entry(setup: Setup, site: ArgsSite, value: Value) -> tuple[PythonFile, ast.Dict, ast.AST] | None:
    """A ``**{"name": v}`` entry written inline in the call (not shared)."""
    if site.call is None or value.key_span is None:
        return None
    pf = python_file(setup, site.path)
    if pf is None:
        return None
    for kw in site.call.site.node.keywords:
        if kw.arg is None and isinstance(kw.value, ast.Dict):
            for k in kw.value.keys:
                if k is not None and pf.span(k) == value.key_span:
                    return pf, kw.value, k
    return None


def flag_of(setup: Setup, value: Value) -> Any:
    launch = setup.extra.get("launch")
    if launch is None or value.key_span is None:
        return None
    for f in getattr(launch, "script_args", []):
        if getattr(f, "name_span", None) == value.key_span:
            return f
    return None


def rename_key_edit(setup: Setup, site: ArgsSite, value: Value, new: str) -> Edit | None:
    """Rename the keyword / flag / key that sets ``value`` to ``new``, keeping its style."""
    if value.key_span is None:
        return None
    if value.origin == FLAG:
        if site.call is not None:  # the script's own argparse option: not ours to rename
            return None
        text = value.key_text or ("--" + value.name)
        prefix = text[: len(text) - len(text.lstrip("-"))] or "--"
        body = text[len(prefix):]
        new_body = new.replace("_", "-") if "-" in body and "_" not in body else new
        return value.key_span.edit(prefix + new_body)
    if value.origin == ARGSFILE:
        sp = value.key_span
        width = sp.end_column - sp.column if sp.line == sp.end_line else -1
        if width == len(value.name) + 2:
            return sp.edit(json.dumps(new))
        if width == len(value.name):
            return sp.edit(new)
        return None
    if value.origin == PYTHON:
        if value.shared and python_keyword(setup, site, value.name) is None:
            return None  # a key of a dict that other calls use too
        return value.rename_edit(new)
    return None


def remove_edit(setup: Setup, site: ArgsSite, value: Value) -> Edit | None:
    """Delete the keyword / flag / key that sets ``value`` (with its separator)."""
    from trainlint.fixing.python_edits import remove_argument, remove_dict_entry

    if value.origin == PYTHON or (value.origin == FLAG and site.call is not None):
        found = python_keyword(setup, site, value.name)
        if found is not None:
            pf, kw = found
            return remove_argument(pf, site.call.site.node, kw)  # type: ignore[union-attr]
        entry = _inline_dict_entry(setup, site, value)
        if entry is not None:
            pf, d, k = entry
            return remove_dict_entry(pf, d, k)
        return None
    if value.origin == FLAG:
        flag = flag_of(setup, value)
        if flag is None:
            return None
        from trainlint.sources.shell import remove_flag_edit

        try:
            return remove_flag_edit(flag)
        except ValueError:
            return None
    if value.origin == ARGSFILE:
        af = setup.extra.get("args_file")
        root = getattr(af, "root", None)
        if root is None or getattr(af, "path", None) != site.path:
            return None
        try:
            if site.path.endswith(".json"):
                from trainlint.sources.jsondoc import remove_key_edit
            else:
                from trainlint.sources.yamldoc import remove_key_edit  # type: ignore[assignment]
            return remove_key_edit(root, value.name)
        except Exception:  # noqa: BLE001 - no edit rather than a wrong one
            return None
    return None


def literal_text(value: Any, origin: str) -> str:
    """``value`` written as the origin's syntax (Python literal, shell word, JSON)."""
    if origin == FLAG:
        from trainlint.sources.shell import shell_quote

        if isinstance(value, list):
            return " ".join(shell_quote(str(v)) for v in value)
        return shell_quote(str(value))
    if origin == ARGSFILE:
        return json.dumps(value)
    return repr(value)


def replace_with_field_edits(setup: Setup, site: ArgsSite, value: Value, new: str, new_value: Any
                             ) -> list[Edit] | None:
    """``old=<v>`` -> ``new=<new_value>`` (keyword, flag or key)."""
    if value.origin == PYTHON:
        found = python_keyword(setup, site, value.name)
        if found is None:
            return None
        pf, kw = found
        return [pf.span(kw).edit(f"{new}={literal_text(new_value, PYTHON)}")]
    if value.origin == FLAG and site.call is None and value.key_span is not None:
        key = rename_key_edit(setup, site, value, new)
        if key is None:
            return None
        sp = value.span or value.key_span
        whole = Span(path=sp.path, line=value.key_span.line, column=value.key_span.column,
                     end_line=sp.end_line, end_column=sp.end_column)
        return [whole.edit(f"{key.content} {literal_text(new_value, FLAG)}")]
    if value.origin == ARGSFILE and value.span is not None:
        key = rename_key_edit(setup, site, value, new)
        if key is None:
            return None
        return [key, value.span.edit(json.dumps(new_value))]
    return None


def known_sites(setup: Setup) -> list[ArgsSite]:
    """The setup's judged sites (``Setup.sites``) of a class whose fields the versioned data
    knows at the target: what every ``SiteRule`` looks at, worked out once per setup (some
    thirty site rules ask)."""
    found = setup.extra.get("_known_sites")
    if found is None:
        found = setup.extra["_known_sites"] = [
            s for s in setup.sites if is_known_class(s.class_name) and fields_for(setup, s.class_name) is not None]
    return found


class SiteRule(Rule):
    """A rule that looks at each TrainingArguments-like site of a known class (one whose
    fields the versioned data knows); subclasses implement ``site_check``."""

    triggers = SETUP_NAMES  # a site is a call of (or a parser for) a TrainingArguments-like class

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site in known_sites(setup):
            yield from self.site_check(setup, site)

    def site_check(self, setup: Setup, site: ArgsSite) -> Iterator[Diagnostic]:  # pragma: no cover
        return iter(())

    def eff(self, setup: Setup, site: ArgsSite, name: str) -> Any:
        return effective(setup, site, name)


def _known(package: str) -> list[str]:
    if package == "transformers":
        return ta.known_versions()
    from trainlint.knowledge import public_names

    return public_names.known_versions(package)


def allowed_low(setup: Setup, package: str = "transformers", path: str | None = None) -> tuple[str, str] | None:
    """(oldest version, where it is declared) of ``package`` that the file at ``path`` or its
    project says it runs on: the ``pip install`` line of the notebook or shell script itself, or
    of one in the setup that launches it (``%pip install "transformers==4.44.2"``: what it runs
    runs on that version, whatever the project or the machine has), else the lower end of the project's requirement (the nearest
    folder above ``path``, or the setup's root, holding requirements or a pyproject.toml); None
    when neither says."""
    # what it reads of the setup: its files, and its root for a question about no file (once
    # per check of a workspace: every fix of every setup asks)
    files, root = tuple(setup.files), None if path else str(setup.root)
    return reads.kept(("allowed_low", package, path, files, root), lambda: _allowed_low(setup, package, path))


def _allowed_low(setup: Setup, package: str, path: str | None) -> tuple[str, str] | None:
    from pathlib import Path

    from trainlint.knowledge import versions

    # the file itself, and the notebooks / shell scripts of the setup that launch it (a recipe
    # run by `!python scripts/run_sft.py --config recipe.yaml` in a notebook that installs
    # transformers 4.46.3 runs on 4.46.3)
    found: list[tuple[str, str]] = []
    if path and versions.installs_unpinned(package, path):
        return None  # `!pip install --upgrade transformers`: the newest, whatever else is around
    for p in dict.fromkeys([*([path] if path else []), *setup.files]):
        checkout = versions.installs_checkout(package, p)
        if checkout is not None:  # a branch or fork of unknown version: no rename is vouched for
            return "0", f"{checkout}: a checkout of unknown version"
        own = versions.file_installs(package, p)
        if own is not None:
            low = versions.lowest_allowed(own[0], _known(package))
            if low is not None:
                found.append((low, own[1]))
    if found:
        return min(found, key=lambda f: ta.vkey(f[0]))
    start = Path(path).resolve().parent if path else Path(setup.root).resolve()
    for folder in (start, *start.parents):
        # the result depends on these, there or not (the cache)
        reads.note_glob(folder, versions.REQUIREMENT_GLOB)
        reads.note(folder / "pyproject.toml")
        reads.note(folder / "setup.py")
        reads.note_isdir(folder / ".git")
        files = [folder / "pyproject.toml", folder / "setup.py", *versions.requirement_files(folder)]
        if any(p.is_file() for p in files):
            stamp = tuple(sorted((p.name, p.stat().st_mtime_ns) for p in files if p.is_file()))
            low = _oldest_cached(str(folder), stamp, package)
            # an example's own requirements, or a sub-package's own setup.py / pyproject.toml,
            # may not name the package: the project above does (FlagEmbedding's
            # research/visual_bge/setup.py lists torchvision, timm...; the repository's setup.py
            # allows transformers 4.44.2), as the target version is read (declaration_folders)
            if low is not None:
                return low
        if (folder / ".git").exists():
            break
    # no declaration: a collection of notebooks that each install their own versions
    # (philschmid's blog code: `training/scripts/run_sft.py` and `training/utils/*.py` are run
    # by the notebooks of `training/`); the oldest any notebook or shell script beside the file,
    # or in a folder above it within the project, installs
    for folder in (start, *start.parents)[:4]:  # the file's folder and three above, within the repository
        for pattern in ("*.ipynb", "*.sh", "*.bash"):  # (their texts: versions._install_lines)
            reads.note_glob(folder, pattern)
        reads.note_isdir(folder / ".git")
        try:
            stamp = folder.stat().st_mtime_ns
        except OSError:
            break
        low = _folder_installs(str(folder), stamp, package)
        if low is not None:
            found.append(low)
        if (folder / ".git").exists():
            break
    return min(found, key=lambda f: ta.vkey(f[0])) if found else None


@reads.memo(maxsize=256)
def _folder_installs(folder: str, _stamp: int, package: str) -> tuple[str, str] | None:
    """The oldest version of ``package`` a notebook or shell script directly in ``folder``
    installs itself, with where (at most 200 files are read)."""
    from pathlib import Path

    from trainlint.knowledge import versions

    out: list[tuple[str, str]] = []
    try:
        entries = sorted(p for p in Path(folder).iterdir() if p.suffix.lower() in (".ipynb", ".sh", ".bash"))[:200]
    except OSError:
        return None
    for p in entries:
        own = versions.file_installs(package, p)
        if own is not None:
            low = versions.lowest_allowed(own[0], _known(package))
            if low is not None:
                out.append((low, own[1]))
    return min(out, key=lambda f: ta.vkey(f[0])) if out else None


def project_allows_before(setup: Setup, version: str, path: str | None = None,
                          package: str = "transformers") -> tuple[str, str] | None:
    """(oldest allowed version, where it is declared) when the file or its project declares
    support for a ``package`` older than ``version`` (:func:`allowed_low`); else None. A
    renaming fix to a name added in ``version`` would break the project on those versions,
    whatever the target version is."""
    low = allowed_low(setup, package, path)
    if low is None or ta.vkey(low[0]) >= ta.vkey(version):
        return None
    return low


@reads.memo(maxsize=64)
def _oldest_cached(root: str, _stamp: tuple, package: str = "transformers") -> tuple[str, str] | None:
    from pathlib import Path

    from trainlint.knowledge import versions

    found = versions.oldest_allowed(package, Path(root), _known(package))
    return (found.version, found.source) if found is not None else None


def version_words(package: str, low: tuple[str, str]) -> str:
    """``transformers 4.44.2 (nb.ipynb:cell 1)``, or for a checkout ``transformers from a
    checkout of unknown version (nb.ipynb:cell 3)``."""
    if low[0] == "0":
        return f"{package} from a checkout of unknown version ({low[1].split(': a checkout')[0]})"
    return f"{package} {low[0]} ({low[1]})"


def declares(where: str) -> str:
    """Who declares a version: the file itself (its install line) or the project."""
    name = where.split(":cell ")[0].split(" line ")[0]
    own = ":cell " in where or name.endswith((".sh", ".bash"))
    return f"{name} installs" if own else "the project allows"


def older_support(setup: Setup, since: str, new_name: str, path: str | None,
                  package: str = "transformers") -> tuple[str, str]:
    """(applicability, message note) of a fix that writes ``new_name`` (added in ``package``
    ``since``): unsafe, with the reason, when the file or its project declares support for
    older versions."""
    low = project_allows_before(setup, since, path, package)
    if low is None:
        return "safe", ""
    return "unsafe", (f" (the fix is unsafe: {declares(low[1])} {version_words(package, low)}, which has no "
                      f"{new_name}, added in {since})" if low[0] != "0" else
                      f" (the fix is unsafe: {declares(low[1])} {version_words(package, low)}, which may not have "
                      f"{new_name})")
