"""From paths to resolved setups.

``read_workspace`` reads and parses every file once (reporting input problems as TL0xx
findings and going on with the others); ``build_setups`` groups what belongs to one training
run and attaches the target hardware.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainlint.config import ConfigError, Settings
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.setup import OPTION, Setup, Value
from trainlint.sources.files import ReadProblem, TextFile, read_text, walk
from trainlint.sources.python import PythonFile, parse_python

# A walked (not explicitly named) Python file is parsed only if it mentions one of these: a
# byte search is ~free, a parse is not (shared/perf-anchors.md).
PY_PREFILTER = ("Trainer", "TrainingArguments", "Config", "transformers", "trl", "peft", "accelerate",
                "deepspeed", "from_pretrained", "tokenizer")


@dataclass
class ParsedFile:
    """A file read for the run, with its kind and parsed document."""

    path: str
    kind: str  # python, shell, markdown, deepspeed, accelerate, hf_args, json, yaml, unknown
    text: TextFile
    doc: Any = None  # PythonFile, or the reader's document for other kinds
    explicit: bool = False


@dataclass
class Workspace:
    """Every file of a run, parsed once, with the input problems found while reading them."""

    settings: Settings
    overlay: dict[str, str]
    files: dict[str, ParsedFile] = field(default_factory=dict)
    problems: list[Diagnostic] = field(default_factory=list)
    # files that could not be read or parsed (TL001-TL003, TL000 in a reader): no rule sees
    # their content and ``fix`` never edits them
    unparsable: set[str] = field(default_factory=set)
    # problems of walked generic JSON/YAML files, reported only if something references them
    deferred_problems: dict[str, list[Diagnostic]] = field(default_factory=dict)

    @property
    def python_files(self) -> list[PythonFile]:
        return [f.doc for f in self.files.values() if f.kind == "python" and f.doc is not None]


def input_problem(code: str, name: str, path: str, message: str, line: int = 1, column: int = 1,
                  severity: Severity = Severity.ERROR) -> Diagnostic:
    return Diagnostic(code=code, name=name, severity=severity, message=message, path=path,
                      line=max(1, line), column=max(1, column), end_line=max(1, line),
                      end_column=max(1, column) + 1)


def norm(path: Path | str) -> str:
    p = os.path.normpath(str(path))
    return p


def _kind_of(path: str, text: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".py", ".pyw", ".pyi"):
        return "python"
    try:
        from trainlint.sources.kinds import detect_kind
    except ImportError:  # readers for other kinds not installed in this build
        return "unknown"
    try:
        return detect_kind(path, text)
    except (RecursionError, MemoryError, ValueError):
        # absurd nesting: fall back on the suffix; the reader reports the problem
        return {".json": "json", ".yaml": "yaml", ".yml": "yaml", ".sh": "shell",
                ".bash": "shell"}.get(suffix, "unknown")


def _parse_python(ws: Workspace, path: str, text: str) -> PythonFile | None:
    """``parse_python`` with every way a hostile file can make it fail turned into TL001."""
    try:
        return parse_python(path, text)
    except SyntaxError as e:  # includes IndentationError, "too many nested parentheses"
        line = e.lineno or 1
        column = e.offset or 1
        ws.problems.append(input_problem("TL001", "syntax-error", path, f"cannot parse Python: {e.msg}",
                                         line, column))
    except (RecursionError, MemoryError) as e:
        # the parser's own stack limit (MemoryError "Parser stack overflowed") or the depth of
        # ast construction/analysis: Python itself would refuse to compile this
        ws.problems.append(input_problem(
            "TL001", "syntax-error", path,
            f"cannot parse Python: expressions nested too deeply ({type(e).__name__})"))
    except ValueError as e:  # "source code string cannot contain null bytes"
        ws.problems.append(input_problem("TL001", "syntax-error", path, f"cannot parse Python: {e}"))
    ws.unparsable.add(path)
    return None


def read_file(ws: Workspace, path: str, explicit: bool) -> ParsedFile | None:
    """Read and parse one file; input problems become findings, never exceptions. A bug in
    a reader is reported as TL000 for this file and the run goes on with the others."""
    from trainlint.engine import internal_error

    try:
        return _read_file(ws, path, explicit)
    except Exception as exc:  # noqa: BLE001 - a reader bug is reported per file
        ws.problems.append(internal_error(path, "reading this file", exc))
        ws.unparsable.add(path)
        ws.files.pop(path, None)
        return None


def _read_file(ws: Workspace, path: str, explicit: bool) -> ParsedFile | None:
    try:
        tf = read_text(path, ws.overlay)
    except ReadProblem as e:
        ws.problems.append(input_problem("TL002", "unreadable-file", path, e.message, e.line, e.column))
        ws.unparsable.add(path)
        return None
    kind = _kind_of(path, tf.text)
    if kind == "binary":
        ws.problems.append(input_problem("TL002", "unreadable-file", path, "binary file"))
        ws.unparsable.add(path)
        return None
    pf = ParsedFile(path=path, kind=kind, text=tf, explicit=explicit)
    if kind == "python":
        if not explicit and not any(tok in tf.text for tok in PY_PREFILTER):
            return None
        pf.doc = _parse_python(ws, path, tf.text)
    elif kind == "notebook" and not explicit and not _notebook_prefilter(tf.text):
        return None
    else:
        from trainlint.sources import registry

        registry.parse_into(ws, pf)
    ws.files[path] = pf
    return pf


def _notebook_prefilter(text: str) -> bool:
    from trainlint.sources.notebook import prefilter

    return prefilter(text, PY_PREFILTER)


def read_workspace(paths: list[Path], settings: Settings, overlay: dict[str, str]) -> Workspace:
    ws = Workspace(settings=settings, overlay=overlay)
    for p, explicit in walk(paths, settings.exclude):
        read_entry(ws, norm(p), explicit)
    return ws


def read_entry(ws: Workspace, path: str, explicit: bool) -> None:
    """One walked or named path into the workspace (a named one that is missing is a finding)."""
    if not explicit and path in ws.files:
        return
    if explicit and not os.path.lexists(path) and path not in ws.overlay:
        ws.problems.append(input_problem("TL002", "unreadable-file", path, "no such file or directory"))
        ws.unparsable.add(path)
        return
    read_file(ws, path, explicit)


def target_gpu(settings: Settings):
    """The GPU the setup will run on, from ``--gpu`` / ``[tool.trainlint] gpu``; None when not
    said (rules that need it stay silent)."""
    if not settings.gpu:
        return None
    from trainlint.knowledge.gpus import gpu_from_nvidia_smi, lookup_gpu

    if settings.gpu.lower() == "auto":
        found = gpu_from_nvidia_smi()
        return found[0] if found else None
    gpu = lookup_gpu(settings.gpu)
    if gpu is None:
        raise ConfigError(f"unknown GPU {settings.gpu!r} (see the GPU table: `trainlint rule fp16-on-bf16-hardware`)")
    return gpu


def _project_root(ws: Workspace, settings: Settings) -> Path | None:
    """The run's project (``Settings.target_root``, resolved once per run from the command
    line's paths); else the pyproject.toml's folder; else the project of the first file."""
    if settings.target_root is not None:
        return settings.target_root
    if settings.project_root is not None:
        return settings.project_root
    from trainlint.knowledge.versions import find_project_root

    for path in ws.files:
        return find_project_root([path])
    return None


def target_versions(ws: Workspace, settings: Settings) -> tuple[Value, Value]:
    """The transformers and TRL versions the check targets, as Values whose ``note`` says where
    each came from (see ``knowledge.versions``). Resolved once per run; nothing is imported."""
    from trainlint.knowledge.versions import resolve_transformers_version, resolve_trl_version

    root = _project_root(ws, settings)
    out = []
    for explicit, flag, key, resolver in (
        (settings.transformers_version, "--transformers-version", "transformers-version",
         resolve_transformers_version),
        (settings.trl_version, "--trl-version", "trl-version", resolve_trl_version),
    ):
        source = flag
        if explicit and settings.config_path is not None and _configured(settings.config_path, key) == str(explicit):
            source = "pyproject.toml [tool.trainlint]"
        rv = _cached_target(settings, resolver, explicit, root, source)
        out.append(Value(value=rv.version, origin=OPTION, name=flag, note=rv.source))
    return out[0], out[1]


_TARGETS: dict[tuple, tuple[Any, Any]] = {}


def _cached_target(settings, resolver, explicit, root, source):
    """One resolution per run (per ``Settings`` object, which ``engine.lint`` makes per run)
    and package: every setup, and every ``run_rules`` of the run (the parallel path calls it
    per file), gets the same target without reading the project's declarations again."""
    key = (id(settings), resolver.__name__, explicit, str(root), source)
    found = _TARGETS.get(key)
    if found is None or found[0] is not settings:
        found = _TARGETS[key] = (settings, resolver(explicit, root, explicit_source=source))
        while len(_TARGETS) > 16:
            _TARGETS.pop(next(iter(_TARGETS)))
    return found[1]


def _configured(path: Path, key: str) -> str | None:
    from trainlint.config import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    value = data.get("tool", {}).get("trainlint", {}).get(key)
    return str(value) if value is not None else None


def build_setups(ws: Workspace, settings: Settings) -> list[Setup]:
    gpu = target_gpu(settings)
    tf_version, trl_version = target_versions(ws, settings)
    world = Value(value=settings.gpus, origin=OPTION, name="--gpus", note="--gpus") if settings.gpus else None
    setups: list[Setup] = []
    try:
        from trainlint import linking
    except ImportError:  # pragma: no cover - linking of launch lines/configs not in this build
        linking = None  # type: ignore[assignment]
    linked: set[str] = set()
    if linking is not None:
        for s in linking.link_setups(ws, settings):
            s.gpu = gpu
            s.transformers_version, s.trl_version = tf_version, trl_version
            if s.world_size is None:
                s.world_size = world
            setups.append(s)
            linked.update(sc.path for sc in s.scripts)
    for f in ws.files.values():
        if f.kind != "python" or f.doc is None or f.path in linked:
            continue
        pf: PythonFile = f.doc
        setups.append(Setup(root=Path(f.path).parent, scripts=[pf], sites=pf.sites, world_size=world, gpu=gpu,
                            files=[f.path], transformers_version=tf_version, trl_version=trl_version))
    return setups
