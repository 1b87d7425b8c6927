"""TL243 bnb-8bit-optim-with-fsdp: a bitsandbytes 8-bit optimizer with FSDP2, or with FSDP1 CPU offload"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    SiteRule,
    fsdp_enabled,
    python_dict,
    strategy,
)
from trainlint.rules.args._args_checks_common import (
    fsdp2_handling,
    _span,
    fsdp_options,
    fsdp_version,
)
from trainlint.rules.base import Case
from trainlint.rules.launch._accelerate_fsdp_common import _fsdp, _truthy, fsdp_get
from trainlint.rules.launch._accelerate_fsdp_common import (
    fsdp_version as acc_fsdp_version,
)

# bitsandbytes' 8-bit state optimizers among TrainingArguments' optim values (trainer_optimizer.py
# _BITSANDBYTES_OPTIMIZERS); the torchao "adamw_torch_8bit" keeps a DTensor-friendly state
BNB_8BIT = frozenset({"adamw_bnb_8bit", "adamw_8bit", "paged_adamw_8bit", "ademamix_8bit", "paged_ademamix_8bit",
                      "lion_8bit", "paged_lion_8bit", "rmsprop_bnb_8bit"})
FSDP2_BROKEN = frozenset({"adamw_bnb_8bit", "adamw_8bit"})
YAML = ("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 2\n"
        "fsdp_config:\n  fsdp_version: {v}\n  fsdp_offload_params: {off}\n")
SCRIPT = ("from transformers import TrainingArguments\n"
          "args = TrainingArguments(output_dir='o', optim='{optim}')\n")


class Bnb8bitOptimWithFsdp(SiteRule):
    """
    ## What it does
    Flags a bitsandbytes 8-bit optimizer (`optim="adamw_8bit"`, `"adamw_bnb_8bit"`,
    `"paged_adamw_8bit"`, the 8-bit Lion/AdEMAMix/RMSprop) under FSDP with CPU parameter
    offload (FSDP1), and `adamw_8bit`/`adamw_bnb_8bit` under FSDP2, whether FSDP comes from
    TrainingArguments (`fsdp`, `fsdp_config`) or an accelerate config.

    ## Why is this bad?
    bitsandbytes' 8-bit optimizer states are quantized with CUDA kernels on CUDA tensors: with
    FSDP1 CPU offload the parameters and gradients live on the CPU, and FSDP2's sharded DTensor
    parameters are not what the kernels expect. Both fail at the first optimizer step, after
    the model is loaded and the first batch has run. axolotl refuses both combinations at
    start-up and points at `adamw_torch_8bit` (torchao), which works with FSDP2.

    ## Example
    ```python
    TrainingArguments(output_dir="o", optim="adamw_8bit", fsdp="full_shard auto_wrap",
                      fsdp_config={"version": 2})
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", optim="adamw_torch_8bit", fsdp="full_shard auto_wrap",
                      fsdp_config={"version": 2})
    ```

    ## Fix safety
    No automatic fix (another optimizer changes the numerics).

    ## References
    - axolotl `utils/schemas/validation.py` (`check_fsdp_offload_w_8bit_optimizer`,
      `check_fsdp2_w_8bit_optimizer`)
    - transformers `trainer_optimizer.py` (`_get_bitsandbytes_optimizer`)
    """

    code = "TL243"
    name = "bnb-8bit-optim-with-fsdp"
    severity = Severity.ERROR
    summary = "a bitsandbytes 8-bit optimizer with FSDP2, or with FSDP1 CPU offload"
    triggers = SETUP_NAMES
    fires_on = ("optim",)
    cases = [
        Case("from transformers import TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', optim='adamw_8bit', fsdp='full_shard auto_wrap')\n",
             note="FSDP2 is the default from 5.10"),
        Case("from transformers import TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', optim='paged_adamw_8bit', fsdp='full_shard offload auto_wrap')\n",
             options={"transformers_version": "4.57.1"}, note="FSDP1 with offload"),
        Case(files={"run.sh": "accelerate launch --config_file acc.yaml train.py\n",
                    "train.py": SCRIPT.format(optim="adamw_bnb_8bit"), "acc.yaml": YAML.format(v=2, off="false")}),
        Case(files={"run.sh": "accelerate launch --config_file acc.yaml train.py\n",
                    "train.py": SCRIPT.format(optim="adamw_torch_8bit"), "acc.yaml": YAML.format(v=2, off="false")},
             flags=False),
        Case(files={"run.sh": "accelerate launch --config_file acc.yaml train.py\n",
                    "train.py": SCRIPT.format(optim="paged_adamw_8bit"), "acc.yaml": YAML.format(v=1, off="false")},
             flags=False, note="FSDP1 without offload"),
        Case("from transformers import TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', optim='adamw_8bit')\n", flags=False),
    ]

    def site_check(self, setup, site):
        optim = strategy(site.known("optim"))
        if not isinstance(optim, str) or optim not in BNB_8BIT:
            return
        version, offload, where = None, None, ""
        fv = site.get("fsdp")
        if fsdp_enabled(fv):
            version = fsdp_version(setup, site)
            if not fsdp2_handling(setup) and not (
                    isinstance(d0 := python_dict(setup, site, "fsdp_config") or {}, dict)
                    and ("version" in d0 or "fsdp_version" in d0)):
                version = 1  # before 5.10 the Trainer's FSDP is FSDP1 unless the config asks for 2
            words = fsdp_options(fv.value) or []  # type: ignore[union-attr]
            cfg = site.get("fsdp_config")
            d = (cfg.value if cfg is not None and isinstance(cfg.value, dict)
                 else python_dict(setup, site, "fsdp_config") if cfg is not None else {})
            offload = "offload" in words or (isinstance(d, dict) and any(
                d.get(k) is True for k in ("cpu_offload", "offload_params", "fsdp_offload_params")))
            where = f"fsdp={fv.value!r}"  # type: ignore[union-attr]
        else:
            acc = _fsdp(setup)
            if acc is None:
                return
            version = acc_fsdp_version(acc)
            offload = _truthy(fsdp_get(acc, "offload_params")) is True
            where = f"the accelerate config {acc.path.rsplit('/', 1)[-1]}"
        if version == 2 and optim in FSDP2_BROKEN:
            why = "FSDP2's sharded DTensor parameters break bitsandbytes' 8-bit optimizer kernels"
        elif version == 1 and offload:
            why = "FSDP CPU offload puts parameters and gradients on the CPU, where its CUDA kernels cannot run"
        else:
            return
        yield self.diagnostic(_span(site, "optim"), f'optim="{optim}" (bitsandbytes 8-bit) with FSDP{version} ({where}): '
                                                    f"{why}; it fails at the first optimizer step; use "
                                                    '"adamw_torch_8bit" or a 32-bit optimizer')
