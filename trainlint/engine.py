"""The pipeline: find files, read them, resolve setups, run rules, filter, fix.

``lint`` is what ``trainlint check`` runs; ``fix_in_memory`` is what ``fix`` and ``verify``
run. Neither imports torch, transformers, accelerate or deepspeed, nor executes user code.
"""

from __future__ import annotations

import sys
import threading
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, TypeVar

from trainlint.config import ConfigError, Settings
from trainlint.consumers import with_consumer
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.resolve import Workspace, build_setups, read_workspace
from trainlint.rules import all_rules, is_selected, select_rules
from trainlint.suppression import Suppressions

MAX_FIX_PASSES = 8
REPORT_URL = "https://github.com/trainlint/trainlint/issues"

# Deeply nested but valid code (a 900-term string concatenation, a long method chain) makes
# ast's recursive structures deep; the analysis and the rules walk them recursively. The
# pipeline therefore runs in a thread with a large stack and a raised recursion limit, so such
# files are analysed instead of failing, and anything deeper ends in a RecursionError that is
# reported per file (never a crash of the interpreter).
DEEP_STACK_BYTES = 512 * 1024 * 1024
DEEP_RECURSION_LIMIT = 20_000
_deep = threading.local()
_T = TypeVar("_T")


def with_deep_stack(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Call ``fn(*args, **kwargs)`` in a thread with a large stack and a raised recursion
    limit; exceptions propagate to the caller. Nested calls run directly."""
    if getattr(_deep, "active", False):
        return fn(*args, **kwargs)
    box: dict[str, Any] = {}

    def target() -> None:
        _deep.active = True
        try:
            box["result"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            box["error"] = exc

    old_limit = sys.getrecursionlimit()
    try:
        old_size = threading.stack_size(DEEP_STACK_BYTES)
    except (ValueError, RuntimeError):  # platform without settable thread stacks
        return fn(*args, **kwargs)
    sys.setrecursionlimit(max(old_limit, DEEP_RECURSION_LIMIT))
    try:
        try:
            thread = threading.Thread(target=target, name="trainlint", daemon=True)
            thread.start()
        finally:
            threading.stack_size(old_size)
        thread.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if "error" in box:
        raise box["error"]
    return box["result"]


@dataclass
class LintResult:
    """What ``lint`` found, with the texts it read (reporters show source lines from them)."""

    diagnostics: list[Diagnostic]
    files: list[str]
    texts: dict[str, str] = field(default_factory=dict)
    unparsable: set[str] = field(default_factory=set)  # never edited by fix
    kinds: dict[str, str] = field(default_factory=dict)  # path -> reader kind

    @property
    def internal_errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.code == "TL000"]


def internal_error(path: str, where: str, exc: BaseException) -> Diagnostic:
    tb = traceback.extract_tb(exc.__traceback__)
    at = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
    return Diagnostic(
        code="TL000", name="internal-error", severity=Severity.ERROR,
        message=f"internal error in {where}: {type(exc).__name__}: {exc}{at}. "
                f"This is a trainlint bug; please report it at {REPORT_URL}",
        path=path, line=1, column=1, end_line=1, end_column=1,
    )


def run_rules(ws: Workspace, settings: Settings, declared: set[str] | None = None) -> list[Diagnostic]:
    """Every rule on every setup; ``declared`` (when given) collects the setups' files."""
    rules = [cls(settings, settings.options_for(cls))
             for cls in select_rules(settings.select + settings.extend_select, settings.ignore)
             if not cls.produced_by_engine]
    linking_error: Diagnostic | None = None
    try:
        setups = build_setups(ws, settings)  # linking may read more files and add input problems
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - linking failed: check each script on its own
        first = sorted(ws.files)[0] if ws.files else "."
        linking_error = internal_error(first, "linking the files of the setup", exc)
        setups = _single_file_setups(ws, settings)
    out: list[Diagnostic] = list(ws.problems)
    if linking_error is not None:
        out.append(linking_error)
    for setup in setups:
        if declared is not None:
            declared.update(str(f) for f in setup.files)
        assumed = [s for s in setup.sites if s.assumed]
        docs = str(setup.extra.get("launch_file", "")).lower().endswith((".md", ".markdown", ".mdx"))
        for rule in rules:
            try:
                found = with_consumer(setup, list(rule.check(setup)))
                if assumed:
                    found = _say_assumed(found, assumed)
                if docs:  # a README command is documentation: at most a warning
                    found = [replace(d, severity=Severity.WARNING) if d.severity is Severity.ERROR
                             and d.path.lower().endswith((".md", ".markdown", ".mdx")) else d for d in found]
                out.extend(found)
            except Exception as exc:  # noqa: BLE001 - one broken rule must not stop the run
                path = setup.files[0] if setup.files else str(setup.root)
                out.append(internal_error(path, f"rule {rule.code} ({rule.name})", exc))
    return _without_walked_markdown(ws, out)


def _without_walked_markdown(ws: Workspace, found: list[Diagnostic]) -> list[Diagnostic]:
    """A Markdown file found by a folder walk is read for its commands, which tell who reads
    a script or an args file (a README's ``accelerate launch sft.py --config recipe.yaml``);
    findings in the Markdown itself are reported only when it is named explicitly."""
    quiet = {p for p, f in ws.files.items() if f.kind == "markdown" and not f.explicit}
    if not quiet:
        return found
    return [d for d in found if d.path not in quiet]


def _say_assumed(found: list[Diagnostic], sites: list) -> list[Diagnostic]:
    """Findings on a site whose consumer is assumed (a script not in this repository, a
    framework CLI) say so; when the parser is only a guess, they are at most warnings."""
    out = []
    for d in found:
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


def _single_file_setups(ws: Workspace, settings: Settings) -> list:
    from trainlint.resolve import target_gpu
    from trainlint.setup import Setup

    gpu = target_gpu(settings)
    docs = [(f.path, f.doc) for f in ws.files.values() if f.kind == "python" and f.doc is not None]
    docs += [(f.path, f.doc.python) for f in ws.files.values()  # a notebook's program
             if f.kind == "notebook" and f.doc is not None and f.doc.python is not None]
    return [Setup(root=Path(path).parent, scripts=[doc], sites=doc.sites, files=[path], gpu=gpu)
            for path, doc in docs]


def _filter(diagnostics: list[Diagnostic], ws: Workspace, settings: Settings) -> list[Diagnostic]:
    selectors = settings.select + settings.extend_select
    sup = Suppressions(ws)
    seen: set[tuple] = set()
    kept: list[Diagnostic] = []
    for d in diagnostics:
        if d.code != "TL000":
            if not is_selected(d.code, d.name, selectors) or is_selected(d.code, d.name, settings.ignore):
                continue
            ignored = settings.ignored_for(d.path)
            if ignored and is_selected(d.code, d.name, ignored):
                continue
            if sup.suppressed(d):
                continue
        key = (d.path, d.line, d.column, d.code, d.message)
        if key in seen:
            continue
        seen.add(key)
        kept.append(d)
    if any(f.kind == "notebook" for f in ws.files.values()):
        from trainlint.sources.notebook import to_cells

        kept = to_cells(kept, ws)  # notebook findings: cell + line within the cell
    kept.sort(key=lambda d: d.sort_key())
    return kept


def with_target_root(settings: Settings, paths: list[Path]) -> Settings:
    """The settings with the run's project root (whose declared versions are the targets)
    resolved once from the command line's paths, so that every worker and the serial path
    target the same versions."""
    if settings.target_root is not None:
        return settings
    from trainlint.knowledge.versions import find_project_root

    root = settings.project_root or find_project_root([p for p in paths if str(p) != "-"] or [Path(".")])
    return settings.model_copy(update={"target_root": root})


def lint(paths: list[Path], settings: Settings, overlay: dict[str, str] | None = None,
         only: set[str] | None = None, *, jobs: int | None = 1, cache: bool = False) -> LintResult:
    """Check ``paths``. ``overlay`` replaces file contents (fixes in memory, stdin).

    ``jobs`` other than 1 (None: one per core) or ``cache`` take the fast path of
    ``trainlint.parallel`` (same result: stand-alone scripts one by one, in a process pool when
    there are many, from the findings cache when unchanged)."""
    settings = with_target_root(settings, paths)
    if jobs != 1 or cache:
        from trainlint.parallel import lint_split

        return lint_split(paths, settings, overlay or {}, jobs=jobs, use_cache=cache)
    return with_deep_stack(_lint, paths, settings, overlay, only)


def _lint(paths: list[Path], settings: Settings, overlay: dict[str, str] | None,
          only: set[str] | None) -> LintResult:
    ws = read_workspace(paths, settings, overlay or {})
    diagnostics = run_rules(ws, settings)
    return LintResult(diagnostics=_filter(diagnostics, ws, settings), files=sorted(ws.files),
                      texts={p: f.text.text for p, f in ws.files.items()},
                      unparsable=set(ws.unparsable), kinds={p: f.kind for p, f in ws.files.items()})


@dataclass
class FixOutcome:
    """What ``fix`` would write: texts before and after, the fixes applied, reverted and left."""

    original: dict[str, str]  # path -> text before
    fixed: dict[str, str]  # path -> text after, only files that change
    applied: list[Diagnostic]
    reverted: list[tuple[Diagnostic, str]]
    remaining: list[Diagnostic]  # what is still reported after fixing


def fix_outcome(paths: list[Path], settings: Settings, *, unsafe: bool = False,
                overlay: dict[str, str] | None = None) -> FixOutcome:
    """Compute all fixes in memory, in passes, until nothing more applies.

    * A file that could not be read or parsed is never edited.
    * Fixes whose edits overlap wait for a later pass (the rules run again on the new text, so
      the waiting fix is computed afresh); at most ``MAX_FIX_PASSES`` passes.
    * A fix whose result does not parse is dropped and listed in ``reverted``; it is not tried
      again in later passes.
    """
    return with_deep_stack(_fix_outcome, paths, settings, unsafe, overlay)


def _fix_key(d: Diagnostic) -> tuple:
    assert d.fix is not None
    return (d.code, tuple(sorted((e.path, e.cell or 0, e.line, e.column, e.end_line, e.end_column, e.content)
                                 for e in d.fix.edits)))


def _fix_outcome(paths: list[Path], settings: Settings, unsafe: bool,
                 overlay: dict[str, str] | None) -> FixOutcome:
    current: dict[str, str] = dict(overlay or {})
    applied: list[Diagnostic] = []
    reverted: list[tuple[Diagnostic, str]] = []
    refused: set[tuple] = set()  # fixes that broke a file: never tried again
    result = lint(paths, settings, current)
    original = dict(result.texts)
    # never edit a file that did not parse, even when its finding is ignored or suppressed
    unparsable = set(result.unparsable) | {d.path for d in result.diagnostics
                                           if d.code in ("TL001", "TL002", "TL003")}
    seen_states: set[int] = set()
    for _ in range(MAX_FIX_PASSES):
        texts = {**result.texts, **current}
        fixable = [d for d in result.diagnostics
                   if d.fix is not None and (d.fix.applicability == "safe" or unsafe)
                   and not any(e.path in unparsable for e in d.fix.edits)
                   and _fix_key(d) not in refused]
        if not fixable:
            break
        from trainlint.fixing.apply import apply_fix_pass

        pr = apply_fix_pass(fixable, texts, result.kinds)
        for d, error in pr.reverted:
            refused.add(_fix_key(d))
            reverted.append((d, error))
        if not pr.texts:
            if pr.reverted:
                continue  # what was deferred behind a refused fix may apply now
            break
        state = hash(tuple(sorted({**current, **pr.texts}.items())))
        if state in seen_states:  # fixes that undo each other: stop
            break
        seen_states.add(state)
        applied.extend(pr.applied)
        current.update(pr.texts)
        result = lint(paths, settings, current)
    fixed = {p: t for p, t in current.items() if original.get(p) is not None and t != original[p]
             and p not in unparsable}
    return FixOutcome(original=original, fixed=fixed, applied=applied, reverted=reverted,
                      remaining=result.diagnostics)


def fix_in_memory(paths: list[Path], *, unsafe: bool = False, settings: Settings | None = None
                  ) -> dict[Path, str]:
    """New full text of every file the fixes change (nothing is written)."""
    from trainlint.config import load_settings

    settings = settings or load_settings(paths[0] if paths else None)
    outcome = fix_outcome(paths, settings, unsafe=unsafe)
    return {Path(p): t for p, t in outcome.fixed.items()}


def all_rule_codes() -> list[str]:
    return [r.code for r in all_rules()]
