"""Facts about frameworks that wrap the Hugging Face/TRL classes, read from
``data/frameworks.json`` (hand-written, each entry with the source it was read from).

* *patchers*: libraries that change what the TRL classes accept when imported first
  (``unsloth`` before ``trl``: ``tokenizer=`` on TRL trainers, ``max_seq_length`` on TRL
  configs);
* *DeepSpeed presets*: ``--deepspeed zero2`` names a config the framework ships, not a file;
* the ``TrlParser`` conventions (``--config``, the reserved ``env`` key).

Rules never name a framework: they ask this module (through the site's consumer).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

DATA = Path(__file__).parent / "data" / "frameworks.json"


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return json.loads(DATA.read_text(encoding="utf-8"))


class Patcher(NamedTuple):
    name: str
    module: str
    trainer_keywords: dict[str, str]  # keyword -> why it is accepted
    config_fields: dict[str, str]  # field -> why it is accepted
    moves_config_keywords: bool  # config fields given to the trainer reach its config
    sources: tuple[str, ...]


@lru_cache(maxsize=1)
def patchers() -> dict[str, Patcher]:
    out = {}
    for name, p in _data()["patchers"].items():
        out[p["module"]] = Patcher(name, p["module"], dict(p.get("trainer_keywords", {})),
                                   dict(p.get("config_fields", {})), bool(p.get("trainer_config_keywords")),
                                   tuple(p.get("sources", ())))
    return out


@lru_cache(maxsize=1)
def _presets() -> dict[str, str]:
    out: dict[str, str] = {}
    for fw, p in _data()["deepspeed_presets"].items():
        for n in p["names"]:
            out.setdefault(n, fw)
    return out


def deepspeed_preset(value: str, framework: str | None = None) -> str | None:
    """The framework whose ``--deepspeed`` accepts the preset name ``value`` (``zero2``), or
    None when it names a file. With ``framework``, only that framework's presets count."""
    fw = _presets().get(value.strip())
    if fw is None or (framework is not None and fw != framework):
        return None
    return fw


def deepspeed_preset_frameworks() -> frozenset[str]:
    return frozenset(_data()["deepspeed_presets"])


def trl_parser_reserved_keys() -> frozenset[str]:
    return frozenset(_data()["trl_parser"]["reserved_keys"])


def trl_parser_config_flag() -> str:
    return _data()["trl_parser"]["config_flag"]
