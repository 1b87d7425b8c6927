"""TL409 fsdp1-peft-without-orig-params: FSDP1 with use_orig_params false for a PEFT model trained without the Trainer"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_models import uses_hf_trainer
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.launch._accelerate_fsdp_common import (
    FSDP_YAML,
    LAUNCH,
    _fsdp,
    _truthy,
    fsdp_get,
    fsdp_version,
)
from trainlint.setup import Setup


class Fsdp1PeftOrigParams(Rule):
    """
    ## What it does
    Flags FSDP version 1 with `fsdp_use_orig_params: false` when the script trains a PEFT model
    (`get_peft_model`) in its own loop, without the HF Trainer.

    ## Why is this bad?
    FSDP1 flattens each wrapped unit into one tensor, which must have a uniform `requires_grad`;
    a decoder layer wrapped with `TRANSFORMER_BASED_WRAP` holds frozen base weights and
    trainable LoRA weights together: "Must flatten tensors with uniform requires_grad when
    use_orig_params=False". The HF Trainer avoids it by switching to PEFT's own wrap policy
    (which wraps the LoRA layers separately), a plain accelerate loop does not.

    ## Example
    ```yaml
    distributed_type: FSDP
    fsdp_config:
      fsdp_use_orig_params: false
    ```
    with `model = get_peft_model(model, LoraConfig(...))` and `accelerator.prepare(model, ...)`.

    ## Use instead
    ```yaml
    fsdp_config:
      fsdp_use_orig_params: true
    ```

    ## Fix safety
    Safe: the same parameters are trained; `use_orig_params` only changes how FSDP exposes them.

    ## References
    - https://github.com/huggingface/peft/issues/1702
    - https://github.com/pytorch/pytorch/issues/100945
    - transformers `distributed/fsdp.py` (`update_fsdp_plugin_peft`)
    """

    code = "TL409"
    name = "fsdp1-peft-without-orig-params"
    severity = Severity.ERROR
    triggers = LAUNCH_NAMES
    python_alone = False  # reads only an accelerate config, which a file gives
    fix_safety = "safe"
    summary = "FSDP1 with use_orig_params false for a PEFT model trained without the Trainer"

    SCRIPT = ("from accelerate import Accelerator\nfrom peft import LoraConfig, get_peft_model\n"
              "from transformers import AutoModelForCausalLM\n"
              "model = get_peft_model(AutoModelForCausalLM.from_pretrained('m'), LoraConfig())\n"
              "accelerator = Accelerator()\nmodel = accelerator.prepare(model)\n")
    YAML = FSDP_YAML + "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  fsdp_use_orig_params: false\n"
    cases = [
        Case(files={"run.sh": LAUNCH, "train.py": SCRIPT, "acc.yaml": YAML}, fixed_path="acc.yaml",
             fixed=YAML.replace("fsdp_use_orig_params: false", "fsdp_use_orig_params: true")),
        # must not flag
        Case(files={"run.sh": LAUNCH, "train.py": SCRIPT,
                    "acc.yaml": YAML.replace("fsdp_use_orig_params: false", "fsdp_use_orig_params: true")}, flags=False),
        Case(files={"run.sh": LAUNCH, "acc.yaml": YAML,
                    "train.py": SCRIPT + "from transformers import Trainer\nTrainer(model=model).train()\n"},
             flags=False, note="the Trainer switches to PEFT's wrap policy"),
        Case(files={"run.sh": LAUNCH, "train.py": SCRIPT, "acc.yaml": YAML + "  fsdp_version: 2\n"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = _fsdp(setup)
        if acc is None or fsdp_version(acc) != 1 or uses_hf_trainer(setup):
            return
        uop = fsdp_get(acc, "use_orig_params")
        if _truthy(uop) is not False or uop.span is None:  # type: ignore[union-attr]
            return
        peft = [(pf, cs) for pf in setup.scripts for cs in pf.calls
                if pf.qualname(cs.node.func) in ("peft.get_peft_model", "peft.PeftModel.from_pretrained")]
        if not peft:
            return
        pf, cs = peft[0]
        yield self.diagnostic(uop.span, "FSDP1 with use_orig_params false and a PEFT model trained without the "  # type: ignore[union-attr]
                                        "Trainer: frozen and LoRA weights share wrapped units, FSDP raises \"Must "
                                        "flatten tensors with uniform requires_grad\"", edits=[uop.span.edit("true")],  # type: ignore[union-attr]
                              fix_message="set fsdp_use_orig_params to true",
                              related=[pf.span(cs.node).related("the PEFT model is built here")])

