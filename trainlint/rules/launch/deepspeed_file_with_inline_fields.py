"""TL405 deepspeed-file-with-inline-fields: accelerate deepspeed_config_file together with inline DeepSpeed fields"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

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
    """

    code = "TL405"
    name = "deepspeed-file-with-inline-fields"
    severity = Severity.ERROR
    triggers = LAUNCH_NAMES
    python_alone = False  # reads only an accelerate config, which a file gives
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

