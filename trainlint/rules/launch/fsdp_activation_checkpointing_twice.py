"""TL411 fsdp-activation-checkpointing-twice: FSDP activation checkpointing plus the Trainer's gradient checkpointing"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import located, set_edit, where
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.launch._accelerate_fsdp_common import (
    FSDP_YAML,
    LAUNCH,
    _fsdp,
    _launch_script,
    _truthy,
    fsdp_get,
)
from trainlint.setup import FLAG, Setup


class FsdpActivationCheckpointingTwice(Rule):
    """
    ## What it does
    Flags FSDP's own activation checkpointing (`fsdp_activation_checkpointing: true` in the
    accelerate config) together with the Trainer's `gradient_checkpointing` /
    `activation_checkpointing` argument (the same double checkpointing, seen from the accelerate config).

    ## Why is this bad?
    The Trainer raises when it builds the accelerator ("The activation_checkpointing in FSDP
    config and the gradient_checkpointing in training arg can't be set to True simultaneously",
    transformers 4.40 to 4.57; "can't both be set to True" in 5.x). The Trainer flag would add a
    redundant AllGather in the backward pass under FULL_SHARD (huggingface/transformers#30404).

    ## Example
    ```yaml
    fsdp_config:
      fsdp_activation_checkpointing: true
    ```
    with `--gradient_checkpointing` on the launch line.

    ## Use instead
    Keep FSDP's activation checkpointing and drop the Trainer flag.

    ## Fix safety
    Safe: FSDP still checkpoints the activations; the fix sets the TrainingArguments flag to
    false where it is written as a value (a script keyword or an args-file key).

    ## References
    - transformers `trainer.py` (4.57 `create_accelerator_and_postprocess`; 5.24 `__init__`)
    - https://github.com/huggingface/transformers/issues/30404
    """

    code = "TL411"
    name = "fsdp-activation-checkpointing-twice"
    severity = Severity.ERROR
    triggers = LAUNCH_NAMES
    needs_training = True
    python_alone = False  # reads only an accelerate config, which a file gives
    fix_safety = "safe"
    summary = "FSDP activation checkpointing plus the Trainer's gradient checkpointing"

    YAML = FSDP_YAML + "  fsdp_activation_checkpointing: true\n"
    cases = [
        Case(files={"run.sh": LAUNCH, "train.py": _launch_script(", gradient_checkpointing=True"), "acc.yaml": YAML},
             fixed=_launch_script(", gradient_checkpointing=False")),
        # must not flag
        Case(files={"run.sh": LAUNCH, "train.py": _launch_script(), "acc.yaml": YAML}, flags=False),
        Case(files={"run.sh": LAUNCH, "train.py": _launch_script(", gradient_checkpointing=True"),
                    "acc.yaml": YAML.replace("true", "false")}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = _fsdp(setup)
        if acc is None:
            return
        ac = fsdp_get(acc, "activation_checkpointing")
        if _truthy(ac) is not True:
            return
        for site in setup.sites:
            for name in ("activation_checkpointing", "gradient_checkpointing"):
                v = site.get(name)
                if v is None or v.value is not True:
                    continue
                edit = set_edit(v, False) if v.origin != FLAG and v.span is not None and v.span != v.key_span else None
                yield self.diagnostic(v.key_span or v.span, f"{located(v)} together with fsdp_activation_checkpointing "  # type: ignore[arg-type]
                                                            f"in {where(ac)}: the Trainer raises, use FSDP's activation "  # type: ignore[arg-type]
                                                            f"checkpointing only", edits=[edit] if edit else None,
                                      fix_message=f"set {name} to False",
                                      related=[ac.span.related("FSDP activation checkpointing")] if ac.span else [])  # type: ignore[union-attr]
                break

