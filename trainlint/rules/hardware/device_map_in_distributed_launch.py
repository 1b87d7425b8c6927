"""TL508 device-map-in-distributed-launch: device_map='auto' in a script launched as several processes"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import where
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup




class DeviceMapDistributed(Rule):
    """
    ## What it does
    Flags `from_pretrained(..., device_map="auto")` (or `"balanced"`, `"balanced_low_0"`,
    `"sequential"`) in a script that its launch line starts as several processes (torchrun,
    accelerate launch, deepspeed with more than one process), or that trains with DeepSpeed.
    The model a `Trainer` trains is left to `device-map-multi-process` (TL103), which names
    the Trainer: one finding per call.

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
    """

    code = "TL508"
    name = "device-map-in-distributed-launch"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES + ("device_map",)
    fires_on = ("device_map",)
    fix_safety = "safe"
    summary = "device_map='auto' in a script launched as several processes"

    cases = [
        Case(files={"run.sh": "torchrun --nproc_per_node 4 train.py\n",
                    "train.py": "from accelerate import Accelerator\nfrom transformers import AutoModel\n"
                                "model = AutoModel.from_pretrained('m', device_map='auto')\n"
                                "model = Accelerator().prepare(model)\n"},
             fixed="from accelerate import Accelerator\nfrom transformers import AutoModel\n"
                   "model = AutoModel.from_pretrained('m')\nmodel = Accelerator().prepare(model)\n"),
        # must not flag
        Case(files={"run.sh": "torchrun --nproc_per_node 4 train.py\n",
                    "train.py": "from transformers import AutoModel, Trainer\n"
                                "model = AutoModel.from_pretrained('m', device_map='auto')\n"
                                "Trainer(model=model)\n"},
             flags=False, note="the model a Trainer trains: device-map-multi-process (TL103) reports it, once"),
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
        from trainlint.analysis import spreading_loads
        from trainlint.fixing.python_edits import remove_argument

        why = f"{world} processes ({where(setup.world_size)})" if world and world > 1 and setup.world_size \
            else "DeepSpeed"
        covered = _trained_by_trainer(setup)
        for pf in setup.scripts:
            for cs, kw, val in spreading_loads(pf):
                if id(cs.node) in covered:
                    continue
                yield self.diagnostic(pf.keyword_name_span(kw),
                                      f"device_map={val!r} splits the model over the GPUs of one process, but this "
                                      f"script runs as {why}: accelerate refuses to train such a model in a "
                                      f"distributed mode; let the Trainer place it",
                                      edits=[remove_argument(pf, cs.node, kw)], fix_message="remove device_map")


def _trained_by_trainer(setup: Setup) -> set[int]:
    """The ``from_pretrained`` calls (ids) that device-map-multi-process (TL103) reports: the
    model a Trainer trains in a multi-process run. One finding per call: that rule says more
    (the Trainer that trains it, the quantized-model advice)."""
    from trainlint.analysis import SPREADING_DEVICE_MAPS, multi_process, trainer_contexts

    out: set[int] = set()
    for ctx in trainer_contexts(setup):
        if ctx.flow is None or multi_process(setup, ctx.sites) is None:
            continue
        for ld in ctx.flow.loads:
            dm = ld.kw("device_map")
            if dm is not None and isinstance(dm.value, str) and dm.value in SPREADING_DEVICE_MAPS:
                out.add(id(ld.call))
    return out
