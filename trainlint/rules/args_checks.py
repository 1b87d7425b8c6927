"""TL205-TL223: TrainingArguments combinations that raise at construction or at Trainer init
(pitfalls catalog section 2), each with the condition the target version uses.

Values are the site's written values, else the target version's defaults (from the generated
field data); a value that is not statically known is never guessed, and a site with an
unresolved ``**kwargs`` (or an unresolved flag) is only judged on what it writes.

A01, A02 and A06 (strategy mismatch, save/eval step multiples, fp16 with bf16) are TL505-TL507
in ``cross_file.py``.
"""

from __future__ import annotations

import ast
from typing import Any, Iterable, Iterator

from trainlint.diagnostics import Diagnostic, Severity, Span
from trainlint.rules._versioned import (
    SiteRule,
    dict_literal,
    effective,
    fields_for,
    fsdp_enabled,
    is_num,
    python_keyword,
    strategy,
    target_text,
    transformers_at_least,
    wrapper_of,
)
from trainlint.rules.base import Case, Rule
from trainlint.setup import UNKNOWN, ArgsSite, Setup, Value
from trainlint.sources.python import PythonFile, TrainerCall

V440 = {"transformers_version": "4.40.0"}
V457 = {"transformers_version": "4.57.1"}
V524 = {"transformers_version": "5.24.0"}

TA = "from transformers import TrainingArguments\n"


def _span(site: ArgsSite, *names: str) -> Span | None:
    """Where to report: the first written of ``names`` (key, else value), else the call."""
    for n in names:
        v = site.get(n)
        if v is not None:
            return v.key_span or v.span
    return site.span


def _related(site: ArgsSite, *names: str):
    out = []
    for n in names:
        v = site.get(n)
        sp = v.key_span or v.span if v is not None else None
        if sp is not None:
            out.append(sp.related(f"{n}={v.value!r} is set here"))  # type: ignore[union-attr]
    return out


def _desc(site: ArgsSite, name: str, value: Any) -> str:
    if name == "eval_strategy" and site.get(name) is None and site.get("evaluation_strategy") is not None:
        return f"evaluation_strategy={value!r}"
    written = site.get(name) is not None
    return f"{name}={value!r}" + ("" if written else " (the default)")


class EvalStepsMissing(SiteRule):
    """
    ## What it does
    Flags `eval_strategy="steps"` with no `eval_steps` (or 0) and `logging_steps=0`.

    ## Why is this bad?
    `ValueError: evaluation strategy steps requires either non-zero --eval_steps or
    --logging_steps`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", eval_strategy="steps", logging_steps=0)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", eval_strategy="steps", eval_steps=500)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - pitfalls catalog A03; transformers `TrainingArguments.__post_init__`
    """

    code = "TL205"
    name = "eval-steps-missing"
    severity = Severity.ERROR
    summary = 'eval_strategy="steps" without eval_steps or logging_steps'
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', eval_strategy='steps', logging_steps=0, "
                  "logging_strategy='no')\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', eval_strategy='steps')\n", flags=False),
    ]

    def site_check(self, setup, site):
        if strategy(self.eff(setup, site, "eval_strategy")) != "steps":
            return
        es = self.eff(setup, site, "eval_steps")
        ls = self.eff(setup, site, "logging_steps")
        if (es is None or (is_num(es) and es == 0)) and is_num(ls) and ls <= 0:
            yield self.diagnostic(
                _span(site, "eval_strategy", "evaluation_strategy"),
                f'eval_strategy="steps" needs a non-zero eval_steps or logging_steps, but eval_steps={es!r} '
                f"and logging_steps={ls!r}: TrainingArguments raises ValueError",
                related=_related(site, "logging_steps", "eval_steps"))


class LoggingStepsZero(SiteRule):
    """
    ## What it does
    Flags `logging_steps=0` while `logging_strategy` is `"steps"` (its default).

    ## Why is this bad?
    `ValueError: logging strategy steps requires non-zero --logging_steps`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", logging_steps=0)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", logging_strategy="no")
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - pitfalls catalog A04; transformers `TrainingArguments.__post_init__`
    """

    code = "TL206"
    name = "logging-steps-zero"
    severity = Severity.ERROR
    summary = 'logging_steps=0 with logging_strategy="steps"'
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', logging_steps=0)\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', logging_steps=0, logging_strategy='epoch')\n", flags=False),
    ]

    def site_check(self, setup, site):
        if site.get("logging_steps") is None:
            return
        ls = self.eff(setup, site, "logging_steps")
        if strategy(self.eff(setup, site, "logging_strategy")) == "steps" and is_num(ls) and ls == 0:
            yield self.diagnostic(_span(site, "logging_steps"),
                                  'logging_steps=0 with logging_strategy="steps": TrainingArguments raises ValueError')


class NonIntegerSteps(SiteRule):
    """
    ## What it does
    Flags `logging_steps`, `eval_steps` or `save_steps` above 1 that is not a whole number
    (values below 1 are ratios of the total steps), when its strategy is `"steps"`.

    ## Why is this bad?
    `ValueError: --save_steps must be an integer if bigger than 1`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", save_steps=1500.5)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", save_steps=1500)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - pitfalls catalog A05; transformers `TrainingArguments.__post_init__`
    """

    code = "TL207"
    name = "non-integer-steps"
    severity = Severity.ERROR
    summary = "a step count above 1 that is not a whole number"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', save_steps=1500.5)\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', save_steps=0.25, logging_steps=10.0)\n", flags=False),
    ]

    def site_check(self, setup, site):
        for name, strat in (("logging_steps", "logging_strategy"), ("eval_steps", "eval_strategy"),
                            ("save_steps", "save_strategy")):
            v = site.get(name)
            if v is None or not is_num(v.value) or v.value <= 1 or v.value == int(v.value):
                continue
            if strategy(self.eff(setup, site, strat)) != "steps":
                continue
            yield self.diagnostic(v.key_span or v.span, f"{name}={v.value!r} is above 1 but not a whole number: "
                                  f"TrainingArguments raises ValueError")


class Bf16UnsupportedGpu(SiteRule):
    """
    ## What it does
    Flags `bf16=True` (or `bf16_full_eval=True`) without `use_cpu=True` when the target GPU
    (`--gpu`) has no bf16 support (compute capability below 8.0: V100, T4, ...). Silent without
    a target GPU.

    ## Why is this bad?
    `ValueError: Your setup doesn't support bf16/gpu. ... You need Ampere+ GPU with cuda>=11.0`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", bf16=True)  # on a T4
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", fp16=True)
    ```

    ## Fix safety
    No automatic fix: fp16 changes numerics (and may overflow for bf16-pretrained models).

    ## References
    - pitfalls catalog A07; transformers `TrainingArguments.__post_init__` (4.57, 5.24)
    """

    code = "TL209"
    name = "bf16-unsupported-gpu"
    severity = Severity.ERROR
    summary = "bf16 on a GPU without bf16 (pre-Ampere)"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', bf16=True)\n", options={"gpu": "T4"}),
        Case(TA + "a = TrainingArguments(output_dir='o', bf16=True)\n", options={"gpu": "A100"}, flags=False),
        Case(TA + "a = TrainingArguments(output_dir='o', bf16=True)\n", flags=False, note="no target GPU"),
        Case(TA + "a = TrainingArguments(output_dir='o', bf16=True, use_cpu=True)\n", options={"gpu": "T4"},
             flags=False),
    ]

    def site_check(self, setup, site):
        gpu = setup.gpu
        if gpu is None or gpu.bf16:
            return
        for name in ("use_cpu", "no_cuda"):
            if site.get(name) is not None and site.known(name) is not False:
                return  # on the CPU, or not known
        for name in ("bf16", "bf16_full_eval"):
            if site.known(name) is True:
                yield self.diagnostic(_span(site, name), f"{name}=True but the target GPU {gpu.name} has no bf16 "
                                      f"support: TrainingArguments raises ValueError")


class Tf32UnsupportedGpu(SiteRule):
    """
    ## What it does
    Flags `tf32=True` when the target GPU (`--gpu`) has no TF32 (pre-Ampere NVIDIA, AMD).
    Silent without a target GPU.

    ## Why is this bad?
    `ValueError: --tf32 requires Ampere or a newer GPU arch, cuda>=11 and torch>=1.7`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", tf32=True)  # on a V100
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o")
    ```

    ## Fix safety
    Safe: TF32 cannot be used on that GPU anyway; the argument is removed.

    ## References
    - pitfalls catalog A08; transformers `TrainingArguments.__post_init__`
    """

    code = "TL210"
    name = "tf32-unsupported-gpu"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "tf32=True on a GPU without TF32"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', tf32=True)\n", options={"gpu": "V100"},
             fixed=TA + "a = TrainingArguments(output_dir='o')\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', tf32=True)\n", options={"gpu": "H100"}, flags=False),
    ]

    def site_check(self, setup, site):
        gpu = setup.gpu
        if gpu is None or gpu.tf32 or site.known("tf32") is not True or site.known("use_cpu") is True:
            return
        from trainlint.rules._versioned import remove_edit

        v = site.get("tf32")
        e = remove_edit(setup, site, v)  # type: ignore[arg-type]
        yield self.diagnostic(_span(site, "tf32"), f"tf32=True but the target GPU {gpu.name} has no TF32: "
                              "TrainingArguments raises ValueError", edits=[e] if e else None,
                              fix_message="remove tf32=True")


class SchedulerNeedsEval(SiteRule):
    """
    ## What it does
    Flags `lr_scheduler_type="reduce_lr_on_plateau"` (or `"greedy"`, where it exists) with
    `eval_strategy="no"` (the default).

    ## Why is this bad?
    `ValueError: lr_scheduler_type reduce_lr_on_plateau requires an eval strategy`: the
    scheduler steps on evaluation metrics.

    ## Example
    ```python
    TrainingArguments(output_dir="o", lr_scheduler_type="reduce_lr_on_plateau")
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", lr_scheduler_type="reduce_lr_on_plateau", eval_strategy="epoch")
    ```

    ## Fix safety
    No automatic fix (adding evaluation needs an eval dataset).

    ## References
    - pitfalls catalog A09; transformers `TrainingArguments.__post_init__`
    """

    code = "TL211"
    name = "scheduler-needs-eval"
    severity = Severity.ERROR
    summary = "a plateau/greedy scheduler without evaluation"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', lr_scheduler_type='reduce_lr_on_plateau')\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', lr_scheduler_type='reduce_lr_on_plateau', "
                  "eval_strategy='epoch')\n", flags=False),
    ]

    def site_check(self, setup, site):
        sched = strategy(site.known("lr_scheduler_type"))
        if sched not in ("reduce_lr_on_plateau", "greedy"):
            return
        if strategy(self.eff(setup, site, "eval_strategy")) != "no":
            return
        yield self.diagnostic(_span(site, "lr_scheduler_type"),
                              f'lr_scheduler_type="{sched}" steps on evaluation metrics but eval_strategy is "no": '
                              "TrainingArguments raises ValueError")


class WarmupOutOfRange(SiteRule):
    """
    ## What it does
    Flags warmup values the target version rejects: `warmup_steps < 0` (all versions);
    on 4.x, `warmup_ratio` outside [0, 1] and (4.57) a `warmup_steps` that is not an int, such
    as the 5.x ratio form `warmup_steps=0.1` run on 4.57.

    ## Why is this bad?
    `ValueError` at construction ("warmup_ratio must lie in range [0,1]", "warmup_steps must
    be of type int and must be 0 or a positive integer").

    ## Example
    ```python
    TrainingArguments(output_dir="o", warmup_steps=0.1)  # transformers 4.57
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", warmup_ratio=0.1)  # 4.x; warmup_steps=0.1 on 5.x
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - pitfalls catalog A10; transformers 4.40, 4.57.1 and 5.24 `TrainingArguments.__post_init__`
    """

    code = "TL212"
    name = "warmup-out-of-range"
    severity = Severity.ERROR
    summary = "warmup_steps/warmup_ratio outside what the target version accepts"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', warmup_steps=0.1)\n", options=V457),
        Case(TA + "a = TrainingArguments(output_dir='o', warmup_ratio=1.5)\n", options=V440),
        Case(TA + "a = TrainingArguments(output_dir='o', warmup_steps=-5)\n", options=V524),
        Case(TA + "a = TrainingArguments(output_dir='o', warmup_steps=0.1)\n", options=V524, flags=False),
        Case(TA + "a = TrainingArguments(output_dir='o', warmup_ratio=0.1)\n", options=V440, flags=False),
    ]

    def site_check(self, setup, site):
        ws = site.known("warmup_steps")
        wr = site.known("warmup_ratio")
        fields = fields_for(setup, site.class_name) or {}
        if is_num(ws) and ws < 0 and (transformers_at_least(setup, "4.57.1") or transformers_at_least(setup, "5.0.0")):
            yield self.diagnostic(_span(site, "warmup_steps"), f"warmup_steps={ws!r} is negative: "
                                  f"TrainingArguments raises ValueError ({target_text(setup)})")
            return
        if "warmup_ratio" in fields and not transformers_at_least(setup, "5.0.0"):
            if is_num(wr) and (wr < 0 or wr > 1):
                yield self.diagnostic(_span(site, "warmup_ratio"), f"warmup_ratio={wr!r} is outside [0, 1]: "
                                      f"TrainingArguments raises ValueError ({target_text(setup)})")
            if transformers_at_least(setup, "4.57.1") and site.get("warmup_steps") is not None and ws is not UNKNOWN \
                    and (not isinstance(ws, int) or isinstance(ws, bool) or ws < 0):
                yield self.diagnostic(_span(site, "warmup_steps"),
                                      f"warmup_steps={ws!r} must be an int >= 0 in {target_text(setup)} (the float "
                                      "ratio form is 5.x only; use warmup_ratio): TrainingArguments raises ValueError")


class PrefetchWithoutWorkers(SiteRule):
    """
    ## What it does
    Flags `dataloader_prefetch_factor` set while `dataloader_num_workers` is 0 (the default).

    ## Why is this bad?
    `ValueError: --dataloader_prefetch_factor can only be set when data is loaded in a
    different process`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", dataloader_prefetch_factor=4)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", dataloader_prefetch_factor=4, dataloader_num_workers=4)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - pitfalls catalog A11; transformers `TrainingArguments.__post_init__`
    """

    code = "TL213"
    name = "prefetch-without-workers"
    severity = Severity.ERROR
    summary = "dataloader_prefetch_factor without dataloader workers"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', dataloader_prefetch_factor=4)\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', dataloader_prefetch_factor=4, dataloader_num_workers=2)\n",
             flags=False),
    ]

    def site_check(self, setup, site):
        pf = site.known("dataloader_prefetch_factor")
        if pf is None or pf is UNKNOWN or site.get("dataloader_prefetch_factor") is None:
            return
        if self.eff(setup, site, "dataloader_num_workers") == 0:
            yield self.diagnostic(_span(site, "dataloader_prefetch_factor"),
                                  f"dataloader_prefetch_factor={pf!r} with dataloader_num_workers=0: "
                                  "TrainingArguments raises ValueError")


class EmptyCacheStepsInvalid(SiteRule):
    """
    ## What it does
    Flags `torch_empty_cache_steps` that is not a positive int.

    ## Why is this bad?
    `ValueError: torch_empty_cache_steps must be an integer bigger than 0`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", torch_empty_cache_steps=0)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", torch_empty_cache_steps=100)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - pitfalls catalog A12; transformers `TrainingArguments.__post_init__`
    """

    code = "TL214"
    name = "empty-cache-steps-invalid"
    severity = Severity.ERROR
    summary = "torch_empty_cache_steps not a positive int"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', torch_empty_cache_steps=0)\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', torch_empty_cache_steps=100)\n", flags=False),
    ]

    def site_check(self, setup, site):
        v = site.get("torch_empty_cache_steps")
        if v is None or not v.known or v.value is None:
            return
        if "torch_empty_cache_steps" not in (fields_for(setup, site.class_name) or {}):
            return
        x = v.value
        if isinstance(x, bool) or not isinstance(x, int) or x <= 0:
            yield self.diagnostic(v.key_span or v.span, f"torch_empty_cache_steps={x!r} must be an integer "
                                  "bigger than 0: TrainingArguments raises ValueError")


# -- Trainer-call checks ------------------------------------------------------------------------


def _trainer_calls(setup: Setup) -> Iterator[tuple[PythonFile, TrainerCall]]:
    for pf in setup.scripts:
        for tc in pf.trainer_calls:
            if tc.class_name in ("Trainer", "Seq2SeqTrainer"):
                yield pf, tc


def _call_span(pf: PythonFile, tc: TrainerCall) -> Span:
    return pf.span(tc.site.node.func)


def _kw_span(pf: PythonFile, tc: TrainerCall, name: str) -> Span:
    kw = pf.keyword(tc.site.node, name)
    return pf.keyword_name_span(kw) if kw is not None else _call_span(pf, tc)


def _open_call(tc: TrainerCall) -> bool:
    return any(k.arg is None for k in tc.site.node.keywords) or any(
        isinstance(a, ast.Starred) for a in tc.site.node.args)


class EvalWithoutEvalDataset(Rule):
    """
    ## What it does
    Flags a `Trainer`/`Seq2SeqTrainer` whose arguments evaluate (`eval_strategy` other than
    `"no"`) while the call passes no `eval_dataset` (transformers 4.57 and later; the check is
    not in 4.40).

    ## Why is this bad?
    `ValueError: You have set args.eval_strategy to ... but you didn't pass an eval_dataset
    to Trainer`, at Trainer construction.

    ## Example
    ```python
    args = TrainingArguments(output_dir="o", eval_strategy="epoch")
    trainer = Trainer(model=model, args=args, train_dataset=train)
    ```

    ## Use instead
    ```python
    trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=val)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - pitfalls catalog A13; transformers 4.57.1 / 5.24 `Trainer.__init__`
    """

    code = "TL215"
    name = "eval-without-eval-dataset"
    severity = Severity.ERROR
    summary = "evaluation enabled but the Trainer has no eval_dataset"
    cases = [
        Case("from transformers import Trainer, TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', eval_strategy='epoch')\n"
             "t = Trainer(model=m, args=args, train_dataset=d)\n", options=V524),
        Case("from transformers import Trainer, TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', eval_strategy='epoch')\n"
             "t = Trainer(model=m, args=args, train_dataset=d, eval_dataset=e)\n", options=V524, flags=False),
        Case("from transformers import Trainer, TrainingArguments\n"
             "args = TrainingArguments(output_dir='o', evaluation_strategy='epoch')\n"
             "t = Trainer(model=m, args=args, train_dataset=d)\n", options=V440, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        if not transformers_at_least(setup, "4.57.1"):
            return
        for pf, tc in _trainer_calls(setup):
            if tc.args_call is None or "eval_dataset" in tc.keywords or _open_call(tc):
                continue
            site = tc.args_call.args
            ev = strategy(effective(setup, site, "eval_strategy"))
            if not isinstance(ev, str) or ev == "no":
                continue
            yield self.diagnostic(_call_span(pf, tc),
                                  f'{tc.class_name} gets eval_strategy="{ev}" but no eval_dataset: Trainer raises '
                                  f"ValueError ({target_text(setup)})",
                                  related=_related(site, "eval_strategy", "evaluation_strategy"))


class SaveBestWithoutMetric(SiteRule):
    """
    ## What it does
    Flags `save_strategy="best"` without `metric_for_best_model`.

    ## Why is this bad?
    Trainer raises `ValueError` at construction: "best" needs a metric to compare
    (`load_best_model_at_end` alone defaults the metric to the loss, "best" does not).

    ## Example
    ```python
    TrainingArguments(output_dir="o", eval_strategy="epoch", save_strategy="best")
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", eval_strategy="epoch", save_strategy="best",
                      metric_for_best_model="eval_loss")
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - pitfalls catalog A14; transformers 4.57.1 / 5.24 `Trainer.__init__`
    """

    code = "TL216"
    name = "save-best-without-metric"
    severity = Severity.ERROR
    summary = 'save_strategy="best" without metric_for_best_model'
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', eval_strategy='epoch', save_strategy='best')\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', eval_strategy='epoch', save_strategy='best', "
                  "metric_for_best_model='accuracy')\n", flags=False),
        Case(TA + "a = TrainingArguments(output_dir='o', eval_strategy='epoch', save_strategy='best', "
                  "load_best_model_at_end=True)\n", flags=False, note="the metric defaults to the loss"),
    ]

    def site_check(self, setup, site):
        if strategy(site.known("save_strategy")) != "best":
            return
        if self.eff(setup, site, "metric_for_best_model") is not None:
            return
        # __post_init__ fills metric_for_best_model="loss" for these
        if self.eff(setup, site, "load_best_model_at_end") is not False:
            return
        sched = strategy(self.eff(setup, site, "lr_scheduler_type"))
        if not isinstance(sched, str) or sched in ("reduce_lr_on_plateau", "greedy"):
            return
        yield self.diagnostic(_span(site, "save_strategy"), 'save_strategy="best" needs metric_for_best_model: '
                              "Trainer raises ValueError")


def fsdp_options(value: Any) -> list[str] | None:
    """The words of ``fsdp`` given as a string or a list of strings; None for other forms."""
    if isinstance(value, str):
        return value.split()
    if isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value):
        return list(value)
    return None


# transformers 5.10.0 rewrote the fsdp handling (``_apply_legacy_fsdp_to_config``, FSDP2 by
# default): the 4.x checks below are gone (read in the 5.9.0 and 5.10.0 wheels).
FSDP2_SINCE = "5.10.0"
FSDP1_ONLY = ("hybrid_shard", "hybrid_shard_zero2", "no_shard")


def fsdp_version(setup: Setup, site: ArgsSite) -> Any:
    """``fsdp_config["version"]`` (default 2 from 5.10), UNKNOWN when fsdp_config is not a
    readable dict."""
    cfg = site.get("fsdp_config")
    if cfg is None:
        return 2
    value = cfg.value if isinstance(cfg.value, dict) else dict_literal(setup, cfg)
    if not isinstance(value, dict):
        return UNKNOWN
    version = value.get("version", value.get("fsdp_version", 2))
    try:
        return int(version)
    except (TypeError, ValueError):
        return UNKNOWN


class FsdpInvalidOptions(SiteRule):
    """
    ## What it does
    Flags `fsdp` options (its string or list form) that `TrainingArguments` rejects in the
    target version:

    - before transformers 5.10: `"offload"` alone, or both `"full_shard"` and
      `"shard_grad_op"`;
    - from 5.10 (FSDP2 by default): a sharding strategy only FSDP1 has (`"hybrid_shard"`,
      `"hybrid_shard_zero2"`, `"no_shard"`) without `fsdp_config={"version": 1}`.

    ## Why is this bad?
    `ValueError: --fsdp offload can't work on its own` / `--fsdp full_shard is not compatible
    with --fsdp shard_grad_op` (4.40 to 5.9), and ``ValueError: `fsdp=hybrid_shard` is only
    available with FSDP1`` (5.10 and later) at construction.

    ## Example
    ```python
    TrainingArguments(output_dir="o", fsdp="offload")  # transformers 4.x
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", fsdp="full_shard offload")
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - pitfalls catalog A17, R25; transformers `TrainingArguments.__post_init__` (4.x),
      `TrainingArguments._apply_legacy_fsdp_to_config` (5.10+)
    """

    code = "TL217"
    name = "fsdp-invalid-options"
    severity = Severity.ERROR
    summary = "fsdp options the target version rejects"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='offload')\n", options={"transformers_version": "5.9.0"}),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='full_shard shard_grad_op')\n", options=V457),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='hybrid_shard auto_wrap')\n", options=V524),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp=['no_shard'], fsdp_config={'version': 2})\n",
             options=V524),
        # must not flag
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='full_shard offload auto_wrap')\n", flags=False,
             options=V457),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='offload')\n", flags=False, options=V524,
             note="5.10+ turns it into cpu_offload"),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='hybrid_shard', fsdp_config={'version': 1})\n",
             flags=False, options=V524),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='hybrid_shard')\n", flags=False, options=V457),
    ]

    def site_check(self, setup, site):
        opts = fsdp_options(site.known("fsdp"))
        if opts is None:
            return
        if transformers_at_least(setup, FSDP2_SINCE):
            only1 = [o for o in opts if o in FSDP1_ONLY]
            if only1 and fsdp_version(setup, site) == 2:
                yield self.diagnostic(_span(site, "fsdp"), f"fsdp={only1[0]!r} is a sharding strategy only FSDP1 has, "
                                      f"and {target_text(setup)} uses FSDP2 unless fsdp_config sets version 1: "
                                      f"TrainingArguments raises ValueError (use full_shard or shard_grad_op)")
            return
        if opts == ["offload"]:
            yield self.diagnostic(_span(site, "fsdp"), 'fsdp="offload" cannot work on its own (use "full_shard '
                                  'offload" or "shard_grad_op offload"): TrainingArguments raises ValueError')
        elif "full_shard" in opts and "shard_grad_op" in opts:
            yield self.diagnostic(_span(site, "fsdp"), "fsdp full_shard is not compatible with shard_grad_op: "
                                  "TrainingArguments raises ValueError")


class FsdpLegacyForm(SiteRule):
    """
    ## What it does
    From transformers 5.10: flags `fsdp` given as a string or a list of options
    (`fsdp="full_shard auto_wrap"`, `--fsdp "full_shard offload"`), and FSDP1 chosen with
    `fsdp_config={"version": 1}`.

    ## Why is this bad?
    5.10 made FSDP2 the default and moved every FSDP setting into `fsdp_config`. The string and
    list forms are translated with a warning ("Passing `fsdp` as a string is deprecated and will
    be removed in Transformers v5.20"), and FSDP1 logs "FSDP1 ... is deprecated and will be
    removed in Transformers v5.20". A script that relies on them breaks when the translation
    goes.

    ## Example
    ```python
    TrainingArguments(output_dir="o", fsdp="full_shard offload auto_wrap")
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", fsdp=True,
                      fsdp_config={"reshard_after_forward": True, "cpu_offload": True})
    ```

    ## Fix safety
    Safe: the fix writes what transformers' own translation produces (`full_shard` ->
    `reshard_after_forward: True`, `shard_grad_op` -> `False`, `offload` -> `cpu_offload: True`,
    `auto_wrap` is the default). Only in a Python call without `fsdp_config`, and never for an
    FSDP1-only strategy (see `fsdp-invalid-options`, TL217).

    ## References
    - pitfalls catalog R25; transformers 5.10+ `TrainingArguments._apply_legacy_fsdp_to_config`
      and `_process_fsdp_args`
    """

    code = "TL228"
    name = "fsdp-legacy-form"
    severity = Severity.WARNING
    fix_safety = "safe"
    summary = "fsdp as a string/list, or FSDP1, deprecated since transformers 5.10"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='full_shard offload auto_wrap')\n", options=V524,
             fixed=TA + "a = TrainingArguments(output_dir='o', fsdp=True, "
                        "fsdp_config={\"reshard_after_forward\": True, \"cpu_offload\": True})\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp=['shard_grad_op'], fsdp_config='fsdp.json')\n",
             options=V524, note="fsdp_config is a file: no fix"),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp=True, fsdp_config={'version': 1})\n", options=V524),
        Case(files={"run.sh": "torchrun --nproc_per_node 2 train.py --output_dir o --fsdp 'full_shard auto_wrap'\n",
                    "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                                "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"},
             options=V524, note="launch-line flag"),
        # must not flag
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp=True, fsdp_config={'reshard_after_forward': True})\n",
             options=V524, flags=False),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='full_shard auto_wrap')\n", options=V457, flags=False,
             note="the string form is the only form before 5.10"),
    ]

    def site_check(self, setup, site):
        if not transformers_at_least(setup, FSDP2_SINCE):
            return
        v = site.get("fsdp")
        opts = fsdp_options(v.value) if v is not None else None
        if v is not None and opts:
            form = "string" if isinstance(v.value, str) else "list"
            config = _fsdp_config_for(opts)
            shown = "fsdp=True" + (f", fsdp_config={_dict_text(config)}" if config else "")
            edits = None
            found = python_keyword(setup, site, "fsdp") if v.origin == "python" else None
            if found is not None and config is not None and site.get("fsdp_config") is None:
                pf, kw = found
                edits = [pf.span(kw).edit(shown)]
            advice = shown if config is not None else "fsdp=True and the settings in fsdp_config"
            yield self.diagnostic(_span(site, "fsdp"), f"fsdp as a {form} ({v.value!r}) is deprecated since "
                                  f"transformers {FSDP2_SINCE} (announced for removal in 5.20; "
                                  f"{target_text(setup)}): write {advice}",
                                  edits=edits, fix_message=f"write {shown}")
        if fsdp_enabled(v) and fsdp_version(setup, site) == 1:
            yield self.diagnostic(_span(site, "fsdp_config"), "fsdp_config selects FSDP1 (version 1), deprecated "
                                  f"since transformers {FSDP2_SINCE} and announced for removal in 5.20: "
                                  "migrate to FSDP2 (version 2, the default)")


def _fsdp_config_for(opts: list[str]) -> dict[str, Any] | None:
    """The fsdp_config entries transformers derives from the legacy options (first one wins,
    as its ``setdefault`` does); None for an FSDP1-only or unknown option."""
    out: dict[str, Any] = {}
    for o in opts:
        if o == "full_shard":
            out.setdefault("reshard_after_forward", True)
        elif o == "shard_grad_op":
            out.setdefault("reshard_after_forward", False)
        elif o == "offload":
            out.setdefault("cpu_offload", True)
        elif o != "auto_wrap":
            return None
    return out


def _dict_text(d: dict[str, Any]) -> str:
    return "{" + ", ".join(f'"{k}": {v!r}' for k, v in d.items()) + "}"


class AutoBatchSizeZero3(SiteRule):
    """
    ## What it does
    Flags `auto_find_batch_size=True` with a linked DeepSpeed config at ZeRO stage 3. Silent
    when no DeepSpeed config is linked to the setup.

    ## Why is this bad?
    `ValueError: auto_find_batch_size isn't supported yet with DeepSpeed Zero-3`.

    ## Example
    ```python
    TrainingArguments(output_dir="o", auto_find_batch_size=True, deepspeed="ds_zero3.json")
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", per_device_train_batch_size=4, deepspeed="ds_zero3.json")
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - pitfalls catalog A21; transformers 5.24 `Trainer` (DeepSpeed setup)
    """

    code = "TL218"
    name = "auto-batch-size-zero3"
    severity = Severity.ERROR
    summary = "auto_find_batch_size with DeepSpeed ZeRO-3"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', auto_find_batch_size=True, "
                  "deepspeed={'zero_optimization': {'stage': 3}})\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', auto_find_batch_size=True)\n", flags=False,
             note="no DeepSpeed config linked"),
        Case(TA + "a = TrainingArguments(output_dir='o', per_device_train_batch_size=4)\n", flags=False),
    ]

    def site_check(self, setup, site):
        if site.known("auto_find_batch_size") is not True:
            return
        ds = setup.extra.get("deepspeed")
        stage = getattr(ds, "stage", None) if ds is not None else None
        value = stage.value if isinstance(stage, Value) else stage
        inline = site.get("deepspeed")
        if stage is None and inline is not None:
            cfg = inline.value if isinstance(inline.value, dict) else dict_literal(setup, inline)
            zero = cfg.get("zero_optimization") if isinstance(cfg, dict) else None
            value = zero.get("stage") if isinstance(zero, dict) else None
        if value == 3:
            related = [stage.span.related("ZeRO stage 3 here")] if isinstance(stage, Value) and stage.span else []
            yield self.diagnostic(_span(site, "auto_find_batch_size"), "auto_find_batch_size=True is not supported "
                                  "with DeepSpeed ZeRO-3: Trainer raises ValueError", related=related)


class ModelInitConflict(Rule):
    """
    ## What it does
    Flags `Trainer(model_init=..., optimizers=...)` (all versions), and `Trainer(model=...,
    model_init=...)` (an error from 5.24, a warning before).

    ## Why is this bad?
    `RuntimeError: Passing a model_init is incompatible with providing the optimizers
    argument` (the optimizer would hold the parameters of a model that is re-created);
    passing both a model and `model_init` raises `ValueError` in 5.24 (4.x warned that the
    model is ignored).

    ## Example
    ```python
    Trainer(model_init=make_model, args=args, optimizers=(opt, sched))
    ```

    ## Use instead
    ```python
    Trainer(model_init=make_model, args=args)  # override create_optimizer_and_scheduler
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - pitfalls catalog A22; transformers 4.40 and 5.24 `Trainer.__init__`
    """

    code = "TL219"
    name = "model-init-conflict"
    severity = Severity.ERROR
    summary = "model_init with optimizers=, or with model="
    cases = [
        Case("from transformers import Trainer\nt = Trainer(model_init=f, args=a, optimizers=(o, s))\n"),
        Case("from transformers import Trainer\nt = Trainer(model=m, model_init=f, args=a)\n", options=V524),
        Case("from transformers import Trainer\nt = Trainer(model_init=f, args=a)\n", flags=False),
        Case("from transformers import Trainer\nt = Trainer(model_init=f, args=a, optimizers=(None, None))\n",
             flags=False, note="the default value"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf, tc in _trainer_calls(setup):
            kws = tc.keywords
            if "model_init" not in kws or isinstance(kws["model_init"], ast.Constant):
                continue
            opt = kws.get("optimizers")
            if opt is not None:
                default = isinstance(opt, ast.Tuple) and all(
                    isinstance(e, ast.Constant) and e.value is None for e in opt.elts)
                if not default:
                    yield self.diagnostic(_kw_span(pf, tc, "optimizers"),
                                          "model_init= with optimizers=: the optimizer would hold the parameters of a "
                                          "model that model_init re-creates; Trainer raises RuntimeError")
            model = kws.get("model")
            if model is not None and not (isinstance(model, ast.Constant) and model.value is None):
                raises = transformers_at_least(setup, "5.24.0")
                yield self.diagnostic(
                    _kw_span(pf, tc, "model_init"),
                    "model= and model_init= together: " + ("Trainer raises ValueError" if raises else
                                                           "model_init overrides the model (a warning)")
                    + f" ({target_text(setup)})",
                    severity=Severity.ERROR if raises else Severity.WARNING)


class OptimizersConflict(Rule):
    """
    ## What it does
    Flags `Trainer(optimizers=(optimizer, scheduler))` when the Trainer refuses a ready-made
    optimizer: together with `optimizer_cls_and_kwargs=` (transformers 4.48 and later), or in an
    FSDP run (and, before 4.46, a DeepSpeed run). FSDP/DeepSpeed are recognised as in
    `save-only-model-conflict` (TL226): `fsdp=`, `deepspeed=`, a linked config, the accelerate
    config or `accelerate launch --use_fsdp/--use_deepspeed`. `optimizers=(None, None)` (the
    default) is fine.

    ## Why is this bad?
    `Trainer.__init__` raises `RuntimeError: Passing both optimizers and
    optimizer_cls_and_kwargs arguments is incompatible`, or `RuntimeError: Passing optimizers
    is not allowed if PyTorch FSDP is enabled`: FSDP (and DeepSpeed before 4.46) must build the
    optimizer over the sharded parameters itself.

    ## Example
    ```python
    Trainer(model=model, args=args, optimizers=(AdamW(model.parameters()), None))  # fsdp=True
    ```

    ## Use instead
    ```python
    Trainer(model=model, args=args, optimizer_cls_and_kwargs=(AdamW, {"lr": 1e-4}))
    ```

    ## Fix safety
    No automatic fix: the optimizer's construction has to move into `optimizer_cls_and_kwargs`
    (or an override of `create_optimizer`).

    ## References
    - pitfalls catalog A23; transformers `Trainer.__init__` ("Optimizer validations"; the
      DeepSpeed part until 4.45, the optimizer_cls_and_kwargs part from 4.48, read in the wheels)
    """

    code = "TL229"
    name = "optimizers-conflict"
    severity = Severity.ERROR
    summary = "Trainer(optimizers=...) with optimizer_cls_and_kwargs, or under FSDP"
    cases = [
        Case("from transformers import Trainer, TrainingArguments\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', fsdp=True), optimizers=(opt, None))\n",
             options=V524),
        Case("from transformers import Trainer\n"
             "t = Trainer(model=m, args=a, optimizers=(opt, sched), optimizer_cls_and_kwargs=(AdamW, {}))\n"),
        Case("from transformers import Trainer, TrainingArguments\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', deepspeed='ds.json'), "
             "optimizers=(opt, None))\n", options={"transformers_version": "4.44.0"}, note="DeepSpeed before 4.46"),
        # must not flag
        Case("from transformers import Trainer, TrainingArguments\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', deepspeed='ds.json'), "
             "optimizers=(opt, None))\n", options=V524, flags=False, note="DeepSpeed accepts it from 4.46"),
        Case("from transformers import Trainer, TrainingArguments\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o'), optimizers=(opt, sched))\n", flags=False),
        Case("from transformers import Trainer, TrainingArguments\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', fsdp=True), optimizers=(None, None))\n",
             flags=False, note="the default value"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        wrapped = next((w for site in setup.sites if (w := wrapper_of(setup, site)) is not None), None)
        for pf, tc in _trainer_calls(setup):
            opt = tc.keywords.get("optimizers")
            if opt is None or (isinstance(opt, ast.Tuple) and all(
                    isinstance(e, ast.Constant) and e.value is None for e in opt.elts)):
                continue
            cls_kwargs = tc.keywords.get("optimizer_cls_and_kwargs")
            if cls_kwargs is not None and not (isinstance(cls_kwargs, ast.Constant) and cls_kwargs.value is None) \
                    and transformers_at_least(setup, "4.48.0"):
                yield self.diagnostic(_kw_span(pf, tc, "optimizers"), "optimizers= and optimizer_cls_and_kwargs= "
                                      "together: Trainer raises RuntimeError; keep optimizer_cls_and_kwargs")
                continue
            if wrapped is None:
                continue
            wrapper, evidence = wrapped
            if wrapper == "DeepSpeed" and transformers_at_least(setup, "4.46.0"):
                continue
            related = [evidence.span.related(f"{wrapper} is configured here")] \
                if evidence is not None and evidence.span is not None else []
            yield self.diagnostic(_kw_span(pf, tc, "optimizers"), f"optimizers= with {wrapper}: Trainer raises "
                                  f"RuntimeError ({wrapper} builds the optimizer over its sharded parameters; "
                                  f"{target_text(setup)}); pass optimizer_cls_and_kwargs= or override "
                                  f"create_optimizer", related=related)


def _streaming_source(pf: PythonFile, expr: ast.AST, scope, depth: int = 0) -> ast.Call | None:
    """The ``load_dataset(..., streaming=True)`` (or ``IterableDataset.from_*``) call that
    ``expr`` is derived from through names, ``ds["train"]`` and ``.map/.filter/.shuffle``."""
    if depth > 8 or expr is None:
        return None
    if isinstance(expr, ast.Subscript):
        return _streaming_source(pf, expr.value, scope, depth + 1)
    if isinstance(expr, ast.Call):
        f = expr.func
        qn = pf.qualname(f) or ""
        if qn.endswith("load_dataset") and qn.startswith("datasets"):
            for k in expr.keywords:
                if k.arg == "streaming" and pf.resolve(k.value, scope).value is True:
                    return expr
            return None
        if qn.startswith("datasets.") and ".IterableDataset." in qn + ".":
            return expr
        if isinstance(f, ast.Attribute) and f.attr in ("map", "filter", "shuffle", "select_columns",
                                                         "remove_columns", "rename_column", "with_format", "take",
                                                         "skip"):
            return _streaming_source(pf, f.value, scope, depth + 1)
        return None
    if isinstance(expr, ast.Name):
        b = pf.binding_of(expr.id, scope)
        if b is None or b.value is None or b.kind not in ("assign", "annassign"):
            return None
        owner = scope.lookup(expr.id)
        return _streaming_source(pf, b.value, owner[0] if owner else scope, depth + 1)
    return None


class StreamingWithoutMaxSteps(Rule):
    """
    ## What it does
    Flags a Trainer whose `train_dataset` comes from `load_dataset(..., streaming=True)` (or an
    `IterableDataset`) while its arguments leave `max_steps` unset (or <= 0).

    ## Why is this bad?
    An iterable dataset has no length: `ValueError: The train_dataset does not implement
    __len__, max_steps has to be specified`, at Trainer construction.

    ## Example
    ```python
    ds = load_dataset("c4", "en", split="train", streaming=True)
    Trainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds)
    ```

    ## Use instead
    ```python
    Trainer(model=model, args=TrainingArguments(output_dir="o", max_steps=10_000), train_dataset=ds)
    ```

    ## Fix safety
    No automatic fix: `max_steps` defines the training length.

    ## References
    - pitfalls catalog A24; transformers `Trainer.__init__` (4.40 to 5.24)
    """

    code = "TL220"
    name = "streaming-without-max-steps"
    severity = Severity.ERROR
    summary = "a streaming/iterable train_dataset without max_steps"
    cases = [
        Case("from datasets import load_dataset\nfrom transformers import Trainer, TrainingArguments\n"
             "ds = load_dataset('c4', split='train', streaming=True)\n"
             "tok = ds.map(f)\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o'), train_dataset=tok)\n"),
        Case("from datasets import load_dataset\nfrom transformers import Trainer, TrainingArguments\n"
             "ds = load_dataset('c4', split='train', streaming=True)\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', max_steps=100), train_dataset=ds)\n",
             flags=False),
        Case("from datasets import load_dataset\nfrom transformers import Trainer, TrainingArguments\n"
             "ds = load_dataset('imdb', split='train')\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o'), train_dataset=ds)\n", flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf, tc in _trainer_calls(setup):
            train = tc.keywords.get("train_dataset")
            if train is None or tc.args_call is None:
                continue
            src = _streaming_source(pf, train, tc.site.scope)
            if src is None:
                continue
            ms = effective(setup, tc.args_call.args, "max_steps")
            if not is_num(ms) or ms > 0:
                continue
            yield self.diagnostic(_kw_span(pf, tc, "train_dataset"),
                                  "the train_dataset is a streaming (iterable) dataset without a length and max_steps "
                                  "is not set: Trainer raises ValueError",
                                  related=[pf.span(src).related("streaming dataset created here")])


_HEADLESS_EXCLUDE = ("For", "Head", "PreTrained", "EncoderDecoder")


def _headless_class(pf: PythonFile, call: ast.Call) -> str | None:
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr in ("from_pretrained", "from_config")):
        return None
    qn = pf.qualname(f.value) or ""
    if not qn.startswith("transformers."):
        return None
    name = qn.rsplit(".", 1)[-1]
    if name == "AutoModel":
        return name
    if name.endswith("Model") and name[0].isupper() and not any(x in name for x in _HEADLESS_EXCLUDE) \
            and not name.startswith("Auto"):
        return name
    return None


class HeadlessModelInTrainer(Rule):
    """
    ## What it does
    Flags a Trainer whose `model` is created with `AutoModel.from_pretrained` or a base
    `*Model` class (`BertModel`, `LlamaModel`, ...) that has no task head (transformers 4.57
    and later).

    ## Why is this bad?
    The Trainer refuses it: `ValueError: The model you have picked (...) cannot be used as is
    for training: it only computes hidden states and does not accept any labels`.

    ## Example
    ```python
    model = AutoModel.from_pretrained("bert-base-uncased")
    Trainer(model=model, args=args)
    ```

    ## Use instead
    ```python
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
    ```

    ## Fix safety
    No automatic fix: the task head depends on the task.

    ## References
    - pitfalls catalog A25; transformers 4.57.1 / 5.24 `Trainer.__init__` (`MODEL_MAPPING_NAMES`)
    """

    code = "TL221"
    name = "headless-model-in-trainer"
    severity = Severity.ERROR
    summary = "a base model without a task head passed to Trainer"
    cases = [
        Case("from transformers import AutoModel, Trainer\nm = AutoModel.from_pretrained('bert-base-uncased')\n"
             "t = Trainer(model=m, args=a)\n", options=V524),
        Case("from transformers import BertModel, Trainer\nt = Trainer(model=BertModel.from_pretrained('b'))\n",
             options=V524),
        Case("from transformers import AutoModelForCausalLM, Trainer\nm = AutoModelForCausalLM.from_pretrained('x')\n"
             "t = Trainer(model=m, args=a)\n", options=V524, flags=False),
        Case("from transformers import GPT2LMHeadModel, Trainer\nm = GPT2LMHeadModel.from_pretrained('gpt2')\n"
             "t = Trainer(model=m)\n", options=V524, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        if not transformers_at_least(setup, "4.57.1"):
            return
        for pf, tc in _trainer_calls(setup):
            m = tc.keywords.get("model")
            expr: ast.AST | None = m
            if isinstance(m, ast.Name):
                b = pf.binding_of(m.id, tc.site.scope)
                expr = b.value if b is not None and b.kind in ("assign", "annassign") else None
            if not isinstance(expr, ast.Call):
                continue
            cls = _headless_class(pf, expr)
            if cls is None:
                continue
            yield self.diagnostic(_kw_span(pf, tc, "model"),
                                  f"{cls} only computes hidden states and takes no labels: Trainer raises ValueError; "
                                  "use an AutoModelFor<Task> class",
                                  related=[pf.span(expr).related(f"{cls} created here")])


class BatchEvalMetricsSignature(Rule):
    """
    ## What it does
    Flags `batch_eval_metrics=True` when the `compute_metrics` function passed to the Trainer
    (a `def` in the same file) has no `compute_result` parameter (and no `**kwargs`).

    ## Why is this bad?
    `ValueError: When using batch_eval_metrics, your compute_metrics function must take a
    compute_result boolean argument`, at Trainer construction.

    ## Example
    ```python
    def compute_metrics(eval_pred): ...
    Trainer(..., args=TrainingArguments(output_dir="o", batch_eval_metrics=True),
            compute_metrics=compute_metrics)
    ```

    ## Use instead
    ```python
    def compute_metrics(eval_pred, compute_result=False): ...
    ```

    ## Fix safety
    No automatic fix (the function must accumulate batches).

    ## References
    - pitfalls catalog A26; transformers 4.57.1 / 5.24 `Trainer.__init__`
    """

    code = "TL222"
    name = "batch-eval-metrics-signature"
    severity = Severity.ERROR
    summary = "batch_eval_metrics with a compute_metrics that lacks compute_result"
    cases = [
        Case("from transformers import Trainer, TrainingArguments\ndef cm(p):\n    return {}\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', batch_eval_metrics=True), "
             "compute_metrics=cm)\n"),
        Case("from transformers import Trainer, TrainingArguments\ndef cm(p, compute_result=False):\n    return {}\n"
             "t = Trainer(model=m, args=TrainingArguments(output_dir='o', batch_eval_metrics=True), "
             "compute_metrics=cm)\n", flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf, tc in _trainer_calls(setup):
            if tc.args_call is None or tc.args_call.args.known("batch_eval_metrics") is not True:
                continue
            cm = tc.keywords.get("compute_metrics")
            if not isinstance(cm, ast.Name):
                continue
            b = pf.binding_of(cm.id, tc.site.scope)
            if b is None or b.kind != "def" or not isinstance(b.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            a = b.node.args
            names = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
            if "compute_result" in names or a.kwarg is not None:
                continue
            yield self.diagnostic(_kw_span(pf, tc, "compute_metrics"),
                                  f"batch_eval_metrics=True but {cm.id}() has no compute_result parameter: "
                                  "Trainer raises ValueError",
                                  related=[pf.span(b.node).related(f"{cm.id} defined here")])


class AccumulationSetTwice(SiteRule):
    """
    ## What it does
    Flags `accelerator_config={"gradient_accumulation_kwargs": {"num_steps": N}}` together with
    `gradient_accumulation_steps > 1`.

    ## Why is this bad?
    `ValueError: The AcceleratorConfig's num_steps is set but gradient_accumulation_steps is
    greater than 1`: the Trainer cannot tell which one is meant.

    ## Example
    ```python
    TrainingArguments(output_dir="o", gradient_accumulation_steps=4,
                      accelerator_config={"gradient_accumulation_kwargs": {"num_steps": 4}})
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", gradient_accumulation_steps=4)
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - pitfalls catalog A27; transformers `Trainer.create_accelerator_and_postprocess`
    """

    code = "TL223"
    name = "accumulation-set-twice"
    severity = Severity.ERROR
    summary = "gradient accumulation set in accelerator_config and gradient_accumulation_steps"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', gradient_accumulation_steps=4, "
                  "accelerator_config={'gradient_accumulation_kwargs': {'num_steps': 4}})\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', "
                  "accelerator_config={'gradient_accumulation_kwargs': {'num_steps': 4}})\n", flags=False),
    ]

    def site_check(self, setup, site):
        gas = site.known("gradient_accumulation_steps")
        cfg = site.get("accelerator_config")
        if cfg is None or not is_num(gas) or gas <= 1:
            return
        value = cfg.value
        if not isinstance(value, dict):
            value = dict_literal(setup, cfg)
        if not isinstance(value, dict):
            return
        kwargs = value.get("gradient_accumulation_kwargs")
        if isinstance(kwargs, dict) and "num_steps" in kwargs:
            yield self.diagnostic(_span(site, "accelerator_config"),
                                  "accelerator_config sets gradient_accumulation_kwargs.num_steps while "
                                  f"gradient_accumulation_steps={gas}: Trainer raises ValueError",
                                  related=_related(site, "gradient_accumulation_steps"))
