"""TL130 sft-config-conflicts: SFTTrainer settings that raise in __init__ (padding_free without packing but max_length, with a collator; formatting_func with completion_only_loss)"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import effective, target, target_text
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._sft_common import sft_calls
from trainlint.setup import Setup

HEAD = "from trl import SFTConfig, SFTTrainer\n"


def _given(expr: ast.AST | None) -> bool:
    return expr is not None and not (isinstance(expr, ast.Constant) and expr.value is None)


class SftConfigConflicts(Rule):
    """
    ## What it does
    Flags `SFTTrainer` setups that TRL refuses in `SFTTrainer.__init__`, on the TRL versions
    that carry each check (from data generated from the TRL wheels):
    - `padding_free=True` without `packing` while `max_length` is set (its default is 1024):
      TRL 1.x;
    - `padding_free=True` with a custom `data_collator`;
    - a `formatting_func` with `completion_only_loss=True`.

    ## Why is this bad?
    Each raises `ValueError` after the model is loaded: "When `padding_free=True` without
    packing, `max_length` is not enforced"; "Passing a custom data collator is not supported
    when using padding-free"; "A formatting function was provided while
    `completion_only_loss=True`, which is incompatible".

    ## Example
    ```python
    SFTTrainer(model="Qwen/Qwen2.5-0.5B", args=SFTConfig(output_dir="o", padding_free=True))
    ```

    ## Use instead
    ```python
    SFTTrainer(model="Qwen/Qwen2.5-0.5B", args=SFTConfig(output_dir="o", padding_free=True, max_length=None))
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - TRL `trainer/sft_trainer.py` (`SFTTrainer.__init__`, `_prepare_dataset`)
    """

    code = "TL130"
    name = "sft-config-conflicts"
    severity = Severity.ERROR
    summary = "SFTTrainer settings that raise in __init__ (padding_free, collator, formatting_func)"
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("SFTTrainer",)
    cases = [
        Case(HEAD + "SFTTrainer(model='m', args=SFTConfig(output_dir='o', padding_free=True))\n"),
        Case(HEAD + "cfg = {'padding_free': True, 'max_length': None}\n"
                    "SFTTrainer(model='m', args=SFTConfig(output_dir='o', **cfg), data_collator=collate)\n"),
        Case(HEAD + "args = SFTConfig(output_dir='o', completion_only_loss=True)\n"
                    "SFTTrainer(model='m', args=args, formatting_func=fmt)\n"),
        Case(HEAD + "SFTTrainer(model='m', args=SFTConfig(output_dir='o', padding_free=True, max_length=None))\n",
             flags=False),
        Case(HEAD + "SFTTrainer(model='m', args=SFTConfig(output_dir='o', padding_free=True, packing=True))\n",
             flags=False),
        Case(HEAD + "SFTTrainer(model='m', args=SFTConfig(output_dir='o', padding_free=True))\n", flags=False,
             options={"trl_version": "0.20.0"}, note="before TRL 1.0 max_length was not checked"),
        Case(HEAD + "SFTTrainer(model='m', args=SFTConfig(output_dir='o'), formatting_func=fmt)\n", flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        calls = list(sft_calls(setup))  # the cheap guard: no SFTTrainer, no TRL data read
        if not calls:
            return
        from trainlint.knowledge import behaviour

        trl = target(setup)[2]
        where = target_text(setup, "trl")
        for pf, tc, sites in calls:
            for site in sites:
                pfree = site.get("padding_free")
                if pfree is not None and pfree.value is True:
                    span = pfree.key_span or pfree.span
                    ml = effective(setup, site, "max_length")
                    if effective(setup, site, "packing") is False and ml is not None and isinstance(ml, int) \
                            and behaviour.holds("sft_padding_free_rejects_max_length", trl):
                        shown = f"max_length={ml}" + ("" if site.get("max_length") is not None else " (the default)")
                        yield self.diagnostic(span, f"padding_free=True without packing but {shown}: SFTTrainer raises "  # type: ignore[arg-type]
                                                    f"ValueError (max_length is not enforced without packing; {where}); "
                                                    "set max_length=None, truncate the data yourself, or enable packing")
                    if _given(tc.keywords.get("data_collator")) and \
                            behaviour.holds("sft_padding_free_rejects_custom_collator", trl):
                        yield self.diagnostic(pf.span(tc.keywords["data_collator"]),
                                              f"padding_free=True with a custom data_collator: SFTTrainer raises "
                                              f"ValueError ({where}); drop the collator or padding_free")
                col = site.get("completion_only_loss")
                if col is not None and col.value is True and _given(tc.keywords.get("formatting_func")) and \
                        behaviour.holds("sft_rejects_formatting_func_with_completion_only_loss", trl):
                    yield self.diagnostic(pf.span(tc.keywords["formatting_func"]),
                                          "formatting_func with completion_only_loss=True: the formatter turns the data "
                                          f"into plain text, so SFTTrainer raises ValueError ({where}); format the "
                                          "dataset into prompt/completion columns first, or drop completion_only_loss")
                break
