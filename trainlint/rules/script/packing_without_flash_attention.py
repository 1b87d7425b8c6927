"""TL129 packing-without-flash-attention: SFT packing/padding_free with an attention that lets packed samples see each other"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import effective, target, target_text
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._sft_common import (
    FLASH_ATTENTION,
    attn_implementation,
    sft_calls,
)
from trainlint.setup import UNKNOWN, Setup

HEAD = "from transformers import AutoModelForCausalLM\nfrom trl import SFTConfig, SFTTrainer\n"
V = {"trl_version": "1.10.0"}


class PackingWithoutFlashAttention(Rule):
    """
    ## What it does
    Flags `SFTConfig(packing=True)` (with the `bfd` packing strategies, the default) or
    `padding_free=True` when the model is not loaded with a Flash Attention implementation
    (`attn_implementation="flash_attention_2"`/`"flash_attention_3"` or a flash-attention hub
    kernel) in its `from_pretrained` or in `model_init_kwargs`, on the TRL releases that warn
    about it at start-up (0.23 to 1.15, from data generated from the TRL wheels).

    ## Why is this bad?
    Packing and padding-free training put several samples in one sequence and rely on the
    attention kernel to keep them apart using `position_ids`. TRL's own start-up warning says
    that other implementations "may lead to cross-contamination between samples": each sample
    attends to the previous ones in the pack, which quietly changes what the model learns.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
    SFTTrainer(model=model, args=SFTConfig(output_dir="o", packing=True), train_dataset=ds)
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B", attn_implementation="flash_attention_2")
    ```

    ## Fix safety
    No automatic fix (flash attention needs its package and a supported GPU).

    ## References
    - TRL `trainer/sft_trainer.py` (`FLASH_ATTENTION_VARIANTS` and the packing warnings)
    - https://github.com/huggingface/trl/issues/1230, https://github.com/huggingface/alignment-handbook/issues/204
    """

    code = "TL129"
    name = "packing-without-flash-attention"
    severity = Severity.WARNING
    summary = "SFT packing/padding_free with an attention that lets packed samples see each other"
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("SFTTrainer",)
    cases = [
        Case(HEAD + "model = AutoModelForCausalLM.from_pretrained('m')\n"
                    "SFTTrainer(model=model, args=SFTConfig(output_dir='o', packing=True), train_dataset=ds)\n", options=V),
        Case(HEAD + "cfg = SFTConfig(output_dir='o', padding_free=True, max_length=None, "
                    "model_init_kwargs={'attn_implementation': 'sdpa'})\nSFTTrainer(model='m', args=cfg)\n", options=V),
        Case(HEAD + "model = AutoModelForCausalLM.from_pretrained('m', attn_implementation='flash_attention_2')\n"
                    "SFTTrainer(model=model, args=SFTConfig(output_dir='o', packing=True), train_dataset=ds)\n",
             options=V, flags=False),
        Case(HEAD + "model = AutoModelForCausalLM.from_pretrained('m')\n"
                    "SFTTrainer(model=model, args=SFTConfig(output_dir='o', packing=True, packing_strategy='wrapped'))\n",
             options=V, flags=False, note="wrapped packing is not what TRL warns about"),
        Case(HEAD + "model = AutoModelForCausalLM.from_pretrained('m')\n"
                    "SFTTrainer(model=model, args=SFTConfig(output_dir='o', packing=True), train_dataset=ds)\n",
             options={"trl_version": "1.16.0"}, flags=False, note="TRL 1.16 no longer warns"),
        Case(HEAD + "model = AutoModelForCausalLM.from_pretrained('m', **kw)\n"
                    "SFTTrainer(model=model, args=SFTConfig(output_dir='o', packing=True))\n", options=V, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        calls = list(sft_calls(setup))  # the cheap guard: no SFTTrainer, no TRL data read
        if not calls:
            return
        from trainlint.knowledge import behaviour

        trl = target(setup)[2]
        pf_warn = behaviour.holds("sft_warns_padding_free_without_flash_attention", trl)
        pk_warn = behaviour.holds("sft_warns_packing_cross_contamination", trl)
        if not (pf_warn or pk_warn):
            return
        for pf, tc, sites in calls:
            for site in sites:
                packing = effective(setup, site, "packing") is True
                strategy = effective(setup, site, "packing_strategy")
                padding_free = effective(setup, site, "padding_free") is True
                hit = None
                if padding_free and pf_warn:
                    hit = "padding_free"
                elif packing and pk_warn and isinstance(strategy, str) and strategy in ("bfd", "bfd_split"):
                    hit = "packing"
                if hit is None:
                    continue
                attn = attn_implementation(setup, pf, tc, sites)
                if attn is UNKNOWN or (isinstance(attn, str) and attn.split("@")[0].split(":")[0] in FLASH_ATTENTION):
                    continue
                v = site.get(hit)
                span = (v.key_span or v.span) if v is not None else pf.span(tc.site.node.func)
                shown = f'attn_implementation="{attn}"' if attn else "the default attention (sdpa)"
                yield self.diagnostic(span, f"{hit}=True with {shown}: packed samples are kept apart only by a Flash "
                                            "Attention implementation, others let each sample attend to its "
                                            f"neighbours in the pack (TRL warns; {target_text(setup, 'trl')}); load the "
                                            'model with attn_implementation="flash_attention_2"')
                break
