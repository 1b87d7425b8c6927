"""TL135 rl-trainer-config-mismatch: GRPO reward_weights vs reward_funcs, DPO loss_weights vs loss_type, exo_pair without label smoothing"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import base_trainer_class, trainer_sites
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import effective, target, target_text
from trainlint.rules.args._args_checks_common import _related, _span
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

GRPO = "from trl import GRPOConfig, GRPOTrainer\n"
DPO = "from trl import DPOConfig\n"


class RlTrainerConfigMismatch(Rule):
    """
    ## What it does
    Flags, on the TRL versions that check them (ranges generated from the TRL wheels):
    - `GRPOConfig(reward_weights=[...])` whose length differs from the `reward_funcs` list given
      to `GRPOTrainer`;
    - `DPOConfig(loss_type=[...], loss_weights=[...])` of different lengths;
    - `DPOConfig(loss_type="exo_pair")` with `label_smoothing=0` (the default).

    ## Why is this bad?
    Each raises `ValueError` at start-up: "Number of reward weights (2) must match number of
    reward functions (3)"; "`loss_weights` must have the same length as `loss_type`"; "Label
    smoothing must be greater than 0.0 when using 'exo_pair' loss".

    ## Example
    ```python
    GRPOTrainer(model="m", reward_funcs=[fmt, acc, length],
                args=GRPOConfig(output_dir="o", reward_weights=[1.0, 0.5]))
    ```

    ## Use instead
    ```python
    GRPOTrainer(model="m", reward_funcs=[fmt, acc, length],
                args=GRPOConfig(output_dir="o", reward_weights=[1.0, 0.5, 0.2]))
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - TRL `trainer/grpo_trainer.py` (`reward_weights`), `trainer/dpo_config.py`, `trainer/dpo_trainer.py`
    """

    code = "TL135"
    name = "rl-trainer-config-mismatch"
    severity = Severity.ERROR
    summary = "GRPO reward_weights vs reward_funcs, DPO loss_weights vs loss_type, exo_pair without smoothing"
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("DPOConfig", "GRPOTrainer")
    cases = [
        Case(GRPO + "args = GRPOConfig(output_dir='o', reward_weights=[1.0, 0.5])\n"
                    "GRPOTrainer(model='m', reward_funcs=[f, g, h], args=args)\n"),
        Case(DPO + "args = DPOConfig(output_dir='o', loss_type=['sigmoid', 'sft'], loss_weights=[1.0])\n"),
        Case(DPO + "args = DPOConfig(output_dir='o', loss_type='exo_pair')\n"),
        Case(GRPO + "args = GRPOConfig(output_dir='o', reward_weights=[1.0, 0.5])\n"
                    "GRPOTrainer(model='m', reward_funcs=[f, g], args=args)\n", flags=False),
        Case(GRPO + "args = GRPOConfig(output_dir='o', reward_weights=[1.0, 0.5])\n"
                    "GRPOTrainer(model='m', reward_funcs=funcs, args=args)\n", flags=False),
        Case(DPO + "args = DPOConfig(output_dir='o', loss_type='exo_pair', label_smoothing=0.1)\n", flags=False),
        Case(DPO + "args = DPOConfig(output_dir='o', loss_type=['sigmoid', 'sft'], loss_weights=[1.0, 0.5])\n",
             flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        dpo = [s for s in setup.sites if s.class_name == "DPOConfig"]
        grpo = [(pf, tc) for pf in setup.scripts for tc in pf.trainer_calls
                if base_trainer_class(pf, tc) == "GRPOTrainer"]
        if not dpo and not grpo:  # the cheap guard: no TRL data read otherwise
            return
        from trainlint.knowledge import behaviour

        trl = target(setup)[2]
        where = target_text(setup, "trl")
        for site in dpo:
            if site.class_name != "DPOConfig":
                continue
            lt = effective(setup, site, "loss_type")
            types = [lt] if isinstance(lt, str) else list(lt) if isinstance(lt, (list, tuple)) else None
            lw = site.get("loss_weights")
            if types is not None and lw is not None and isinstance(lw.value, (list, tuple)) \
                    and len(lw.value) != len(types) and behaviour.holds("dpo_loss_weights_length", trl):
                yield self.diagnostic(_span(site, "loss_weights"),
                                      f"loss_weights has {len(lw.value)} entries for {len(types)} loss_type values: "
                                      f"DPOConfig raises ValueError ({where}); give one weight per loss type",
                                      related=_related(site, "loss_type"))
            ls = effective(setup, site, "label_smoothing")
            if types is not None and "exo_pair" in types and ls == 0 \
                    and behaviour.holds("dpo_exo_pair_needs_label_smoothing", trl):
                yield self.diagnostic(_span(site, "loss_type"),
                                      "loss_type exo_pair with label_smoothing=0: DPOTrainer raises ValueError (the "
                                      f"EXO loss needs a positive smoothing, the paper uses 1e-3; {where})")
        if not behaviour.holds("grpo_reward_weights_length", trl):
            return
        for pf, tc in grpo:
            funcs = tc.keywords.get("reward_funcs")
            if isinstance(funcs, ast.Name):
                b = pf.binding_of(funcs.id, tc.site.scope)
                funcs = b.value if b is not None and b.kind in ("assign", "annassign") else None
            if not isinstance(funcs, (ast.List, ast.Tuple)) or any(isinstance(e, ast.Starred) for e in funcs.elts):
                continue
            for site in trainer_sites(setup, pf, tc) or []:
                rw = site.get("reward_weights")
                if rw is None or not isinstance(rw.value, (list, tuple)) or len(rw.value) == len(funcs.elts):
                    continue
                yield self.diagnostic(_span(site, "reward_weights"),
                                      f"reward_weights has {len(rw.value)} entries but GRPOTrainer gets "
                                      f"{len(funcs.elts)} reward_funcs: it raises ValueError ({where}); give one "
                                      "weight per reward function",
                                      related=[pf.span(funcs).related("the reward functions")])
