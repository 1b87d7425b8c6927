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
    devices is `cpu` or `nvme` (`offload_optimizer`/`offload_param` absent or `"none"`). A name
    that negates the word (`ds_zero2_no_offload.json`, `zero3_without_offload.json`,
    `nooffload`, `offload_none`) says the file offloads nothing, and is not reported.

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
        Case(files={"ds_zero2_no_offload.json": '{"zero_optimization": {"stage": 2}}\n'}, flags=False,
             note="Chinese-LLaMA-Alpaca-2: named for no offload"),
        Case(files={"zero3-without-offload.json": '{"zero_optimization": {"stage": 3}}\n'}, flags=False),
        Case(files={"ds_zero3_nooffload.json": '{"zero_optimization": {"stage": 3}}\n'}, flags=False),
        Case(files={"zero2_offload_none.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
                                               "deepspeed_config:\n  zero_stage: 2\n  offload_optimizer_device: none\n"
                                               "num_processes: 2\n"}, flags=False),
        Case(files={"ds_no_fp16_offload.json": '{"zero_optimization": {"stage": 3}}\n'},
             note="the negation is of another word"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        ds = setup.extra.get("deepspeed")
        if ds is not None and named_for_offload(Path(ds.path).name):
            devs = [_device(ds.offload_device(w)) for w in ("optimizer", "param")]
            if all(d is None or d in NONE for d in devs):
                node = ds.zero_optimization or ds.root
                yield self.diagnostic(node.key_span or node.span,
                                      f"{Path(ds.path).name} is named for offload but offloads nothing (no "
                                      "offload_optimizer/offload_param device cpu or nvme): check that the file does "
                                      "what its name says")
        acc = setup.extra.get("accelerate")
        if acc is None or acc.deepspeed_config is None or not named_for_offload(Path(acc.path).name):
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



_NEGATIONS = ("no", "non", "not", "without", "wo", "disable", "disabled")
_NEGATED_AFTER = ("none", "off", "false", "disabled")


def named_for_offload(file_name: str) -> bool:
    """The file name says the config offloads: a word ``offload`` that no negation next to it
    turns around (``no_offload``, ``without-offload``, ``nooffload``, ``offload_none``)."""
    import re

    words = re.findall(r"[a-z0-9]+", file_name.lower())
    for i, w in enumerate(words):
        if not any(k in w for k in WORDS):
            continue
        head = w[: w.index("offload")] if "offload" in w else ""
        negated = head in _NEGATIONS or (i > 0 and words[i - 1] in _NEGATIONS and not head) \
            or (i + 1 < len(words) and words[i + 1] in _NEGATED_AFTER)
        if not negated:
            return True
    return False
