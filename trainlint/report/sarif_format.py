"""SARIF 2.1.0 (the OASIS static-analysis interchange format read by GitHub code scanning,
VS Code's SARIF viewer and most CI dashboards).

One run; ``tool.driver.rules`` lists every registered rule with its documentation; each
finding is a result with its region, the related places and, when it has one, the fix as
``artifactChanges`` of ``replacements``. A finding in a notebook points at the place in the
notebook's JSON where its cell line is written (fix replacements too), names the cell in the
message (``cell N, line L: ...``) and has ``properties.cell``/``cellLine``/``cellColumn``. Lines and columns are 1-based and columns count
characters (``columnKind: unicodeCodePoints``), exactly as trainlint's own positions; the end
column is exclusive in both.
"""

from __future__ import annotations

import json
import os
from typing import Any, TextIO
from urllib.parse import quote

from trainlint import __version__
from trainlint.diagnostics import Diagnostic
from trainlint.report.cells import NotebookTexts, where

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/trainlint/trainlint"
RULES_URI = "https://github.com/trainlint/trainlint/blob/main/rules/{name}.md"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def artifact_uri(path: str) -> str:
    """A URI reference for a path: relative paths stay relative (to the run's folder, which is
    what code scanning expects), absolute ones become ``file://`` URIs."""
    if os.path.isabs(path):
        from pathlib import Path

        return Path(path).as_uri()
    return quote(path.replace(os.sep, "/"), safe="/-_.~")


def _location(path: str) -> dict[str, Any]:
    return {"uri": artifact_uri(path)}


def _region(line: int, column: int, end_line: int | None = None, end_column: int | None = None) -> dict[str, int]:
    region = {"startLine": max(1, line), "startColumn": max(1, column)}
    if end_line is not None and end_column is not None:
        region["endLine"] = max(region["startLine"], end_line)
        region["endColumn"] = max(1, end_column)
    return region


def _first_section(doc: str) -> str:
    """The *What it does* paragraph of a rule's documentation (else its first paragraph)."""
    import re

    m = re.search(r"^#+ What it does[^\n]*\n(.*?)(?=^#|\Z)", doc, re.M | re.S)
    text = m.group(1) if m else doc.strip().split("\n\n", 1)[0]
    return " ".join(text.split())


def rule_descriptor(rule: Any) -> dict[str, Any]:
    from trainlint.rules.docs import render_markdown

    doc = rule.doc()
    full = render_markdown(rule)
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": _first_section(doc) or rule.summary},
        "help": {"text": full, "markdown": full},
        "helpUri": RULES_URI.format(name=rule.name),
        "defaultConfiguration": {"level": LEVEL[rule.severity.value]},
        "properties": {"fix": rule.fix_safety, "tags": ["trainlint", rule.code[:3]]},
    }


def _result(d: Diagnostic, index: dict[str, int], notebooks: NotebookTexts | None = None) -> dict[str, Any]:
    line, col, end_line, end_col = d.line, d.column, d.end_line, d.end_column
    if d.cell is not None and notebooks is not None:
        line, col = notebooks.raw(d.path, d.cell, d.line, d.column)
        end_line, end_col = notebooks.raw(d.path, d.cell, d.end_line, d.end_column)
        if (end_line, end_col) <= (line, col):
            end_line, end_col = line, col + 1
    result: dict[str, Any] = {
        "ruleId": d.code,
        "level": LEVEL[d.severity.value],
        "message": {"text": where(d) + d.message},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": _location(d.path),
                "region": _region(line, col, end_line, end_col),
            },
        }],
    }
    props: dict[str, Any] = {}
    if d.cell is not None:
        props.update({"cell": d.cell, "cellLine": d.line, "cellColumn": d.column})
    if d.code in index:
        result["ruleIndex"] = index[d.code]
    if d.related:
        def related_region(r: Any) -> dict[str, int]:
            if r.cell is not None and notebooks is not None:
                return _region(*notebooks.raw(r.path, r.cell, r.line, r.column))
            return _region(r.line, r.column)

        result["relatedLocations"] = [
            {
                "id": i,
                "message": {"text": where(r) + r.message},
                "physicalLocation": {"artifactLocation": _location(r.path), "region": related_region(r)},
            }
            for i, r in enumerate(d.related, start=1)
        ]
    fix_edits = d.fix.edits if d.fix is not None else []
    if any(e.cell is not None for e in fix_edits):
        fix_edits = _raw_edits(d, notebooks)
    if d.fix is not None and fix_edits:
        by_path: dict[str, list[dict[str, Any]]] = {}
        for e in fix_edits:
            by_path.setdefault(e.path, []).append({
                "deletedRegion": _region(e.line, e.column, e.end_line, e.end_column),
                "insertedContent": {"text": e.content},
            })
        result["fixes"] = [{
            "description": {"text": d.fix.message or f"{d.name} fix ({d.fix.applicability})"},
            "artifactChanges": [{"artifactLocation": _location(p), "replacements": reps}
                                for p, reps in by_path.items()],
        }]
        props["fixApplicability"] = d.fix.applicability
    if props:
        result["properties"] = props
    return result


def _raw_edits(d: Diagnostic, notebooks: NotebookTexts | None) -> list[Any]:
    """A notebook fix's edits as replacements of the notebook's JSON text (none when they
    cannot be placed)."""
    if notebooks is None:
        return []
    from trainlint.fixing.notebook import json_fixes

    kinds = {e.path: "notebook" for e in d.fix.edits if e.cell is not None}  # type: ignore[union-attr]
    out, _ = json_fixes([d], notebooks.texts, kinds)
    return out[0].fix.edits if out and out[0].fix is not None else []


def sarif_log(diagnostics: list[Diagnostic], texts: dict[str, str] | None = None) -> dict[str, Any]:
    from trainlint.rules import all_rules

    rules = list(all_rules())
    index = {r.code: i for i, r in enumerate(rules)}
    notebooks = NotebookTexts(texts or {})
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "trainlint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [rule_descriptor(r) for r in rules],
            }},
            "columnKind": "unicodeCodePoints",
            "results": [_result(d, index, notebooks) for d in diagnostics],
        }],
    }


def render(diagnostics: list[Diagnostic], texts: dict[str, str], out: TextIO, *, statistics: bool = False,
           color: bool | None = None) -> None:
    json.dump(sarif_log(diagnostics, texts), out, indent=2)
    out.write("\n")
