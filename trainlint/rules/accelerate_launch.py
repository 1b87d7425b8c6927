"""TL4xx: accelerate configs and launch lines."""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

MODES = ("multi_gpu", "cpu", "tpu", "use_deepspeed", "use_fsdp")


class AccelerateManyModes(Rule):
    """
    ## What it does
    Flags `accelerate launch` with more than one of `--multi_gpu`, `--cpu`, `--tpu`,
    `--use_deepspeed`, `--use_fsdp`.

    ## Why is this bad?
    The launcher's `_validate_launch_command` raises ("You can only use one of `--cpu`,
    `--multi_gpu`, `--tpu`, `--use_deepspeed`, `--use_fsdp` at a time.").

    ## Example
    ```bash
    accelerate launch --multi_gpu --use_deepspeed train.py
    ```

    ## Use instead
    ```bash
    accelerate launch --use_deepspeed train.py
    ```

    ## Fix safety
    No fix: which mode is meant is a choice.

    ## References
    - accelerate `commands/launch.py` (`_validate_launch_command`)
    - pitfalls catalog C01
    """

    code = "TL401"
    name = "accelerate-several-modes"
    severity = Severity.ERROR
    summary = "accelerate launch with more than one distributed mode"
    cases = [
        Case(files={"run.sh": "accelerate launch --multi_gpu --use_deepspeed train.py\n",
                    "train.py": "from transformers import Trainer\n"}),
        Case(files={"run.sh": "accelerate launch --multi_gpu --num_processes 2 train.py\n",
                    "train.py": "from transformers import Trainer\n"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        launch = setup.extra.get("launch")
        if launch is None or launch.launcher != "accelerate":
            return
        found = [launch.launcher_arg(m) for m in MODES]
        found = [f for f in found if f is not None]
        if len(found) > 1:
            yield self.diagnostic(found[1].name_span, f"accelerate launch with {', '.join('--' + f.name for f in found)}: "
                                                      f"only one distributed mode can be used, the launcher refuses")


class MultiGpuTooFew(Rule):
    """
    ## What it does
    Flags an accelerate config with `distributed_type: MULTI_GPU` and `num_processes` below 2,
    or `gpu_ids` listing fewer than 2 GPUs on one machine.

    ## Why is this bad?
    The launcher raises ("You need to use at least 2 processes to use `--multi_gpu`", "Less than
    two GPU ids were configured and tried to run on on multiple GPUs").

    ## Example
    ```yaml
    distributed_type: MULTI_GPU
    num_processes: 1
    ```

    ## Use instead
    `distributed_type: 'NO'` for one GPU, or `num_processes: 2` and more GPU ids.

    ## Fix safety
    No fix.

    ## References
    - accelerate `commands/launch.py`
    - pitfalls catalog C02
    """

    code = "TL402"
    name = "multi-gpu-too-few-processes"
    severity = Severity.ERROR
    summary = "distributed_type MULTI_GPU with fewer than 2 processes or GPU ids"
    cases = [
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 1\n"}),
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                                "num_processes: 2\ngpu_ids: '0'\nnum_machines: 1\n"}),
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\n"
                                "gpu_ids: all\n"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = setup.extra.get("accelerate")
        if acc is None:
            return
        dt = acc.distributed_type
        if dt is None or dt.value != "MULTI_GPU":
            return
        launch = setup.extra.get("launch")
        override = launch.launcher_arg("num_processes") if launch is not None and launch.launcher == "accelerate" else None
        np_ = acc.num_processes
        if override is None and np_ is not None and isinstance(np_.value, int) and 0 < np_.value < 2:
            yield self.diagnostic(np_.span, f"distributed_type MULTI_GPU with num_processes {np_.value}: accelerate "  # type: ignore[arg-type]
                                            f"needs at least 2 processes for multi-GPU",
                                  related=[dt.span.related("MULTI_GPU is set here")] if dt.span else [])
            return
        ids = acc.gpu_id_list()
        machines = acc.num_machines
        one_machine = machines is None or machines.value == 1
        if ids is not None and len(ids) < 2 and one_machine:
            g = acc.gpu_ids
            yield self.diagnostic(g.span, f"distributed_type MULTI_GPU with gpu_ids {g.value!r}: fewer than two "  # type: ignore[union-attr,arg-type]
                                          f"GPU ids on one machine, accelerate refuses to start")


class ProcessesExceedGpuIds(Rule):
    """
    ## What it does
    Flags `num_processes` larger than the number of `gpu_ids` in an accelerate config, or than
    the GPUs listed in `CUDA_VISIBLE_DEVICES` on the launch line.

    ## Why is this bad?
    The extra processes map to GPU ordinals that do not exist: "CUDA error: invalid device
    ordinal" once the run starts.

    ## Example
    ```yaml
    num_processes: 4
    gpu_ids: 0,1
    ```

    ## Use instead
    ```yaml
    num_processes: 2
    gpu_ids: 0,1
    ```

    ## Fix safety
    Unsafe: `num_processes` is set to the number of GPU ids, which changes the world size (and
    the effective batch size).

    ## References
    - https://github.com/RUCAIBox/TextBox/issues/343
    - https://github.com/huggingface/accelerate/pull/2916
    - pitfalls catalog C03
    """

    code = "TL403"
    name = "processes-exceed-gpus"
    severity = Severity.ERROR
    fix_safety = "unsafe"
    summary = "more processes than configured or visible GPUs"
    cases = [
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                                "num_processes: 4\ngpu_ids: 0,1\n"}, unsafe=True,
             fixed="compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: 0,1\n",
             fixed_path="acc.yaml"),
        Case(files={"run.sh": "CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 4 train.py\n",
                    "train.py": "from transformers import Trainer\n"}),
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                                "num_processes: 2\ngpu_ids: 0,1\n"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = setup.extra.get("accelerate")
        launch = setup.extra.get("launch")
        if acc is not None:
            np_, ids = acc.num_processes, acc.gpu_id_list()
            machines = acc.num_machines
            if np_ is not None and isinstance(np_.value, int) and ids and (machines is None or machines.value == 1) \
                    and np_.value > len(ids):
                yield self.diagnostic(np_.span, f"num_processes {np_.value} but gpu_ids lists {len(ids)} GPU"  # type: ignore[arg-type]
                                                f"{'s' if len(ids) != 1 else ''}: the extra processes get invalid device "
                                                f"ordinals", edits=[np_.span.edit(str(len(ids)))],  # type: ignore[union-attr]
                                      fix_message=f"set num_processes to {len(ids)}")
        if launch is not None and launch.launcher in ("torchrun", "torch.distributed.launch", "accelerate"):
            cvd = launch.env.get("CUDA_VISIBLE_DEVICES")
            world = launch.world_size_value()
            if cvd is None or cvd.value is None or world is None or world.name == "CUDA_VISIBLE_DEVICES":
                return
            n = len([x for x in cvd.value.split(",") if x.strip()])
            nnodes = launch.launcher_arg("nnodes")
            if nnodes is None and isinstance(world.value, int) and world.value > n:
                yield self.diagnostic(world.span, f"{world.value} processes but CUDA_VISIBLE_DEVICES={cvd.value} shows "  # type: ignore[arg-type]
                                                  f"{n} GPU{'s' if n != 1 else ''}: the extra processes get invalid "
                                                  f"device ordinals", related=[cvd.value_span.related("set here")]
                                      if getattr(cvd, "value_span", None) else [])


class BadNumProcesses(Rule):
    """
    ## What it does
    Flags `num_processes` in an accelerate config that is not a positive integer (`-1`, `0`,
    `"gpu"`, ...).

    ## Why is this bad?
    The launcher cannot start that many processes ("You need to manually pass in
    `--num_processes`"), or fails parsing it.

    ## Example
    ```yaml
    num_processes: -1
    ```

    ## Use instead
    ```yaml
    num_processes: 4
    ```

    ## Fix safety
    No fix: the number of GPUs is not known statically.

    ## References
    - accelerate `commands/launch.py`
    - pitfalls catalog C04
    """

    code = "TL404"
    name = "bad-num-processes"
    severity = Severity.ERROR
    summary = "num_processes is not a positive integer"
    cases = [
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: -1\n"}),
        Case(files={"acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 8\n"},
             flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = setup.extra.get("accelerate")
        if acc is None:
            return
        v = acc.num_processes
        if v is None or v.span is None:
            return
        if isinstance(v.value, bool) or not isinstance(v.value, int) or v.value < 1:
            yield self.diagnostic(v.span, f"num_processes {v.value!r} is not a positive integer: the launcher "
                                          f"cannot start the run with it")


C05_KEYS = ("gradient_accumulation_steps", "gradient_clipping", "zero_stage", "offload_optimizer_device",
            "offload_param_device", "offload_param_nvme_path", "offload_optimizer_nvme_path",
            "zero3_save_16bit_model", "mixed_precision")


class DeepSpeedFileWithInlineFields(Rule):
    """
    ## What it does
    Flags an accelerate config whose `deepspeed_config` names a `deepspeed_config_file` and also
    sets fields that the file must hold: `gradient_accumulation_steps`, `gradient_clipping`,
    `zero_stage`, `offload_optimizer_device`, `offload_param_device`, the `*_nvme_path`s,
    `zero3_save_16bit_model`, `mixed_precision`.

    ## Why is this bad?
    `DeepSpeedPlugin._deepspeed_config_checks` raises ("When using `deepspeed_config_file`, the
    following accelerate config variables will be ignored ...").

    ## Example
    ```yaml
    deepspeed_config:
      deepspeed_config_file: ds.json
      zero_stage: 2
    ```

    ## Use instead
    ```yaml
    deepspeed_config:
      deepspeed_config_file: ds.json   # with "zero_optimization": {"stage": 2}
    ```

    ## Fix safety
    Unsafe: the inline key is removed, so the DeepSpeed file's value (or DeepSpeed's default)
    applies; move the value into the file if it differs.

    ## References
    - accelerate `utils/dataclasses.py` (`_deepspeed_config_checks`)
    - pitfalls catalog C05
    """

    code = "TL405"
    name = "deepspeed-file-with-inline-fields"
    severity = Severity.ERROR
    fix_safety = "unsafe"
    summary = "accelerate deepspeed_config_file together with inline DeepSpeed fields"
    cases = [
        Case(files={"acc.yaml": "distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n"
                                "  deepspeed_config_file: ds.json\n  zero_stage: 2\n  zero3_init_flag: false\n",
                    "ds.json": '{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": 8}\n'},
             unsafe=True, fixed="distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n"
                                "  deepspeed_config_file: ds.json\n  zero3_init_flag: false\n", fixed_path="acc.yaml"),
        Case(files={"acc.yaml": "distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n"
                                "  deepspeed_config_file: ds.json\n  zero3_init_flag: false\n",
                    "ds.json": '{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": 8}\n'},
             flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = setup.extra.get("accelerate")
        if acc is None or acc.deepspeed_config is None or acc.deepspeed_config_file is None:
            return
        from trainlint.sources.yamldoc import YamlNode, remove_key_edit

        section = acc.deepspeed_config
        for key in C05_KEYS:
            node = section.get(key)
            if node is None or node.key_span is None:
                continue
            edits = [remove_key_edit(section, key)] if isinstance(section, YamlNode) else None
            yield self.diagnostic(node.key_span, f"deepspeed_config.{key} is set together with deepspeed_config_file: "
                                                 f"accelerate refuses to start; put it in the DeepSpeed file",
                                  edits=edits, fix_message=f"remove {key}")


class MultiGpuPlainPython(Rule):
    """
    ## What it does
    Flags a launch line that runs a Trainer script with plain `python` when the setup has more
    than one GPU (`CUDA_VISIBLE_DEVICES` on the line lists several, or `--gpus N`) and no
    DeepSpeed config.

    ## Why is this bad?
    One process sees all the GPUs and the Trainer falls back to `torch.nn.DataParallel`: one
    Python process driving every GPU, bound by the GIL, with the outputs gathered on GPU 0
    (unbalanced memory); DistributedDataParallel through a launcher is faster.

    ## Example
    ```bash
    CUDA_VISIBLE_DEVICES=0,1,2,3 python train.py --output_dir out
    ```

    ## Use instead
    ```bash
    CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node 4 train.py --output_dir out
    ```

    ## Fix safety
    Safe: the global batch stays per-device batch x number of GPUs. The fix replaces `python`
    by `torchrun --nproc_per_node N`.

    ## References
    - transformers `trainer.py` (`args.n_gpu > 1` wraps the model in `nn.DataParallel`)
    - https://pytorch.org/docs/stable/notes/cuda.html#use-nn-parallel-distributeddataparallel-instead-of-multiprocessing-or-nn-dataparallel
    - pitfalls catalog P23
    """

    code = "TL406"
    name = "multi-gpu-plain-python"
    severity = Severity.WARNING
    fix_safety = "safe"
    summary = "several GPUs driven by one plain python process (DataParallel)"
    cases = [
        Case(files={"run.sh": "CUDA_VISIBLE_DEVICES=0,1 python train.py --output_dir out\n",
                    "train.py": "from transformers import Trainer\n"},
             fixed="CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 train.py --output_dir out\n",
             fixed_path="run.sh"),
        Case(files={"run.sh": "python train.py --output_dir out\n", "train.py": "from transformers import Trainer\n"},
             options={"gpus": 4}),
        Case(files={"run.sh": "python train.py --output_dir out\n", "train.py": "from transformers import Trainer\n"},
             flags=False),
        Case(files={"run.sh": "CUDA_VISIBLE_DEVICES=0 python train.py\n", "train.py": "from transformers import Trainer\n"},
             flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        launch = setup.extra.get("launch")
        if launch is None or launch.launcher != "python" or launch.script is None or not setup.scripts:
            return
        if setup.extra.get("deepspeed") is not None:
            return
        if not any(pf.trainer_calls or pf.args_calls for pf in setup.scripts) and \
                not any("Trainer" in pf.text for pf in setup.scripts):
            return
        cvd = launch.env.get("CUDA_VISIBLE_DEVICES")
        n = None
        source = ""
        if cvd is not None and cvd.value is not None:
            n = len([x for x in cvd.value.split(",") if x.strip()])
            source = f"CUDA_VISIBLE_DEVICES={cvd.value}"
        elif setup.world_size is not None and isinstance(setup.world_size.value, int):
            n = setup.world_size.value
            source = f"--gpus {n}"
        if n is None or n < 2:
            return
        span = launch.launcher_span
        edits = [span.edit(f"torchrun --nproc_per_node {n}")] if span.line == span.end_line else None
        yield self.diagnostic(span, f"plain python with {n} GPUs ({source}): the Trainer falls back to "
                                    f"nn.DataParallel in one process; launch with torchrun --nproc_per_node {n} "
                                    f"(or accelerate launch) for DistributedDataParallel",
                              edits=edits, fix_message=f"launch with torchrun --nproc_per_node {n}")
