"""TL412 fsdp-cpu-ram-efficient-loading-without-sync: FSDP cpu_ram_efficient_loading with sync_module_states false"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import where
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.launch._accelerate_fsdp_common import (
    FSDP_YAML,
    _fsdp,
    fsdp_get,
)
from trainlint.setup import Setup


class CpuRamEfficientWithoutSync(Rule):
    """
    ## What it does
    Flags an FSDP accelerate config with `fsdp_sync_module_states: false` while
    `fsdp_cpu_ram_efficient_loading` is true (which is the launcher's default when it is left
    out).

    ## Why is this bad?
    With CPU-RAM-efficient loading only rank 0 loads the weights; the others must receive them
    through `sync_module_states`, or they train random weights. `accelerate launch` refuses
    ("When using `--fsdp_cpu_ram_efficient_loading` set `--fsdp_sync_module_states` to
    `True`"), and transformers 4.x raised the same in TrainingArguments (A19).

    ## Example
    ```yaml
    fsdp_config:
      fsdp_cpu_ram_efficient_loading: true
      fsdp_sync_module_states: false
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      fsdp_cpu_ram_efficient_loading: true
      fsdp_sync_module_states: true
    ```

    ## Fix safety
    Safe: the weights are broadcast from rank 0, which is what the loading mode needs.

    ## References
    - accelerate `utils/launch.py` (`prepare_multi_gpu_env`), `utils/dataclasses.py`
    """

    code = "TL412"
    name = "fsdp-cpu-ram-efficient-loading-without-sync"
    severity = Severity.ERROR
    triggers = LAUNCH_NAMES
    python_alone = False  # reads only an accelerate config, which a file gives
    fix_safety = "safe"
    summary = "FSDP cpu_ram_efficient_loading with sync_module_states false"

    cases = [
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_cpu_ram_efficient_loading: true\n  fsdp_sync_module_states: false\n"},
             fixed_path="acc.yaml",
             fixed=FSDP_YAML + "  fsdp_cpu_ram_efficient_loading: true\n  fsdp_sync_module_states: true\n"),
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_sync_module_states: false\n"}, note="loading defaults to true"),
        # must not flag
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_cpu_ram_efficient_loading: false\n  fsdp_sync_module_states: false\n"},
             flags=False),
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_cpu_ram_efficient_loading: true\n"}, flags=False),
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_sync_module_states: 'false'\n"}, flags=False,
             note="a quoted string is truthy for the launcher; the plugin then forces sync on with a warning"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = _fsdp(setup)
        if acc is None:
            return
        # the launcher's own test: ``if args.fsdp_cpu_ram_efficient_loading and not
        # args.fsdp_sync_module_states`` on the values as YAML gives them (a quoted "false" is truthy)
        sync = fsdp_get(acc, "sync_module_states")
        if sync is None or sync.span is None or bool(sync.value):
            return
        load = fsdp_get(acc, "cpu_ram_efficient_loading")
        if load is not None and not load.value:
            return
        how = f"cpu_ram_efficient_loading in {where(load)}" if load is not None else \
            "cpu_ram_efficient_loading (on by default in accelerate launch)"
        yield self.diagnostic(sync.span, f"fsdp_sync_module_states false with {how}: accelerate launch refuses, "  # type: ignore[union-attr]
                                         f"the other ranks would train random weights",
                              edits=[sync.span.edit("true")], fix_message="set fsdp_sync_module_states to true")  # type: ignore[union-attr]

