"""TL320 deepspeed-sub-group-size-with-offload: sub_group_size far above its default with optimizer offload"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_config_common import _ds
from trainlint.rules.deepspeed.deepspeed_unknown_key import ds_schema
from trainlint.setup import Setup

FACTOR = 10  # "far above": ten times DeepSpeed's default or more


def _default() -> int | None:
    info = ds_schema().get("zero_optimization", {}).get("sub_group_size", {})
    d = info.get("default")
    return int(d) if isinstance(d, (int, float)) else None


class DeepSpeedSubGroupSizeWithOffload(Rule):
    """
    ## What it does
    Flags `zero_optimization.sub_group_size` at ten times DeepSpeed's default (1e9, read from
    DeepSpeed's config schema data) or more, together with optimizer offload
    (`offload_optimizer.device` `cpu`/`nvme`).

    ## Why is this bad?
    ZeRO-3 steps the optimizer one sub-group of parameters at a time; with offload, each
    sub-group is moved between the device and the CPU/NVMe buffers in turn. A huge
    `sub_group_size` makes the whole partition one group: the optimizer step then needs buffers
    for all of it at once, a memory spike that can run out of CPU or GPU memory at the first step.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "sub_group_size": 1e12,
                           "offload_optimizer": {"device": "cpu"}}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "sub_group_size": 1e9,
                           "offload_optimizer": {"device": "cpu"}}}
    ```

    ## Fix safety
    Unsafe: the fix writes DeepSpeed's default. The sub-group size changes how the optimizer
    step is chunked, not what it computes, but DeepSpeed is not run here to prove it.

    ## References
    - https://www.deepspeed.ai/docs/config-json/ (`sub_group_size`)
    - DeepSpeed `runtime/zero/stage3.py` (sub-group partitioning of the optimizer step)
    """

    code = "TL320"
    name = "deepspeed-sub-group-size-with-offload"
    severity = Severity.WARNING
    fix_safety = "unsafe"
    summary = "sub_group_size far above its default with optimizer offload"
    triggers = ()
    cases = [
        Case(files={"ds.json": '{"zero_optimization": {"stage": 3, "sub_group_size": 1e12, '
                               '"offload_optimizer": {"device": "cpu"}}}\n'}, fixed_path="ds.json", unsafe=True,
             fixed='{"zero_optimization": {"stage": 3, "sub_group_size": 1000000000, '
                   '"offload_optimizer": {"device": "cpu"}}}\n'),
        Case(files={"ds.json": '{"zero_optimization": {"stage": 3, "sub_group_size": 1e12, '
                               '"offload_optimizer": {"device": "none"}}}\n'}, flags=False),
        Case(files={"ds.json": '{"zero_optimization": {"stage": 3, "sub_group_size": 1e9, '
                               '"offload_optimizer": {"device": "cpu"}}}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        v = cfg.value("zero_optimization.sub_group_size")
        if v is None or not isinstance(v.value, (int, float)) or isinstance(v.value, bool):
            return
        dev = cfg.offload_optimizer_device
        if dev is None or not isinstance(dev.value, str) or dev.value.lower() not in ("cpu", "nvme"):
            return
        default = _default()
        if default is None or v.value < FACTOR * default:
            return
        yield self.diagnostic(v.key_span or v.span,  # type: ignore[arg-type]
                              f"sub_group_size={v.value:g} with optimizer offload to {dev.value}: the whole partition "
                              f"becomes one sub-group and the optimizer step needs its buffers at once (a memory "
                              f"spike); use DeepSpeed's default {default:g}",
                              edits=[v.span.edit(str(default))] if v.span is not None else None,
                              fix_message=f"use the default {default}")
