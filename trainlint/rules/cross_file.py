"""TL503-TL549: rules that read more than one source of a setup (launch line, script, args
file, DeepSpeed and accelerate configs), or TrainingArguments checks that hold wherever the
values are written (script, flags, args file)."""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import effective, located, set_edit, where
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

HF_SCRIPT = ("from transformers import HfArgumentParser, TrainingArguments\n"
             "parser = HfArgumentParser((TrainingArguments,))\n"
             "(args,) = parser.parse_args_into_dataclasses()\n")


def _strategy(v) -> str | None:
    if v is None or not isinstance(v.value, str):
        return None
    return v.value.lower()


class AcceleratePrecisionVsDeepSpeed(Rule):
    """
    ## What it does
    Flags an accelerate config whose `mixed_precision` is `fp16` while the linked DeepSpeed
    config enables `bf16` (or `bf16` against DeepSpeed `fp16`).

    ## Why is this bad?
    accelerate's `DeepSpeedPlugin.set_mixed_precision` raises ("`--mixed_precision` arg cannot
    be set to fp16 when bf16 is set in the DeepSpeed config file") when the run starts.

    ## Example
    ```yaml
    mixed_precision: fp16
    deepspeed_config:
      deepspeed_config_file: ds.json   # {"bf16": {"enabled": true}}
    ```

    ## Use instead
    `"bf16": {"enabled": "auto"}` in the DeepSpeed file, so one place decides.

    ## Fix safety
    Safe: the DeepSpeed value becomes `"auto"` and follows the precision chosen elsewhere.

    ## References
    - accelerate `utils/dataclasses.py` (`DeepSpeedPlugin.set_mixed_precision`)
    - pitfalls catalog D04
    """

    code = "TL503"
    name = "accelerate-precision-vs-deepspeed"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "accelerate mixed_precision contradicts the DeepSpeed config's precision"

    cases = [
        Case(files={"acc.yaml": "distributed_type: DEEPSPEED\nmixed_precision: fp16\nnum_processes: 2\n"
                                "deepspeed_config:\n  deepspeed_config_file: ds.json\n",
                    "ds.json": '{"bf16": {"enabled": true}, "train_micro_batch_size_per_gpu": 8}\n'},
             fixed='{"bf16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": 8}\n', fixed_path="ds.json"),
        # must not flag
        Case(files={"acc.yaml": "distributed_type: DEEPSPEED\nmixed_precision: bf16\nnum_processes: 2\n"
                                "deepspeed_config:\n  deepspeed_config_file: ds.json\n",
                    "ds.json": '{"bf16": {"enabled": true}, "train_micro_batch_size_per_gpu": 8}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc, cfg = setup.extra.get("accelerate"), setup.extra.get("deepspeed")
        if acc is None or cfg is None:
            return
        mp = acc.mixed_precision
        if mp is None or mp.value not in ("fp16", "bf16"):
            return
        other = "bf16" if mp.value == "fp16" else "fp16"
        ds = cfg.value(f"{other}.enabled")
        if ds is None or ds.value is not True or ds.span is None:
            return
        yield self.diagnostic(ds.span, f"{other} is enabled in {where(ds)} but accelerate's mixed_precision is "
                                       f"{mp.value} in {where(mp)}: accelerate refuses to start", edits=[ds.span.edit('"auto"')],
                              related=[mp.span.related("mixed_precision is set here")] if mp.span else [],
                              fix_message='set the DeepSpeed value to "auto"')


class AcceleratePrecisionOverridden(Rule):
    """
    ## What it does
    Flags an accelerate config `mixed_precision` that the TrainingArguments of the same setup
    contradict (`mixed_precision: bf16` with `fp16=True`, `no` with `bf16=True`, ...).

    ## Why is this bad?
    `TrainingArguments.__post_init__` replaces accelerate's `ACCELERATE_MIXED_PRECISION` with its
    own `fp16`/`bf16`, so the YAML setting is silently ignored; whoever reads the YAML is misled.

    ## Example
    ```yaml
    mixed_precision: bf16
    ```
    with `--fp16` on the launch line.

    ## Use instead
    Make them agree (`mixed_precision: fp16`), or decide the precision in one place.

    ## Fix safety
    Safe: the YAML is set to what TrainingArguments already makes the run use.

    ## References
    - transformers `training_args.py` (`__post_init__`, mixed precision from the environment)
    - pitfalls catalog C06
    """

    code = "TL504"
    name = "accelerate-precision-overridden"
    severity = Severity.WARNING
    fix_safety = "safe"
    summary = "accelerate mixed_precision is silently overridden by TrainingArguments fp16/bf16"

    cases = [
        Case(files={"launch.sh": "accelerate launch --config_file acc.yaml run.py --output_dir o --fp16\n",
                    "run.py": HF_SCRIPT,
                    "acc.yaml": "distributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_processes: 2\n"},
             fixed="distributed_type: MULTI_GPU\nmixed_precision: fp16\nnum_processes: 2\n", fixed_path="acc.yaml"),
        # must not flag
        Case(files={"launch.sh": "accelerate launch --config_file acc.yaml run.py --output_dir o --bf16\n",
                    "run.py": HF_SCRIPT,
                    "acc.yaml": "distributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_processes: 2\n"}, flags=False),
        Case(files={"launch.sh": "accelerate launch --config_file acc.yaml run.py --output_dir o\n",
                    "run.py": HF_SCRIPT,
                    "acc.yaml": "distributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_processes: 2\n"},
             flags=False, note="TrainingArguments does not set a precision: accelerate's is used"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = setup.extra.get("accelerate")
        if acc is None or setup.extra.get("deepspeed") is not None:
            return  # under DeepSpeed the DeepSpeed config decides (TL503, TL301)
        mp = acc.mixed_precision
        if mp is None or mp.value not in ("no", "fp16", "bf16") or mp.span is None:
            return
        for site in setup.sites:
            fp, bf = site.get("fp16"), site.get("bf16")
            wanted = "fp16" if fp is not None and fp.value is True else "bf16" if bf is not None and bf.value is True else None
            if wanted is None or wanted == mp.value:
                continue
            ta = fp if wanted == "fp16" else bf
            yield self.diagnostic(mp.span, f"accelerate mixed_precision {mp.value} in {where(mp)} is overridden by "
                                           f"{located(ta)}: the run uses {wanted}", edits=[mp.span.edit(wanted)],
                                  related=[ta.span.related(f"{wanted} is set here")] if ta.span else [],
                                  fix_message=f"set mixed_precision to {wanted}")


class LoadBestStrategyMismatch(Rule):
    """
    ## What it does
    Flags `load_best_model_at_end` when the save strategy is not `"best"` and differs from the
    evaluation strategy (`eval_strategy`, or the older `evaluation_strategy`; the default is
    `"no"`), wherever they are set: script, launch flags, args file.

    ## Why is this bad?
    `TrainingArguments.__post_init__` raises "--load_best_model_at_end requires the save and
    eval strategy to match" before training starts.

    ## Example
    ```bash
    python run.py --eval_strategy epoch --save_strategy steps --save_steps 500 --load_best_model_at_end
    ```

    ## Use instead
    ```bash
    python run.py --eval_strategy epoch --save_strategy epoch --load_best_model_at_end
    ```

    ## Fix safety
    Safe for the training itself: the save strategy is set to the evaluation strategy (the
    checkpoint cadence changes). Offered when the save strategy is written.

    ## References
    - transformers `training_args.py` (`__post_init__`)
    - pitfalls catalog A01
    """

    code = "TL505"
    name = "load-best-strategy-mismatch"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "load_best_model_at_end with different save and eval strategies"

    cases = [
        Case(files={"run.sh": "python run.py --output_dir o --eval_strategy epoch \\\n  --save_strategy steps "
                              "--load_best_model_at_end\n", "run.py": HF_SCRIPT},
             fixed="python run.py --output_dir o --eval_strategy epoch \\\n  --save_strategy epoch "
                   "--load_best_model_at_end\n", fixed_path="run.sh"),
        Case("""
             from transformers import TrainingArguments
             args = TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="epoch")
             """, note="save_strategy defaults to steps"),
        # must not flag
        Case("""
             from transformers import TrainingArguments
             args = TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="epoch",
                                      save_strategy="epoch")
             """, flags=False),
        Case("""
             from transformers import TrainingArguments
             args = TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="epoch",
                                      save_strategy="best", metric_for_best_model="loss")
             """, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site in setup.sites:
            lb = site.get("load_best_model_at_end")
            if lb is None or lb.value is not True:
                continue
            ev, sv = effective(site, "eval_strategy"), effective(site, "save_strategy")
            e, s = _strategy(ev), _strategy(sv)
            if e is None or s is None or s == "best" or e == s:
                continue
            edits = None
            if sv is not None and sv.span is not None:
                edit = set_edit(sv, e)
                edits = [edit] if edit is not None else None
            span = lb.key_span or lb.span
            yield self.diagnostic(span, f"load_best_model_at_end needs the save and eval strategies to match, but "  # type: ignore[arg-type]
                                        f"{located(ev)} and {located(sv)}: TrainingArguments raises before "  # type: ignore[arg-type]
                                        f"training", edits=edits,
                                  related=[v.span.related(f"{v.name} is set here") for v in (ev, sv)
                                           if v is not None and v.span is not None],
                                  fix_message=f"set save_strategy to {e}")


class LoadBestStepsNotMultiple(Rule):
    """
    ## What it does
    Flags `load_best_model_at_end` with step evaluation and saving when `save_steps` is not a
    multiple of `eval_steps` (which falls back to `logging_steps` when unset).

    ## Why is this bad?
    `TrainingArguments.__post_init__` raises "--load_best_model_at_end requires the saving steps
    to be a round multiple of the evaluation steps".

    ## Example
    ```python
    TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="steps",
                      save_strategy="steps", eval_steps=300, save_steps=500)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="steps",
                      save_strategy="steps", eval_steps=300, save_steps=600)
    ```

    ## Fix safety
    Safe for training: `save_steps` is rounded up to the next multiple of `eval_steps`.

    ## References
    - transformers `training_args.py` (`__post_init__`)
    - pitfalls catalog A02
    """

    code = "TL506"
    name = "load-best-steps-not-multiple"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "save_steps is not a multiple of eval_steps with load_best_model_at_end"

    cases = [
        Case("""
             from transformers import TrainingArguments
             args = TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="steps",
                                      eval_steps=300, save_steps=500)
             """,
             fixed='from transformers import TrainingArguments\n'
                   'args = TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="steps",\n'
                   '                         eval_steps=300, save_steps=600)\n'),
        # must not flag
        Case("""
             from transformers import TrainingArguments
             args = TrainingArguments(output_dir="o", load_best_model_at_end=True, eval_strategy="steps",
                                      eval_steps=250, save_steps=500)
             """, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site in setup.sites:
            lb = site.get("load_best_model_at_end")
            if lb is None or lb.value is not True:
                continue
            e, s = _strategy(effective(site, "eval_strategy")), _strategy(effective(site, "save_strategy"))
            if e != "steps" or s != "steps":
                continue
            ev = site.get("eval_steps") or effective(site, "logging_steps")
            sv = effective(site, "save_steps")
            if ev is None or sv is None or not ev.known or not sv.known:
                continue
            a, b = ev.value, sv.value
            if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in (a, b)) or b % a == 0:
                continue
            new = (b // a + 1) * a
            edit = set_edit(sv, new) if sv.span is not None else None
            yield self.diagnostic(sv.span or lb.key_span or lb.span,  # type: ignore[arg-type]
                                  f"save_steps {b} is not a multiple of eval_steps {a} ({where(ev)}): with "
                                  f"load_best_model_at_end TrainingArguments raises", edits=[edit] if edit else None,
                                  fix_message=f"set save_steps to {new}")


class Fp16AndBf16(Rule):
    """
    ## What it does
    Flags `fp16` and `bf16` both true (or `fp16_full_eval` and `bf16_full_eval`) in one set of
    TrainingArguments, wherever they are written: script, launch flags or args file.

    ## Why is this bad?
    `TrainingArguments.__post_init__` raises "At most one of fp16 and bf16 can be True, but not
    both" before training starts.

    ## Example
    ```json
    {"output_dir": "out", "fp16": true, "bf16": true}
    ```

    ## Use instead
    ```json
    {"output_dir": "out", "fp16": false, "bf16": true}
    ```

    ## Fix safety
    Unsafe (it chooses the numerics), and offered only with a target GPU (`--gpu`): bf16 is kept
    on GPUs that support it, fp16 otherwise.

    ## References
    - transformers `training_args.py` (`__post_init__`)
    - pitfalls catalog A06
    """

    code = "TL507"
    name = "fp16-and-bf16"
    severity = Severity.ERROR
    fix_safety = "unsafe"
    summary = "fp16 and bf16 both enabled in TrainingArguments"

    cases = [
        Case(files={"args.json": '{\n  "output_dir": "out",\n  "fp16": true,\n  "bf16": true\n}\n'},
             options={"gpu": "A100"}, unsafe=True,
             fixed='{\n  "output_dir": "out",\n  "fp16": false,\n  "bf16": true\n}\n', fixed_path="args.json"),
        Case("""
             from transformers import TrainingArguments
             args = TrainingArguments(output_dir="o", fp16=True, bf16=True)
             """),
        # must not flag
        Case("""
             from transformers import TrainingArguments
             args = TrainingArguments(output_dir="o", fp16=False, bf16=True)
             """, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        gpu = setup.gpu
        for site in setup.sites:
            for a, b in (("fp16", "bf16"), ("fp16_full_eval", "bf16_full_eval")):
                fp, bf = site.get(a), site.get(b)
                if fp is None or bf is None or fp.value is not True or bf.value is not True:
                    continue
                edits = None
                if gpu is not None:
                    drop = fp if gpu.bf16 else bf
                    e = set_edit(drop, False)
                    edits = [e] if e else None
                yield self.diagnostic(fp.key_span or fp.span,  # type: ignore[arg-type]
                                      f"{a} and {b} are both true ({located(fp)}, {located(bf)}): TrainingArguments "
                                      f"raises \"At most one of fp16 and bf16 can be True\"", edits=edits,
                                      related=[bf.span.related(f"{b} is set here")] if bf.span else [],
                                      fix_message=f"keep {'bf16' if gpu is not None and gpu.bf16 else 'fp16'}")


DEVICE_MAPS = {"auto", "balanced", "balanced_low_0", "sequential"}


class DeviceMapDistributed(Rule):
    """
    ## What it does
    Flags `from_pretrained(..., device_map="auto")` (or `"balanced"`, `"balanced_low_0"`,
    `"sequential"`) in a script that its launch line starts as several processes (torchrun,
    accelerate launch, deepspeed with more than one process), or that trains with DeepSpeed.

    ## Why is this bad?
    `device_map` splits one model over the GPUs of one process (naive model parallelism);
    data-parallel training replicates or shards it per process instead. accelerate refuses
    ("You can't train a model that has been loaded with `device_map='auto'` in any distributed
    mode"), and ZeRO-3 conflicts with it.

    ## Example
    ```bash
    torchrun --nproc_per_node 4 train.py   # model = AutoModel.from_pretrained(name, device_map="auto")
    ```

    ## Use instead
    ```python
    model = AutoModel.from_pretrained(name)
    ```

    ## Fix safety
    Safe: the Trainer places the model on each process's device.

    ## References
    - https://github.com/huggingface/transformers/issues/31557
    - accelerate `accelerator.py` (`prepare_model`)
    - pitfalls catalog P02
    """

    code = "TL508"
    name = "device-map-in-distributed-launch"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "device_map='auto' in a script launched as several processes"

    cases = [
        Case(files={"run.sh": "torchrun --nproc_per_node 4 train.py\n",
                    "train.py": "from transformers import AutoModel, Trainer\n"
                                "model = AutoModel.from_pretrained('m', device_map='auto')\n"
                                "Trainer(model=model)\n"},
             fixed="from transformers import AutoModel, Trainer\nmodel = AutoModel.from_pretrained('m')\n"
                   "Trainer(model=model)\n"),
        # must not flag
        Case(files={"run.sh": "python train.py\n",
                    "train.py": "from transformers import AutoModel, Trainer\n"
                                "model = AutoModel.from_pretrained('m', device_map='auto')\n"
                                "Trainer(model=model)\n"}, flags=False),
        Case(files={"run.sh": "torchrun --nproc_per_node 4 train.py\n",
                    "train.py": "from transformers import AutoModel, Trainer\n"
                                "model = AutoModel.from_pretrained('m')\nTrainer(model=model)\n"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        launch = setup.extra.get("launch")
        world = setup.world_size_value
        distributed = (launch is not None and launch.launcher != "python" and world is not None and world > 1) \
            or setup.extra.get("deepspeed") is not None
        if not distributed or not setup.scripts:
            return
        from trainlint.fixing.python_edits import remove_argument

        why = f"{world} processes ({where(setup.world_size)})" if world and world > 1 and setup.world_size \
            else "DeepSpeed"
        for pf in setup.scripts:
            for cs in pf.calls:
                f = cs.node.func
                if not (isinstance(f, ast.Attribute) and f.attr == "from_pretrained"):
                    continue
                kw = pf.keyword(cs.node, "device_map")
                if kw is None:
                    continue
                val = pf.resolve(kw.value, cs.scope).value
                if not isinstance(val, str) or val not in DEVICE_MAPS:
                    continue
                yield self.diagnostic(pf.keyword_name_span(kw),
                                      f"device_map={val!r} splits the model over the GPUs of one process, but this "
                                      f"script runs as {why}: accelerate refuses to train such a model in a "
                                      f"distributed mode; let the Trainer place it",
                                      edits=[remove_argument(pf, cs.node, kw)], fix_message="remove device_map")
