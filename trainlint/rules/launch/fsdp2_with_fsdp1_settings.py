"""TL410 fsdp2-with-fsdp1-settings: FSDP2 config with FSDP1 settings (sharding-strategy reshard_after_forward, ignored keys)"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.launch._accelerate_fsdp_common import (
    FSDP_YAML,
    _fsdp,
    _truthy,
    fsdp_get,
    fsdp_version,
)
from trainlint.setup import Setup

SHARDING_TO_RESHARD = {"FULL_SHARD": "true", "SHARD_GRAD_OP": "false", "HYBRID_SHARD": "true",
                       "_HYBRID_SHARD_ZERO2": "false", "NO_SHARD": None}


FSDP1_ONLY = ("forward_prefetch", "backward_prefetch", "use_orig_params", "sync_module_states", "sharding_strategy")



class FsdpVersionSettings(Rule):
    """
    ## What it does
    Checks an accelerate config with `fsdp_version: 2` for FSDP1 settings:
    `fsdp_reshard_after_forward` written as a sharding strategy (`FULL_SHARD`, ...) is an
    error; `fsdp_forward_prefetch`, `fsdp_backward_prefetch`, `fsdp_use_orig_params`,
    `fsdp_sync_module_states` and `fsdp_sharding_strategy` have no effect (info).

    ## Why is this bad?
    Under FSDP2 the plugin reads `reshard_after_forward` as a boolean (`str_to_bool`, "invalid
    truth value full_shard"); it never reads the FSDP1-only settings from the launcher (or
    warns "backward_prefetch is not supported in FSDP2" and drops it), so a config migrated
    from FSDP1 silently loses them.

    ## Example
    ```yaml
    fsdp_config:
      fsdp_version: 2
      fsdp_reshard_after_forward: FULL_SHARD
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      fsdp_version: 2
      fsdp_reshard_after_forward: true   # SHARD_GRAD_OP -> false
    ```

    ## Fix safety
    Safe: `FULL_SHARD`/`HYBRID_SHARD` become `true`, `SHARD_GRAD_OP` `false`, the FSDP2 meaning
    of the same strategy.

    ## References
    - accelerate `utils/dataclasses.py` (`FullyShardedDataParallelPlugin.__post_init__`),
      `utils/launch.py` (`prepare_multi_gpu_env`)
    """

    code = "TL410"
    name = "fsdp2-with-fsdp1-settings"
    severity = Severity.ERROR
    triggers = LAUNCH_NAMES
    python_alone = False  # reads only an accelerate config, which a file gives
    fix_safety = "safe"
    summary = "FSDP2 config with FSDP1 settings (sharding-strategy reshard_after_forward, ignored keys)"

    YAML = FSDP_YAML + "  fsdp_version: 2\n"
    cases = [
        Case(files={"acc.yaml": YAML + "  fsdp_reshard_after_forward: SHARD_GRAD_OP\n"}, fixed_path="acc.yaml",
             fixed=YAML + "  fsdp_reshard_after_forward: false\n"),
        Case(files={"acc.yaml": YAML + "  fsdp_reshard_after_forward: true\n  fsdp_use_orig_params: true\n"},
             note="info: ignored under FSDP2"),
        # must not flag
        Case(files={"acc.yaml": YAML + "  fsdp_reshard_after_forward: true\n"}, flags=False),
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_reshard_after_forward: FULL_SHARD\n  fsdp_use_orig_params: true\n"},
             flags=False, note="FSDP1"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = _fsdp(setup)
        if acc is None or fsdp_version(acc) != 2:
            return
        raf = fsdp_get(acc, "reshard_after_forward")
        if raf is not None and raf.span is not None and _truthy(raf) is None:
            new = SHARDING_TO_RESHARD.get(str(raf.value).upper())
            yield self.diagnostic(raf.span, f"fsdp_reshard_after_forward {raf.value!r} is an FSDP1 sharding strategy: "
                                            f"FSDP2 reads it as a boolean and raises (\"invalid truth value\")",
                                  edits=[raf.span.edit(new)] if new else None,
                                  fix_message=f"write {new}")
        for key in FSDP1_ONLY:
            v = fsdp_get(acc, key)
            if v is None or v.key_span is None:
                continue
            if key == "forward_prefetch" and _truthy(v) is not True:
                continue
            if key == "backward_prefetch" and str(v.value).upper() == "NO_PREFETCH":
                continue
            yield self.diagnostic(v.key_span, f"{v.name.split('.')[-1]} is an FSDP1 setting: with fsdp_version 2 "
                                              f"accelerate does not use it", severity=Severity.INFO)

