"""TL308-TL317: DeepSpeed configs against the model, the hardware and the script that uses them
(catalog section 3, D09-D17)."""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_models import (
    ds_used_by_trainer, method_calls, model_facts, norm_type, qualified_calls, single_model,
    uses_hf_trainer,
)
from trainlint.rules._setup_util import as_int, effective, located, where
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

GIB = 2**30


def _ds(setup: Setup):
    return setup.extra.get("deepspeed")


def _stage(cfg) -> int | None:
    """ZeRO stage as an int (0 when zero_optimization or its stage is absent); None when it is
    not a number ("auto", a string)."""
    if cfg.zero_optimization is None:
        return 0
    v = cfg.stage
    if v is None:
        return 0
    return as_int(v.value)


def _trainer_script(model: str = "'m'", extra: str = "") -> str:
    return ("from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
            f"model = AutoModelForCausalLM.from_pretrained({model})\n"
            f"args = TrainingArguments(output_dir='o', deepspeed='ds.json'{extra})\n"
            "trainer = Trainer(model=model, args=args)\ntrainer.train()\n")


# --------------------------------------------------------------------------------------- D09


class OffloadNotNeeded(Rule):
    """
    ## What it does
    Flags ZeRO CPU/NVMe offload (`offload_optimizer`, `offload_param`) when the memory estimate
    says the model states (16-bit weights, gradients, fp32 master weights and Adam states) fit
    on the target GPU without offload, using at most half of its memory. It needs the model
    (from the model table or a local `config.json`) and the target GPU (`--gpu`); the estimate
    assumes full fine-tuning in mixed precision with Adam, and one GPU when the world size is not
    known, so it errs towards silence.

    ## Why is this bad?
    Offload moves optimizer states (and with `offload_param` the weights) to host memory and
    runs the optimizer step on the CPU: every step pays PCIe transfers and a CPU Adam. The
    DeepSpeed guide: "If you have enough GPU memory make sure you disable CPU/NVMe offload to
    make everything faster".

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
    ```
    for flan-t5-large (0.8B parameters) on an A100-80GB.

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "none"}}}
    ```

    ## Fix safety
    Unsafe: the numerics are the same, but the run then needs the GPU memory the estimate
    computed; activations (batch size, sequence length) are not part of the comparison.

    ## References
    - https://huggingface.co/docs/transformers/deepspeed (ZeRO-Offload; "disable CPU/NVMe offload")
    - DeepSpeed `estimate_zero2_model_states_mem_needs` / `estimate_zero3_model_states_mem_needs`
    - pitfalls catalog D09
    """

    code = "TL308"
    name = "deepspeed-offload-not-needed"
    severity = Severity.INFO
    fix_safety = "unsafe"
    summary = "ZeRO offload although the model states fit on the GPU"

    DS = ('{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": true}},'
          ' "train_micro_batch_size_per_gpu": "auto"}\n')
    cases = [
        Case(files={"train.py": _trainer_script("'google/flan-t5-large'"), "ds.json": DS}, options={"gpu": "A100"},
             unsafe=True, fixed_path="ds.json",
             fixed='{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "none", "pin_memory": true}},'
                   ' "train_micro_batch_size_per_gpu": "auto"}\n'),
        # must not flag
        Case(files={"train.py": _trainer_script("'meta-llama/Llama-2-7b-hf'"), "ds.json": DS}, options={"gpu": "A100"},
             flags=False, note="7B: 20 B x 6.7e9 = 125 GiB of model states on one GPU"),
        Case(files={"train.py": _trainer_script("'google/flan-t5-large'"), "ds.json": DS}, flags=False,
             note="no target GPU"),
        Case(files={"train.py": _trainer_script("'my/unknown-model'"), "ds.json": DS}, options={"gpu": "A100"},
             flags=False, note="model unknown"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        gpu = setup.gpu
        if cfg is None or gpu is None:
            return
        from trainlint.memory import estimate, format_bytes, shape_from_model

        stage = _stage(cfg)
        if stage is None or stage < 1:
            return
        offloads = []
        for which in ("optimizer", "param"):
            dev = cfg.value(f"zero_optimization.offload_{which}.device")
            if dev is not None and dev.value in ("cpu", "nvme") and (which == "optimizer" or stage == 3):
                offloads.append((which, dev))
        if not offloads:
            return
        model = single_model(setup)
        if model is None or not model.info.known:
            return
        world = setup.world_size_value or 1
        est = estimate(shape_from_model(model.info, zero_stage=stage, precision="bf16", world_size=world,
                                        optimizer="adamw_torch", offload_optimizer="none", offload_param="none"))
        states = est.model_states
        if states > gpu.memory_bytes * 0.5:
            return
        share = 100 * states / gpu.memory_bytes
        gpus = f"{world} GPU{'s' if world != 1 else ''}" if setup.world_size_value else "one GPU (world size unknown)"
        for which, dev in offloads:
            yield self.diagnostic(
                dev.span,  # type: ignore[arg-type]
                f"offload_{which} to {dev.value}, but without offload the model states of {model.model_id} "
                f"({model.info.params / 1e9:.2f}B parameters) take about {format_bytes(states)} per GPU under "
                f"ZeRO-{stage} on {gpus}, {share:.0f}% of the {gpu.name}'s memory: offload only slows every step",
                edits=[dev.span.edit('"none"')], fix_message=f"set offload_{which}.device to \"none\"",  # type: ignore[union-attr]
                related=[model.span.related(f"{model.model_id} is loaded here")])


# --------------------------------------------------------------------------------------- D10

HIDDEN_KEYS = ("reduce_bucket_size", "stage3_prefetch_bucket_size", "stage3_param_persistence_threshold")


class HandSetHiddenSizeBuckets(Rule):
    """
    ## What it does
    Flags concrete numbers for the ZeRO-3 settings that transformers derives from the model's
    hidden size when they are `"auto"`: `reduce_bucket_size` (hidden²),
    `stage3_prefetch_bucket_size` (0.9·hidden²) and `stage3_param_persistence_threshold`
    (10·hidden), in a config used by the HF Trainer with ZeRO stage 3.

    ## Why is this bad?
    Numbers copied from another setup are tuned for another model: buckets much larger than
    hidden² cost GPU memory (with `overlap_comm` several times over), much smaller ones cost
    communication calls. The DeepSpeed guide's ZeRO-3 template leaves all three on `"auto"`.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "reduce_bucket_size": 500000000}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}}
    ```

    ## Fix safety
    Unsafe: the numerics are the same, the bucket sizes (memory and speed) change.

    ## References
    - transformers `integrations/deepspeed.py` (`trainer_config_finalize`)
    - https://huggingface.co/docs/transformers/deepspeed (ZeRO-3 example config)
    - pitfalls catalog D10
    """

    code = "TL309"
    name = "deepspeed-hand-set-hidden-size-buckets"
    severity = Severity.INFO
    fix_safety = "unsafe"
    summary = "hand-set ZeRO-3 bucket sizes that \"auto\" derives from the model's hidden size"

    cases = [
        Case(files={"train.py": _trainer_script(),
                    "ds.json": '{"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 5e8},'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'},
             unsafe=True, fixed_path="ds.json",
             fixed='{"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": "auto"},'
                   ' "train_micro_batch_size_per_gpu": "auto"}\n'),
        # must not flag
        Case(files={"train.py": _trainer_script(),
                    "ds.json": '{"zero_optimization": {"stage": 2, "reduce_bucket_size": 5e8},'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'}, flags=False,
             note="stage 2: the guide's own template sets the buckets by hand"),
        Case(files={"ds.json": '{"zero_optimization": {"stage": 3, "reduce_bucket_size": 5e8},'
                               ' "train_micro_batch_size_per_gpu": 8}\n'}, flags=False,
             note="no HF Trainer: \"auto\" would not be filled"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None or _stage(cfg) != 3 or not ds_used_by_trainer(setup):
            return
        for key in HIDDEN_KEYS:
            v = cfg.value(f"zero_optimization.{key}")
            if v is None or v.span is None or as_int(v.value) is None:
                continue
            yield self.diagnostic(v.span, f"{key} is set by hand to {v.value} in {where(v)}: under the HF Trainer "
                                          f"\"auto\" sizes it from the model's hidden size", edits=[v.span.edit('"auto"')],
                                  fix_message=f"set {key} to \"auto\"")


class AutoWithoutHiddenSize(Rule):
    """
    ## What it does
    Flags `"auto"` for `reduce_bucket_size`, `stage3_prefetch_bucket_size` or
    `stage3_param_persistence_threshold` when the model the Trainer gets is a local checkpoint
    whose `config.json` has no `hidden_size`, `hidden_sizes` or `text_config` with one, and whose
    `model_type` has none in transformers either (attribute maps included; the list is generated
    from transformers 5.24 by `scripts/gen_model_facts.py`).

    ## Why is this bad?
    `HfTrainerDeepSpeedConfig.trainer_config_finalize` raises when `train()` starts: "The
    model's config file has neither `hidden_size` nor `hidden_sizes` entry, therefore it's not
    possible to automatically fill out the following `auto` entries".

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}}
    ```
    for a `musicgen` checkpoint.

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "reduce_bucket_size": 16777216}}
    ```

    ## Fix safety
    No fix: the integer to use depends on the model.

    ## References
    - transformers `integrations/deepspeed.py` (`trainer_config_finalize`)
    - pitfalls catalog D10
    """

    code = "TL310"
    name = "deepspeed-auto-without-hidden-size"
    severity = Severity.ERROR
    summary = "\"auto\" bucket sizes for a model whose config has no hidden_size"

    CONFIG = '{"model_type": "musicgen", "decoder": {"hidden_size": 1024}}\n'
    cases = [
        Case(files={"train.py": _trainer_script("'./ckpt'"), "ckpt/config.json": CONFIG,
                    "ds.json": '{"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"},'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'}),
        # must not flag
        Case(files={"train.py": _trainer_script("'./ckpt'"),
                    "ckpt/config.json": '{"model_type": "t5", "d_model": 512, "num_layers": 2, "num_heads": 8,'
                                        ' "d_ff": 1024, "vocab_size": 100}\n',
                    "ds.json": '{"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"},'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'}, flags=False,
             note="T5Config maps hidden_size to d_model"),
        Case(files={"train.py": _trainer_script("'./ckpt'"), "ckpt/config.json": CONFIG,
                    "ds.json": '{"zero_optimization": {"stage": 3, "reduce_bucket_size": 1000000},'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None or not ds_used_by_trainer(setup):
            return
        autos = [k for k in HIDDEN_KEYS if cfg.is_auto(f"zero_optimization.{k}")]
        if not autos:
            return
        model = single_model(setup)
        if model is None or model.local_config is None:
            return
        raw = model.local_config
        mt = raw.get("model_type")
        if not isinstance(mt, str) or norm_type(mt) not in {norm_type(t) for t in model_facts()["no_hidden_size"]}:
            return
        tc = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else {}
        if any(k in raw for k in ("hidden_size", "hidden_sizes")) or any(k in tc for k in ("hidden_size", "hidden_sizes")):
            return
        v = cfg.value(f"zero_optimization.{autos[0]}")
        yield self.diagnostic(v.span, f"\"auto\" for {', '.join(autos)} needs the model's hidden size, but "  # type: ignore[union-attr,arg-type]
                                      f"{model.model_id} ({mt}) has no hidden_size or hidden_sizes in its config: "
                                      f"transformers raises when train() starts; write integers",
                              related=[model.span.related(f"{model.model_id} is loaded here")])


# --------------------------------------------------------------------------------------- D11


class AutoOutsideTrainer(Rule):
    """
    ## What it does
    Flags `"auto"` values in a DeepSpeed config that a script passes to `deepspeed.initialize`
    itself, without the HF Trainer (the config is linked by `--deepspeed`/`--deepspeed_config`
    on the launch line or by `deepspeed.initialize(config="...")`).

    ## Why is this bad?
    `"auto"` is a placeholder that only the HF Trainer (and accelerate) replaces; DeepSpeed reads
    the string itself and fails on it (batch-size arithmetic, its schema's integer fields). The
    guide: without the Trainer "you can't use the auto value".

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}
    ```
    with `engine, *_ = deepspeed.initialize(model=model, config="ds.json")`.

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2}}
    ```

    ## Fix safety
    No fix: the values are the script's choice.

    ## References
    - https://huggingface.co/docs/transformers/deepspeed ("auto" values need the Trainer)
    - DeepSpeed `runtime/config.py`
    - pitfalls catalog D11
    """

    code = "TL311"
    name = "deepspeed-auto-outside-trainer"
    severity = Severity.ERROR
    summary = "\"auto\" DeepSpeed values with deepspeed.initialize called directly"

    SCRIPT = ("import deepspeed\nfrom transformers import AutoModelForCausalLM\n"
              "model = AutoModelForCausalLM.from_pretrained('m')\n"
              "engine, opt, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),"
              " config='ds.json')\n")
    cases = [
        Case(files={"train.py": SCRIPT, "ds.json": '{"train_micro_batch_size_per_gpu": "auto",'
                                                   ' "zero_optimization": {"stage": 2}}\n'}),
        Case(files={"run.sh": "deepspeed --num_gpus 2 train.py --deepspeed_config ds.json\n",
                    "train.py": SCRIPT.replace("config='ds.json'", "args=cmd_args"),
                    "ds.json": '{"train_micro_batch_size_per_gpu": 8, "gradient_clipping": "auto",'
                               ' "zero_optimization": {"stage": 2}}\n'}),
        # must not flag
        Case(files={"train.py": SCRIPT, "ds.json": '{"train_micro_batch_size_per_gpu": 8,'
                                                   ' "zero_optimization": {"stage": 2}}\n'}, flags=False),
        Case(files={"train.py": _trainer_script(), "ds.json": '{"train_micro_batch_size_per_gpu": "auto",'
                                                              ' "zero_optimization": {"stage": 2}}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None or uses_hf_trainer(setup) or setup.sites:
            return
        inits = qualified_calls(setup, "deepspeed.initialize")
        if not inits:
            return
        autos = cfg.auto_paths()
        if not autos:
            return
        first = cfg.node(autos[0])
        pf, call = inits[0]
        shown = ", ".join(autos[:4]) + (f" and {len(autos) - 4} more" if len(autos) > 4 else "")
        yield self.diagnostic(first.span, f"\"auto\" for {shown}, but the script calls deepspeed.initialize itself: "  # type: ignore[union-attr]
                                          f"only the HF Trainer (or accelerate) fills \"auto\", DeepSpeed fails on it",
                              related=[pf.span(call).related("deepspeed.initialize is called here")])


# --------------------------------------------------------------------------------------- D12

OPTIM_DEFAULTS = {"adamw_torch", "adamw_torch_fused", "adamw_hf"}


class OptimizerTwice(Rule):
    """
    ## What it does
    Flags a DeepSpeed config with an `optimizer` section used by a Trainer whose
    TrainingArguments also set `optim` to something other than the default AdamW.

    ## Why is this bad?
    With an `optimizer` section the Trainer hands the optimizer to DeepSpeed (`DummyOptim`) and
    never builds its own: the `optim` choice is silently ignored in transformers 5.
    transformers 4.x raised for `optim="adafactor"` ("--adafactor was passed, but also found
    `optimizer` configured in the DeepSpeed config. Only one optimizer can be configured.").

    ## Example
    ```python
    TrainingArguments(output_dir="o", deepspeed="ds.json", optim="adamw_bnb_8bit")
    ```
    with `"optimizer": {"type": "AdamW", ...}` in ds.json.

    ## Use instead
    Remove the DeepSpeed `optimizer` section to use `optim`, or drop `optim`.

    ## Fix safety
    No fix: which optimizer is meant is a choice.

    ## References
    - transformers `integrations/deepspeed.py` (`deepspeed_optim_sched`), 4.57 and 5.24
    - pitfalls catalog D12
    """

    code = "TL312"
    name = "deepspeed-optimizer-and-trainer-optim"
    severity = Severity.WARNING
    summary = "DeepSpeed optimizer section together with a TrainingArguments optim"

    DS = '{"optimizer": {"type": "AdamW", "params": {"lr": "auto"}}, "train_micro_batch_size_per_gpu": "auto"}\n'
    cases = [
        Case(files={"train.py": _trainer_script(extra=", optim='adamw_bnb_8bit'"), "ds.json": DS}),
        Case(files={"train.py": _trainer_script(extra=", optim='adafactor'"), "ds.json": DS}),
        # must not flag
        Case(files={"train.py": _trainer_script(extra=", optim='adamw_torch'"), "ds.json": DS}, flags=False),
        Case(files={"train.py": _trainer_script(extra=", optim='adafactor'"),
                    "ds.json": '{"train_micro_batch_size_per_gpu": "auto"}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        opt = cfg.node("optimizer")
        if opt is None or not opt.is_mapping:
            return
        major = setup.transformers_tuple()[0]
        for site in setup.sites:
            v = site.get("optim")
            if v is None or not isinstance(v.value, str) or v.value.lower() in OPTIM_DEFAULTS:
                continue
            value = v.value.lower()
            adafactor = value == "adafactor"
            if adafactor and major < 5:
                sev, why = Severity.ERROR, "transformers 4.x raises (\"Only one optimizer can be configured\")"
            else:
                sev, why = Severity.WARNING, "the Trainer hands the optimizer to DeepSpeed and ignores optim"
            yield self.diagnostic(v.key_span or v.span, f"{located(v)} but the DeepSpeed config {where_node(opt)} "  # type: ignore[arg-type]
                                                        f"defines its own optimizer: {why}", severity=sev,
                                  related=[opt.key_span.related("DeepSpeed optimizer section")] if opt.key_span else [])


def where_node(node) -> str:
    from pathlib import Path

    return f"{Path(node.span.path).name}:{node.span.line}"


# --------------------------------------------------------------------------------------- D13


class WarmupStepsNotPositive(Rule):
    """
    ## What it does
    Flags `scheduler.params.warmup_num_steps` written as zero, a negative number or a
    non-integer (`1e3`, `100.0`) in a DeepSpeed config.

    ## Why is this bad?
    DeepSpeed >= 0.19.6 rejects it when the scheduler is built (`WarmupLR`, `WarmupDecayLR`,
    `WarmupCosineLR`: "warmup_num_steps must be a positive integer"); older versions silently
    clamped it to 2 steps. transformers' own `"auto"` fill uses `max(1, warmup steps)` for this
    reason.

    ## Example
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 0}}}
    ```

    ## Use instead
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 1}}}
    ```
    (or `"auto"` under the HF Trainer).

    ## Fix safety
    Safe: `1` (an integral float is written as the integer); older DeepSpeed used 2 for 0.

    ## References
    - DeepSpeed 0.19.8 `runtime/lr_schedules.py` (`WarmupLR.__init__`)
    - transformers 5.24 `integrations/deepspeed.py` (`trainer_config_finalize` comment)
    - pitfalls catalog D13
    """

    code = "TL313"
    name = "deepspeed-warmup-steps-not-positive"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "scheduler warmup_num_steps that DeepSpeed >= 0.19.6 rejects"

    cases = [
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8,\n "scheduler": {"type": "WarmupLR",'
                               ' "params": {"warmup_num_steps": 0}}}\n'}, fixed_path="ds.json",
             fixed='{"train_micro_batch_size_per_gpu": 8,\n "scheduler": {"type": "WarmupLR",'
                   ' "params": {"warmup_num_steps": 1}}}\n'),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "scheduler": {"type": "WarmupDecayLR",'
                               ' "params": {"warmup_num_steps": 1e3, "total_num_steps": 10000}}}\n'},
             fixed_path="ds.json",
             fixed='{"train_micro_batch_size_per_gpu": 8, "scheduler": {"type": "WarmupDecayLR",'
                   ' "params": {"warmup_num_steps": 1000, "total_num_steps": 10000}}}\n'),
        # must not flag
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "scheduler": {"type": "WarmupLR",'
                               ' "params": {"warmup_num_steps": 100}}}\n'}, flags=False),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "scheduler": {"type": "WarmupLR",'
                               ' "params": {"warmup_num_steps": "auto"}}}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        node = cfg.node("scheduler.params.warmup_num_steps")
        if node is None or node.kind != "number":
            return
        raw = node.value
        if isinstance(raw, int) and raw > 0:
            return
        if isinstance(raw, float) and raw.is_integer() and raw > 0:
            new = str(int(raw))
            what = f"{node.raw} is a float"
        else:
            new = "1"
            what = f"{node.raw} is not positive"
        yield self.diagnostic(node.span, f"scheduler warmup_num_steps {what}: DeepSpeed >= 0.19.6 raises "
                                         f"\"warmup_num_steps must be a positive integer\" (older versions "
                                         f"clamped it to 2)", edits=[node.span.edit(new)],
                              fix_message=f"set warmup_num_steps to {new}")


# --------------------------------------------------------------------------------------- D14


class StageOnlyOption(Rule):
    """
    ## What it does
    Flags DeepSpeed options that only work with certain ZeRO stages:
    `offload_optimizer.ratio` below 1 (partial optimizer offload, ZeRO-3 only) and
    `fp16.fp16_master_weights_and_grads` without ZeRO (stage 0), and outside stage 2 for
    DeepSpeed 0.18 and older.

    ## Why is this bad?
    DeepSpeed asserts when the config is read: "Partial offloading only supported for ZeRO
    Stage 3." (`offload_ratio_check` in `runtime/zero/config.py`) and
    "Fp16_master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3." (0.19; "with
    ZeRO Stage 2 for now" in 0.16.9 to 0.18.0).

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}
    ```

    ## Fix safety
    No fix: changing the stage changes memory and communication.

    ## References
    - DeepSpeed 0.19.8 `runtime/zero/config.py` (`offload_ratio_check`), `runtime/config.py` (`_do_error_check`)
    - DeepSpeed 0.16.9 `runtime/config.py` (`_do_error_check`)
    - pitfalls catalog D14
    """

    code = "TL314"
    name = "deepspeed-option-needs-other-stage"
    severity = Severity.ERROR
    summary = "partial optimizer offload outside ZeRO-3, fp16 master weights without ZeRO"

    cases = [
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2,'
                               ' "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}\n'}),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "fp16": {"enabled": true,'
                               ' "fp16_master_weights_and_grads": true}}\n'}),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3},'
                               ' "fp16": {"enabled": true, "fp16_master_weights_and_grads": true}}\n'},
             note="warning: DeepSpeed 0.18.0 and older accept only stage 2"),
        # must not flag
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 3,'
                               ' "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}\n'}, flags=False),
        Case(files={"ds.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2},'
                               ' "fp16": {"enabled": true, "fp16_master_weights_and_grads": true}}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        stage = _stage(cfg)
        if stage is None:
            return
        ratio = cfg.value("zero_optimization.offload_optimizer.ratio")
        if ratio is not None and isinstance(ratio.value, (int, float)) and not isinstance(ratio.value, bool) \
                and ratio.value < 1 and stage != 3:
            yield self.diagnostic(ratio.span, f"offload_optimizer.ratio {ratio.value} (partial offload) with ZeRO "  # type: ignore[arg-type]
                                              f"stage {stage}: DeepSpeed asserts \"Partial offloading only supported "
                                              f"for ZeRO Stage 3\"")
        fm = cfg.value("fp16.fp16_master_weights_and_grads")
        if fm is not None and fm.value is True:
            if stage == 0:
                yield self.diagnostic(fm.span, "fp16_master_weights_and_grads without ZeRO: DeepSpeed asserts it "  # type: ignore[arg-type]
                                               "is only supported with ZeRO stage 1, 2 or 3 (only stage 2 up to 0.18)")
            elif stage != 2:
                yield self.diagnostic(fm.span, f"fp16_master_weights_and_grads with ZeRO stage {stage}: DeepSpeed "  # type: ignore[arg-type]
                                               f"0.18 and older asserts it is only supported with stage 2 (0.19 accepts "
                                               f"stages 1-3)", severity=Severity.WARNING)


# --------------------------------------------------------------------------------------- D15


class Bf16Accumulation(Rule):
    """
    ## What it does
    Flags bf16 training with DeepSpeed and gradient accumulation over more than one micro-batch
    when the config sets neither `communication_data_type: "fp32"` nor
    `data_types.grad_accum_dtype: "fp32"`. `"auto"` values are taken from the TrainingArguments.

    ## Why is this bad?
    DeepSpeed accumulates and reduces gradients in the model's dtype by default
    (`grad_accum_dtype` defaults to the model dtype): with bf16's 8-bit mantissa, summing many
    micro-batch gradients loses precision (DeepSpeed itself warns "BF16 gradient accumulation is
    not safe numerically with large number of accumulation steps" for pipelines). accelerate
    sets `communication_data_type: fp32` for bf16 on ROCm because of silently corrupted weights.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "gradient_accumulation_steps": 8}
    ```

    ## Use instead
    ```json
    {"bf16": {"enabled": true}, "gradient_accumulation_steps": 8, "communication_data_type": "fp32"}
    ```

    ## Fix safety
    Unsafe: reductions in fp32 change the numerics (for the better) and cost bandwidth.

    ## References
    - DeepSpeed `runtime/engine.py` (`get_data_types`, `_do_optimizer_sanity_check`)
    - https://huggingface.co/docs/transformers/deepspeed (bf16: "lossy accumulation")
    - accelerate `utils/dataclasses.py` (ROCm bf16 `communication_data_type`)
    - pitfalls catalog D15
    """

    code = "TL315"
    name = "deepspeed-bf16-accumulation"
    severity = Severity.INFO
    fix_safety = "unsafe"
    summary = "bf16 gradient accumulation and reduction without fp32"

    cases = [
        Case(files={"ds.json": '{\n  "bf16": {"enabled": true},\n  "train_micro_batch_size_per_gpu": 4,\n'
                               '  "gradient_accumulation_steps": 8\n}\n'},
             unsafe=True, fixed_path="ds.json",
             fixed='{\n  "bf16": {"enabled": true},\n  "train_micro_batch_size_per_gpu": 4,\n'
                   '  "gradient_accumulation_steps": 8,\n  "communication_data_type": "fp32"\n}\n'),
        Case(files={"train.py": _trainer_script(extra=", bf16=True, gradient_accumulation_steps=4"),
                    "ds.json": '{"bf16": {"enabled": "auto"}, "gradient_accumulation_steps": "auto",'
                               ' "train_micro_batch_size_per_gpu": "auto"}\n'}),
        # must not flag
        Case(files={"ds.json": '{"bf16": {"enabled": true}, "train_micro_batch_size_per_gpu": 4,'
                               ' "gradient_accumulation_steps": 8, "communication_data_type": "fp32"}\n'}, flags=False),
        Case(files={"ds.json": '{"bf16": {"enabled": true}, "train_micro_batch_size_per_gpu": 4,'
                               ' "gradient_accumulation_steps": 1}\n'}, flags=False),
        Case(files={"ds.json": '{"bf16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": 4,'
                               ' "gradient_accumulation_steps": 8}\n'}, flags=False, note="bf16 not known"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None:
            return
        from trainlint.sources.jsondoc import JsonNode, insert_key_edit

        cdt = cfg.value("communication_data_type")
        gad = cfg.value("data_types.grad_accum_dtype")
        if (cdt is not None and cdt.value in ("fp32", "float32")) or (gad is not None and gad.value in ("fp32", "float32")):
            return
        bf = cfg.bf16_enabled
        ga = cfg.gradient_accumulation_steps
        if bf is None:
            return
        bf16 = bf.value is True or (isinstance(bf.value, dict) and bf.value.get("enabled") is True)
        gas = as_int(ga.value) if ga is not None else 1
        why_bf16, why_ga = where(bf), where(ga) if ga is not None else "the DeepSpeed default 1"
        if bf.value == "auto" or (ga is not None and ga.value == "auto"):
            for site in setup.sites:
                if bf.value == "auto":
                    b = effective(site, "bf16")
                    if b is None or b.value is not True:
                        continue
                    bf16, why_bf16 = True, located(b)
                if ga is not None and ga.value == "auto":
                    g = effective(site, "gradient_accumulation_steps")
                    if g is None or as_int(g.value) is None:
                        continue
                    gas, why_ga = as_int(g.value), located(g)
                break
        if not bf16 or gas is None or gas <= 1 or bf.span is None:
            return
        edits = [insert_key_edit(cfg.root, "communication_data_type", '"fp32"')] \
            if isinstance(cfg.root, JsonNode) and cfg.root.is_mapping and cdt is None else None
        yield self.diagnostic(bf.span, f"bf16 ({why_bf16}) with {gas} accumulation steps ({why_ga}): DeepSpeed "
                                       f"accumulates and reduces gradients in bf16 unless communication_data_type or "
                                       f"data_types.grad_accum_dtype is fp32; the sums lose precision",
                              edits=edits, fix_message="set communication_data_type to fp32")


# --------------------------------------------------------------------------------------- D16


class EvalOnlyLowStage(Rule):
    """
    ## What it does
    Flags a Trainer script that only evaluates or predicts (`trainer.evaluate()` /
    `trainer.predict()`, no `trainer.train()` anywhere) with a DeepSpeed config whose ZeRO stage
    is below 3.

    ## Why is this bad?
    Evaluating without training makes the Trainer start DeepSpeed in inference mode
    (`deepspeed_init(..., inference=True)`), which raises "ZeRO inference only makes sense with
    ZeRO Stage 3 - please adjust your config".

    ## Example
    ```python
    args = TrainingArguments(output_dir="o", deepspeed="ds_zero2.json")
    Trainer(model=model, args=args, eval_dataset=ds).evaluate()
    ```

    ## Use instead
    A ZeRO-3 config for evaluation, or no DeepSpeed config.

    ## Fix safety
    No fix.

    ## References
    - transformers `integrations/deepspeed.py` (`deepspeed_init`), `trainer.py` (`evaluation_loop`)
    - pitfalls catalog D16
    """

    code = "TL316"
    name = "deepspeed-eval-only-below-zero3"
    severity = Severity.ERROR
    summary = "evaluation-only Trainer run with a ZeRO stage below 3"

    EVAL = ("from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
            "model = AutoModelForCausalLM.from_pretrained('m')\n"
            "args = TrainingArguments(output_dir='o', deepspeed='ds.json')\n"
            "trainer = Trainer(model=model, args=args)\nprint(trainer.evaluate())\n")
    cases = [
        Case(files={"train.py": EVAL, "ds.json": '{"zero_optimization": {"stage": 2},'
                                                 ' "train_micro_batch_size_per_gpu": "auto"}\n'}),
        # must not flag
        Case(files={"train.py": EVAL, "ds.json": '{"zero_optimization": {"stage": 3},'
                                                 ' "train_micro_batch_size_per_gpu": "auto"}\n'}, flags=False),
        Case(files={"train.py": EVAL + "trainer.train()\n",
                    "ds.json": '{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": "auto"}\n'},
             flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None or not uses_hf_trainer(setup) or not ds_used_by_trainer(setup):
            return
        stage = _stage(cfg)
        if stage is None or stage >= 3:
            return
        if method_calls(setup, "train"):
            return
        evals = method_calls(setup, "evaluate", "predict")
        if not evals:
            return
        pf, call = evals[0]
        span = cfg.stage.span if cfg.stage is not None and cfg.stage.span is not None else cfg.root.span
        yield self.diagnostic(pf.span(call), f"the script only evaluates, with ZeRO stage {stage} ({where_node_span(span)}): "
                                             f"the Trainer starts DeepSpeed for inference, which raises \"ZeRO "
                                             f"inference only makes sense with ZeRO Stage 3\"",
                              related=[span.related("the ZeRO stage is set here")])


def where_node_span(span) -> str:
    from pathlib import Path

    return f"{Path(span.path).name}:{span.line}"


# --------------------------------------------------------------------------------------- D17

# model types whose checkpoints transformers 5.24 converts while loading (MoE expert fusion,
# conversion_mapping.py), as far as the model table knows them
CONVERTED_TYPES = {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "olmoe", "minimax"}


class AutoTpWithConvertedWeights(Rule):
    """
    ## What it does
    Flags `tensor_parallel.autotp_size` above 1 with ZeRO-3 when the model is a mixture of
    experts whose checkpoint transformers 5 converts while loading (Mixtral, Qwen2-MoE,
    DeepSeek-V2/V3, ...; only models the model table or a local `config.json` identifies).

    ## Why is this bad?
    Loading such a checkpoint under ZeRO-3 applies weight conversions (expert fusion), which
    transformers 5.24 refuses with DeepSpeed tensor parallelism: NotImplementedError "Weight
    conversions (e.g., MoE expert fusion) with DeepSpeed Tensor Parallelism are not yet
    implemented".

    ## Example
    ```json
    {"zero_optimization": {"stage": 3}, "tensor_parallel": {"autotp_size": 2}}
    ```
    for `mistralai/Mixtral-8x7B-v0.1`.

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3}}
    ```

    ## Fix safety
    Unsafe: `autotp_size` becomes 1, every GPU then holds whole layers.

    ## References
    - transformers 5.24 `integrations/deepspeed.py` (`_apply_weight_conversions_to_state_dict`),
      `conversion_mapping.py`
    - pitfalls catalog D17
    """

    code = "TL317"
    name = "deepspeed-autotp-with-converted-weights"
    severity = Severity.ERROR
    fix_safety = "unsafe"
    summary = "DeepSpeed AutoTP with a MoE model whose weights transformers converts on load"

    DS = '{"zero_optimization": {"stage": 3}, "tensor_parallel": {"autotp_size": 2}, "train_micro_batch_size_per_gpu": "auto"}\n'
    cases = [
        Case(files={"train.py": _trainer_script("'mistralai/Mixtral-8x7B-v0.1'"), "ds.json": DS}, unsafe=True,
             fixed_path="ds.json", fixed=DS.replace('"autotp_size": 2', '"autotp_size": 1')),
        # must not flag
        Case(files={"train.py": _trainer_script("'meta-llama/Llama-2-7b-hf'"), "ds.json": DS}, flags=False),
        Case(files={"train.py": _trainer_script("'some/unknown-moe'"), "ds.json": DS}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None or _stage(cfg) != 3:
            return
        tp = cfg.value("tensor_parallel.autotp_size")
        if tp is None or as_int(tp.value) is None or as_int(tp.value) <= 1 or tp.span is None:  # type: ignore[operator]
            return
        model = single_model(setup)
        if model is None or norm_type(model.info.model_type) not in CONVERTED_TYPES:
            return
        yield self.diagnostic(tp.span, f"autotp_size {tp.value} with ZeRO-3 and {model.model_id} "
                                       f"({model.info.model_type}): transformers converts this mixture-of-experts "
                                       f"checkpoint while loading and raises NotImplementedError for weight "
                                       f"conversions with DeepSpeed tensor parallelism",
                              edits=[tp.span.edit("1")], fix_message="set autotp_size to 1",
                              related=[model.span.related(f"{model.model_id} is loaded here")])


__all__ = [
    "AutoOutsideTrainer", "AutoTpWithConvertedWeights", "AutoWithoutHiddenSize", "Bf16Accumulation",
    "EvalOnlyLowStage", "HandSetHiddenSizeBuckets", "OffloadNotNeeded", "OptimizerTwice", "StageOnlyOption",
    "WarmupStepsNotPositive",
]
