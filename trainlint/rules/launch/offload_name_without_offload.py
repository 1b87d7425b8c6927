"""TL416 offload-name-without-offload: a config named for offload whose offload devices are none"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

WORDS = ("offload",)
NONE = ("none", "", "null")


def _device(v) -> str | None:
    if v is None:
        return None
    return str(v.value).lower() if v.value is not None else "none"


class OffloadNameWithoutOffload(Rule):
    """
    ## What it does
    Flags a DeepSpeed JSON (or an accelerate YAML with a DeepSpeed block) whose file name says
    `offload` (`ds_zero3_offload.json`, `zero2_cpu_offload.yaml`) while none of its offload
    devices is `cpu` or `nvme` (`offload_optimizer`/`offload_param` absent or `"none"`).

    ## Why is this bad?
    The file does not do what its name says: a launch that picks it to fit a model in memory
    runs without offload and may run out of memory, or a config was edited and the name was not.
    It is only a hint (the name may be stale on purpose), so this is advice.

    ## Example
    `ds_zero3_offload.json`:
    ```json
    {"zero_optimization": {"stage": 3, "offload_param": {"device": "none"}}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}}
    ```
    or rename the file.

    ## Fix safety
    No automatic fix.

    ## References
    - https://www.deepspeed.ai/docs/config-json/ (`offload_param`, `offload_optimizer`)
    - https://huggingface.co/docs/accelerate/usage_guides/deepspeed (`offload_optimizer_device`)
    """

    code = "TL416"
    name = "offload-name-without-offload"
    severity = Severity.INFO
    summary = "a config named for offload whose offload devices are none"
    triggers = ()
    cases = [
        Case(files={"ds_zero3_offload.json": '{"zero_optimization": {"stage": 3, "offload_param": {"device": "none"}, '
                                             '"offload_optimizer": {"device": "none"}}}\n'}),
        Case(files={"zero2_cpu_offload.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
                                              "deepspeed_config:\n  zero_stage: 2\n  offload_optimizer_device: none\n"
                                              "num_processes: 2\n"}),
        Case(files={"ds_zero3_offload.json": '{"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}}\n'},
             flags=False),
        Case(files={"ds_zero3.json": '{"zero_optimization": {"stage": 3, "offload_param": {"device": "none"}}}\n'},
             flags=False),
        Case(files={"zero3_offload.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
                                          "deepspeed_config:\n  zero_stage: 3\n  offload_param_device: cpu\n"
                                          "num_processes: 2\n"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        ds = setup.extra.get("deepspeed")
        if ds is not None and any(w in Path(ds.path).name.lower() for w in WORDS):
            devs = [_device(ds.offload_device(w)) for w in ("optimizer", "param")]
            if all(d is None or d in NONE for d in devs):
                node = ds.zero_optimization or ds.root
                yield self.diagnostic(node.key_span or node.span,
                                      f"{Path(ds.path).name} is named for offload but offloads nothing (no "
                                      "offload_optimizer/offload_param device cpu or nvme): check that the file does "
                                      "what its name says")
        acc = setup.extra.get("accelerate")
        if acc is None or acc.deepspeed_config is None or not any(w in Path(acc.path).name.lower() for w in WORDS):
            return
        if acc.deepspeed_config_file is not None:
            return
        devs = [_device(acc.deepspeed_value(k)) for k in ("offload_optimizer_device", "offload_param_device")]
        if all(d is None or d in NONE for d in devs):
            node = acc.deepspeed_config
            yield self.diagnostic(node.key_span or node.span,
                                  f"{Path(acc.path).name} is named for offload but its deepspeed_config offloads "
                                  "nothing (offload_optimizer_device/offload_param_device none): check that the file "
                                  "does what its name says")
