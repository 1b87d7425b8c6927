"""TL304 overlap-comm-bucket-memory: overlap_comm costs 4.5 x (allgather + reduce buckets) x 2 bytes of GPU memory"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
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
    warning when the buckets are at the default size or larger, or when the cost is more than
    a quarter of the target GPU's memory; otherwise it is information.

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
    Safe (same numerics, somewhat slower communication): buckets larger than 2e8 are set to
    2e8, the guide's value. Buckets already at 2e8 or below get no fix.

    ## References
    - https://huggingface.co/docs/transformers/deepspeed (ZeRO-2: overlap_comm "uses 4.5x the
      allgather_bucket_size and reduce_bucket_size values")
    - pitfalls catalog D05
    """

    code = "TL304"
    name = "overlap-comm-bucket-memory"
    severity = Severity.WARNING
    triggers = DEEPSPEED_NAMES
    fix_safety = "safe"
    summary = "overlap_comm costs 4.5 x (allgather + reduce buckets) x 2 bytes of GPU memory"

    cases = [
        Case(files={"ds.json": '{\n  "train_micro_batch_size_per_gpu": 8,\n  "zero_optimization": {\n'
                               '    "stage": 2,\n    "overlap_comm": true,\n    "allgather_bucket_size": 5e8,\n'
                               '    "reduce_bucket_size": 5e8\n  }\n}\n'},
             fixed='{\n  "train_micro_batch_size_per_gpu": 8,\n  "zero_optimization": {\n'
                   '    "stage": 2,\n    "overlap_comm": true,\n    "allgather_bucket_size": 2e8,\n'
                   '    "reduce_bucket_size": 2e8\n  }\n}\n', fixed_path="ds.json"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "overlap_comm": true}}\n'}, note="default buckets 5e8: 9 GB"),
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
        big = max(sizes) >= self.DEFAULT_BUCKET
        if gpu is not None and getattr(gpu, "memory_gib", None):
            frac = extra / (gpu.memory_gib * 2**30)
            share = f", {frac:.0%} of a {gpu.describe()}"
            big = big or frac > 0.25
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
        elif edits:
            message += "; 2e8 buckets cost 3.6 GB"
        else:
            message += "; if memory is short, smaller buckets or overlap_comm false trade speed for memory"
        yield self.diagnostic(overlap.span, message, edits=edits or None,  # type: ignore[arg-type]
                              severity=None if big else Severity.INFO,
                              related=[v.span.related(f"{v.name.rsplit('.', 1)[-1]} is set here")
                                       for v in (ag, rb) if v is not None and v.span is not None],
                              fix_message="set the buckets to 2e8")

