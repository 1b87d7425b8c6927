"""Helpers shared by the rules split out of `args_checks`: TL205-TL223: TrainingArguments combinations that raise at construction or at Trainer init"""

from __future__ import annotations

from typing import Any, Iterator

from trainlint.diagnostics import Span
from trainlint.rules._versioned import (
    dict_literal,
    target,
)
from trainlint.setup import UNKNOWN, ArgsSite, Setup
from trainlint.sources.python import PythonFile, TrainerCall

V440 = {"transformers_version": "4.40.0"}


V457 = {"transformers_version": "4.57.1"}


V524 = {"transformers_version": "5.24.0"}


TA = "from transformers import TrainingArguments\n"


def _span(site: ArgsSite, *names: str) -> Span | None:
    """Where to report: the first written of ``names`` (key, else value), else the call."""
    for n in names:
        v = site.get(n)
        if v is not None:
            return v.key_span or v.span
    return site.span


def _related(site: ArgsSite, *names: str):
    out = []
    for n in names:
        v = site.get(n)
        sp = v.key_span or v.span if v is not None else None
        if sp is not None:
            out.append(sp.related(f"{n}={v.value!r} is set here"))  # type: ignore[union-attr]
    return out


def _desc(site: ArgsSite, name: str, value: Any) -> str:
    if name == "eval_strategy" and site.get(name) is None and site.get("evaluation_strategy") is not None:
        return f"evaluation_strategy={value!r}"
    written = site.get(name) is not None
    return f"{name}={value!r}" + ("" if written else " (the default)")


def _trainer_calls(setup: Setup) -> Iterator[tuple[PythonFile, TrainerCall]]:
    for pf in setup.scripts:
        for tc in pf.trainer_calls:
            if tc.class_name in ("Trainer", "Seq2SeqTrainer"):
                yield pf, tc


def _call_span(pf: PythonFile, tc: TrainerCall) -> Span:
    return pf.span(tc.site.node.func)


def _kw_span(pf: PythonFile, tc: TrainerCall, name: str) -> Span:
    kw = pf.keyword(tc.site.node, name)
    return pf.keyword_name_span(kw) if kw is not None else _call_span(pf, tc)


def fsdp_options(value: Any) -> list[str] | None:
    """The words of ``fsdp`` given as a string or a list of strings; None for other forms."""
    if isinstance(value, str):
        return value.split()
    if isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value):
        return list(value)
    return None


# The release that rewrote the fsdp handling (``_apply_legacy_fsdp_to_config``, FSDP2 by
# default; the 4.x checks are gone): the behaviour marker "fsdp_legacy_applied_to_config".
FSDP2_MARKER = "fsdp_legacy_applied_to_config"


def fsdp2_handling(setup: Setup) -> bool:
    """Whether the target transformers has the FSDP2-by-default fsdp handling."""
    from trainlint.knowledge import behaviour

    return behaviour.holds(FSDP2_MARKER, target(setup)[0])


def announced_removal(setup: Setup, marker: str) -> str:
    """``"announced for removal in 5.20; "`` as the target transformers' deprecation message
    words it (``behaviour.quote``), or nothing when it names no release."""
    from trainlint.knowledge import behaviour

    release = behaviour.quote(marker, target(setup)[0])
    return f"announced for removal in {release}; " if release else ""


def fsdp2_since() -> str:
    """The first release with it (for messages)."""
    from trainlint.knowledge import behaviour

    return behaviour.first_version(FSDP2_MARKER) or "a later release"


def fsdp_version(setup: Setup, site: ArgsSite) -> Any:
    """``fsdp_config["version"]`` (default 2 from 5.10), UNKNOWN when fsdp_config is not a
    readable dict."""
    cfg = site.get("fsdp_config")
    if cfg is None:
        return 2
    value = cfg.value if isinstance(cfg.value, dict) else dict_literal(setup, cfg)
    if not isinstance(value, dict):
        return UNKNOWN
    version = value.get("version", value.get("fsdp_version", 2))
    try:
        return int(version)
    except (TypeError, ValueError):
        return UNKNOWN

