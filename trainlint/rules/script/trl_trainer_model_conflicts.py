"""TL127 trl-trainer-model-conflicts: a PeftModel with peft_config, quantization_config twice, or ref_model=model"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import base_trainer_class, flow_for, trainer_sites
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import python_dict, target, target_text
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

HEAD = ("from transformers import AutoModelForCausalLM, BitsAndBytesConfig\n"
        "from trl import SFTTrainer, SFTConfig, DPOTrainer, DPOConfig\nfrom peft import LoraConfig, get_peft_model\n")
PEFT_MODEL = "model = get_peft_model(AutoModelForCausalLM.from_pretrained('m'), LoraConfig())\n"


def _is_none(expr: ast.AST | None) -> bool:
    return expr is None or (isinstance(expr, ast.Constant) and expr.value is None)


class TrlTrainerModelConflicts(Rule):
    """
    ## What it does
    Flags three TRL trainer calls that raise in `__init__`, on the TRL versions that carry the
    check (ranges generated from the TRL wheels):
    - `SFTTrainer(model=<a PeftModel>, peft_config=...)`: a model that already has adapters
      (`get_peft_model`, `PeftModel.from_pretrained`, `AutoPeftModel...`) plus a new config;
    - `SFTTrainer(model="name", quantization_config=..., args=SFTConfig(model_init_kwargs=
      {"quantization_config": ...}))`: the quantization set in both places;
    - `DPOTrainer(model=m, ref_model=m)`: the policy passed again as its own reference.

    ## Why is this bad?
    `ValueError: You passed a PeftModel instance together with a peft_config to the trainer`;
    "You set `quantization_config` both as a trainer argument and in `args.model_init_kwargs`";
    "`model` and `ref_model` cannot be the same object": each after the model is loaded.

    ## Example
    ```python
    model = get_peft_model(base, LoraConfig())
    SFTTrainer(model=model, args=SFTConfig(output_dir="o"), peft_config=LoraConfig())
    ```

    ## Use instead
    ```python
    SFTTrainer(model=base, args=SFTConfig(output_dir="o"), peft_config=LoraConfig())
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - TRL `trainer/sft_trainer.py` and `trainer/dpo_trainer.py` (`__init__` checks)
    """

    code = "TL127"
    name = "trl-trainer-model-conflicts"
    severity = Severity.ERROR
    summary = "a PeftModel with peft_config, quantization_config twice, or ref_model=model"
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("SFTTrainer", "DPOTrainer")
    cases = [
        Case(HEAD + PEFT_MODEL + "SFTTrainer(model=model, args=SFTConfig(output_dir='o'), peft_config=LoraConfig())\n"),
        Case(HEAD + "q = BitsAndBytesConfig(load_in_4bit=True)\n"
                    "args = SFTConfig(output_dir='o', model_init_kwargs={'quantization_config': q})\n"
                    "SFTTrainer(model='m', args=args, quantization_config=q)\n"),
        Case(HEAD + "model = AutoModelForCausalLM.from_pretrained('m')\n"
                    "DPOTrainer(model=model, ref_model=model, args=DPOConfig(output_dir='o'))\n"),
        Case(HEAD + PEFT_MODEL + "SFTTrainer(model=model, args=SFTConfig(output_dir='o'))\n", flags=False),
        Case(HEAD + PEFT_MODEL + "SFTTrainer(model=model, args=SFTConfig(output_dir='o'), peft_config=LoraConfig())\n",
             flags=False, options={"trl_version": "0.20.0"}, note="older TRL did not check"),
        Case(HEAD + "model = AutoModelForCausalLM.from_pretrained('m')\nref = AutoModelForCausalLM.from_pretrained('m')\n"
                    "DPOTrainer(model=model, ref_model=ref, args=DPOConfig(output_dir='o'))\n", flags=False),
        Case(HEAD + "DPOTrainer(model='m', ref_model='m', args=DPOConfig(output_dir='o'))\n", flags=False,
             note="two names of checkpoints load two models"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        trl = target(setup)[2]
        for pf in setup.scripts:
            for tc in pf.trainer_calls:
                base = base_trainer_class(pf, tc)
                if base not in ("SFTTrainer", "DPOTrainer"):
                    continue
                from trainlint.knowledge import behaviour

                model = tc.keywords.get("model")
                if base == "SFTTrainer":
                    peft_cfg = tc.keywords.get("peft_config")
                    if not _is_none(peft_cfg) and behaviour.holds("sft_rejects_peft_model_with_peft_config", trl):
                        flow = flow_for(pf, tc)
                        if flow is not None and (flow.step("peft") or any(ld.adapters for ld in flow.loads)):
                            yield self.diagnostic(pf.span(peft_cfg),  # type: ignore[arg-type]
                                                  "SFTTrainer gets a model that already has PEFT adapters and a "
                                                  f"peft_config: it raises ValueError ({target_text(setup, 'trl')}); "
                                                  "pass the base model with peft_config, or the PeftModel alone")
                    qc = tc.keywords.get("quantization_config")
                    if not _is_none(qc) and isinstance(model, ast.Constant) and isinstance(model.value, str) \
                            and behaviour.holds("sft_rejects_quantization_config_twice", trl):
                        for site in trainer_sites(setup, pf, tc) or []:
                            mik = python_dict(setup, site, "model_init_kwargs")
                            if mik is not None and "quantization_config" in mik:
                                yield self.diagnostic(pf.span(qc),  # type: ignore[arg-type]
                                                      "quantization_config is given to SFTTrainer and in "
                                                      "model_init_kwargs: it raises ValueError "
                                                      f"({target_text(setup, 'trl')}); set it in one place")
                                break
                else:
                    ref = tc.keywords.get("ref_model")
                    if isinstance(model, ast.Name) and isinstance(ref, ast.Name) and model.id == ref.id \
                            and behaviour.holds("dpo_rejects_same_ref_model", trl):
                        b = pf.binding_of(model.id, tc.site.scope)
                        if b is not None and b.value is not None and isinstance(b.value, ast.Constant):
                            continue  # a checkpoint name: TRL loads two models
                        yield self.diagnostic(pf.span(ref),
                                              f"ref_model is the same object as model ({model.id}): DPOTrainer raises "
                                              "ValueError; omit ref_model (TRL builds a frozen copy, or uses the "
                                              "adapter-disabled model with PEFT)")
