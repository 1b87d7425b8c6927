"""TL417 fsdp-with-trainer-checkpointing: FSDP with the Trainer's gradient checkpointing instead of FSDP's own"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import located
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules._versioned import fsdp_enabled, python_dict
from trainlint.rules.base import Case, Rule
from trainlint.rules.launch._accelerate_fsdp_common import (
    _fsdp,
    _launch_script,
    _truthy,
    fsdp_get,
)
from trainlint.setup import Setup

GC = ("activation_checkpointing", "gradient_checkpointing")
YAML = ("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 2\n"
        "fsdp_config:\n  fsdp_version: 2\n  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n")
LAUNCH = "accelerate launch --config_file acc.yaml train.py\n"


def _site_fsdp_ac(setup, site) -> bool | None:
    """``fsdp_config["activation_checkpointing"]`` of a TrainingArguments site (None: unknown)."""
    cfg = site.get("fsdp_config")
    if cfg is None:
        return False
    d = cfg.value if isinstance(cfg.value, dict) else python_dict(setup, site, "fsdp_config")
    if not isinstance(d, dict):
        return None
    v = d.get("activation_checkpointing", d.get("fsdp_activation_checkpointing", False))
    return bool(v) if isinstance(v, bool) else None


class FsdpWithTrainerCheckpointing(Rule):
    """
    ## What it does
    Flags `gradient_checkpointing=True` (or `activation_checkpointing=True`) in a run that uses
    FSDP (TrainingArguments `fsdp`, or an accelerate config with `distributed_type: FSDP`) when
    FSDP's own `activation_checkpointing` is not turned on.

    ## Why is this bad?
    The Trainer's checkpointing recomputes each layer inside FSDP's sharded modules, which
    gathers the layer's parameters a second time in the backward pass: a redundant AllGather per
    layer. transformers warns at start-up to prefer `fsdp_config["activation_checkpointing"]`
    (FSDP applies checkpointing around its own wrapping). Both at once raise: that is TL411.

    ## Example
    ```python
    TrainingArguments(output_dir="o", fsdp="full_shard auto_wrap", gradient_checkpointing=True)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", fsdp="full_shard auto_wrap",
                      fsdp_config={"activation_checkpointing": True})
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `training_args.py` (`_process_fsdp_args` warning)
    - https://github.com/huggingface/transformers/issues/30404
    """

    code = "TL417"
    name = "fsdp-with-trainer-checkpointing"
    severity = Severity.WARNING
    summary = "FSDP with the Trainer's gradient checkpointing instead of FSDP's own"
    triggers = LAUNCH_NAMES
    needs_training = True
    fires_on = ("activation_checkpointing", "gradient_checkpointing")
    cases = [
        Case("from transformers import TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', fsdp='full_shard auto_wrap', gradient_checkpointing=True)\n"),
        Case(files={"run.sh": LAUNCH, "train.py": _launch_script(", gradient_checkpointing=True"), "acc.yaml": YAML}),
        Case(files={"run.sh": "torchrun --nproc_per_node 2 train.py --output_dir o --fsdp 'full_shard auto_wrap' "
                              "--gradient_checkpointing\n",
                    "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                                "parser = HfArgumentParser((TrainingArguments,))\n"
                                "(args,) = parser.parse_args_into_dataclasses()\n"}),
        Case("from transformers import TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', fsdp='full_shard auto_wrap', "
             "fsdp_config={'activation_checkpointing': True})\n", flags=False),
        Case("from transformers import TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', gradient_checkpointing=True)\n", flags=False),
        Case(files={"run.sh": LAUNCH, "train.py": _launch_script(", gradient_checkpointing=True"),
                    "acc.yaml": YAML + "  fsdp_activation_checkpointing: true\n"}, flags=False,
             note="TL411 reports both"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = _fsdp(setup)
        acc_ac = _truthy(fsdp_get(acc, "activation_checkpointing")) if acc is not None else None
        for site in setup.sites:
            v = next((site.get(n) for n in GC if site.get(n) is not None), None)
            if v is None or v.value is not True:
                continue
            on = fsdp_enabled(site.get("fsdp"))
            if on:
                if _site_fsdp_ac(setup, site) is not False:
                    continue
                where = located(site.get("fsdp"))  # type: ignore[arg-type]
            elif acc is not None and on is False:
                if acc_ac is not False and acc_ac is not None:
                    continue
                where = f"the accelerate config {acc.path.rsplit('/', 1)[-1]}"
            else:
                continue
            yield self.diagnostic(v.key_span or v.span,  # type: ignore[arg-type]
                                  f"{located(v)} under FSDP ({where}): the Trainer's checkpointing makes FSDP gather "
                                  "each layer's parameters again in the backward pass; use FSDP's own "
                                  "activation_checkpointing in the FSDP config and drop it here")
