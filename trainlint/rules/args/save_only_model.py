"""TL226: ``save_only_model=True`` where the Trainer refuses it (DeepSpeed/FSDP)."""

from __future__ import annotations

from typing import Iterator

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._versioned import (
    SiteRule,
    effective,
    behaviour_holds,
    remove_edit,
    wrapper_of,
)
from trainlint.rules.base import Case
from trainlint.setup import ArgsSite, Setup

# The release whose Trainer rejects save_only_model with FSDP's SHARDED_STATE_DICT: the
# behaviour marker "save_only_model_rejects_sharded_fsdp" (trainer.py of every release).
SHARDED_MARKER = "save_only_model_rejects_sharded_fsdp"

TA = "from transformers import TrainingArguments\n"
HF_SCRIPT = ("from transformers import HfArgumentParser, TrainingArguments\n"
             "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n")
FSDP_YAML = ("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 2\n"
             "fsdp_config:\n  fsdp_version: 2\n  fsdp_state_dict_type: {sdt}\n")


class SaveOnlyModelConflict(SiteRule):
    """
    ## What it does
    Flags `save_only_model=True` in a DeepSpeed or FSDP run together with
    `load_best_model_at_end=True`, and (transformers 4.50 and later) in an FSDP run whose
    accelerate config sets `fsdp_state_dict_type: SHARDED_STATE_DICT`. DeepSpeed/FSDP are
    recognised from `deepspeed=`, a linked DeepSpeed config, `fsdp=`, the accelerate config's
    `distributed_type`, or `accelerate launch --use_deepspeed/--use_fsdp`.

    ## Why is this bad?
    `Trainer.__init__` raises `ValueError: DeepSpeed can't be used with save_only_model along
    with load_best_model_at_end` (loading the best checkpoint needs the wrapper's full state,
    which `save_only_model` does not write), and `ValueError: save_only_model option is not
    compatible with FSDP state dict type 'SHARDED_STATE_DICT'`. Both come after the model is
    loaded, on every rank.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", deepspeed="ds_zero2.json", save_only_model=True,
                             load_best_model_at_end=True, eval_strategy="steps", save_strategy="steps")
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", deepspeed="ds_zero2.json",
                             load_best_model_at_end=True, eval_strategy="steps", save_strategy="steps")
    ```

    ## Fix safety
    Unsafe: removing `save_only_model` makes every checkpoint carry the optimizer and scheduler
    state (several times the model's size on disk). The alternative, FULL_STATE_DICT for FSDP,
    is a choice about the cluster's storage that the user must make.

    ## References
    - transformers `Trainer.create_accelerator_and_postprocess`
      (both checks; the SHARDED_STATE_DICT one since 4.50.0)
    """

    code = "TL226"
    fires_on = ("save_only_model",)
    name = "save-only-model-conflict"
    severity = Severity.ERROR
    fix_safety = "unsafe"
    summary = "save_only_model=True with DeepSpeed/FSDP and load_best_model_at_end, or a sharded FSDP state dict"
    cases = [
        Case(TA + "args = TrainingArguments(output_dir='o', deepspeed='ds.json', save_only_model=True,\n"
                  "                         load_best_model_at_end=True, eval_strategy='steps', "
                  "save_strategy='steps')\n",
             unsafe=True,
             fixed=TA + "args = TrainingArguments(output_dir='o', deepspeed='ds.json', load_best_model_at_end=True, "
                        "eval_strategy='steps', save_strategy='steps')\n"),
        Case(files={"run.sh": "accelerate launch --config_file fsdp.yaml train.py --output_dir o "
                              "--save_only_model --load_best_model_at_end --eval_strategy epoch "
                              "--save_strategy epoch\n",
                    "train.py": HF_SCRIPT, "fsdp.yaml": FSDP_YAML.format(sdt="FULL_STATE_DICT")},
             note="FSDP from the accelerate config, flags on the launch line"),
        Case(files={"run.sh": "accelerate launch --config_file fsdp.yaml train.py --output_dir o --save_only_model\n",
                    "train.py": HF_SCRIPT, "fsdp.yaml": FSDP_YAML.format(sdt="SHARDED_STATE_DICT")},
             note="sharded state dict"),
        # must not flag
        Case(TA + "args = TrainingArguments(output_dir='o', save_only_model=True, load_best_model_at_end=True,\n"
                  "                         eval_strategy='steps', save_strategy='steps')\n",
             flags=False, note="no DeepSpeed or FSDP"),
        Case(TA + "args = TrainingArguments(output_dir='o', deepspeed='ds.json', save_only_model=True)\n",
             flags=False, note="no load_best_model_at_end"),
        Case(files={"run.sh": "accelerate launch --config_file fsdp.yaml train.py --output_dir o --save_only_model\n",
                    "train.py": HF_SCRIPT, "fsdp.yaml": FSDP_YAML.format(sdt="SHARDED_STATE_DICT")},
             options={"transformers_version": "4.49.0"}, flags=False, note="no sharded check before 4.50"),
    ]

    def site_check(self, setup: Setup, site: ArgsSite) -> Iterator[Diagnostic]:
        som = site.get("save_only_model")
        if som is None or som.value is not True:
            return
        wrapped = wrapper_of(setup, site)
        if wrapped is None:
            return
        wrapper, evidence = wrapped
        related = [evidence.span.related(f"{wrapper} is configured here")] \
            if evidence is not None and evidence.span is not None else []
        span = som.key_span or som.span
        if span is None:
            return
        edit = remove_edit(setup, site, som)
        if effective(setup, site, "load_best_model_at_end") is True:
            yield self.diagnostic(
                span, f"save_only_model=True with {wrapper} and load_best_model_at_end=True: Trainer raises "
                      f"ValueError (loading the best checkpoint needs the full {wrapper} state); remove "
                      f"save_only_model or load_best_model_at_end",
                edits=[edit] if edit else None, fix_message="remove save_only_model", related=related)
            return
        acc = setup.extra.get("accelerate")
        sdt = acc.fsdp_value("fsdp_state_dict_type") if acc is not None and wrapper == "FSDP" else None
        if sdt is not None and isinstance(sdt.value, str) and "SHARDED_STATE_DICT" in sdt.value.upper() \
                and behaviour_holds(setup, SHARDED_MARKER):
            from trainlint.knowledge import behaviour

            if sdt.span is not None:
                related.append(sdt.span.related("the sharded state dict type"))
            yield self.diagnostic(
                span, "save_only_model=True with FSDP's SHARDED_STATE_DICT: Trainer raises ValueError "
                      f"(transformers {behaviour.first_version(SHARDED_MARKER)} and later); use fsdp_state_dict_type: FULL_STATE_DICT "
                      "or remove save_only_model",
                edits=[edit] if edit else None, fix_message="remove save_only_model", related=related)
