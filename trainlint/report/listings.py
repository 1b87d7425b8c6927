"""Plain listings of the rule registry and the GPU table (``trainlint rules`` / ``trainlint gpus``)."""

from __future__ import annotations

import json
from typing import Any

FIX_MARK = {"safe": "[*]", "unsafe": "[-]", "none": "   "}


def rule_rows() -> list[tuple[str, str, str, str, str]]:
    from trainlint.rules import all_rules

    return [(r.code, r.name, r.severity.value, r.fix_safety, r.summary) for r in all_rules()]


def rules_json(rows: list[tuple[str, str, str, str, str]]) -> str:
    return json.dumps([dict(zip(("code", "name", "severity", "fix", "summary"), r)) for r in rows], indent=2)


def rules_lines(rows: list[tuple[str, str, str, str, str]]) -> str:
    """One line per rule: ``TL102  [*] padding-max-length   warning  summary`` (readable piped,
    greppable, at any width)."""
    width = max(len(r[1]) for r in rows)
    return "\n".join(f"{code}  {FIX_MARK[fix]} {name:<{width}}  {sev:<7}  {summary}"
                     for code, name, sev, fix, summary in rows)


def print_rules_table(rows: list[tuple[str, str, str, str, str]], color: bool | None) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_lines=False, header_style="bold")
    for col in ("code", "name", "severity", "fix"):
        table.add_column(col, no_wrap=True)
    table.add_column("summary", min_width=30)
    for row in rows:
        table.add_row(*row)
    Console(soft_wrap=False, no_color=color is False, force_terminal=color).print(table)


def _cc(gpu: Any) -> str | None:
    return ".".join(map(str, gpu.compute_capability)) if gpu.compute_capability else None


def gpus_json() -> str:
    from trainlint.knowledge.gpus import all_gpus

    return json.dumps([{"name": g.name, "vendor": g.vendor, "memory_gib": g.memory_gib, "memory_bytes": g.memory_bytes,
                        "compute_capability": _cc(g), "arch": g.arch, "bf16": g.bf16, "tf32": g.tf32, "fp8": g.fp8,
                        "aliases": list(g.aliases)} for g in all_gpus()], indent=2)


def gpus_lines() -> str:
    from trainlint.knowledge.gpus import all_gpus

    gpus = all_gpus()
    width = max(len(g.name) for g in gpus)
    lines = [f"{'name':<{width}}  {'memory':>9}  {'cc':>4}  {'arch':<10} formats"]
    for g in gpus:
        formats = ",".join(f for f, ok in (("bf16", g.bf16), ("tf32", g.tf32), ("fp8", g.fp8)) if ok) or "fp16"
        lines.append(f"{g.name:<{width}}  {g.memory_gib:>5g} GiB  {_cc(g) or '-':>4}  {g.arch:<10} {formats}")
    return "\n".join(lines)
