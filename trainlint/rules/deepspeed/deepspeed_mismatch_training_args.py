"""TL301 deepspeed-mismatch-training-args: a DeepSpeed value disagrees with the TrainingArguments value transformers compares it with"""

from __future__ import annotations

import json
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import as_int, effective, located, where
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_config_common import (
    _auto_edit,
    _ds,
)
from trainlint.setup import Setup, Value

RUN_SH = ("torchrun --nproc_per_node 2 run.py \\\n  --output_dir out \\\n  --per_device_train_batch_size 8 \\\n"
          "  --deepspeed ds.json\n")


HF_SCRIPT = ("from transformers import HfArgumentParser, TrainingArguments\n"
             "parser = HfArgumentParser((TrainingArguments,))\n"
             "(args,) = parser.parse_args_into_dataclasses()\n")



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
    """

    code = "TL301"
    name = "deepspeed-mismatch-training-args"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    needs_training = True
    python_alone = False  # a DeepSpeed config comes from a file (linking)
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

