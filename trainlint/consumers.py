"""Who reads the TrainingArguments values of a script: the parsers it builds and the
frameworks that patch the classes it uses (issue: "know who reads each value").

Everything is read from the ``ast`` of one ``PythonFile`` (nothing is imported or run) and
cached on it:

* :func:`parser_uses`: each ``HfArgumentParser(...)`` / ``TrlParser(...)`` with the library
  arguments class among its dataclasses, the other dataclasses (the file's own, whose fields
  can be read, or imported ones, whose fields cannot), and how it parses: the command line
  (``parse_args_into_dataclasses``), an args file (``parse_yaml_file`` / ``parse_json_file``,
  ``sys.argv[1]`` or a literal path), a dict (``parse_dict``), ``--config`` YAML
  (``TrlParser.parse_args_and_config``), and whether unknown keys are tolerated
  (``return_remaining_strings=True``, ``parse_known_args``, ``allow_extra_keys=True``,
  ``fail_with_unknown_args=False``);
* :func:`patchers_of`: frameworks (``knowledge/data/frameworks.json``) that patch the TRL
  classes the file uses (``import unsloth`` before ``trl``);
* :func:`project_readers`: how the file reads config files into its own objects
  (``yaml.safe_load``, ``json.load``, ``OmegaConf.load``), for args files no Hugging Face
  parser reads.
"""

from __future__ import annotations

import ast

from trainlint.diagnostics import Severity
from trainlint.record import Record, replace
from trainlint.setup import Consumer, library_consumer
from trainlint.sources.python import PythonFile

PARSER_CLASSES = ("HfArgumentParser", "TrlParser")
_FILE_METHODS = {"parse_yaml_file": "yaml", "parse_json_file": "json"}


class ParserUse(Record):
    """One ``HfArgumentParser`` / ``TrlParser`` of a script."""

    __slots__ = ("kind", "class_name", "line", "local_classes", "opaque_classes", "library_dataclasses",
                 "reads_argv", "reads_config", "file_kinds", "argv_file", "literal_files", "reads_dict",
                 "strict", "project_class", "__dict__")
    kind: str  # HfArgumentParser | TrlParser
    class_name: str  # the library arguments class it parses into
    line: int
    local_classes: list[str]  # the file's own dataclasses it parses too
    opaque_classes: list[str]  # imported dataclasses (fields not readable)
    # TRL's own parser dataclasses it reads (``trl.ModelConfig``, ``trl.ScriptArguments``), as
    # named in the script, directly or as the base of a project dataclass: their fields come
    # from ``knowledge/data/trl_script_args.json`` at the target TRL version
    library_dataclasses: list[str]
    reads_argv: bool  # parse_args_into_dataclasses / parse_args / parse_args_and_config
    reads_config: bool  # TrlParser.parse_args_and_config: --config YAML
    file_kinds: set[str]  # "yaml" / "json": parse_*_file
    argv_file: bool  # parse_*_file(sys.argv[...]) or of a command-line value
    literal_files: list[tuple[str, ast.AST]]  # parse_*_file("x.yaml")
    reads_dict: bool
    strict: bool  # unknown names are an error
    project_class: str  # the repository's subclass of the library class, when it is one

    def __init__(self, kind: str, class_name: str, line: int, local_classes: list[str] | None = None,
                 opaque_classes: list[str] | None = None, library_dataclasses: list[str] | None = None,
                 reads_argv: bool = False, reads_config: bool = False, file_kinds: set[str] | None = None,
                 argv_file: bool = False, literal_files: list[tuple[str, ast.AST]] | None = None,
                 reads_dict: bool = False, strict: bool = True, project_class: str = "") -> None:
        self.kind = kind
        self.class_name = class_name
        self.line = line
        self.local_classes = [] if local_classes is None else local_classes
        self.opaque_classes = [] if opaque_classes is None else opaque_classes
        self.library_dataclasses = [] if library_dataclasses is None else library_dataclasses
        self.reads_argv = reads_argv
        self.reads_config = reads_config
        self.file_kinds = set() if file_kinds is None else file_kinds
        self.argv_file = argv_file
        self.literal_files = [] if literal_files is None else literal_files
        self.reads_dict = reads_dict
        self.strict = strict
        self.project_class = project_class

    def consumer(self, pf: PythonFile, via: str, extra: frozenset[str] = frozenset()) -> Consumer:
        import os

        return library_consumer(
            self.class_name, via=via, where=f"{os.path.basename(pf.path)}:{self.line}", subclass=self.project_class,
            frameworks=tuple(p.name for p in patchers_of(pf)),
            extra_fields=extra | patcher_fields(pf, self.class_name),
            extra_fields_known=not self.opaque_classes, strict=self.strict)

    def describe(self, pf: PythonFile, how: str = "") -> str:
        import os

        name = os.path.basename(pf.path)
        return f"{self.kind}{' ' + how if how else ''} in {name}"


def library_dataclass(pf: PythonFile, expr: ast.AST) -> str | None:
    """The dotted name (``trl.ModelConfig``) when ``expr`` names one of TRL's parser
    dataclasses that are not configs (``knowledge.trl_script_args``), else None."""
    qn = pf.qualname(expr)
    if not qn or not qn.startswith("trl."):
        return None
    from trainlint.knowledge import trl_script_args

    return qn if trl_script_args.is_known(qn) else None


def _library_bases(pf: PythonFile, name: str, depth: int = 0) -> list[str] | None:
    """A repository dataclass whose fields can be read: its bases are the repository's or
    TRL's parser dataclasses (``class ScriptArguments(trl.ScriptArguments)``). The TRL classes
    of its bases, or None when a base is neither."""
    found = pf.class_def(name)
    if found is None or depth > 5:
        return None
    owner, cd = found
    out: list[str] = []
    for b in cd.bases:
        lib = library_dataclass(owner, b)
        if lib is not None:
            out.append(lib)
            continue
        if not isinstance(b, ast.Name):
            return None
        inner = _library_bases(owner, b.id, depth + 1)
        if inner is None:
            return None
        out += [x for x in inner if x not in out]
    return out


def _dataclass_elements(pf: PythonFile, call: ast.Call) -> list[ast.expr] | None:
    arg = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "dataclass_types"), None)
    if arg is None:
        return None
    for _ in range(3):  # a name bound once to the list: _TRAIN_ARGS = [ModelArguments, ...]
        if isinstance(arg, ast.Name):
            cs = next((c for c in pf.calls if c.node is call), None)
            b = pf.binding_of(arg.id, cs.scope if cs else pf.module_scope)
            if b is None or b.kind not in ("assign", "annassign") or b.value is None:
                break
            arg = b.value
    if isinstance(arg, (ast.Tuple, ast.List)):
        return list(arg.elts)
    return [arg]


def _last_name(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _kw_true(call: ast.Call, name: str, value: bool = True) -> bool:
    return any(k.arg == name and isinstance(k.value, ast.Constant) and k.value.value is value for k in call.keywords)


def _parser_subclass(pf: PythonFile, func: ast.expr, depth: int = 0) -> str | None:
    """The library parser (``HfArgumentParser``/``TrlParser``) that the repository class
    ``func`` names derives from (``H4ArgumentParser(HfArgumentParser)``, defined in the file or
    imported from another module of the repository), or None."""
    if not isinstance(func, ast.Name) or depth > 5:
        return None
    found = pf.class_def(func.id)
    if found is None:
        return None
    owner, cd = found
    for b in cd.bases:
        qn = owner.qualname(b) or ""
        head, _, last = qn.rpartition(".")
        if last in PARSER_CLASSES and head.split(".", 1)[0] in ("transformers", "trl"):
            return last
        inner = _parser_subclass(owner, b, depth + 1)
        if inner is not None:
            return inner
    return None


def parser_uses(pf: PythonFile) -> list[ParserUse]:
    cached = getattr(pf, "_parser_uses", None)
    if cached is not None:
        return cached
    out: list[ParserUse] = []
    # no call of one (and no walk of the file); "Parser" also finds the repository's subclasses
    # (H4ArgumentParser), and an imported one is among the external classes
    if "Parser" not in pf.text and not pf.external_defs:
        pf._parser_uses = out  # type: ignore[attr-defined]
        return out
    local_defs = {n.name for n in pf.of_type(ast.ClassDef)}
    # the calls named like a parser class or a repository class that subclasses one, from the
    # file's call index: a call ``Name(...)`` of another repository class is no parser
    # (``_parser_subclass`` depends on the name alone), so a file that calls its own classes
    # and its imported configs (peft's examples: ``LoraConfig(...)``) but no parser is not walked
    subclasses = [n for n in dict.fromkeys((*local_defs, *pf.external_defs))
                  if _parser_subclass(pf, ast.Name(id=n)) is not None]
    for cs in pf.calls_named(*PARSER_CLASSES, *subclasses):
        kind = _last_name(cs.node.func)
        if kind not in PARSER_CLASSES:
            f = cs.node.func
            if not isinstance(f, ast.Name) or (f.id not in local_defs and f.id not in pf.external_defs):
                continue  # only a class of the repository can be a parser subclass
            kind = _parser_subclass(pf, f)
            if kind is None:
                continue
        elts = _dataclass_elements(pf, cs.node)
        if not elts:
            continue
        lib = None
        use = ParserUse(kind=kind, class_name="", line=cs.node.lineno)
        if _kw_true(cs.node, "ignore_extra_args"):  # TrlParser(..., ignore_extra_args=True), trl < 0.13
            use.strict = False
        for e in elts:
            found = pf.library_class(e)
            if found is not None and found[0] == "args" and lib is None:
                lib = found[1]
                if isinstance(e, ast.Name) and (e.id in local_defs or e.id in pf.external_defs):
                    use.local_classes.append(e.id)  # the project's subclass: its own fields count
                    use.project_class = e.id
                continue
            bases = _library_bases(pf, e.id) if isinstance(e, ast.Name) and (
                e.id in local_defs or e.id in pf.external_defs) else None
            lib_dc = library_dataclass(pf, e) if bases is None else None
            if isinstance(e, ast.Name) and e.id in local_defs:
                use.local_classes.append(e.id)
                use.library_dataclasses += [b for b in bases or () if b not in use.library_dataclasses]
            elif bases is not None:
                use.local_classes.append(e.id)
                use.library_dataclasses += [b for b in bases if b not in use.library_dataclasses]
            elif lib_dc is not None:
                use.library_dataclasses.append(lib_dc)
            else:
                use.opaque_classes.append(pf.source_of(e) or "?")
        if lib is None:
            continue
        use.class_name = lib
        out.append(use)
    if out:
        _parse_calls(pf, out)
    pf._parser_uses = out  # type: ignore[attr-defined]
    return out


def _on_hf_parser(pf: PythonFile, call: ast.Call) -> bool:
    """Whether ``x.parse_args()`` is called on a Hugging Face parser, not on an argparse one:
    the receiver is ``HfArgumentParser(...)`` itself, or the name's latest assignment before the
    call builds one. Firefly's train.py reads ``--train_args_file`` with argparse, then binds
    the same name to an HfArgumentParser that reads that file: the argparse ``parse_args()``
    does not make the launch line's flags TrainingArguments flags. A receiver bound nowhere in
    the file (a parameter) counts as one, as before."""
    recv = call.func.value if isinstance(call.func, ast.Attribute) else None
    if isinstance(recv, ast.Call):
        return _last_name(recv.func) in PARSER_CLASSES
    if not isinstance(recv, ast.Name):
        return True
    latest = None
    for a in pf.of_type(ast.Assign):
        if a.lineno <= call.lineno and any(isinstance(t, ast.Name) and t.id == recv.id for t in a.targets):
            if latest is None or a.lineno >= latest.lineno:
                latest = a
    if latest is None or not isinstance(latest.value, ast.Call):
        return True
    return _last_name(latest.value.func) in PARSER_CLASSES


def _parse_calls(pf: PythonFile, uses: list[ParserUse]) -> None:
    """How the file's parsers parse (one file rarely has two parsers: the calls apply to all;
    a call on an argparse parser is not theirs)."""
    for cs in pf.calls:
        name = _last_name(cs.node.func)
        call = cs.node
        if name in ("parse_args_into_dataclasses", "parse_args", "parse_args_and_config", "parse_known_args") \
                and isinstance(call.func, ast.Attribute) and _on_hf_parser(pf, call):
            for u in uses:
                u.reads_argv = True
                if name == "parse_args_and_config" and u.kind == "TrlParser":
                    u.reads_config = True
                if name == "parse_known_args" or _kw_true(call, "return_remaining_strings") \
                        or _kw_true(call, "fail_with_unknown_args", False):
                    u.strict = False
        elif name in _FILE_METHODS and isinstance(call.func, ast.Attribute):
            arg = call.args[0] if call.args else next((k.value for k in call.keywords
                                                       if k.arg in ("json_file", "yaml_file")), None)
            for u in uses:
                u.file_kinds.add(_FILE_METHODS[name])
                if _kw_true(call, "allow_extra_keys"):
                    u.strict = False
            if arg is None:
                continue
            literal = pf.resolve(arg, cs.scope).value
            if isinstance(literal, str):
                for u in uses:
                    u.literal_files.append((literal, arg))
            else:
                for u in uses:
                    u.argv_file = True
        elif name == "parse_dict" and isinstance(call.func, ast.Attribute):
            for u in uses:
                u.reads_dict = True
                if _kw_true(call, "allow_extra_keys"):
                    u.strict = False


def main_parser(pf: PythonFile) -> ParserUse | None:
    uses = parser_uses(pf)
    return uses[0] if uses else None


# -- frameworks that patch the classes ---------------------------------------------------------


def _first_import_line(pf: PythonFile, module: str) -> int | None:
    best = None
    for n in pf.of_type(ast.Import) + pf.of_type(ast.ImportFrom):  # the smallest line: any order
        names: list[str] = []
        if isinstance(n, ast.Import):
            names = [a.name for a in n.names]
        elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
            names = [n.module]
        if any(x == module or x.startswith(module + ".") for x in names):
            best = n.lineno if best is None else min(best, n.lineno)
    return best


def patchers_of(pf: PythonFile) -> list:
    """The frameworks that patch the TRL classes of this file: imported before ``trl`` (or
    with no direct ``trl`` import at all, its classes reaching the file through the
    framework)."""
    cached = getattr(pf, "_patchers", None)
    if cached is not None:
        return cached
    from trainlint.knowledge.wrappers import patchers

    out = []
    if any(m in pf.text for m in patchers()):
        trl_line = _first_import_line(pf, "trl")
        for module, p in patchers().items():
            line = _first_import_line(pf, module)
            if line is not None and (trl_line is None or line < trl_line):
                out.append(p)
    pf._patchers = out  # type: ignore[attr-defined]
    return out


def patcher_fields(pf: PythonFile, class_name: str) -> frozenset[str]:
    """Config fields the file's patchers add to ``class_name`` (TRL configs only)."""
    from trainlint.knowledge import training_args as ta

    if not ta.is_trl_class(class_name):
        return _NO_FIELDS
    out: set[str] = set()
    for p in patchers_of(pf):
        out.update(p.config_fields)
    return frozenset(out) if out else _NO_FIELDS


_NO_FIELDS: frozenset[str] = frozenset()  # one for every call (an empty frozenset is not shared)


def patched_trainer_keyword(pf: PythonFile, trainer_class: str, keyword: str) -> str | None:
    """The framework that makes a TRL trainer accept ``keyword`` in this file, or None."""
    from trainlint.knowledge import training_args as ta

    if not (trainer_class.endswith("Trainer") and ta.is_trl_class(trainer_class[: -len("Trainer")] + "Config")):
        return None
    for p in patchers_of(pf):
        if keyword in p.trainer_keywords:
            return p.name
    return None


def patched_config_keywords(pf: PythonFile, trainer_class: str) -> str | None:
    """The framework that moves the config fields given to a TRL trainer into its config in
    this file (unsloth's ``_backwards_compatible_trainer``, when ``args=`` is a keyword), or None."""
    from trainlint.knowledge import training_args as ta

    if not (trainer_class.endswith("Trainer") and ta.is_trl_class(trainer_class[: -len("Trainer")] + "Config")):
        return None
    for p in patchers_of(pf):
        if p.moves_config_keywords:
            return p.name
    return None


def python_call_consumer(pf: PythonFile, class_name: str, callee: str, line: int, call=None) -> Consumer:
    """The consumer of a ``TrainingArguments(...)``-like call's keywords (with the version
    guards of the function that makes the call)."""
    import os

    return library_consumer(class_name, via=f"a {callee}(...) call", where=f"{os.path.basename(pf.path)}:{line}",
                            frameworks=tuple(p.name for p in patchers_of(pf)) if patcher_fields(pf, class_name) else (),
                            extra_fields=patcher_fields(pf, class_name),
                            requires=version_guards(pf, call) if call is not None else ())


_GUARDS = ("require_version", "check_version", "require_version_core")


def version_guards(pf: PythonFile, cs) -> tuple[str, ...]:
    """Requirement strings of ``require_version("trl>=0.8.6,<=0.9.6")``-like calls made before
    ``cs`` in the same function (the code raises unless they hold)."""
    found = _guard_calls(pf).get(id(cs.in_def))
    if not found:
        return ()
    line = cs.node.lineno
    return tuple(req for at, req in found if at <= line)


def _guard_calls(pf: PythonFile) -> dict[int, list[tuple[int, str]]]:
    """The file's version-guard calls by the function that makes them (``id`` of its
    ``in_def``), as (line, requirement) in file order; found once per file (a file with
    thousands of TrainingArguments calls asks for each)."""
    cached = getattr(pf, "_guard_calls", None)
    if cached is not None:
        return cached
    out: dict[int, list[tuple[int, str]]] = {}
    # a file whose identifiers cannot hold a guard's name makes no guard call: its calls are
    # not looked through (most files; TRL's tests: ~600 TrainingArguments-like calls)
    for other in pf.calls if pf.may_name("require_version", "check_version") else ():
        func = other.node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name not in _GUARDS or not other.node.args:
            continue
        arg = other.node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and any(op in arg.value for op in "<>=~!"):
            out.setdefault(id(other.in_def), []).append((other.node.lineno, arg.value.strip()))
    pf._guard_calls = out  # type: ignore[attr-defined]
    return out


# -- the project's own config readers ------------------------------------------------------------

_PROJECT_READERS = ("yaml.safe_load", "yaml.load", "yaml.full_load", "json.load", "json.loads",
                    "OmegaConf.load", "omegaconf.OmegaConf.load", "toml.load", "tomllib.load")


def project_readers(pf: PythonFile) -> list[str]:
    """``yaml.safe_load`` / ``json.load`` / ``OmegaConf.load`` calls of the file (qualified
    names), which read config files into the project's own objects."""
    cached = getattr(pf, "_project_readers", None)
    if cached is not None:
        return cached
    found: list[str] = []
    if "load" not in pf.text or not pf.may_name("yaml", "json", "OmegaConf", "toml"):
        # every reader's name holds "load", and its qualified name its module's (an import
        # of it names the module): no such call (and no walk of the file; peft's scripts
        # call ``torch.load``)
        pf._project_readers = found  # type: ignore[attr-defined]
        return found
    # such a call is written ``<expr>.load(...)`` (``safe_load``, ``full_load``, ``loads``) or
    # ``<name>(...)`` for a name imported as one of them: a file with no such call is not walked
    names = {"safe_load", "load", "full_load", "loads"}
    names.update(local for local, qualified in pf.imports.items()
                 if qualified in _PROJECT_READERS or qualified.endswith(".OmegaConf.load"))
    for cs in pf.calls_named(*sorted(names)):
        qn = pf.qualname(cs.node.func) or ""
        if qn in _PROJECT_READERS or qn.endswith(".OmegaConf.load"):
            found.append(qn)
    pf._project_readers = found  # type: ignore[attr-defined]
    return found


# -- messages say who consumes the value -------------------------------------------------------


def with_consumer(setup, diagnostics: list) -> list:
    """Findings at a value of a site that is not a plain ``TrainingArguments(...)`` call (a
    launch flag, an args-file key) or whose class a framework patches get "; read by ..."
    appended, so every message says who consumes the value."""
    if not diagnostics:
        return diagnostics
    where = setup.extra.get("_consumer_at")
    if where is None:
        where = setup.extra["_consumer_at"] = _consumer_at(setup)
    if not where:
        return diagnostics
    out = []
    for d in diagnostics:
        text = where.get((d.path, d.line))
        if text is not None and not d.code.startswith("TL0") and "read by " not in d.message:
            d = replace(d, message=f"{d.message.rstrip('.')}; read by {text}")
        out.append(d)
    return out


def with_assumed(setup, diagnostics: list) -> list:
    """Findings on a site whose consumer is assumed (a script not in this repository, a
    framework CLI: ``ArgsSite.assumed``) say so; when the parser is only a guess
    (``assumed_certain`` False), they are at most warnings."""
    sites = setup.extra.get("_assumed_sites")
    if sites is None:
        sites = setup.extra["_assumed_sites"] = [s for s in setup.sites if getattr(s, "assumed", "")]
    if not sites or not diagnostics:
        return diagnostics
    out = []
    for d in diagnostics:
        site = next((s for s in sites if s.span is not None and s.span.path == d.path
                     and s.span.line <= d.line <= s.span.end_line), None)
        if site is None:
            out.append(d)
            continue
        severity = d.severity
        if not site.assumed_certain and severity is Severity.ERROR:
            severity = Severity.WARNING
        out.append(replace(d, message=f"{d.message} ({site.assumed})", severity=severity))
    return out


def _consumer_at(setup) -> dict[tuple[str, int], str]:
    """(path, line) of each value of a flag/args-file (or patched) site -> who reads it."""
    where: dict[tuple[str, int], str] = {}
    for site in setup.sites:
        c = site.reader
        if (site.call is not None and not c.frameworks) or getattr(site, "assumed", ""):
            continue  # a plain call says it itself; an assumed reader is said by ``with_assumed``
        text = c.describe()
        for v in site.values.values():
            for sp in (v.key_span, v.span):
                if sp is not None:
                    where.setdefault((sp.path, sp.line), text)
    return where
