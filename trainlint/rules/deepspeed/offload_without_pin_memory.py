"""TL307 offload-without-pin-memory: CPU/NVMe offload without pin_memory set"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_config_common import (
    _ds,
)
from trainlint.setup import Setup


class OffloadWithoutPinMemory(Rule):
    """
    ## What it does
    Flags `offload_optimizer` / `offload_param` to `cpu` or `nvme` without `pin_memory` written.

    ## Why is this bad?
    Unpinned host buffers make every host/device copy of the offloaded states slower. DeepSpeed
    up to 0.18 defaults `pin_memory` to false (0.19 defaults to true), so the speed of
    an offloaded run depends on the installed version; the DeepSpeed guide's ZeRO-2/3 templates
    set it explicitly. Pinned memory is taken from the RAM other processes can use.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": true}}}
    ```

    ## Fix safety
    Unsafe: numerics are unchanged, but page-locked memory cannot be swapped and is limited
    (`ulimit -l`, container memlock): the offloaded optimizer states (12 bytes per parameter
    under Adam) pinned on a host without room for them fail at start-up, where unpinned they
    ran. Check the host RAM and limits first.

    ## References
    - DeepSpeed `runtime/zero/offload_config.py` (`pin_memory` default)
    - https://huggingface.co/docs/transformers/deepspeed (ZeRO-2/ZeRO-3 example configs)
    """

    code = "TL307"
    name = "offload-without-pin-memory"
    severity = Severity.INFO
    triggers = DEEPSPEED_NAMES
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    fix_safety = "unsafe"
    summary = "CPU/NVMe offload without pin_memory set"

    cases = [
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "offload_optimizer": {"device": "cpu"}}}\n'},
             fixed='{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                   ' "offload_optimizer": {"device": "cpu", "pin_memory": true}}}\n', fixed_path="ds.json",
             unsafe=True),
        # must not flag
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "offload_optimizer": {"device": "cpu", "pin_memory": true}}}\n'}, flags=False),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "offload_optimizer": {"device": "none"}}}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        from trainlint.sources.jsondoc import JsonNode, insert_key_edit

        for which in ("optimizer", "param"):
            node = cfg.node(f"zero_optimization.offload_{which}")
            dev = cfg.value(f"zero_optimization.offload_{which}.device")
            if node is None or not node.is_mapping or dev is None or dev.value not in ("cpu", "nvme"):
                continue
            if node.get("pin_memory") is not None:
                continue
            edits = [insert_key_edit(node, "pin_memory", "true")] if isinstance(node, JsonNode) else None
            yield self.diagnostic(dev.span, f"offload_{which} to {dev.value} without pin_memory: unpinned host "  # type: ignore[arg-type]
                                            f"buffers make the offload copies slower (DeepSpeed <= 0.18 defaults "
                                            f"to unpinned)", edits=edits, fix_message="set pin_memory to true",
                                 applicability="unsafe")

