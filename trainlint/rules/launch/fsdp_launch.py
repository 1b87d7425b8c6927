"""TL509 fsdp-without-distributed-launch."""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import located
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules._versioned import fsdp_enabled
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

TRAINER = "from transformers import Trainer, TrainingArguments\n"


class FsdpWithoutDistributedLaunch(Rule):
    """
    ## What it does
    Flags TrainingArguments that turn on FSDP (`fsdp="full_shard auto_wrap"`, `fsdp=True`,
    `--fsdp full_shard`) together with a DeepSpeed config (`deepspeed=` / `--deepspeed`, or an
    accelerate config whose `distributed_type` is `DEEPSPEED`), or in a script that its launch
    line starts with plain `python` (one process).

    ## Why is this bad?
    The Trainer raises before training: "Using --fsdp xxx together with --deepspeed is not
    possible, deactivate one of those flags", and, without a distributed launcher, "Using fsdp
    only works in distributed training". Both are decided only after the model is loaded.

    ## Example
    ```bash
    python train.py --fsdp "full_shard auto_wrap" --output_dir out
    ```

    ## Use instead
    ```bash
    torchrun --nproc_per_node 4 train.py --fsdp "full_shard auto_wrap" --output_dir out
    ```

    ## Fix safety
    No automatic fix: choosing between FSDP and DeepSpeed, or the number of processes, is the
    user's decision.

    ## References
    - transformers `Trainer.__init__` / `TrainingArguments.__post_init__` (fsdp checks)
    """

    code = "TL509"
    name = "fsdp-without-distributed-launch"
    severity = Severity.ERROR
    triggers = LAUNCH_NAMES
    needs_training = True
    fires_on = ("fsdp",)
    summary = "FSDP together with DeepSpeed, or under a plain one-process python launch"

    cases = [
        Case(TRAINER + "args = TrainingArguments(output_dir='o', fsdp='full_shard auto_wrap', deepspeed='ds.json')\n"
             "Trainer(model=m, args=args)\n", files={"ds.json": '{"zero_optimization": {"stage": 2}}\n'}),
        Case(files={"run.sh": 'python train.py --output_dir o --fsdp "full_shard auto_wrap"\n',
                    "train.py": "from transformers import HfArgumentParser, TrainingArguments, Trainer\n"
                                "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
                                "Trainer(model=m, args=args)\n"}),
        # must not flag
        Case(files={"run.sh": 'torchrun --nproc_per_node 4 train.py --output_dir o --fsdp "full_shard auto_wrap"\n',
                    "train.py": "from transformers import HfArgumentParser, TrainingArguments, Trainer\n"
                                "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
                                "Trainer(model=m, args=args)\n"}, flags=False),
        Case(TRAINER + "args = TrainingArguments(output_dir='o', fsdp='full_shard')\nTrainer(model=m, args=args)\n",
             flags=False, note="no launch line known: never guess the launcher"),
        Case(TRAINER + "args = TrainingArguments(output_dir='o', fsdp='', deepspeed='ds.json')\n",
             files={"ds.json": '{"zero_optimization": {"stage": 2}}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        launch = setup.extra.get("launch")
        acc = setup.extra.get("accelerate")
        acc_type = acc.distributed_type if acc is not None else None
        for site in setup.sites:
            fsdp = site.get("fsdp")
            if fsdp_enabled(fsdp) is not True:
                continue
            anchor = fsdp.key_span or fsdp.span  # type: ignore[union-attr]
            if anchor is None:
                continue
            ds = site.get("deepspeed")
            if ds is not None and ds.known and ds.value:  # an unresolved deepspeed= is not judged
                yield self.diagnostic(
                    anchor, f"{located(fsdp)} together with {located(ds)}: the Trainer raises \"Using --fsdp "
                            f"xxx together with --deepspeed is not possible\"; use one of them",
                    related=[(ds.key_span or ds.span).related("DeepSpeed is set here")] if (ds.key_span or ds.span) else [])
                continue
            if acc_type is not None and isinstance(acc_type.value, str) and acc_type.value.upper() == "DEEPSPEED":
                yield self.diagnostic(
                    anchor, f"{located(fsdp)} while the accelerate config runs DeepSpeed ({located(acc_type)}): "
                            f"FSDP and DeepSpeed cannot be combined; use one of them",
                    related=[acc_type.span.related("distributed_type is set here")] if acc_type.span else [])
                continue
            if launch is not None and launch.launcher == "python":
                yield self.diagnostic(
                    anchor, f"{located(fsdp)} in a script launched with plain `python` (one process, "
                            f"{launch.path}:{launch.span.line}): the Trainer raises \"Using fsdp only works in "
                            f"distributed training\"; launch with torchrun or accelerate launch",
                    related=[launch.span.related("the one-process launch line")])

