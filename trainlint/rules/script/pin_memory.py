"""TL120 pin-memory-disabled."""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._context import run_context
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import PYTHON, Setup, Value


class PinMemoryDisabled(Rule):
    """
    ## What it does
    Flags `dataloader_pin_memory=False` when the run trains on a GPU: the target GPU is known
    (`--gpu`, `[tool.trainlint] gpu`) and the arguments do not ask for the CPU (`use_cpu=True`,
    `no_cuda=True`). Without a known GPU target it flags it only when the same arguments ask
    for non-blocking copies (`accelerator_config={"non_blocking": True}`), which need pinned
    memory.

    The related pitfall, `dataloader_num_workers` larger than the CPU cores a
    process gets, is not checked: the number of cores on the training machine, and how the
    launcher shares them among processes, cannot be read from the files.

    ## Why is this bad?
    With pinned (page-locked) host memory the batch copy to the GPU is asynchronous and faster;
    the Trainer pins by default (`dataloader_pin_memory=True`). Turning it off makes every
    host-to-device copy synchronous, which shows up as GPU idle time between steps for
    input-heavy models (vision, audio, long sequences). `non_blocking` copies only overlap with
    compute from pinned memory: the Trainer warns "`non_blocking` is enabled but
    `dataloader_pin_memory` is not" (transformers 4.42 and later) and nothing is gained.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", dataloader_pin_memory=False)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", dataloader_pin_memory=True)
    ```

    ## Fix safety
    Safe: pinning changes how batches are copied, not what is trained. The fix writes `True` in
    a Python call (not in launch lines or args files, where the value's spelling varies).

    ## References
    - transformers `TrainingArguments.dataloader_pin_memory` (default True), `Trainer._get_dataloader`
    - https://pytorch.org/docs/stable/data.html#memory-pinning
    - transformers `Trainer.create_accelerator_and_postprocess` (the `non_blocking` warning)
    """

    code = "TL120"
    name = "pin-memory-disabled"
    severity = Severity.INFO
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("dataloader_pin_memory",)
    fix_safety = "safe"
    summary = "dataloader_pin_memory=False when training on a GPU"

    cases = [
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", dataloader_pin_memory=False)
            """,
            options={"gpu": "A100"},
            fixed=(
                "from transformers import TrainingArguments\n"
                'args = TrainingArguments(output_dir="o", dataloader_pin_memory=True)\n'
            ),
        ),
        Case(
            """
            from transformers import TrainingArguments
            LOADER = dict(dataloader_num_workers=4, dataloader_pin_memory=False)
            args = TrainingArguments(output_dir="o", **LOADER)
            """,
            options={"gpu": "H100"},
            note="through a dict",
        ),
        Case(
            files={
                "run.sh": "torchrun --nproc_per_node 2 train.py --output_dir o --dataloader_pin_memory False\n",
                "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                            "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n",
            },
            options={"gpu": "H100"},
            note="a launch-line flag (no fix)",
        ),
        Case(
            files={
                "run.sh": "torchrun --nproc_per_node 2 train.py --output_dir o --no_dataloader_pin_memory\n",
                "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                            "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n",
            },
            options={"gpu": "H100"},
            note="HfArgumentParser's --no_X flag",
        ),
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", dataloader_pin_memory=False,
                                     accelerator_config={"non_blocking": True})
            """,
            note="non_blocking needs pinned memory (no GPU target needed)",
            fixed=(
                "from transformers import TrainingArguments\n"
                'args = TrainingArguments(output_dir="o", dataloader_pin_memory=True,\n'
                '                         accelerator_config={"non_blocking": True})\n'
            ),
        ),
        # must not flag
        Case(files={"tests/test_loader.py": "from transformers import TrainingArguments\n"
                    "def test_loader():\n    TrainingArguments(output_dir='o', dataloader_pin_memory=False)\n"},
             options={"gpu": "A100"}, flags=False, note="tests turn pinning off on purpose"),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", dataloader_pin_memory=False, max_steps=5)
            """, options={"gpu": "A100"}, flags=False, note="a 5-step smoke run"),
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", dataloader_pin_memory=False)
            """,
            flags=False, note="no GPU target known",
        ),
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", dataloader_pin_memory=False,
                                     accelerator_config={"non_blocking": False})
            """,
            flags=False, note="no GPU target known, non_blocking off",
        ),
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", dataloader_pin_memory=False, use_cpu=True)
            """,
            flags=False, options={"gpu": "A100"}, note="CPU training",
        ),
        Case(
            """
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", dataloader_pin_memory=True, dataloader_num_workers=64)
            """,
            flags=False, options={"gpu": "A100"},
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site in setup.sites:
            v = site.get("dataloader_pin_memory")
            if v is None or v.value is not False:
                continue
            non_blocking = _non_blocking(setup, site)
            if setup.gpu is None and non_blocking is None:
                continue
            cpu = next((site.get(n) for n in ("use_cpu", "no_cuda") if site.get(n) is not None), None)
            if cpu is not None and cpu.value is not False:
                continue  # CPU training, or not resolvable
            if run_context(setup, site).quiet_reason is not None:
                continue  # tests and smoke runs turn pinning off on purpose (CI machines, CPU runners)
            edits = None
            span = v.edit_span()
            if v.origin == PYTHON and span is not None and not v.shared:
                edits = [span.edit("True")]
            if non_blocking is not None:
                message = ("dataloader_pin_memory=False with accelerator_config non_blocking=True: a non-blocking copy "
                           "needs pinned memory, so the copies stay synchronous (the Trainer warns); leave "
                           "dataloader_pin_memory at True (the default)")
            else:
                message = (f"dataloader_pin_memory=False while training on {setup.gpu.name}: every batch is copied "  # type: ignore[union-attr]
                           f"to the GPU synchronously from pageable memory; leave it at True (the default)")
            related = [non_blocking.span.related("non_blocking is asked for here")] \
                if non_blocking is not None and non_blocking.span is not None else []
            yield self.diagnostic(
                v.span or v.key_span,  # type: ignore[arg-type]
                message, edits=edits, fix_message="set dataloader_pin_memory=True", related=related)


def _non_blocking(setup: Setup, site) -> Value | None:
    """The ``accelerator_config`` value when it is a dict (a literal in the call, or in an args
    file) with ``non_blocking`` true."""
    from trainlint.rules._versioned import dict_literal

    v = site.get("accelerator_config")
    if v is None:
        return None
    config = v.value if isinstance(v.value, dict) else dict_literal(setup, v)
    if not isinstance(config, dict) or config.get("non_blocking") is not True:
        return None
    return v
