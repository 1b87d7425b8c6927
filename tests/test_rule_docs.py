"""The registry, the rules/ pages and `trainlint rules` / `trainlint rule` stay in step."""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers import run_cli

from trainlint.rules import all_rules
from trainlint.rules.docs import render_markdown

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ["## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety", "## References"]


def test_codes_and_names_are_well_formed():
    for r in all_rules():
        assert re.fullmatch(r"TL\d{3}", r.code), r.code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", r.name), r.name
        assert r.fix_safety in ("safe", "unsafe", "none")
        assert r.summary and not r.summary.endswith(".")


def test_every_rule_documents_every_section():
    for r in all_rules():
        doc = r.doc()
        for s in SECTIONS:
            assert s in doc, f"{r.code} {r.name} lacks {s!r}"


def test_rules_folder_matches_registry():
    pages = {p.name for p in (ROOT / "rules").glob("*.md")} - {"README.md"}
    assert pages == {f"{r.name}.md" for r in all_rules()}, "run: python scripts/gen_rule_docs.py"
    for r in all_rules():
        assert (ROOT / "rules" / f"{r.name}.md").read_text(encoding="utf-8") == render_markdown(r), \
            f"rules/{r.name}.md is stale: run python scripts/gen_rule_docs.py"


def test_cli_rules_lists_the_registry():
    out = run_cli("rules", "--format", "json")
    assert out.returncode == 0, out.stderr
    listed = json.loads(out.stdout)
    assert [(x["code"], x["name"], x["severity"], x["fix"]) for x in listed] == \
        [(r.code, r.name, r.severity.value, r.fix_safety) for r in all_rules()]


def test_cli_rule_shows_the_page():
    for key in ("TL101", "padding-max-length"):
        out = run_cli("rule", key)
        assert out.returncode == 0, out.stderr
        assert "## Why is this bad?" in out.stdout
    bad = run_cli("rule", "no-such-rule")
    assert bad.returncode == 2 and "no rule" in bad.stderr
