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
    """One entry per rule, ordered by code: ``code``, ``name``, ``module``, ``class``,
    ``engine`` (reported by the readers, not run), ``triggers`` (``Rule.triggers``: a sorted
    list, or None) and ``needs``."""
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


def selected(select: list[str], ignore: list[str]) -> list[dict[str, Any]]:
    """The entries ``select`` picks and ``ignore`` does not."""
    return [e for e in entries() if any(matches(e["code"], e["name"], s) for s in select)
            and not any(matches(e["code"], e["name"], s) for s in ignore)]


def _active(entry: dict[str, Any], settings: Any) -> bool:
    return not entry["engine"] and all(getattr(settings, n, None) for n in entry["needs"])


def prefilter_names(settings: Any) -> tuple[str, ...] | None:
    """The names of which a walked Python file must contain one to be parsed: the triggers of
    the selected rules that can report under ``settings``; None when one of them declares none
    (then the broad pre-filter applies)."""
    key = (tuple(settings.select), tuple(settings.extend_select), tuple(settings.ignore), bool(settings.gpu))
    return _prefilter(key, settings)


_PREFILTERS: dict[tuple, tuple[str, ...] | None] = {}


def _prefilter(key: tuple, settings: Any) -> tuple[str, ...] | None:
    if key not in _PREFILTERS:
        names: set[str] = set()
        found: tuple[str, ...] | None = ()
        for e in selected(list(settings.select) + list(settings.extend_select), list(settings.ignore)):
            if not _active(e, settings):
                continue
            if e["triggers"] is None:
                found = None
                break
            names.update(e["triggers"])
        if found is not None:
            # a name that contains another is redundant in a substring test
            found = tuple(sorted(n for n in names if not any(m != n and m in n for m in names)))
        _PREFILTERS[key] = found
    return _PREFILTERS[key]


def can_trigger(entry: dict[str, Any], present: set[str]) -> bool:
    """Whether the rule of ``entry`` may report on a setup of Python files only, in which the
    trigger names ``present`` occur."""
    triggers = entry["triggers"]
    return triggers is None or any(t in present for t in triggers)
