"""The workspace: the files of a run, read and parsed once (the stage after the readers).

``read_workspace`` walks the paths and reads every file with its kind's reader, reporting input
problems as TL0xx findings and going on with the others; ``read_file`` is what linking uses to
pull in a referenced file. Nothing here knows about setups or rules.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

from trainlint import reads
from trainlint.config import Settings
from trainlint.diagnostics import Diagnostic, Severity, input_problem, internal_error  # noqa: F401
from trainlint.record import Record
from trainlint.sources.files import ParsedFile, ReadProblem, TextFile, read_text, walk  # noqa: F401
from trainlint.sources import pruning
from trainlint.sources.python import PythonFile, may_name_library_class, parse_python, parses_by_table

# A walked (not explicitly named) Python file is parsed only if it mentions a trigger of a
# selected rule (``Rule.triggers``, from the rule index): a substring search is ~free, a parse
# is not (shared/perf-anchors.md). When a selected rule declares no triggers, the broad
# pre-filter below applies.
PY_PREFILTER = ("Trainer", "TrainingArguments", "Config", "transformers", "trl", "peft", "accelerate",
                "deepspeed", "from_pretrained", "tokenizer")


def wanted_python(text: str, settings: Settings | None = None) -> bool:
    """Whether a walked Python file is worth parsing (the pre-filter)."""
    if settings is not None:
        from trainlint.rule_index import prefilter

        found = prefilter(settings)
        if found.names is not None:
            return found.wanted(text)
    return any(tok in text for tok in PY_PREFILTER)


class Workspace(Record):
    """Every file of a run, parsed once, with the input problems found while reading them."""

    __slots__ = ("settings", "overlay", "files", "problems", "unparsable", "deferred_problems", "absent",
                 "reads", "pending_syntax", "__dict__")
    settings: Settings
    overlay: dict[str, str]
    files: dict[str, ParsedFile]
    problems: list[Diagnostic]
    # files that could not be read or parsed (TL001-TL003, TL000 in a reader): no rule sees
    # their content and ``fix`` never edits them
    unparsable: set[str]
    # problems of walked generic JSON/YAML files, reported only if something references them
    deferred_problems: dict[str, list[Diagnostic]]
    absent: set[str]  # where linking looked for a file and found none
    # What reading each file gave, kept across the passes of one ``fix`` (``checking.Reuse``):
    # (path, explicit, text, encoding, BOM) -> the ParsedFile (None: not kept) and what the
    # read added to ``problems``, ``unparsable`` and ``deferred_problems``. Only a process
    # that never links or checks the files it read may keep them (their documents must stay
    # as the reader made them); None: every file is read afresh.
    reads: dict[tuple, tuple] | None
    # Walked Python files whose syntax check (TL001 for a file no selected rule reads) waits
    # for ``settle_syntax``, by path: a repository module linking reads in full meanwhile is
    # parsed once, not checked and then parsed (peft: 124 of its 218 checked files). None: each
    # file is checked as it is read (``defer_syntax_checks`` turns the wait on).
    pending_syntax: dict[str, ParsedFile] | None

    def __init__(self, settings: Settings, overlay: dict[str, str], files: dict[str,
                 ParsedFile] | None = None, problems: list[Diagnostic] | None = None,
                 unparsable: set[str] | None = None, deferred_problems: dict[str,
                 list[Diagnostic]] | None = None, absent: set[str] | None = None, reads: dict[tuple,
                 tuple] | None = None) -> None:
        self.settings = settings
        self.overlay = overlay
        self.files = {} if files is None else files
        self.problems = [] if problems is None else problems
        self.unparsable = set() if unparsable is None else unparsable
        self.deferred_problems = {} if deferred_problems is None else deferred_problems
        self.absent = set() if absent is None else absent
        self.reads = reads
        self.pending_syntax = None

    @property
    def python_files(self) -> list[PythonFile]:
        return [f.doc for f in self.files.values() if f.kind == "python" and f.doc is not None]


def norm(path: Path | str) -> str:
    return os.path.normpath(str(path))


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


def _parse_python(ws: Workspace, path: str, text: str, syntax_only: bool = False) -> PythonFile | None:
    """``parse_python`` with every way a hostile file can make it fail turned into TL001.
    ``syntax_only``: only check that it parses (the tree is dropped; None either way)."""
    try:
        if syntax_only:
            if not parses_by_table(text, path):  # the tree only when the table cannot tell
                ast.parse(text, filename=path)
            return None
        if len(text) >= pruning.LARGE_MODULE_CHARS:
            from trainlint.rule_index import prefilter

            found = prefilter(ws.settings)  # every trigger, with words or not (a superset is safe)
            triggers = None if found.names is None else (*found.names, *(t for t, _ in found.worded))
            return parse_python(path, text, triggers)
        return parse_python(path, text)
    except (SyntaxError, RecursionError, MemoryError, ValueError) as e:
        _parse_failed(ws, path, text, e)
    return None


def _parse_failed(ws: Workspace, path: str, text: str, exc: BaseException) -> None:
    """The TL001 of a text that does not parse (``exc``: what parsing it raised); it is
    unparsable from now on."""
    if isinstance(exc, SyntaxError):  # includes IndentationError, "too many nested parentheses"
        e = exc
        line = e.lineno or 1
        column = e.offset or 1
        from trainlint.sources import newer_syntax

        newer = newer_syntax.valid_on_newer_python(text, e)
        export = newer_syntax.notebook_export(text, e) if newer is None else None
        if newer is not None:  # valid on a newer Python than the one running trainlint: not broken
            ws.problems.append(input_problem("TL001", "syntax-error", path, newer_syntax.message(e, newer),
                                             line, column, severity=Severity.INFO))
        elif export is not None:  # a notebook saved as .py: its shell lines are not Python
            ws.problems.append(input_problem("TL001", "syntax-error", path, export, line, column,
                                             severity=Severity.INFO))
        else:
            ws.problems.append(input_problem("TL001", "syntax-error", path, f"cannot parse Python: {e.msg}",
                                             line, column))
    elif isinstance(exc, (RecursionError, MemoryError)):
        # the parser's own stack limit (MemoryError "Parser stack overflowed") or the depth of
        # ast construction/analysis: Python itself would refuse to compile this
        ws.problems.append(input_problem(
            "TL001", "syntax-error", path,
            f"cannot parse Python: expressions nested too deeply ({type(exc).__name__})"))
    else:  # ValueError: "source code string cannot contain null bytes"
        ws.problems.append(input_problem("TL001", "syntax-error", path, f"cannot parse Python: {exc}"))
    ws.unparsable.add(path)


def read_file(ws: Workspace, path: str, explicit: bool) -> ParsedFile | None:
    """Read and parse one file; input problems become findings, never exceptions. A bug in
    a reader is reported as TL000 for this file and the run goes on with the others."""
    try:
        return _read_file(ws, path, explicit)
    except Exception as exc:  # noqa: BLE001 - a reader bug is reported per file
        ws.problems.append(internal_error(path, "reading this file", exc))
        ws.unparsable.add(path)
        ws.files.pop(path, None)
        return None


# Each file is read once per run: a workspace takes a file's text from what the run's split
# read (``reads.files_already_read``, ``reads.already_read``).


def _read_file(ws: Workspace, path: str, explicit: bool) -> ParsedFile | None:
    if ws.pending_syntax:  # read again (linking reads a module in full): that read decides
        ws.pending_syntax.pop(path, None)
    tf = reads.already_read(path) if path not in ws.overlay else None
    try:
        if tf is None:
            tf = read_text(path, ws.overlay)
    except ReadProblem as e:
        ws.problems.append(input_problem("TL002", "unreadable-file", path, e.message, e.line, e.column))
        ws.unparsable.add(path)
        return None
    if ws.reads is None:
        return _read_text_file(ws, path, explicit, tf)
    key = (path, explicit, tf.text, tf.encoding, tf.bom)
    kept = ws.reads.get(key)
    if kept is None:  # read it, and keep what the read did to the workspace
        n = len(ws.problems)
        was_unparsable = path in ws.unparsable
        deferred = len(ws.deferred_problems.get(path, ()))
        pf = _read_text_file(ws, path, explicit, tf)
        kept = ws.reads[key] = (pf if ws.files.get(path) is pf else None, ws.problems[n:],
                                path in ws.unparsable and not was_unparsable,
                                ws.deferred_problems.get(path, [])[deferred:])
        return pf
    pf, problems, unparsable, deferred_problems = kept
    ws.problems.extend(problems)
    if unparsable:
        ws.unparsable.add(path)
    if deferred_problems:
        ws.deferred_problems.setdefault(path, []).extend(deferred_problems)
    if pf is not None:
        ws.files[path] = pf
    return pf


def _read_text_file(ws: Workspace, path: str, explicit: bool, tf: TextFile) -> ParsedFile | None:
    kind = tf.kind if tf.kind is not None and tf.path == path else _kind_of(path, tf.text)  # the split's
    if kind == "binary":
        ws.problems.append(input_problem("TL002", "unreadable-file", path, "binary file"))
        ws.unparsable.add(path)
        return None
    pf = ParsedFile(path=path, kind=kind, text=tf, explicit=explicit)
    if kind == "python":
        if not explicit and not wanted_python(tf.text, ws.settings):
            # No selected rule can report on it. A file the broad pre-filter lets through (it
            # mentions the training libraries) is still checked to parse: a broken training
            # script is reported (TL001), never silently skipped.
            if any(tok in tf.text for tok in PY_PREFILTER):
                if ws.pending_syntax is not None and ws.reads is None \
                        and len(tf.text) < pruning.LARGE_MODULE_CHARS:
                    # checked by ``settle_syntax`` unless read in full before (a full read of
                    # a large module parses only its relevant statements: checked now)
                    ws.pending_syntax[path] = pf
                    return None
                return _check_syntax(ws, pf)
            return None
        pf.doc = _parse_python(ws, path, tf.text)
    elif kind == "notebook" and not explicit and not _wanted_notebook(ws, path, tf.text):
        return None
    else:
        from trainlint.sources import registry

        read = registry.read_document(kind, path, tf.text, explicit)
        pf.doc = read.doc
        ws.problems.extend(read.problems)
        if read.deferred:  # held back until something references the file as a config
            ws.deferred_problems.setdefault(path, []).extend(read.deferred)
        if read.unparsable:
            ws.unparsable.add(path)
    ws.files[path] = pf
    return pf


# The argument parsers linking follows through the repository (``modules.Modules.parser_base``);
# a module whose text names none of them (nor a library class) is inert for linking
# (``read_linked_module``).
PARSER_NAMES = ("HfArgumentParser", "TrlParser")


def read_linked_module(ws: Workspace, path: str) -> tuple[TextFile, ast.Module] | None:
    """For ``trainlint.modules``: the text and syntax tree of a repository module that linking
    follows names through, without making it a file of the workspace (no ``PythonFile``, no
    setup of its own, no rules), when that changes nothing: no selected rule can report on it
    (``wanted_python`` refuses it), and its text names no TrainingArguments-like or
    Trainer-like class and no parser (then, as a ``PythonFile``, it has no local subclass of a
    library class, no training call, and ``library_class`` names nothing in it: what linking
    asks of it is in its top-level statements). A module that parses is not syntax-checked
    again (its check waits in ``pending_syntax`` when walked). The check depends on it
    (``reads.note``). None: read it in full with ``read_file`` (it is wanted, large, a fix's
    kept reads are on, it cannot be read: ``read_file`` reports that as before), or, when it
    is in ``files`` now, it does not parse (reported as ``read_file`` of it reports it, from
    this one parse)."""
    if ws.reads is not None:
        return None
    # a walked script whose syntax check waits was read as Python, and no selected rule wants it
    waiting = ws.pending_syntax.get(path) if ws.pending_syntax else None
    if waiting is not None:
        tf = waiting.text
    else:
        tf = reads.already_read(path) if path not in ws.overlay else None
        if tf is None:
            try:
                tf = read_text(path, ws.overlay)
            except ReadProblem:
                return None
        if (tf.kind if tf.kind is not None and tf.path == path else _kind_of(path, tf.text)) != "python":
            return None
    text = tf.text
    # the cheap tests first (``wanted_python`` may split the text into words)
    if len(text) >= pruning.LARGE_MODULE_CHARS or any(n in text for n in PARSER_NAMES) \
            or may_name_library_class(text) or (waiting is None and wanted_python(text, ws.settings)):
        return None
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, RecursionError, MemoryError, ValueError) as e:
        # what ``read_file`` of it as a named file gives, from this one parse: TL001, and the
        # file (without a document) in the workspace
        if ws.pending_syntax:
            ws.pending_syntax.pop(path, None)
        _parse_failed(ws, path, text, e)
        ws.files[path] = ParsedFile(path=path, kind="python", text=tf, explicit=True)
        return None
    if ws.pending_syntax:  # it parses: its syntax check would find nothing
        ws.pending_syntax.pop(path, None)
    reads.note(path)
    return tf, tree


def adopt_linked_module(ws: Workspace, path: str, tf: TextFile, tree: ast.Module) -> PythonFile | None:
    """The module ``read_linked_module`` gave, made a file of the workspace (what ``read_file``
    of it as a named file gives, with this tree): linking uses one of its definitions."""
    pf = ParsedFile(path=path, kind="python", text=tf, explicit=True)
    try:
        pf.doc = PythonFile(path, tf.text, tree)
    except Exception as exc:  # noqa: BLE001 - a reader bug is reported per file
        ws.problems.append(internal_error(path, "reading this file", exc))
        ws.unparsable.add(path)
        return None
    ws.files[path] = pf
    return pf.doc


def _check_syntax(ws: Workspace, pf: ParsedFile) -> ParsedFile | None:
    """The syntax check of a walked script no selected rule reads: kept (with its TL001,
    unparsable) only when it does not parse."""
    n = len(ws.problems)
    _parse_python(ws, pf.path, pf.text.text, syntax_only=True)
    if len(ws.problems) > n:
        ws.files[pf.path] = pf
        return pf
    return None


def defer_syntax_checks(ws: Workspace) -> None:
    """From now on, the syntax checks of walked scripts no selected rule reads wait for
    ``settle_syntax`` (a file read in full before then is parsed once). The caller must call
    ``settle_syntax`` before it reads ``problems``, ``files`` or ``unparsable`` as final."""
    if ws.pending_syntax is None:
        ws.pending_syntax = {}


def settle_syntax(ws: Workspace) -> None:
    """Run the syntax checks that wait (``defer_syntax_checks``), in walk order, for the files
    nothing has read since; their TL001 are as an immediate check's."""
    pending = ws.pending_syntax
    if not pending:
        return
    ws.pending_syntax = {}
    for path, pf in pending.items():
        if path not in ws.files and path not in ws.unparsable:
            _check_syntax(ws, pf)


def _wanted_notebook(ws: Workspace, path: str, text: str) -> bool:
    """A walked notebook is read when its code cells mention a trigger of a selected rule (or
    a launch line, a written file), as a script is; one its code mentions only the broad
    pre-filter's names is read only when its program does not parse (TL001), as a script's
    syntax is checked."""
    from trainlint.rule_index import prefilter as selected
    from trainlint.sources.notebook import prefilter, program_parses, program_text, raw_may_name

    found = selected(ws.settings)
    names = found.names
    if prefilter(text, PY_PREFILTER if names is None else names):
        return True
    # rules with words (TL611: a removed name beside its package) as for a script
    if names is not None and raw_may_name(text, [t for t, _ in found.worded]) and found.wanted(program_text(text)):
        return True
    return names is not None and prefilter(text, PY_PREFILTER) and not program_parses(path, text)


MAX_REFERENCE_LEVELS = 8
_ROOT_MARKERS = (".git", "pyproject.toml", "setup.py")


def _is_root(folder: str) -> bool:
    return any(os.path.exists(os.path.join(folder, m)) for m in _ROOT_MARKERS)


def repository_root(base_file: str) -> str | None:
    """The nearest folder at or above ``base_file``'s with ``.git``, ``pyproject.toml`` or
    ``setup.py`` (at most ``MAX_REFERENCE_LEVELS`` up), absolute; None when there is none."""
    current = os.path.abspath(os.path.dirname(base_file) or ".")
    for _ in range(MAX_REFERENCE_LEVELS + 1):
        if _is_root(current):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return None


def reference_folders(base_file: str) -> list[str]:
    """Where a relative path written in ``base_file`` may start: its folder, then each folder
    above it up to the repository root (the nearest folder with ``.git``, ``pyproject.toml`` or
    ``setup.py``). Launch scripts are usually run from the repository root (``bash
    scripts/train.sh`` naming ``src/train.py``), sometimes from their own folder. Without a
    repository root above the file (a tree exported without ``.git``), the folders above it
    up to the working directory are added (when the file is below it), so that no folder
    outside the checked tree is searched."""
    folder = os.path.dirname(base_file)
    start = os.path.abspath(folder or ".")
    ancestors: list[str] = []
    current = start
    root_found = _is_root(current)
    for _ in range(MAX_REFERENCE_LEVELS):
        if root_found:
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
        ancestors.append(current)
        root_found = _is_root(current)
    if not root_found:  # (an exported archive, no .git): each folder above it up to the working directory
        cwd = os.getcwd()
        inside = start.startswith(cwd.rstrip(os.sep) + os.sep)
        ancestors = [a for a in ancestors if a == cwd or a.startswith(cwd.rstrip(os.sep) + os.sep)] if inside else []
        if inside and cwd not in ancestors:
            ancestors.append(cwd)
    shown = (lambda p: p) if os.path.isabs(base_file) else os.path.relpath
    return [folder, *(shown(a) for a in ancestors)]


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
