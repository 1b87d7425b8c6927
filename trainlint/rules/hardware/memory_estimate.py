"""TL550 estimated-oom: the setup's memory estimate does not fit the target GPU."""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

# Warn above this share of the GPU's memory: the estimate leaves out allocator fragmentation
# and kernels' temporary buffers, which commonly take 5-10% of the card in training.
WARN_FRACTION = 0.90

_LLAMA_FP32 = """
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", dtype="float32")
tokenizer = AutoTokenizer.from_pretrained("meta-llama/Llama-2-7b-hf")

def tok(batch):
    return tokenizer(batch["text"], truncation=True, max_length=1024)

args = TrainingArguments(output_dir="out", per_device_train_batch_size=4)
trainer = Trainer(model=model, args=args)
trainer.train()
"""

_BERT = """
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
args = TrainingArguments(output_dir="out", per_device_train_batch_size=32, bf16=True)
trainer = Trainer(model=model, args=args)
"""


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


class EstimatedOom(Rule):
    """
    ## What it does
    Estimates the per-GPU memory of the training run (weights, gradients, optimizer states,
    activations, communication buffers and the CUDA context) from the model's size, the
    precision, the optimizer, the DeepSpeed ZeRO stage and offload, gradient checkpointing,
    the micro-batch and the sequence length, and flags the run when the estimate does not fit
    the target GPU (`--gpu`, or `gpu` in `[tool.trainlint]`). The message gives the breakdown
    and the cheapest changes that would make it fit, each with its estimated saving.

    It is an error when the estimate exceeds the GPU's memory, and a warning above 90% of it:
    the estimate leaves out allocator fragmentation and kernels' temporary buffers, which
    commonly take 5-10% of the card. Values that no file states (a sequence length without
    `max_length`, a precision set from a variable) are taken at their most favourable reading
    (128 tokens, bf16) before deciding, so the rule flags only what cannot fit. It is silent
    without a target GPU, for a model it does not know (the shipped table or a local folder's
    `config.json`), and for 4/8-bit quantized loading. `trainlint estimate` prints the full
    table with every formula.

    ## Why is this bad?
    An out-of-memory error surfaces only after the job has been queued, the model downloaded
    and loaded, and the first batch run, often on an expensive multi-GPU allocation. Full
    fine-tuning with AdamW costs 16 bytes per parameter before any activation (fp32 weights and
    gradients, two fp32 Adam states), so a 7B model needs about 100 GiB: it cannot fit one
    40 GB or 80 GB card whatever the batch size.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", dtype="float32")
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=4)
    ```
    on one A100-40GB.

    ## Use instead
    A setup that fits: LoRA (PEFT) with bf16 and gradient checkpointing, or DeepSpeed ZeRO-3
    with offload across GPUs:
    ```python
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", dtype="bfloat16")
    model = get_peft_model(model, LoraConfig(r=16, target_modules=["q_proj", "v_proj"]))
    args = TrainingArguments(output_dir="out", per_device_train_batch_size=4, bf16=True,
                             gradient_checkpointing=True)
    ```

    ## Fix safety
    No fix: each way to save memory changes speed, numerics or hardware needs; the message
    lists them with their savings.

    ## References
    - https://huggingface.co/docs/transformers/main/en/deepspeed (memory requirements, ZeRO stages)
    - DeepSpeed `estimate_zero2_model_states_mem_needs` / `estimate_zero3_model_states_mem_needs`
    - Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models (arXiv:2205.05198)
    - pitfalls catalog section 0 (memory model)
    """

    code = "TL550"
    name = "estimated-oom"
    severity = Severity.ERROR
    triggers = SETUP_NAMES + ("from_pretrained",)
    needs = ("gpu",)
    fix_safety = "none"
    summary = "the estimated per-GPU memory does not fit the target GPU"

    cases = [
        Case(_LLAMA_FP32, options={"gpu": "A100-40GB"}, note="7B full fine-tuning in fp32 AdamW: ~110 GiB"),
        Case("""
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            MODEL = "meta-llama/Llama-2-7b-hf"
            model = AutoModelForCausalLM.from_pretrained(MODEL)
            args = TrainingArguments(output_dir="out", bf16=True, gradient_checkpointing=True,
                                     per_device_train_batch_size=1)
            """, options={"gpu": "A100-80GB"}, note="bf16 AMP still keeps fp32 weights, grads and Adam states"),
        Case(files={
            "train.py": (
                "import argparse\n"
                "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                "p = argparse.ArgumentParser()\n"
                "p.add_argument('--model', default='mistralai/Mistral-7B-v0.1')\n"
                "a = p.parse_args()\n"
                "model = AutoModelForCausalLM.from_pretrained(a.model)\n"
                "args = TrainingArguments(output_dir='o', per_device_train_batch_size=1, bf16=True,\n"
                "                         deepspeed='ds.json')\n"
            ),
            "ds.json": '{"zero_optimization": {"stage": 2}, "bf16": {"enabled": "auto"}}',
        }, options={"gpu": "RTX 4090", "gpus": 2}, note="ZeRO-2 over 2 x 24 GB is not enough for 7B"),
        # must not flag
        Case(_BERT, flags=False, options={"gpu": "A100"}),
        Case(_LLAMA_FP32, flags=False, note="no target GPU"),
        Case("""
            from transformers import AutoModelForCausalLM, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("my-org/unknown-model-13b")
            args = TrainingArguments(output_dir="o")
            """, flags=False, options={"gpu": "T4"}, note="unknown model"),
        Case("""
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf",
                                                         quantization_config=BitsAndBytesConfig(load_in_4bit=True))
            args = TrainingArguments(output_dir="o", per_device_train_batch_size=1)
            """, flags=False, options={"gpu": "T4"}, note="quantized loading is not modelled"),
        Case("""
            from peft import LoraConfig, get_peft_model
            from transformers import AutoModelForCausalLM, TrainingArguments
            model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", dtype="bfloat16")
            model = get_peft_model(model, LoraConfig(r=16, target_modules=["q_proj", "v_proj"]))
            args = TrainingArguments(output_dir="o", per_device_train_batch_size=4, bf16=True,
                                     gradient_checkpointing=True)
            """, flags=False, options={"gpu": "A100-40GB"}, note="LoRA in bf16 fits"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        gpu = setup.gpu
        if gpu is None or not setup.scripts:
            return
        from trainlint.estimate import SetupEstimate, estimate_setup
        from trainlint.memory import CUDA_CONTEXT_BYTES, estimate, savings

        r = estimate_setup(setup)
        if not isinstance(r, SetupEstimate) or r.quantized or r.model_span is None:
            return
        shape = r.favourable_shape()
        est = estimate(shape)
        total = est.total + CUDA_CONTEXT_BYTES
        mem = gpu.memory_bytes
        if total <= WARN_FRACTION * mem:
            return
        over = total > mem
        p = est.per_gpu
        breakdown = (f"weights {_gib(p['weights'])}, gradients {_gib(p['gradients'])}, optimizer "
                     f"{_gib(p['optimizer'])}, activations {_gib(p['activations'])}, buffers {_gib(p['buffers'])}, "
                     f"CUDA context {_gib(CUDA_CONTEXT_BYTES)}")
        s = shape
        what = (f"{r.model.hub_id} ({r.model.params / 1e9:.2f}B params), {s.precision}, {s.optimizer}, "
                f"{'ZeRO-' + str(s.zero_stage) if s.zero_stage else 'no ZeRO'}"
                f"{' + optimizer offload' if s.offload_optimizer != 'none' else ''}, {s.world_size} GPU"
                f"{'s' if s.world_size != 1 else ''}, micro batch {s.micro_batch} x {s.seq_len} tokens")
        budget = mem - CUDA_CONTEXT_BYTES if over else int(WARN_FRACTION * mem) - CUDA_CONTEXT_BYTES
        sugs = savings(shape, budget, bf16_ok=gpu.bf16)
        fitting = [x for x in sugs if x.fits]
        if fitting:
            advice = "changes that would fit: " + "; ".join(f"{x.change} (-{_gib(x.saving)})" for x in fitting[:3])
            others = [x for x in sugs if not x.fits][:3]
            if others:
                advice += "; other savings: " + "; ".join(f"{x.change} (-{_gib(x.saving)})" for x in others)
        elif sugs:
            advice = "no single change fits; the largest savings: " + "; ".join(
                f"{x.change} (-{_gib(x.saving)})" for x in sugs[:3])
        else:
            advice = "a larger GPU or more GPUs with DeepSpeed ZeRO-3 is needed"
        verb = "exceeds" if over else f"is over {WARN_FRACTION:.0%} of"
        message = (f"estimated {_gib(total)} per GPU {verb} the {gpu.name}'s {_gib(mem)} for {what}: {breakdown}; "
                   f"{advice} (see `trainlint estimate`)")
        related = []
        site = setup.sites[0] if setup.sites else None
        if site is not None and site.span is not None:
            related.append(site.span.related("the training arguments"))
        yield self.diagnostic(r.model_span, message, related=related,
                              severity=Severity.ERROR if over else Severity.WARNING)
