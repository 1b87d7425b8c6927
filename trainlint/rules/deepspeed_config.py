"""TL3xx: DeepSpeed configs, alone and against the TrainingArguments of their setup."""

from __future__ import annotations

import difflib
import json
from functools import lru_cache
from importlib import resources
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import as_int, effective, located, where
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup, Value

RUN_SH = ("torchrun --nproc_per_node 2 run.py \\\n  --output_dir out \\\n  --per_device_train_batch_size 8 \\\n"
          "  --deepspeed ds.json\n")
HF_SCRIPT = ("from transformers import HfArgumentParser, TrainingArguments\n"
             "parser = HfArgumentParser((TrainingArguments,))\n"
             "(args,) = parser.parse_args_into_dataclasses()\n")


def _ds(setup: Setup):
    return setup.extra.get("deepspeed")


def _auto_edit(v: Value):
    return v.span.edit('"auto"') if v.span is not None else None


class DeepSpeedMismatch(Rule):
    """
    ## What it does
    Compares every DeepSpeed setting that transformers checks against TrainingArguments
    (`HfTrainerDeepSpeedConfig.trainer_config_process` / `trainer_config_finalize`) with the
    TrainingArguments values of the same setup, wherever they are set (script, launch flags,
    args file, or the library default):

    | DeepSpeed key | TrainingArguments |
    | --- | --- |
    | `train_micro_batch_size_per_gpu` | `per_device_train_batch_size` (not with `auto_find_batch_size`) |
    | `gradient_accumulation_steps` | `gradient_accumulation_steps` |
    | `train_batch_size` | world size x `per_device_train_batch_size` x `gradient_accumulation_steps` |
    | `gradient_clipping` | `max_grad_norm` |
    | `optimizer.params.lr`, `scheduler.params.warmup_max_lr` | `learning_rate` |
    | `optimizer.params.betas` | `[adam_beta1, adam_beta2]` |
    | `optimizer.params.eps` | `adam_epsilon` |
    | `optimizer.params.weight_decay` | `weight_decay` |
    | `scheduler.params.total_num_steps` | `max_steps` (when set) |
    | `scheduler.params.warmup_num_steps` | `max(1, warmup_steps)` (when an integer) |
    | `fp16.enabled` / `bf16.enabled` | `fp16 or fp16_full_eval` / `bf16 or bf16_full_eval` |

    ## Why is this bad?
    transformers collects every mismatch and raises at `trainer.train()` ("Please correct the
    following DeepSpeed config values that mismatch TrainingArguments values"), after the model
    has been loaded; the DeepSpeed guide warns that mismatches otherwise "may cause the training
    to fail in very difficult to detect ways".

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": 16}
    ```
    with `--per_device_train_batch_size 8` on the launch line.

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": "auto"}
    ```

    ## Fix safety
    Safe: the DeepSpeed value becomes `"auto"`, which transformers fills with the
    TrainingArguments value, the value the run was going to be checked against.

    ## References
    - transformers `integrations/deepspeed.py` (`fill_match`, `trainer_config_process`)
    - https://huggingface.co/docs/transformers/deepspeed ("auto" values)
    - pitfalls catalog D01
    """

    code = "TL301"
    name = "deepspeed-mismatch-training-args"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "a DeepSpeed value disagrees with the TrainingArguments value transformers compares it with"

    cases = [
        Case(files={"run.sh": RUN_SH, "run.py": HF_SCRIPT,
                    "ds.json": '{\n  "zero_optimization": {"stage": 1},\n  "train_micro_batch_size_per_gpu": 16\n}\n'},
             fixed='{\n  "zero_optimization": {"stage": 1},\n  "train_micro_batch_size_per_gpu": "auto"\n}\n',
             fixed_path="ds.json"),
        Case(files={"train.py": "from transformers import TrainingArguments\n"
                                "args = TrainingArguments(output_dir='o', deepspeed='ds.json', max_grad_norm=0.5)\n",
                    "ds.json": '{"zero_optimization": {"stage": 2}, "gradient_clipping": 1.0,'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'}),
        Case(files={"train.py": "from transformers import TrainingArguments\n"
                                "args = TrainingArguments(output_dir='o', deepspeed='ds.json')\n",
                    "ds.json": '{"zero_optimization": {"stage": 2}, "gradient_accumulation_steps": 4,'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'},
             note="the TrainingArguments default 1 disagrees"),
        Case(files={"run.sh": RUN_SH, "run.py": HF_SCRIPT,
                    "ds.json": '{"zero_optimization": {"stage": 1}, "train_batch_size": 64,'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'},
             note="2 GPUs x 8 x 1 = 16, not 64"),
        # must not flag
        Case(files={"run.sh": RUN_SH, "run.py": HF_SCRIPT,
                    "ds.json": '{"zero_optimization": {"stage": 1}, "train_micro_batch_size_per_gpu": 8,'
                               ' "train_batch_size": 16}\n'}, flags=False),
        Case(files={"run.sh": RUN_SH, "run.py": HF_SCRIPT,
                    "ds.json": '{"zero_optimization": {"stage": 1}, "train_micro_batch_size_per_gpu": "auto"}\n'},
             flags=False),
        Case(files={"ds.json": '{"zero_optimization": {"stage": 1}, "train_micro_batch_size_per_gpu": 16}\n'},
             flags=False, note="no TrainingArguments in the setup"),
    ]

    PAIRS = (
        ("train_micro_batch_size_per_gpu", "per_device_train_batch_size", "micro batch"),
        ("gradient_accumulation_steps", "gradient_accumulation_steps", "gradient accumulation"),
        ("gradient_clipping", "max_grad_norm", "gradient clipping"),
        ("optimizer.params.lr", "learning_rate", "optimizer lr"),
        ("optimizer.params.eps", "adam_epsilon", "optimizer eps"),
        ("optimizer.params.weight_decay", "weight_decay", "optimizer weight_decay"),
        ("scheduler.params.warmup_max_lr", "learning_rate", "scheduler warmup_max_lr"),
    )

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        for site in setup.sites:
            yield from self._check_site(setup, cfg, site)

    def _report(self, ds: Value, label: str, ta: Value | list[Value], expected_text: str | None = None):
        tas = ta if isinstance(ta, list) else [ta]
        ta_text = " and ".join(located(t) for t in tas)
        if expected_text:
            ta_text = f"{expected_text} ({ta_text})"
        message = (f"{label} {json.dumps(ds.value)} in {where(ds)} disagrees with {ta_text}: transformers raises "
                   f"at train() for DeepSpeed values that mismatch TrainingArguments; set it to \"auto\"")
        related = [t.span.related(f"{t.name} is set here") for t in tas if t.span is not None]
        edit = _auto_edit(ds)
        return self.diagnostic(ds.span, message, edits=[edit] if edit else None, related=related,  # type: ignore[arg-type]
                               fix_message="set the DeepSpeed value to \"auto\"")

    def _check_site(self, setup: Setup, cfg, site) -> Iterable[Diagnostic]:
        afbs = effective(site, "auto_find_batch_size")
        for ds_key, ta_name, label in self.PAIRS:
            ds = cfg.value(ds_key)
            if ds is None or ds.value == "auto" or isinstance(ds.value, (dict, list, str)):
                continue
            if ds_key == "train_micro_batch_size_per_gpu" and (afbs is None or afbs.value):
                continue
            ta = effective(site, ta_name)
            if ta is None or not isinstance(ta.value, (int, float)) or isinstance(ta.value, bool):
                continue
            if ds.value != ta.value:
                yield self._report(ds, label, ta)
        # betas
        ds = cfg.value("optimizer.params.betas")
        b1, b2 = effective(site, "adam_beta1"), effective(site, "adam_beta2")
        if ds is not None and isinstance(ds.value, list) and b1 is not None and b2 is not None \
                and list(ds.value) != [b1.value, b2.value]:
            yield self._report(ds, "optimizer betas", [b1, b2])
        # precision
        for section in ("fp16", "bf16"):
            ds = cfg.value(f"{section}.enabled")
            if ds is None or not isinstance(ds.value, bool):
                continue
            a, b = effective(site, section), effective(site, f"{section}_full_eval")
            if a is None or b is None:
                continue
            hf = bool(a.value) or bool(b.value)
            if ds.value != hf:
                shown = [v for v in (a, b) if v.value] or [a]
                yield self._report(ds, f"{section}.enabled", shown)
        # train_batch_size needs the world size
        ds = cfg.value("train_batch_size")
        world = setup.world_size
        if ds is not None and isinstance(ds.value, int) and not isinstance(ds.value, bool) \
                and world is not None and isinstance(world.value, int) and not (afbs is None or afbs.value):
            pd, ga = effective(site, "per_device_train_batch_size"), effective(site, "gradient_accumulation_steps")
            if pd is not None and ga is not None and isinstance(pd.value, int) and isinstance(ga.value, int):
                expected = world.value * pd.value * ga.value
                if expected != ds.value:
                    yield self._report(ds, "train_batch_size", [world, pd, ga],
                                       expected_text=f"{expected} = {world.value} processes x {pd.value} x {ga.value}")
        # scheduler steps
        ds = cfg.value("scheduler.params.total_num_steps")
        ms = effective(site, "max_steps")
        if ds is not None and isinstance(ds.value, int) and ms is not None and isinstance(ms.value, int) \
                and ms.value > 0 and ds.value != ms.value:
            yield self._report(ds, "scheduler total_num_steps", ms)
        ds = cfg.value("scheduler.params.warmup_num_steps")
        ws = effective(site, "warmup_steps")
        if ds is not None and isinstance(ds.value, int) and ds.value > 0 and ws is not None \
                and as_int(ws.value) is not None and site.get("warmup_ratio") is None:  # <= 0: TL313
            n = as_int(ws.value)
            if (n >= 1 or n == 0) and ds.value != max(1, n):  # type: ignore[operator]
                yield self._report(ds, "scheduler warmup_num_steps", ws, expected_text=f"{max(1, n)}")  # type: ignore[type-var]


class DeepSpeedBatchTriple(Rule):
    """
    ## What it does
    Checks DeepSpeed's batch-size triple: `train_batch_size` must equal
    `train_micro_batch_size_per_gpu` x `gradient_accumulation_steps` x world size when all
    three are numbers; at least one of `train_batch_size` and `train_micro_batch_size_per_gpu`
    must be given; none may be zero or negative. The world size comes from the launch line or
    accelerate config (or `--gpus`).

    ## Why is this bad?
    DeepSpeed asserts on it when the engine starts (`_batch_assertion`,
    `_set_batch_related_parameters` in `runtime/config.py`); when only two are given it
    derives the third with an integer division, silently rounding down.

    ## Example
    ```json
    {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 2}
    ```
    on 2 GPUs (8 x 2 x 2 = 32).

    ## Use instead
    ```json
    {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 2}
    ```
    or `"auto"` for all three under the HF Trainer.

    ## Fix safety
    No automatic fix: which of the three is intended is a choice.

    ## References
    - DeepSpeed `runtime/config.py` (`_batch_assertion`)
    - pitfalls catalog D02
    """

    code = "TL302"
    name = "deepspeed-batch-size-triple"
    severity = Severity.ERROR
    summary = "train_batch_size != micro batch x accumulation x world size (or none given)"

    cases = [
        Case(files={"ds.json": '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8,'
                               ' "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 1}}\n'},
             options={"gpus": 2}),
        Case(files={"ds.json": '{"zero_optimization": {"stage": 2}, "gradient_accumulation_steps": 1,'
                               ' "fp16": {"enabled": true}}\n'}, note="no batch size at all"),
        Case(files={"ds.json": '{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": 0}\n'}),
        # must not flag
        Case(files={"ds.json": '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 8,'
                               ' "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 1}}\n'},
             options={"gpus": 2}, flags=False),
        Case(files={"ds.json": '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8,'
                               ' "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 1}}\n'},
             flags=False, note="world size unknown: never guessed"),
        Case(files={"ds.json": '{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",'
                               ' "zero_optimization": {"stage": 1}}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        tbs, mbs, ga = cfg.batch_triple()
        if tbs is None and mbs is None:
            span = cfg.root.span
            first = type(span)(path=span.path, line=span.line, column=span.column, end_line=span.line,
                               end_column=span.column + 1)
            yield self.diagnostic(first, "neither train_batch_size nor train_micro_batch_size_per_gpu is set: "
                                         "DeepSpeed asserts that one of them is given (use \"auto\" under the HF Trainer)")
            return
        for v in (tbs, mbs, ga):
            if v is not None and as_int(v.value) is not None and as_int(v.value) <= 0:  # type: ignore[operator]
                yield self.diagnostic(v.span, f"{v.name} is {v.value}: DeepSpeed requires a positive batch size "  # type: ignore[arg-type]
                                              f"and accumulation")
                return
        world = setup.world_size
        if tbs is None or mbs is None or ga is None or world is None:
            return
        t, m, g = as_int(tbs.value), as_int(mbs.value), as_int(ga.value)
        w = as_int(world.value)
        if None in (t, m, g, w):
            return
        if t != m * g * w:  # type: ignore[operator]
            yield self.diagnostic(
                tbs.span,  # type: ignore[arg-type]
                f"train_batch_size {t} in {where(tbs)} != micro batch {m} x accumulation {g} x {w} processes "
                f"({located(world) if world.span else world.note or 'world size'}) = {m * g * w}: "  # type: ignore[operator]
                f"DeepSpeed asserts that they agree",
                related=[x.span.related(f"{x.name} is set here") for x in (mbs, ga, world) if x.span is not None])


class DeepSpeedFp16AndBf16(Rule):
    """
    ## What it does
    Flags a DeepSpeed config that enables both `fp16` and `bf16` (literally `true`).

    ## Why is this bad?
    DeepSpeed asserts "bfloat16 and fp16 modes cannot be simultaneously enabled" when the
    engine starts.

    ## Example
    ```json
    {"fp16": {"enabled": true}, "bf16": {"enabled": true}}
    ```

    ## Use instead
    ```json
    {"fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}}
    ```
    (under the HF Trainer, which fills them from `--fp16`/`--bf16`), or enable one.

    ## Fix safety
    Safe under the HF Trainer (the fix is offered only when the setup has TrainingArguments):
    both become `"auto"` and follow TrainingArguments.

    ## References
    - DeepSpeed `runtime/config.py` (`_do_error_check`)
    - pitfalls catalog D03
    """

    code = "TL303"
    name = "deepspeed-fp16-and-bf16"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "fp16 and bf16 both enabled in a DeepSpeed config"

    cases = [
        Case(files={"ds.json": '{"fp16": {"enabled": true}, "bf16": {"enabled": true}, '
                               '"train_micro_batch_size_per_gpu": 8}\n'}),
        Case(files={"train.py": "from transformers import TrainingArguments\n"
                                "args = TrainingArguments(output_dir='o', deepspeed='ds.json')\n",
                    "ds.json": '{"fp16": {"enabled": true}, "bf16": {"enabled": true}, '
                               '"train_micro_batch_size_per_gpu": "auto"}\n'},
             fixed='{"fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"}, '
                   '"train_micro_batch_size_per_gpu": "auto"}\n', fixed_path="ds.json"),
        # must not flag
        Case(files={"ds.json": '{"fp16": {"enabled": "auto"}, "bf16": {"enabled": true}, '
                               '"train_micro_batch_size_per_gpu": 8}\n'}, flags=False),
        Case(files={"ds.json": '{"fp16": {"enabled": false}, "bf16": {"enabled": true}, '
                               '"train_micro_batch_size_per_gpu": 8}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        fp, bf = cfg.value("fp16.enabled"), cfg.precision_enabled("bf16")
        if fp is None or bf is None or fp.value is not True or bf.value is not True or not bf.name.endswith("enabled"):
            return
        edits = [e for e in (_auto_edit(fp), _auto_edit(bf)) if e] if setup.sites else None
        yield self.diagnostic(fp.span, f"fp16 and bf16 are both enabled ({where(fp)}, {where(bf)}): DeepSpeed "  # type: ignore[arg-type]
                                       f"asserts that at most one is", edits=edits,
                              related=[bf.span.related("bf16 enabled here")] if bf.span else [],
                              fix_message="set both to \"auto\" (TrainingArguments decides)")


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


class Zero3NoSave16bit(Rule):
    """
    ## What it does
    Flags ZeRO stage 3 without `stage3_gather_16bit_weights_on_model_save: true` in a setup that
    saves the model (TrainingArguments `save_strategy` other than `"no"`, which is the
    default, or a `save_model()`/`push_to_hub()` call in the script).

    ## Why is this bad?
    Under ZeRO-3 each rank holds only a shard of the weights; without the gather the saved
    `model.safetensors` holds placeholders (checkpoints of a few hundred KB that cannot be
    loaded), and the full weights must be rebuilt with `zero_to_fp32.py`.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": true}}
    ```

    ## Fix safety
    Safe: training is unchanged; saving gathers the weights (slower, more memory at save time).

    ## References
    - https://huggingface.co/docs/transformers/deepspeed (saving with ZeRO-3)
    - https://github.com/microsoft/DeepSpeed/issues/3841
    - pitfalls catalog D06
    """

    code = "TL305"
    name = "zero3-save-without-gather"
    severity = Severity.WARNING
    fix_safety = "safe"
    summary = "ZeRO-3 saves unusable checkpoints without stage3_gather_16bit_weights_on_model_save"

    cases = [
        Case(files={"train.py": "from transformers import TrainingArguments\n"
                                "args = TrainingArguments(output_dir='o', deepspeed='ds.json')\n",
                    "ds.json": '{\n  "zero_optimization": {\n    "stage": 3\n  },\n'
                               '  "train_micro_batch_size_per_gpu": "auto"\n}\n'},
             fixed='{\n  "zero_optimization": {\n    "stage": 3,\n'
                   '    "stage3_gather_16bit_weights_on_model_save": true\n  },\n'
                   '  "train_micro_batch_size_per_gpu": "auto"\n}\n', fixed_path="ds.json"),
        # must not flag
        Case(files={"train.py": "from transformers import TrainingArguments\n"
                                "args = TrainingArguments(output_dir='o', deepspeed='ds.json', save_strategy='no')\n",
                    "ds.json": '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}\n'},
             flags=False),
        Case(files={"train.py": "from transformers import TrainingArguments\n"
                                "args = TrainingArguments(output_dir='o', deepspeed='ds.json')\n",
                    "ds.json": '{"zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": true},'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'}, flags=False),
        Case(files={"ds.json": '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 8}\n'},
             flags=False, note="nothing known about saving"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None or cfg.stage is None or as_int(cfg.stage.value) != 3:
            return
        from trainlint.sources.jsondoc import insert_key_edit

        for key in ("stage3_gather_16bit_weights_on_model_save", "gather_16bit_weights_on_model_save",
                    "stage3_gather_fp16_weights_on_model_save"):
            v = cfg.value(f"zero_optimization.{key}")
            if v is not None:
                if v.value is True:
                    return
                break
        saves = any((s := effective(site, "save_strategy")) is not None and s.value != "no" for site in setup.sites)
        saves = saves or any(
            getattr(cs.node.func, "attr", None) in ("save_model", "push_to_hub") for pf in setup.scripts for cs in pf.calls)
        if not saves:
            return
        edits = None
        if v is not None and v.span is not None and v.value is False:
            edits = [v.span.edit("true")]
        elif v is None and cfg.zero_optimization is not None and cfg.zero_optimization.is_mapping:
            edits = [insert_key_edit(cfg.zero_optimization, "stage3_gather_16bit_weights_on_model_save", "true")]
        yield self.diagnostic(cfg.stage.span, "ZeRO stage 3 without stage3_gather_16bit_weights_on_model_save: the "  # type: ignore[arg-type]
                                              "saved model holds only placeholders for the sharded weights (use "
                                              "zero_to_fp32.py, or gather on save)", edits=edits,
                              fix_message="set stage3_gather_16bit_weights_on_model_save to true")


@lru_cache(maxsize=1)
def ds_schema() -> dict:
    return json.loads(resources.files("trainlint.knowledge").joinpath("data/deepspeed_schema.json").read_text())


def _valid_keys(section: str) -> tuple[set[str], dict[str, dict]]:
    fields = ds_schema()[section]
    valid = set(fields)
    for info in fields.values():
        if info.get("alias"):
            valid.add(info["alias"])
    return valid, fields


# Top-level sections DeepSpeed reads (runtime/config.py and the sub-configs it builds).
TOP_LEVEL_EXTRA = {
    "zero_optimization", "fp16", "bf16", "bfloat16", "amp", "optimizer", "scheduler", "gradient_clipping",
    "activation_checkpointing", "flops_profiler", "wall_clock_breakdown", "memory_breakdown", "comms_logger",
    "tensorboard", "wandb", "csv_monitor", "comet", "aio", "checkpoint", "data_types", "elasticity", "autotuning",
    "pipeline", "tensor_parallel", "hybrid_engine", "compile", "compression_training", "data_efficiency",
    "curriculum_learning", "nebula", "dump_state", "torch_autocast", "timers", "weight_quantization",
    "quantize_training", "eigenvalue", "progressive_layer_drop", "sequence_parallel_size", "sparse_attention",
    "sparse_gradients", "zero_quantized_weights", "zero_quantized_gradients", "graph_harvesting",
    "use_data_before_expert_parallelism", "gradient_accumulation_dtype", "expert_parallel",
}


class DeepSpeedUnknownKey(Rule):
    """
    ## What it does
    Checks key names in a DeepSpeed config against DeepSpeed's own schema (its pydantic models
    in `runtime/zero/config.py` and `runtime/zero/offload_config.py`, shipped as generated
    data): unknown keys inside `zero_optimization`, `offload_optimizer` and `offload_param`
    (with the nearest valid key), deprecated keys (`cpu_offload`, `cpu_offload_param`,
    `cpu_offload_use_pin_memory`, `stage3_gather_fp16_weights_on_model_save`, the legacy
    `"zero_optimization": true`) with their rewrite, and top-level keys that look like a
    misspelling of a known one.

    ## Why is this bad?
    Inside `zero_optimization` DeepSpeed's schema forbids extra keys, so a typo stops the run
    at start-up with a validation error; deprecated keys are remapped with a warning and may
    go away; a misspelled top-level key is silently ignored ("DeepSpeed doesn't validate
    parameter names and any typos fallback on the parameter's default").

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "overlap_com": true, "cpu_offload": true}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 2, "overlap_comm": true, "offload_optimizer": {"device": "cpu"}}}
    ```

    ## Fix safety
    Deprecated keys are rewritten to their replacement (safe: DeepSpeed maps them the same
    way). A misspelled key is renamed to the suggestion (unsafe: the setting starts to apply).

    ## References
    - DeepSpeed `runtime/zero/config.py`, `runtime/zero/offload_config.py`, `runtime/config_utils.py`
      (`extra="forbid"`)
    - https://huggingface.co/docs/transformers/deepspeed
    - pitfalls catalog D07
    """

    code = "TL306"
    name = "deepspeed-unknown-key"
    severity = Severity.WARNING
    fix_safety = "safe"
    summary = "unknown, misspelled or deprecated DeepSpeed keys"

    cases = [
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2, "overlap_com": true}}\n'},
             unsafe=True, fixed='{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2, "overlap_comm": true}}\n',
             fixed_path="ds.json"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2, "cpu_offload": true}}\n'},
             fixed='{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2, '
                   '"offload_optimizer": {"device": "cpu"}}}\n', fixed_path="ds.json"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3,'
                               ' "stage3_gather_fp16_weights_on_model_save": true}}\n'},
             fixed='{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3,'
                   ' "stage3_gather_16bit_weights_on_model_save": true}}\n', fixed_path="ds.json"),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "gradient_cliping": 1.0, "zero_optimization": {"stage": 1}}\n'}),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3,'
                               ' "offload_param": {"device": "cpu", "pin_memroy": true}}}\n'}),
        # must not flag
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3,'
                               ' "stage3_prefetch_bucket_size": "auto", "offload_param": {"device": "cpu", "pin_memory": true},'
                               ' "overlap_comm": true}, "steps_per_print": 10}\n'}, flags=False),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 1}, "my_notes": "x"}\n'},
             flags=False, note="an unrelated top-level key is not a typo"),
    ]

    REWRITES = {
        "cpu_offload": ("offload_optimizer", '{"device": "cpu"}'),
        "cpu_offload_param": ("offload_param", '{"device": "cpu"}'),
    }

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        from trainlint.sources.jsondoc import JsonNode

        if not isinstance(cfg.root, JsonNode) or not cfg.root.is_mapping:
            return
        root = cfg.root
        zero = root.get("zero_optimization")
        if zero is not None and zero.kind == "bool":
            yield self.diagnostic(zero.span, "\"zero_optimization\": true|false is DeepSpeed's deprecated format; "
                                             "write {\"stage\": N}", edits=[zero.span.edit(
                                                 '{"stage": %d}' % (1 if zero.value else 0))],
                                  fix_message="use the object format")
        if zero is not None and zero.is_mapping:
            yield from self._section(zero, "zero_optimization")
            for sub in ("offload_param", "offload_optimizer"):
                node = zero.get(sub)
                if node is not None and node.is_mapping:
                    yield from self._section(node, sub)
        known = set(ds_schema()["constants"]) | TOP_LEVEL_EXTRA
        from trainlint.sources.kinds import DEEPSPEED_KEYS

        known |= DEEPSPEED_KEYS
        for m in root.members:
            if m.key in known:
                continue
            close = difflib.get_close_matches(m.key, sorted(known), n=1, cutoff=0.85)
            if close:
                yield self.diagnostic(m.key_span, f"unknown top-level DeepSpeed key {m.key!r}: DeepSpeed ignores it "  # type: ignore[arg-type]
                                                  f"silently; did you mean {close[0]!r}?",
                                      edits=[m.key_span.edit(json.dumps(close[0]))],  # type: ignore[union-attr]
                                      applicability="unsafe", fix_message=f"rename to {close[0]}")

    def _section(self, node, section: str) -> Iterable[Diagnostic]:
        valid, fields = _valid_keys(section)
        present = set(node.keys())
        for m in node.members:
            key = m.key
            info = fields.get(key)
            if info is not None and info.get("deprecated"):
                new = info.get("new_param", "")
                edits = None
                if key in self.REWRITES and m.value is True:
                    new_key, value = self.REWRITES[key]
                    if new_key not in present:
                        edits = [m.key_span.edit(json.dumps(new_key)), m.span.edit(value)]  # type: ignore[union-attr]
                elif key == "stage3_gather_fp16_weights_on_model_save" \
                        and "stage3_gather_16bit_weights_on_model_save" not in present:
                    new = "stage3_gather_16bit_weights_on_model_save"
                    edits = [m.key_span.edit(json.dumps(new))]  # type: ignore[union-attr]
                yield self.diagnostic(m.key_span, f"{key!r} in {section} is deprecated in DeepSpeed; use {new}",  # type: ignore[arg-type]
                                      edits=edits, fix_message=f"rewrite as {new}")
                continue
            if key in valid:
                continue
            close = difflib.get_close_matches(key, sorted(valid), n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            yield self.diagnostic(m.key_span, f"unknown key {key!r} in {section}: DeepSpeed's schema forbids "  # type: ignore[arg-type]
                                              f"extra keys there and stops at start-up{hint}",
                                  edits=[m.key_span.edit(json.dumps(close[0]))] if close else None,  # type: ignore[union-attr]
                                  applicability="unsafe", severity=Severity.ERROR,
                                  fix_message=f"rename to {close[0]}" if close else "")


class OffloadWithoutPinMemory(Rule):
    """
    ## What it does
    Flags `offload_optimizer` / `offload_param` to `cpu` or `nvme` without `pin_memory` written.

    ## Why is this bad?
    Unpinned host buffers make every host/device copy of the offloaded states slower. DeepSpeed
    up to 0.18 defaults `pin_memory` to false (0.19 defaults to true), so the speed of
    an offloaded run depends on the installed version; the DeepSpeed guide's ZeRO-2/3 templates
    set it explicitly. Pinned memory is taken from the RAM other processes can use.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": true}}}
    ```

    ## Fix safety
    Safe: numerics are unchanged (check the host RAM).

    ## References
    - DeepSpeed `runtime/zero/offload_config.py` (`pin_memory` default)
    - https://huggingface.co/docs/transformers/deepspeed (ZeRO-2/ZeRO-3 example configs)
    - pitfalls catalog D08
    """

    code = "TL307"
    name = "offload-without-pin-memory"
    severity = Severity.INFO
    fix_safety = "safe"
    summary = "CPU/NVMe offload without pin_memory set"

    cases = [
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "offload_optimizer": {"device": "cpu"}}}\n'},
             fixed='{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                   ' "offload_optimizer": {"device": "cpu", "pin_memory": true}}}\n', fixed_path="ds.json"),
        # must not flag
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "offload_optimizer": {"device": "cpu", "pin_memory": true}}}\n'}, flags=False),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "offload_optimizer": {"device": "none"}}}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        from trainlint.sources.jsondoc import JsonNode, insert_key_edit

        for which in ("optimizer", "param"):
            node = cfg.node(f"zero_optimization.offload_{which}")
            dev = cfg.value(f"zero_optimization.offload_{which}.device")
            if node is None or not node.is_mapping or dev is None or dev.value not in ("cpu", "nvme"):
                continue
            if node.get("pin_memory") is not None:
                continue
            edits = [insert_key_edit(node, "pin_memory", "true")] if isinstance(node, JsonNode) else None
            yield self.diagnostic(dev.span, f"offload_{which} to {dev.value} without pin_memory: unpinned host "  # type: ignore[arg-type]
                                            f"buffers make the offload copies slower (DeepSpeed <= 0.18 defaults "
                                            f"to unpinned)", edits=edits, fix_message="set pin_memory to true")
