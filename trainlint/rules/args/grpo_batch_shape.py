"""TL244 grpo-batch-shape: GRPO batch sizes that the config or trainer rejects (num_generations, generation batch, eval batch)"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._setup_util import as_int
from trainlint.rules._spellings import spelled_cases
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    SiteRule,
    fields_for,
    strategy,
    target,
    target_text,
)
from trainlint.rules.args._args_checks_common import _related, _span

V = {"trl_version": "1.10.0"}


class GrpoBatchShape(SiteRule):
    """
    ## What it does
    Flags a `GRPOConfig` whose batch shape TRL rejects, with the formula of the target TRL
    version (read from data generated from the TRL wheels):
    - `num_generations < 2` (every version);
    - 0.15-0.16: `per_device_train_batch_size x processes` not divisible by `num_generations`;
      0.17: `... x gradient_accumulation_steps`; 0.18 and later: the generation batch
      (`generation_batch_size`, else `per_device_train_batch_size x processes x
      steps_per_generation`, which defaults to `gradient_accumulation_steps`);
    - the eval batch (`per_device_eval_batch_size x processes`) not divisible by
      `num_generations_eval` (else `num_generations`) when evaluation is on;
    - `generation_batch_size` together with `steps_per_generation`; `auto_find_batch_size=True`.
    The divisibility checks need the number of processes: they run only when the setup says it
    (a launch line, an accelerate config, `--gpus`).

    ## Why is this bad?
    `ValueError` from `GRPOConfig.__post_init__` or `GRPOTrainer.__init__`, after the model (and
    often a vLLM server) has started: "generation_batch_size (12) must be divisible by
    num_generations (8)", "GRPO requires at least 2 generations per prompt".

    ## Example
    ```python
    GRPOConfig(output_dir="o", per_device_train_batch_size=4, num_generations=8)   # one GPU
    ```

    ## Use instead
    ```python
    GRPOConfig(output_dir="o", per_device_train_batch_size=4, gradient_accumulation_steps=2,
               num_generations=8)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - TRL `trainer/grpo_config.py` (`__post_init__`), `trainer/grpo_trainer.py` (0.15-0.17)
    - https://github.com/huggingface/trl/issues/2858
    """

    code = "TL244"
    name = "grpo-batch-shape"
    severity = Severity.ERROR
    summary = "GRPO batch sizes that the config or trainer rejects"
    triggers = SETUP_NAMES
    fires_on = ("GRPOConfig",)
    cases = [
        *spelled_cases({"num_generations": 1}, cls="GRPOConfig", module="trl", options=V),
        *spelled_cases({"per_device_train_batch_size": 4, "num_generations": 8}, cls="GRPOConfig", module="trl",
                       options={**V, "gpus": 1}, only=("keyword", "dict")),
        *spelled_cases({"per_device_train_batch_size": 4, "num_generations": 8}, cls="GRPOConfig", module="trl",
                       options={"trl_version": "0.16.0", "gpus": 1}, only=("keyword",), note="old formula"),
        *spelled_cases({"generation_batch_size": 16, "steps_per_generation": 2}, cls="GRPOConfig", module="trl",
                       options=V, only=("keyword",)),
        *spelled_cases({"auto_find_batch_size": True}, cls="GRPOConfig", module="trl", options=V, only=("keyword",)),
        *spelled_cases({"per_device_train_batch_size": 4, "num_generations": 8, "gradient_accumulation_steps": 2},
                       cls="GRPOConfig", module="trl", options={**V, "gpus": 1}, flags=False, only=("keyword",)),
        *spelled_cases({"per_device_train_batch_size": 4, "num_generations": 8}, cls="GRPOConfig", module="trl",
                       options=V, flags=False, only=("keyword",), note="the world size is not known"),
        *spelled_cases({"per_device_train_batch_size": 4, "num_generations": 8}, cls="GRPOConfig", module="trl",
                       options={**V, "gpus": 2}, flags=False, only=("keyword",)),
    ]

    def site_check(self, setup, site):
        if site.class_name != "GRPOConfig":
            return
        from trainlint.knowledge import behaviour

        trl = target(setup)[2]
        where = target_text(setup, "trl")
        fields = fields_for(setup, site.class_name) or {}
        ng = as_int(self.eff(setup, site, "num_generations"))
        if ng is not None and ng < 2:
            yield self.diagnostic(_span(site, "num_generations"),
                                  f"num_generations={ng}: GRPO needs at least 2 generations per prompt to compute "
                                  f"group-relative advantages; TRL raises ValueError ({where})")
            return
        gbs, spg = site.get("generation_batch_size"), site.get("steps_per_generation")
        if gbs is not None and spg is not None and gbs.value is not None and spg.value is not None \
                and behaviour.holds("grpo_rejects_generation_batch_and_steps", trl):
            yield self.diagnostic(_span(site, "generation_batch_size"),
                                  "generation_batch_size and steps_per_generation are both set: GRPOConfig raises "
                                  f"ValueError (one derives the other; {where}); keep one",
                                  related=_related(site, "steps_per_generation"))
            return
        afb = site.get("auto_find_batch_size")
        if afb is not None and afb.value is True and behaviour.holds("grpo_rejects_auto_find_batch_size", trl):
            yield self.diagnostic(_span(site, "auto_find_batch_size"),
                                  "auto_find_batch_size=True with GRPO: shrinking the batch on OOM would split prompt "
                                  f"groups, so GRPOConfig raises ValueError ({where}); lower per_device_train_batch_size")
            return
        world = setup.world_size_value
        if world is None or ng is None:
            return
        pdbs = as_int(self.eff(setup, site, "per_device_train_batch_size"))
        gas = as_int(self.eff(setup, site, "gradient_accumulation_steps"))
        if pdbs is None or gas is None:
            return
        batch, formula = None, ""
        if behaviour.holds("grpo_generation_batch_divisible", trl):
            g = as_int(gbs.value) if gbs is not None else None
            s = as_int(spg.value) if spg is not None else None
            if gbs is not None and g is None or spg is not None and s is None:
                return
            if g is not None:
                batch, formula = g, f"generation_batch_size={g}"
            else:
                steps = s if s is not None else gas
                batch = pdbs * world * steps
                formula = (f"generation batch = per_device_train_batch_size {pdbs} x {world} processes x "
                           f"{'steps_per_generation' if s is not None else 'gradient_accumulation_steps'} {steps}")
        elif behaviour.holds("grpo_batch_times_accumulation", trl):
            batch = pdbs * world * gas
            formula = (f"per_device_train_batch_size {pdbs} x {world} processes x gradient_accumulation_steps {gas}")
        elif behaviour.holds("grpo_batch_per_device_times_world", trl):
            batch = pdbs * world
            formula = f"per_device_train_batch_size {pdbs} x {world} processes"
        if batch is not None and batch % ng != 0:
            yield self.diagnostic(_span(site, "num_generations", "per_device_train_batch_size"),
                                  f"{formula} = {batch} is not divisible by num_generations={ng}: TRL raises ValueError "
                                  f"before training ({where}); choose a batch shape that holds whole prompt groups",
                                  related=_related(site, "per_device_train_batch_size", "gradient_accumulation_steps"))
            return
        ev = strategy(self.eff(setup, site, "eval_strategy"))
        if ev not in (None, "no") and isinstance(ev, str) and behaviour.holds("grpo_eval_batch_divisible", trl):
            pdeb = as_int(self.eff(setup, site, "per_device_eval_batch_size"))
            nge = as_int(self.eff(setup, site, "num_generations_eval")) if "num_generations_eval" in fields else None
            n = nge or ng
            if pdeb is not None and (pdeb * world) % n != 0:
                yield self.diagnostic(_span(site, "per_device_eval_batch_size", "num_generations"),
                                      f"the eval batch per_device_eval_batch_size {pdeb} x {world} processes is not "
                                      f"divisible by the eval generations ({n}): GRPOConfig raises ValueError ({where})")
