"""Helpers shared by the rules split out of `half_precision_weights`: TL106 fp16-amp-on-fp16-weights, TL107 fp16-on-bf16-pretrained, TL123 auto-dtype-half-weights."""

from __future__ import annotations

import json
from pathlib import Path

from trainlint import reads
from trainlint.analysis import TrainerContext
from trainlint.setup import Value


def fp16_values(ctx: TrainerContext) -> list[Value]:
    """``fp16=True`` in the sites that configure this Trainer."""
    return [v for s in ctx.sites or [] for v in [s.get("fp16")] if v is not None and v.value is True]


def local_checkpoint_dtype(pf_path: str, model_id: str | None) -> str | None:
    """The dtype a local checkpoint folder's config.json says it is stored in (never the hub)."""
    if not model_id or model_id.count("/") > 1 and not model_id.startswith((".", "/")):
        return None
    base = Path(pf_path).parent
    for cand in (Path(model_id), base / model_id):
        cfg = cand / "config.json"
        reads.note(cfg)  # the result depends on it, there or not (the cache)
        try:
            if cfg.is_file():
                data = json.loads(cfg.read_text(encoding="utf-8"))
                value = data.get("dtype") or data.get("torch_dtype")
                return value if isinstance(value, str) else None
        except (OSError, ValueError):
            return None
    return None

