"""TL304 overlap-comm-bucket-memory: overlap_comm costs 4.5 x (allgather + reduce buckets) x 2 bytes of GPU memory"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._context import run_context
from trainlint.rules._setup_util import as_int
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_config_common import (
    _ds,
)
from trainlint.setup import Setup


class OverlapCommBuckets(Rule):
    """
    ## What it does
    Flags ZeRO stage 1/2 with `overlap_comm: true` and says how much extra GPU memory its
    buckets cost: the DeepSpeed guide's rule of thumb is 4.5 x (`allgather_bucket_size` +
    `reduce_bucket_size`) x 2 bytes (both default to 5e8, which costs 9 GB). The finding is a
    warning only when memory is tight: the setup's memory estimate (`trainlint estimate`, which
    includes these buckets) is above 75% of the target GPU (`--gpu`), or, when the model is
    unknown, the buckets alone take more than a quarter of the GPU. Otherwise (no target GPU,
    or room to spare) it is information with the figure.

    ## Why is this bad?
    The overlap keeps extra communication buffers alive; on 8-24 GB cards that is what runs out
    of memory, on larger cards it is memory taken from the batch size.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "overlap_comm": true,
                           "allgather_bucket_size": 5e8, "reduce_bucket_size": 5e8}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 2, "overlap_comm": true,
                           "allgather_bucket_size": 2e8, "reduce_bucket_size": 2e8}}
    ```

    ## Fix safety
    Buckets larger than 2e8 are set to 2e8, the guide's value (same numerics, somewhat slower
    communication). Safe when memory is shown to be tight (the warning); otherwise unsafe: the
    buckets may be a throughput tuning the maintainers chose, and a fix hook must not undo it
    unasked. Buckets already at 2e8 or below get no fix.

    ## References
    - https://huggingface.co/docs/transformers/deepspeed (ZeRO-2: overlap_comm "uses 4.5x the
      allgather_bucket_size and reduce_bucket_size values")
    - DeepSpeed `deepspeed/runtime/zero/config.py` (`allgather_bucket_size`, `reduce_bucket_size`
      default 5e8)
    """

    code = "TL304"
    name = "overlap-comm-bucket-memory"
    severity = Severity.WARNING
    triggers = DEEPSPEED_NAMES
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    fix_safety = "safe"
    summary = "overlap_comm costs 4.5 x (allgather + reduce buckets) x 2 bytes of GPU memory"

    cases = [
        Case(files={"ds.json": '{\n  "train_micro_batch_size_per_gpu": 8,\n  "zero_optimization": {\n'
                               '    "stage": 2,\n    "overlap_comm": true,\n    "allgather_bucket_size": 5e8,\n'
                               '    "reduce_bucket_size": 5e8\n  }\n}\n'},
             fixed='{\n  "train_micro_batch_size_per_gpu": 8,\n  "zero_optimization": {\n'
                   '    "stage": 2,\n    "overlap_comm": true,\n    "allgather_bucket_size": 2e8,\n'
                   '    "reduce_bucket_size": 2e8\n  }\n}\n', fixed_path="ds.json", severity="info", unsafe=True,
             note="memory is not shown to be tight: the fix is unsafe (the buckets may be a tuning)"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "overlap_comm": true, "allgather_bucket_size": 5e8, "reduce_bucket_size": 5e8}}\n'},
             options={"gpu": "RTX 4090"}, severity="warning", fixed_path="ds.json",
             fixed='{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                   ' "overlap_comm": true, "allgather_bucket_size": 2e8, "reduce_bucket_size": 2e8}}\n',
             note="9 GB of a 24 GB card: memory is tight, the fix is safe"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "overlap_comm": true}}\n'}, severity="info",
             note="default buckets 5e8: 9 GB, no target GPU: information with the figure"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "overlap_comm": true}}\n'}, options={"gpu": "RTX 4090"}, severity="warning", message="35% of a RTX 4090",
             note="9 GB of a 24 GB card"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "overlap_comm": true}}\n'}, options={"gpu": "H100"}, severity="info",
             note="9 GB of an 80 GB card, model unknown"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2,'
                               ' "overlap_comm": true}}\n',
                    "train.py": "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                                "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n"
                                "args = TrainingArguments(output_dir='o', per_device_train_batch_size=1, bf16=True,"
                                " deepspeed='ds.json')\nTrainer(model=model, args=args).train()\n"},
             options={"gpu": "A100-80GB", "gpus": 2}, severity="warning", message="so memory is tight",
             note="the estimate of a 7B ZeRO-2 run leaves little of 80 GB"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "overlap_comm": true}}\n',
                    "train.py": "from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments\n"
                                "model = AutoModelForSequenceClassification.from_pretrained('bert-base-uncased')\n"
                                "args = TrainingArguments(output_dir='o', bf16=True, deepspeed='ds.json')\n"
                                "Trainer(model=model, args=args).train()\n"},
             options={"gpu": "A100-80GB"}, severity="info", message="the setup's estimate is",
             note="BERT leaves most of 80 GB free"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "overlap_comm": true, "allgather_bucket_size": 2e8, "reduce_bucket_size": 2e8}}\n'},
             note="3.6 GB: information"),
        # must not flag
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "overlap_comm": false}}\n'}, flags=False),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2}}\n'},
             flags=False, note="overlap_comm defaults to false below stage 3"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "overlap_comm": true, "allgather_bucket_size": 5e7, "reduce_bucket_size": 5e7}}\n'},
             flags=False, note="0.9 GB"),
    ]

    DEFAULT_BUCKET = 500_000_000
    GUIDE_BUCKET = 200_000_000
    MIN_BYTES = 1_000_000_000
    TIGHT_SHARE = 0.25  # without an estimate: buckets taking a quarter of the card are tight

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        stage, overlap = cfg.stage, cfg.overlap_comm
        if stage is None or as_int(stage.value) not in (1, 2) or overlap is None or overlap.value is not True:
            return
        ag, rb = cfg.value("zero_optimization.allgather_bucket_size"), cfg.value("zero_optimization.reduce_bucket_size")
        sizes = []
        for v in (ag, rb):
            n = self.DEFAULT_BUCKET if v is None else as_int(v.value)
            if n is None:
                return  # "auto" or unknown
            sizes.append(n)
        extra = 4.5 * sum(sizes) * 2
        if extra < self.MIN_BYTES:
            return
        gpu = setup.gpu
        share = ""
        tight = False
        ctx = run_context(setup)
        if ctx.memory is not None:
            total, mem = ctx.memory
            tight = bool(ctx.memory_tight)
            share = (f"; the setup's estimate is {total / 2**30:.1f} of the {gpu.name}'s {mem / 2**30:.0f} GiB"  # type: ignore[union-attr]
                     f"{', so memory is tight' if tight else ''}")
        elif gpu is not None and getattr(gpu, "memory_gib", None):
            frac = extra / (gpu.memory_gib * 2**30)
            share = f", {frac:.0%} of a {gpu.describe()}"
            tight = frac > self.TIGHT_SHARE
        big = tight
        def fmt(n: int) -> str:
            return f"{n:.0e}".replace("e+0", "e").replace("e+", "e")
        message = (f"overlap_comm with allgather_bucket_size {fmt(sizes[0])} and reduce_bucket_size {fmt(sizes[1])} "
                   f"costs about 4.5 x ({fmt(sizes[0])} + {fmt(sizes[1])}) x 2 bytes = {extra / 1e9:.1f} GB of extra "
                   f"GPU memory per process{share}")
        edits = []
        for v in (ag, rb):
            if v is not None and as_int(v.value) is not None and as_int(v.value) > self.GUIDE_BUCKET:  # type: ignore[operator]
                edits.append(v.span.edit("2e8"))  # type: ignore[union-attr]
        if not edits and big:
            message += "; lower the buckets (2e8 in the DeepSpeed guide) or set overlap_comm to false"
        elif edits and big:
            message += "; 2e8 buckets cost 3.6 GB"
        elif edits:
            message += "; if memory runs short, 2e8 buckets cost 3.6 GB"
        else:
            message += "; if memory is short, smaller buckets or overlap_comm false trade speed for memory"
        yield self.diagnostic(overlap.span, message, edits=edits or None,  # type: ignore[arg-type]
                              severity=None if big else Severity.INFO,
                              applicability="safe" if big else "unsafe",
                              related=[v.span.related(f"{v.name.rsplit('.', 1)[-1]} is set here")
                                       for v in (ag, rb) if v is not None and v.span is not None],
                              fix_message="set the buckets to 2e8")

