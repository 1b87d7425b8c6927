"""The pipeline: find files, read them, resolve setups, run rules, filter, fix.

``lint`` is what ``trainlint check`` runs; ``fix_in_memory`` is what ``fix`` and ``verify``
run. Neither imports torch, transformers, accelerate or deepspeed, nor executes user code.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path

from trainlint.config import Settings
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.fixing.apply import apply_fix_pass
from trainlint.resolve import Workspace, build_setups, read_workspace
from trainlint.rules import all_rules, is_selected, select_rules
from trainlint.suppression import Suppressions

MAX_FIX_PASSES = 8
REPORT_URL = "https://github.com/trainlint/trainlint/issues"


@dataclass
class LintResult:
    diagnostics: list[Diagnostic]
    files: list[str]
    texts: dict[str, str] = field(default_factory=dict)

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


def run_rules(ws: Workspace, settings: Settings) -> list[Diagnostic]:
    rules = [cls(settings, settings.options_for(cls))
             for cls in select_rules(settings.select + settings.extend_select, settings.ignore)
             if not cls.produced_by_engine]
    setups = build_setups(ws, settings)  # linking may read more files and add input problems
    out: list[Diagnostic] = list(ws.problems)
    for setup in setups:
        for rule in rules:
            try:
                out.extend(rule.check(setup))
            except Exception as exc:  # noqa: BLE001 - one broken rule must not stop the run
                path = setup.files[0] if setup.files else str(setup.root)
                out.append(internal_error(path, f"rule {rule.code} ({rule.name})", exc))
    return out


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
    kept.sort(key=lambda d: d.sort_key())
    return kept


def lint(paths: list[Path], settings: Settings, overlay: dict[str, str] | None = None,
         only: set[str] | None = None) -> LintResult:
    """Check ``paths``. ``overlay`` replaces file contents (fixes in memory, stdin)."""
    ws = read_workspace(paths, settings, overlay or {})
    diagnostics = run_rules(ws, settings)
    return LintResult(diagnostics=_filter(diagnostics, ws, settings), files=sorted(ws.files),
                      texts={p: f.text.text for p, f in ws.files.items()})


@dataclass
class FixOutcome:
    original: dict[str, str]  # path -> text before
    fixed: dict[str, str]  # path -> text after, only files that change
    applied: list[Diagnostic]
    reverted: list[tuple[Diagnostic, str]]
    remaining: list[Diagnostic]  # what is still reported after fixing


def fix_outcome(paths: list[Path], settings: Settings, *, unsafe: bool = False,
                overlay: dict[str, str] | None = None) -> FixOutcome:
    """Compute all fixes in memory, in passes, until nothing more applies."""
    current: dict[str, str] = dict(overlay or {})
    original: dict[str, str] = {}
    applied: list[Diagnostic] = []
    reverted: list[tuple[Diagnostic, str]] = []
    result = lint(paths, settings, current)
    original = dict(result.texts)
    unparsable = {d.path for d in result.diagnostics if d.code in ("TL001", "TL002", "TL003")}
    for _ in range(MAX_FIX_PASSES):
        texts = {**result.texts, **current}
        fixable = [d for d in result.diagnostics
                   if d.fix is not None and (d.fix.applicability == "safe" or unsafe)
                   and not any(e.path in unparsable for e in d.fix.edits)]
        if not fixable:
            break
        pr = apply_fix_pass(fixable, texts)
        reverted.extend(pr.reverted)
        if not pr.texts:
            break
        applied.extend(pr.applied)
        current.update(pr.texts)
        result = lint(paths, settings, current)
    fixed = {p: t for p, t in current.items() if original.get(p) is not None and t != original[p]}
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
