"""The rule index: which rules exist, where each lives, and what can make it fire.

``trainlint/rules/index.json`` is generated from the rule classes by
``python scripts/gen_rule_index.py`` (``tests/test_pipeline.py`` fails when it is out of step
with the rules found in ``trainlint/rules/`` and its sub-packages). It lets the earlier stages
(settings, suppressions, the pre-filter) know the rules' codes and names without importing a
single rule module, and the registry import only the modules a run can need.

Selection by code prefix, full code or name is here too (``is_selected``): it needs no rule.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

INDEX_PATH = Path(__file__).resolve().parent / "rules" / "index.json"


@lru_cache(maxsize=1)
def entries() -> tuple[dict[str, Any], ...]:
    """One entry per rule, ordered by code: ``code``, ``name``, ``module``, ``class``."""
    with open(INDEX_PATH, encoding="utf-8") as f:
        return tuple(json.load(f)["rules"])


def lookup(code_or_name: str) -> dict[str, Any] | None:
    """The entry of the rule with this code (any case) or name."""
    key = code_or_name.strip()
    for e in entries():
        if e["code"].upper() == key.upper() or e["name"] == key.lower():
            return e
    return None


def matches(code: str, name: str, selector: str) -> bool:
    """``selector`` (``ALL``, a code prefix like ``TL2``, a full code or a name) picks the rule."""
    s = selector.strip()
    if not s:
        return False
    return s.upper() == "ALL" or code.upper().startswith(s.upper()) or name == s.lower()


def is_selected(code: str, name: str, selectors: list[str]) -> bool:
    return any(matches(code, name, s) for s in selectors)
