"""Counts per rule, for ``--statistics``."""

from __future__ import annotations

from collections import Counter

from trainlint.diagnostics import Diagnostic


def statistics_rows(diagnostics: list[Diagnostic]) -> list[tuple[str, str, int, int]]:
    counts: Counter[tuple[str, str]] = Counter()
    fixable: Counter[tuple[str, str]] = Counter()
    for d in diagnostics:
        counts[(d.code, d.name)] += 1
        if d.fix is not None:
            fixable[(d.code, d.name)] += 1
    return [(c, n, k, fixable[(c, n)]) for (c, n), k in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def fix_marks(diagnostics: list[Diagnostic]) -> dict[str, str]:
    """Per rule code, the mark its findings carry: ``*`` (safe fix), ``-`` (only unsafe
    fixes, needs --unsafe-fixes), ``*-`` (both kinds), `` `` (no fix), as the findings show."""
    safe: Counter[str] = Counter()
    unsafe: Counter[str] = Counter()
    for d in diagnostics:
        if d.fix is not None:
            (safe if d.fix.applicability == "safe" else unsafe)[d.code] += 1
    return {d.code: ("*" if safe[d.code] else "") + ("-" if unsafe[d.code] else "") or " " for d in diagnostics}


def statistics_lines(diagnostics: list[Diagnostic]) -> list[str]:
    marks = fix_marks(diagnostics)
    return [f"{k:5d}\t{c}\t[{marks[c]}] {n}" for c, n, k, _f in statistics_rows(diagnostics)]


def write_lines(diagnostics: list[Diagnostic], out, line_of, *, statistics: bool = False) -> None:
    """One line per finding (``line_of(d)``), or the counts per rule with ``statistics``."""
    lines = statistics_lines(diagnostics) if statistics else [line_of(d) for d in diagnostics]
    for line in lines:
        out.write(line + "\n")
