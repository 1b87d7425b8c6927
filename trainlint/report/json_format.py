"""A JSON array of findings: the stable, documented schema (see README, "JSON output")."""

from __future__ import annotations

import json
from collections import Counter
from typing import TextIO

from trainlint.diagnostics import Diagnostic
from trainlint.report.summary import statistics_rows


def render(diagnostics: list[Diagnostic], texts: dict[str, str], out: TextIO, *, statistics: bool = False,
           color: bool | None = None) -> None:
    if statistics:
        safe = Counter(d.code for d in diagnostics if d.fix is not None and d.fix.applicability == "safe")
        json.dump([{"code": c, "name": n, "count": k, "fixable": f, "safe_fixes": safe[c], "unsafe_fixes": f - safe[c]}
                   for c, n, k, f in statistics_rows(diagnostics)], out, indent=2)
    else:
        json.dump([d.to_json() for d in diagnostics], out, indent=2)
    out.write("\n")
