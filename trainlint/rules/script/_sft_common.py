"""Helpers of the SFTTrainer rules (TL129, TL130): the SFTTrainer calls of a setup with their
SFTConfig sites, and the attention implementation of the model they train."""

from __future__ import annotations

import ast
from typing import Any, Iterator

from trainlint.analysis import base_trainer_class, flow_for, trainer_sites
from trainlint.rules._versioned import python_dict
from trainlint.setup import UNKNOWN, ArgsSite, Setup
from trainlint.sources.python import PythonFile, TrainerCall

# TRL's FLASH_ATTENTION_VARIANTS (trl/trainer/sft_trainer.py): the implementations that keep
# packed samples apart
FLASH_ATTENTION = frozenset({"flash_attention_2", "flash_attention_3", "kernels-community/flash-attn2",
                             "kernels-community/flash-attn3", "kernels-community/vllm-flash-attn3"})


def sft_calls(setup: Setup) -> Iterator[tuple[PythonFile, TrainerCall, list[ArgsSite]]]:
    for pf in setup.scripts:
        for tc in pf.trainer_calls:
            if base_trainer_class(pf, tc) != "SFTTrainer":
                continue
            sites = trainer_sites(setup, pf, tc)
            if sites:
                yield pf, tc, sites


def attn_implementation(setup: Setup, pf: PythonFile, tc: TrainerCall, sites: list[ArgsSite]) -> Any:
    """The attention implementation the trained model gets: the ``attn_implementation`` of its
    ``from_pretrained`` (or of ``model_init_kwargs`` when the trainer gets a model name); None when
    not written (the library default, sdpa); UNKNOWN when it cannot be told."""
    model = tc.keywords.get("model")
    if model is None:
        return UNKNOWN
    if isinstance(model, ast.Constant) and isinstance(model.value, str):
        for site in sites:
            v = site.get("model_init_kwargs")
            if v is None:
                if site.open_ended:
                    return UNKNOWN
                continue
            d = v.value if isinstance(v.value, dict) else python_dict(setup, site, "model_init_kwargs")
            if not isinstance(d, dict):
                return UNKNOWN
            return d.get("attn_implementation")
        return None
    flow = flow_for(pf, tc)
    if flow is None or not flow.loads or flow.unknown_origin:
        return UNKNOWN
    for ld in flow.loads:
        v = ld.kw("attn_implementation")
        if v is not None:
            return v.value
        if ld.open_ended:
            return UNKNOWN
    if flow.attr_sets or flow.called("set_attn_implementation"):
        return UNKNOWN
    return None
