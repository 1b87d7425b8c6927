"""The rule registry.

The rules live in one sub-package per family (``inputs`` TL0xx, ``script`` TL1xx, ``args`` TL2xx,
``deepspeed`` TL3xx, ``launch`` TL4xx, ``hardware`` TL5xx, ``migration`` TL6xx); each module holds
one rule (or a tight pair); modules whose name starts with ``_`` are helpers of their family.
Rules are discovered, not listed, so adding a rule is adding a module. ``all_rules()`` is ordered
by code.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from trainlint.rules.base import Case, NoOptions, Rule

__all__ = ["Case", "NoOptions", "Rule", "all_rules", "get_rule", "select_rules"]


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    found: dict[str, type[Rule]] = {}
    for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
        leaf = info.name.rsplit(".", 1)[1]
        if info.ispkg or leaf in ("base", "docs") or leaf.startswith("_"):
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


def get_rule(code_or_name: str) -> type[Rule] | None:
    key = code_or_name.strip()
    for r in all_rules():
        if r.code.upper() == key.upper() or r.name == key.lower():
            return r
    return None


def _matches(rule: type[Rule], selector: str) -> bool:
    s = selector.strip()
    if not s:
        return False
    if s.upper() == "ALL":
        return True
    return rule.code.upper().startswith(s.upper()) or rule.name == s.lower()


def select_rules(select: list[str], ignore: list[str]) -> list[type[Rule]]:
    """Rules matched by any selector in ``select`` (code prefixes like ``TL2``, full codes or
    names) and by none in ``ignore``."""
    return [r for r in all_rules()
            if any(_matches(r, s) for s in select) and not any(_matches(r, s) for s in ignore)]


def is_selected(code: str, name: str, selectors: list[str]) -> bool:
    return any(s.strip().upper() == "ALL" or code.upper().startswith(s.strip().upper())
               or name == s.strip().lower() for s in selectors if s.strip())
