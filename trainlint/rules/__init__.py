"""The rule registry.

The rules live in one sub-package per family (``inputs`` TL0xx, ``script`` TL1xx, ``args`` TL2xx,
``deepspeed`` TL3xx, ``launch`` TL4xx, ``hardware`` TL5xx, ``migration`` TL6xx); each module holds
one rule (or a tight pair); modules whose name starts with ``_`` are helpers of their family.
Rules are discovered, not listed
(``discover_rules``), so adding a rule is adding a module and regenerating the index
(``python scripts/gen_rule_index.py``; a test fails while the index misses a rule). A run
imports the modules the index names (``all_rules``, ordered by code); ``rules_for`` imports
only the modules of the selected rules.
"""

from __future__ import annotations

import importlib
from functools import lru_cache

from trainlint.rule_index import entries, is_selected, matches
from trainlint.rules.base import Case, NoOptions, Rule

__all__ = ["Case", "NoOptions", "Rule", "all_rules", "discover_rules", "get_rule", "is_selected",
           "rules_for", "select_rules"]


def discover_rules() -> tuple[type[Rule], ...]:
    """Every rule class defined in this package or a sub-package, found by importing them all
    (for the index generator and its test), ordered by code."""
    import pkgutil

    found: dict[str, type[Rule]] = {}
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        leaf = info.name.rsplit(".", 1)[-1]
        if info.ispkg or leaf in ("base", "docs") or leaf.startswith("_") or "._" in info.name[len(__name__):]:
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule \
                    and getattr(obj, "code", None) and obj.__module__ == module.__name__:
                if obj.code in found and found[obj.code] is not obj:
                    raise RuntimeError(f"duplicate rule code {obj.code}: {obj.name} and {found[obj.code].name}")
                found[obj.code] = obj
    names = [r.name for r in found.values()]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise RuntimeError(f"duplicate rule names: {sorted(dupes)}")
    return tuple(sorted(found.values(), key=lambda r: r.code))


def _load(entry: dict) -> type[Rule]:
    return getattr(importlib.import_module(entry["module"]), entry["class"])


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule of the index, ordered by code."""
    return tuple(_load(e) for e in entries())


def rules_for(select: list[str], ignore: list[str]) -> list[type[Rule]]:
    """The rules ``select_rules`` picks, importing only their modules."""
    return [_load(e) for e in entries()
            if any(matches(e["code"], e["name"], s) for s in select)
            and not any(matches(e["code"], e["name"], s) for s in ignore)]


def get_rule(code_or_name: str) -> type[Rule] | None:
    key = code_or_name.strip()
    for e in entries():
        if e["code"].upper() == key.upper() or e["name"] == key.lower():
            return _load(e)
    return None


def select_rules(select: list[str], ignore: list[str]) -> list[type[Rule]]:
    """Rules matched by any selector in ``select`` (code prefixes like ``TL2``, full codes or
    names) and by none in ``ignore``."""
    return rules_for(select, ignore)


