"""Signatures of ``PreTrainedModel`` methods per transformers release (``data/model_methods.json``,
generated from the released wheels by ``scripts/gen_model_methods.py``).

A renaming fix asks :func:`accepts` whether the new method takes the keywords (and how many
positional arguments) the call passes, at the target version. Stdlib only.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources


def _vkey(v: str) -> tuple[int, ...]:
    out = []
    for p in v.split("."):
        digits = "".join(ch for ch in p if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


@lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(resources.files("trainlint.knowledge").joinpath("data/model_methods.json")
                      .read_text(encoding="utf-8"))


def params(version: str, method: str) -> list[dict] | None:
    """The parameters after ``self`` of ``PreTrainedModel.<method>`` at ``version`` (the range
    holding it, else the nearest older one the data read), or None when the method does not
    exist there or the version is older than the data."""
    key = _vkey(version)
    chosen = None
    for r in _data()["ranges"]:
        if _vkey(r["first"]) <= key:
            chosen = r
    if chosen is None:
        return None
    return chosen["methods"].get(method)


def accepts(version: str, method: str, n_positional: int, keywords: list[str]) -> bool | None:
    """Whether ``model.<method>(<n_positional args>, **{k: ... for k in keywords})`` binds at
    ``version``; None when the data does not know the method there."""
    ps = params(version, method)
    if ps is None:
        return None
    positional = [p for p in ps if p["kind"] == "positional"]
    var_pos = any(p["kind"] == "var_positional" for p in ps)
    var_kw = any(p["kind"] == "var_keyword" for p in ps)
    if n_positional > len(positional) and not var_pos:
        return False
    taken = {p["name"] for p in positional[:n_positional]}
    named = {p["name"] for p in ps if p["kind"] in ("positional", "keyword")}
    for k in keywords:
        if k in taken:
            return False  # given twice
        if k not in named and not var_kw:
            return False
    required = [p["name"] for p in ps if p["kind"] in ("positional", "keyword") and not p["default"]]
    return all(r in taken or r in keywords for r in required)
