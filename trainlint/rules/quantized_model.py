"""TL103 device-map-multi-process, TL104 cast-quantized-model, TL105 quantized-without-adapters."""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import LoadCall, multi_process, trainer_contexts
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.fixing.python_edits import remove_argument
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

SPREADING_DEVICE_MAPS = {"auto", "balanced", "balanced_low_0", "sequential"}


class DeviceMapMultiProcess(Rule):
    """
    ## What it does
    Flags `from_pretrained(..., device_map="auto")` (or `"balanced"`, `"balanced_low_0"`,
    `"sequential"`) on a model that a `Trainer` trains in a multi-process run: a world size
    above 1 (from the launch line, the accelerate config or `--gpus`), or a DeepSpeed config
    given to `TrainingArguments(deepspeed=...)`. Single-process runs, and runs whose world size
    is not known, are not flagged: there `device_map="auto"` is naive model parallelism and
    works.

    ## Why is this bad?
    `device_map="auto"` spreads the layers of one model over every visible GPU. Under
    torchrun/accelerate/DeepSpeed every process does this, and accelerate refuses to prepare
    such a model: "You can't train a model that has been loaded with `device_map='auto'` in any
    distributed mode" (with ZeRO-3 the two placements fight over the same parameters).

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-8B", device_map="auto")
    args = TrainingArguments(output_dir="out", deepspeed="ds_zero3.json")
    trainer = Trainer(model=model, args=args)
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-8B")
    args = TrainingArguments(output_dir="out", deepspeed="ds_zero3.json")
    trainer = Trainer(model=model, args=args)
    ```
    For a quantized (QLoRA) model under DDP, load one full copy per process:
    `device_map={"": PartialState().process_index}`.

    ## Fix safety
    Safe for unquantized models: the Trainer (or DeepSpeed/FSDP) places the model on each
    process's GPU itself. Quantized models are reported without a fix (they need a per-process
    `device_map`).

    ## References
    - https://github.com/huggingface/transformers/issues/31557
    - https://github.com/QwenLM/Qwen/issues/900, https://github.com/QwenLM/Qwen/issues/833
    - accelerate `Accelerator.prepare_model` (`verify_device_map`)
    - pitfalls catalog P02
    """

    code = "TL103"
    name = "device-map-multi-process"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = 'device_map="auto" on a model trained by several processes'

    cases = [
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="auto")
            args = TrainingArguments(output_dir="out")
            Trainer(model=model, args=args).train()
            """,
            options={"gpus": 4},
            fixed=(
                "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                'model = AutoModelForCausalLM.from_pretrained("gpt2")\n'
                'args = TrainingArguments(output_dir="out")\n'
                "Trainer(model=model, args=args).train()\n"
            ),
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            LOAD = dict(device_map="balanced", low_cpu_mem_usage=True)
            def build(name):
                return AutoModelForCausalLM.from_pretrained(name, **LOAD)
            model = build("gpt2")
            args = TrainingArguments(output_dir="out", deepspeed="ds.json")
            Trainer(model=model, args=args)
            """,
            note="through a helper and a kwargs dict; DeepSpeed config in TrainingArguments",
        ),
        # must not flag
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="auto")
            Trainer(model=model, args=TrainingArguments(output_dir="out"))
            """,
            flags=False, note="world size unknown: naive model parallelism in one process works",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="auto")
            Trainer(model=model, args=TrainingArguments(output_dir="out"))
            """,
            options={"gpus": 1}, flags=False,
        ),
        Case(
            """
            from accelerate import PartialState
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("gpt2", device_map={"": PartialState().process_index})
            Trainer(model=model, args=TrainingArguments(output_dir="out"))
            """,
            options={"gpus": 4}, flags=False, note="one full copy per process",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="auto")
            out = model.generate(**inputs)
            """,
            options={"gpus": 4}, flags=False, note="inference script",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for ctx in trainer_contexts(setup):
            if ctx.flow is None:
                continue
            why = multi_process(setup, ctx.sites)
            if why is None:
                continue
            pf = ctx.pf
            for ld in ctx.flow.loads:
                dm = ld.kw("device_map")
                if dm is None or not isinstance(dm.value, str) or dm.value not in SPREADING_DEVICE_MAPS:
                    continue
                edits = None
                kw = next((k for k in ld.call.keywords if k.arg == "device_map"), None)
                if kw is not None and not ld.quant:
                    edits = [remove_argument(pf, ld.call, kw)]
                hint = ('load one copy per process: device_map={"": PartialState().process_index}' if ld.quant
                        else "remove it; the Trainer places the model on each process's GPU")
                yield self.diagnostic(
                    dm.span or pf.span(ld.call),
                    f'device_map="{dm.value}" spreads the model over every visible GPU, but it is trained by '
                    f"{why}: accelerate refuses to prepare such a model in a distributed run; {hint}",
                    edits=edits, fix_message="remove device_map",
                    related=[pf.span(ctx.trainer.site.node.func).related(
                        f"the model is trained by {ctx.trainer.class_name} here")])


def _quantized_loads(loads: list[LoadCall]) -> list[LoadCall]:
    return [ld for ld in loads if ld.quant is not None]


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
    - pitfalls catalog P03
    """

    code = "TL104"
    name = "cast-quantized-model"
    severity = Severity.ERROR
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


class QuantizedWithoutAdapters(Rule):
    """
    ## What it does
    Flags a `Trainer` (or TRL trainer) whose model was loaded quantized
    (`quantization_config=BitsAndBytesConfig(load_in_4bit=True)`, 8-bit, GPTQ, AWQ, ... or the
    legacy `load_in_4bit=True`) and reaches the trainer without trainable adapters: no
    `get_peft_model`, `PeftModel`, `AutoPeftModel*`, `model.add_adapter(...)` or TRL
    `peft_config=` on its way, or the adapters were merged away with `merge_and_unload()`.

    ## Why is this bad?
    Quantized weights cannot be trained. The Trainer checks this at construction and raises
    "You cannot perform fine-tuning on purely quantized models. Please attach trainable
    adapters on top of the quantized model to correctly perform fine-tuning"
    (`validate_quantization_for_training`), after the model has been downloaded and loaded.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m",
                                                 quantization_config=BitsAndBytesConfig(load_in_4bit=True))
    trainer = Trainer(model=model, args=args, train_dataset=ds)
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m",
                                                 quantization_config=BitsAndBytesConfig(load_in_4bit=True))
    model = prepare_model_for_kbit_training(model)
    model = get_peft_model(model, LoraConfig(r=16, task_type="CAUSAL_LM"))
    trainer = Trainer(model=model, args=args, train_dataset=ds)
    ```

    ## Fix safety
    No automatic fix: adding adapters changes the training method (which layers learn, what
    gets saved).

    ## References
    - transformers `trainer_utils.validate_quantization_for_training` (5.24)
    - https://github.com/unslothai/unsloth/issues/1110, https://github.com/BAAI-DCAI/Bunny/issues/112
    - pitfalls catalog P04
    """

    code = "TL105"
    name = "quantized-without-adapters"
    severity = Severity.ERROR
    fix_safety = "none"
    summary = "a quantized model is trained without trainable adapters"

    cases = [
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=BitsAndBytesConfig(load_in_4bit=True))
            Trainer(model=model, args=args).train()
            """,
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer
            from peft import get_peft_model, prepare_model_for_kbit_training
            q = BitsAndBytesConfig(load_in_8bit=True)
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=q)
            model = prepare_model_for_kbit_training(model)
            model = get_peft_model(model, lora)
            model = model.merge_and_unload()
            Trainer(model=model, args=args).train()
            """,
            note="adapters merged away",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, GPTQConfig
            from trl import SFTTrainer
            def load(name):
                return AutoModelForCausalLM.from_pretrained(name, quantization_config=GPTQConfig(bits=4))
            SFTTrainer(model=load("m"), train_dataset=ds)
            """,
        ),
        # must not flag
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer
            from peft import get_peft_model, prepare_model_for_kbit_training
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=BitsAndBytesConfig(load_in_4bit=True))
            model = prepare_model_for_kbit_training(model)
            model = get_peft_model(model, lora)
            Trainer(model=model, args=args).train()
            """,
            flags=False,
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig
            from trl import SFTTrainer
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=BitsAndBytesConfig(load_in_4bit=True))
            SFTTrainer(model=model, train_dataset=ds, peft_config=lora)
            """,
            flags=False, note="TRL attaches the adapters",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=BitsAndBytesConfig(load_in_4bit=True))
            model.add_adapter(lora)
            Trainer(model=model, args=args).train()
            """,
            flags=False, note="transformers' PEFT integration",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig
            model = AutoModelForCausalLM.from_pretrained("opt", quantization_config=BitsAndBytesConfig(load_in_4bit=True))
            print(model.generate(**inputs))
            """,
            flags=False, note="quantized inference",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for ctx in trainer_contexts(setup):
            flow = ctx.flow
            if flow is None:
                continue
            if flow.trainer_peft_config is not None or flow.called("add_adapter", "load_adapter"):
                continue
            pf = ctx.pf
            for ld in _quantized_loads(flow.loads):
                if ld.adapters or ld.outer == "peft":
                    continue
                merged = ld.outer == "merged"
                what = f"{ld.quant} " if ld.quant in ("4bit", "8bit") else ""
                reason = ("its adapters are merged away by merge_and_unload() before training" if merged
                          else "no adapters are attached (get_peft_model / peft_config=)")
                related = [pf.span(s.call).related("merged here") for s in flow.step("merge")][:1]
                related.append(pf.span(ctx.trainer.site.node.func).related(
                    f"trained by {ctx.trainer.class_name} here"))
                yield self.diagnostic(
                    ld.quant_span or pf.span(ld.call),
                    f"the model is loaded {what}quantized but {reason}: {ctx.trainer.class_name} raises \"You cannot "
                    f"perform fine-tuning on purely quantized models\"; wrap it with get_peft_model(model, LoraConfig(...))",
                    related=related)
                break
