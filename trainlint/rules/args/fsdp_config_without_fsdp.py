"""TL239 fsdp-config-without-fsdp: fsdp_config set while fsdp is off (ignored), or both wrap keys"""

from __future__ import annotations

import json

from trainlint.diagnostics import Severity
from trainlint.rules._spellings import spelled_cases
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    SiteRule,
    dict_literal,
    fsdp_enabled,
    python_dict,
    target_text,
    wrapper_of,
)
from trainlint.rules.args._args_checks_common import _related, _span, fsdp2_handling
from trainlint.rules.base import Case

WRAP_KEYS = ("min_num_params", "transformer_layer_cls_to_wrap")


def _config_dict(setup, site, v):
    if isinstance(v.value, dict):
        return v.value
    if isinstance(v.value, str) and v.value.lstrip().startswith("{"):
        try:
            out = json.loads(v.value)
        except ValueError:
            return None
        return out if isinstance(out, dict) else None
    d = dict_literal(setup, v)
    if isinstance(d, dict):
        return d
    return python_dict(setup, site, v.name)


class FsdpConfigWithoutFsdp(SiteRule):
    """
    ## What it does
    Flags `fsdp_config` in TrainingArguments while `fsdp` is not enabled (and no accelerate
    config or launcher turns FSDP on), and, before transformers 5.10, an `fsdp_config` that sets
    both `min_num_params` and `transformer_layer_cls_to_wrap`.

    ## Why is this bad?
    Without `fsdp`, TrainingArguments never reads `fsdp_config` (`_process_fsdp_args` returns
    at once on 5.x; 4.x only warns "useful only when --fsdp is specified"): the run is not
    sharded and its memory plan does not hold. The two wrap keys together raise
    "`min_num_params` and `transformer_layer_cls_to_wrap` are mutually exclusive" before 5.10.

    ## Example
    ```python
    TrainingArguments(output_dir="o", fsdp_config={"transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"]})
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", fsdp="full_shard auto_wrap",
                      fsdp_config={"transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"]})
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `training_args.py` (`_process_fsdp_args`, 4.x `__post_init__` fsdp checks)
    """

    code = "TL239"
    name = "fsdp-config-without-fsdp"
    severity = Severity.WARNING
    summary = "fsdp_config set while fsdp is off (ignored), or both wrap keys"
    triggers = SETUP_NAMES
    fires_on = ("fsdp_config",)
    cases = [
        *spelled_cases({"fsdp_config": {"transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"]}}),
        *spelled_cases({"fsdp": "full_shard auto_wrap",
                        "fsdp_config": {"min_num_params": 1000, "transformer_layer_cls_to_wrap": ["X"]}},
                       only=("keyword",), options={"transformers_version": "4.57.1"}, note="mutually exclusive"),
        *spelled_cases({"fsdp": "full_shard auto_wrap",
                        "fsdp_config": {"transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"]}},
                       flags=False, only=("keyword", "flag")),
        Case(files={"run.sh": "accelerate launch --use_fsdp train.py --output_dir o --fsdp_config fsdp.json\n",
                    "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                                "parser = HfArgumentParser((TrainingArguments,))\n"
                                "(args,) = parser.parse_args_into_dataclasses()\n"},
             flags=False, note="accelerate turns FSDP on"),
    ]

    def site_check(self, setup, site):
        cfg = site.get("fsdp_config")
        if cfg is None:
            return
        if cfg.known and cfg.value in (None, "", {}):
            return
        if not cfg.known and not _config_dict(setup, site, cfg):
            return
        on = fsdp_enabled(site.get("fsdp"))
        if on is None:
            return
        if not on:
            if site.get("fsdp") is None and site.open_ended:
                return
            wrapped = wrapper_of(setup, site)
            if wrapped is not None and wrapped[0] == "FSDP":
                return
            yield self.diagnostic(_span(site, "fsdp_config"),
                                  "fsdp_config is set but fsdp is not enabled: TrainingArguments ignores fsdp_config "
                                  "and the model is not sharded; enable fsdp or drop fsdp_config",
                                  related=_related(site, "fsdp"))
            return
        if fsdp2_handling(setup):
            return
        d = _config_dict(setup, site, cfg)
        if d is None:
            return
        keys = {k[5:] if k.startswith("fsdp_") else k for k in d}
        mnp = d.get("min_num_params", d.get("fsdp_min_num_params", 0))
        if all(k in keys for k in WRAP_KEYS) and isinstance(mnp, (int, float)) and mnp > 0:
            yield self.diagnostic(_span(site, "fsdp_config"),
                                  "fsdp_config sets both min_num_params and transformer_layer_cls_to_wrap: "
                                  f"TrainingArguments raises ValueError (mutually exclusive; {target_text(setup)}); "
                                  "keep one wrap policy", severity=Severity.ERROR)
