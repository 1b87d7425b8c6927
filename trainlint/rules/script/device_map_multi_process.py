"""TL103 device-map-multi-process: device_map="auto" on a model trained by several processes"""

from __future__ import annotations

from typing import Iterable

from trainlint.analysis import SPREADING_DEVICE_MAPS, multi_process, trainer_contexts
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.fixing.python_edits import remove_argument
from trainlint.rules._triggers import QUANTIZED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup



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
    """

    code = "TL103"
    name = "device-map-multi-process"
    severity = Severity.ERROR
    triggers = QUANTIZED_NAMES + ("device_map",)
    needs_training = True
    fires_on = ("device_map",)
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

