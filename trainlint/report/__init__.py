"""Reporters: one module per output format. ``render`` picks one by name."""

from __future__ import annotations

import importlib
from typing import TextIO

from trainlint.diagnostics import Diagnostic

FORMATS = ("text", "concise", "json", "sarif", "github")


def render(fmt: str, diagnostics: list[Diagnostic], texts: dict[str, str], out: TextIO, *,
           statistics: bool = False, color: bool | None = None) -> None:
    module = importlib.import_module(f"trainlint.report.{fmt}_format")
    module.render(diagnostics, texts, out, statistics=statistics, color=color)
