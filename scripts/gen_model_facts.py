"""Write trainlint/knowledge/data/model_facts.json from the installed transformers.

Two facts the DeepSpeed/FSDP rules need, read from the library (never at check time):

* ``no_hidden_size``: model types whose default config has neither ``hidden_size`` nor
  ``hidden_sizes`` (nor a ``text_config`` with one), attribute maps included: for these
  ``HfTrainerDeepSpeedConfig.trainer_config_finalize`` cannot fill hidden-size ``"auto"`` values.
* ``no_split_modules``: ``_no_split_modules`` of each model type's ``modeling_<type>.py`` (the
  decoder/encoder layer classes accelerate wraps by default with ``TRANSFORMER_BASED_WRAP``),
  plus ``layer_classes``: the per-layer classes of model types whose list is empty.
* ``module_names``: the sub-module names of each model type (for PEFT ``target_modules``).

Run: /work/main/.venv/bin/python scripts/gen_model_facts.py
"""

from __future__ import annotations

import ast
import json
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TYPES = ["llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2", "phi", "phi3",
         "t5", "mt5", "bart", "gpt2", "opt", "falcon", "gpt_neox", "bert", "roberta", "xlm_roberta", "electra",
         "distilbert", "albert", "deberta_v2"]
# model types whose _no_split_modules is empty: their per-layer class as defined in the modeling file
LAYER_CLASSES = {"electra": ["ElectraLayer"], "distilbert": ["TransformerBlock"], "albert": ["AlbertLayer"],
                 "deberta_v2": ["DebertaV2Layer"]}


def no_split(src: str) -> list[str]:
    out: set[str] = set()
    for n in ast.walk(ast.parse(src)):
        target = n.targets[0] if isinstance(n, ast.Assign) else n.target if isinstance(n, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == "_no_split_modules" and n.value is not None:
            try:
                out |= set(ast.literal_eval(n.value))
            except ValueError:
                pass
    return sorted(out)


def module_names() -> dict[str, list[str]]:
    """Per model type: the last name of every sub-module (``q_proj``, ``c_attn``, ``query``,
    ``lm_head``...) of the base model and its usual task heads, built from the default config on
    the meta device (no weights). PEFT matches a ``target_modules`` list entry against the end of
    a module's name, so an entry whose last part is in this list can match."""
    import torch
    from transformers import (CONFIG_MAPPING, AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM,
                              AutoModelForSeq2SeqLM, AutoModelForSequenceClassification)

    out: dict[str, list[str]] = {}
    for mt in TYPES:
        key = mt.replace("_", "-") if mt not in CONFIG_MAPPING else mt
        if key not in CONFIG_MAPPING:
            continue
        names: set[str] = set()
        for auto in (AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoModelForMaskedLM,
                     AutoModelForSequenceClassification):
            try:
                with torch.device("meta"):
                    model = auto.from_config(CONFIG_MAPPING[key]())
            except Exception:  # noqa: BLE001 - that head does not exist for this type
                continue
            names |= {n.rsplit(".", 1)[-1] for n, _ in model.named_modules() if n}
        out[mt] = sorted(n for n in names if not n.isdigit())
    return out


def main() -> None:
    warnings.filterwarnings("ignore")
    import transformers
    from transformers import CONFIG_MAPPING

    lack = []
    for mt in sorted(CONFIG_MAPPING.keys()):
        try:
            cfg = CONFIG_MAPPING[mt]()
        except Exception:  # noqa: BLE001 - configs that need arguments: unknown, left out
            continue
        ok = hasattr(cfg, "hidden_size") or hasattr(cfg, "hidden_sizes")
        tc = getattr(cfg, "text_config", None)
        if not ok and tc is not None and (hasattr(tc, "hidden_size") or hasattr(tc, "hidden_sizes")):
            ok = True
        if not ok:
            lack.append(mt)
    base = Path(transformers.__file__).parent / "models"
    layers = {}
    for mt in TYPES:
        p = base / mt / f"modeling_{mt}.py"
        if not p.is_file():
            continue
        src = p.read_text()
        names = no_split(src) or LAYER_CLASSES.get(mt, [])
        for name in names:
            assert f"class {name}(" in src, (mt, name)
        layers[mt] = names  # keyed by folder name: model_type with "-" as "_"
    data = {"transformers": transformers.__version__, "no_hidden_size": lack, "layer_classes": layers,
            "module_names": module_names()}
    out = ROOT / "trainlint" / "knowledge" / "data" / "model_facts.json"
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(out, len(lack), len(layers))


if __name__ == "__main__":
    main()
