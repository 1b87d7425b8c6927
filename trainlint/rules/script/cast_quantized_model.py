"""TL104 cast-quantized-model: a dtype cast (or .cuda() on 8-bit) of a bitsandbytes-quantized model raises"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import trainer_contexts
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import QUANTIZED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.script._quantized_model_common import (
    QUANT_WORDS,
    _quantized_loads,
)
from trainlint.setup import Setup


class CastQuantizedModel(Rule):
    """
    ## What it does
    Flags `.half()`, `.float()`, `.bfloat16()`, `.to(torch.float16)` (any dtype cast), and
    `.cuda()` on an 8-bit model, applied to a bitsandbytes-quantized model that a Trainer
    trains: loaded with `quantization_config=BitsAndBytesConfig(load_in_4bit=True)` (or 8-bit,
    or a dict, or the legacy `load_in_4bit=True` keyword), directly, through variables, helper
    functions and PEFT wrappers.

    ## Why is this bad?
    Quantized weights are packed integers with their own scales; casting them is meaningless
    and transformers refuses: "`.half()` is not supported for quantized model", "You cannot
    cast a bitsandbytes model in a new `dtype`", "Calling `cuda()` is not supported for `8-bit`
    quantized models". The Trainer itself skips `.to` for these models ("Bnb Quantized models
    don't support `.to` operation"). Plain device moves of 4-bit models are reported by
    `manual-device-placement` (TL101).

    ## Example
    ```python
    bnb = BitsAndBytesConfig(load_in_4bit=True)
    model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m", quantization_config=bnb)
    model = model.half()
    ```

    ## Use instead
    ```python
    bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)
    model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m", quantization_config=bnb)
    ```

    ## Fix safety
    No fix: the cast raises, and what the user wanted (a compute dtype) belongs in
    `BitsAndBytesConfig(bnb_4bit_compute_dtype=...)` or `dtype=` at load time.

    ## References
    - transformers `modeling_utils.PreTrainedModel.half`, `.to`, `.cuda` (5.24)
    - transformers `Trainer.__init__` ("Bnb Quantized models don't support `.to` operation")
    """

    code = "TL104"
    name = "cast-quantized-model"
    severity = Severity.ERROR
    triggers = QUANTIZED_NAMES
    needs_training = True
    fires_on = QUANT_WORDS
    fix_safety = "none"
    summary = "a dtype cast (or .cuda() on 8-bit) of a bitsandbytes-quantized model raises"

    cases = [
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer
            bnb = BitsAndBytesConfig(load_in_4bit=True)
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=bnb)
            model = model.half()
            Trainer(model=model)
            """,
        ),
        Case(
            """
            import torch
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer
            from peft import get_peft_model
            def load():
                m = AutoModelForCausalLM.from_pretrained("opt", quantization_config={"load_in_8bit": True})
                m.to(torch.float16)
                return m
            model = get_peft_model(load(), cfg)
            Trainer(model=model)
            """,
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer
            model = AutoModelForCausalLM.from_pretrained("opt", load_in_8bit=True).cuda()
            Trainer(model=model)
            """,
        ),
        # must not flag
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer
            model = AutoModelForCausalLM.from_pretrained("opt")
            model = model.half()
            Trainer(model=model)
            """,
            flags=False, note="not quantized",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=BitsAndBytesConfig(load_in_4bit=False))
            model = model.half()
            Trainer(model=model)
            """,
            flags=False,
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=BitsAndBytesConfig(load_in_4bit=True))
            model.half()
            model.generate(**inputs)
            """,
            flags=False, note="no Trainer",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for ctx in trainer_contexts(setup):
            flow = ctx.flow
            if flow is None:
                continue
            quant = _quantized_loads(flow.loads)
            bnb = [ld for ld in quant if ld.bnb]
            if not bnb:
                continue
            pf = ctx.pf
            load = bnb[0]
            related = [load.quant_span.related(f"quantized to {load.quant} here")] if load.quant_span else []
            casts: list[tuple[ast.Call, str]] = [(s.call, s.detail) for s in flow.step("cast")]
            for c in flow.calls:
                if c.receiver.count(".") == 0 and c.receiver and c.name in ("half", "float", "bfloat16", "double") \
                        and isinstance(c.site.stmt, ast.Expr):
                    casts.append((c.site.node, c.name))
                elif c.receiver and "." not in c.receiver and c.name == "to" and isinstance(c.site.stmt, ast.Expr):
                    from trainlint.analysis import is_dtype_expr
                    node = c.site.node
                    if any(is_dtype_expr(pf, a, c.site.scope) for a in node.args) or \
                            any(k.arg == "dtype" for k in node.keywords):
                        casts.append((node, "dtype"))
            seen: set[int] = set()
            for call, _detail in casts:
                if id(call) in seen:
                    continue
                seen.add(id(call))
                text = pf.source_of(call)
                text = text if len(text) <= 50 else "the cast"
                yield self.diagnostic(
                    pf.span(call),
                    f"`{text}` casts a bitsandbytes {load.quant} model, which transformers refuses "
                    f"(quantized weights cannot change dtype); set the compute dtype in BitsAndBytesConfig or "
                    f"`dtype=` at load time instead",
                    related=related)
            if any(ld.quant == "8bit" for ld in bnb):
                for mv in flow.moves:
                    if mv.how == "cuda" and id(mv.call) not in seen:
                        seen.add(id(mv.call))
                        yield self.diagnostic(
                            pf.span(mv.call),
                            "`.cuda()` on an 8-bit bitsandbytes model raises (\"Calling `cuda()` is not supported for "
                            "`8-bit` quantized models\"); the model is already placed by from_pretrained",
                            related=related)

