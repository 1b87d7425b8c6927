"""TL305 zero3-save-without-gather: ZeRO-3 saves unusable checkpoints without stage3_gather_16bit_weights_on_model_save"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import as_int, effective
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_config_common import (
    _ds,
)
from trainlint.setup import Setup


class Zero3NoSave16bit(Rule):
    """
    ## What it does
    Flags ZeRO stage 3 without `stage3_gather_16bit_weights_on_model_save: true` in a setup that
    saves the model (TrainingArguments `save_strategy` other than `"no"`, which is the
    default, or a `save_model()`/`push_to_hub()` call in the script). A script that only
    predicts or evaluates (`trainer.predict(...)`, no `train()` call) saves no checkpoints by
    `save_strategy`, so its ZeRO-3 inference config is not reported.

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
    """

    code = "TL305"
    name = "zero3-save-without-gather"
    severity = Severity.WARNING
    triggers = DEEPSPEED_NAMES
    python_alone = False  # a DeepSpeed config comes from a file (linking)
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
        Case(files={"run.sh": "deepspeed infer.py --deepspeed ds.json --output_dir o --do_predict\n",
                    "infer.py": "from transformers import HfArgumentParser, Seq2SeqTrainer, Seq2SeqTrainingArguments\n"
                                "(args,) = HfArgumentParser(Seq2SeqTrainingArguments).parse_args_into_dataclasses()\n"
                                "trainer = Seq2SeqTrainer(model=model, args=args)\n"
                                "out = trainer.predict(test_dataset)\n",
                    "ds.json": '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}\n'},
             flags=False, note="inference only: nothing is saved by save_strategy"),
        Case(files={"run.sh": "deepspeed infer.py --deepspeed ds.json --output_dir o\n",
                    "infer.py": "from transformers import HfArgumentParser, Seq2SeqTrainer, Seq2SeqTrainingArguments\n"
                                "(args,) = HfArgumentParser(Seq2SeqTrainingArguments).parse_args_into_dataclasses()\n"
                                "trainer = Seq2SeqTrainer(model=model, args=args)\n"
                                "trainer.train()\nmetrics = trainer.evaluate()\n",
                    "ds.json": '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}\n'},
             flags=True, note="trains, then evaluates: checkpoints are saved"),
        Case(files={"run.sh": "deepspeed infer.py --deepspeed ds.json --output_dir o --do_predict\n",
                    "infer.py": "from transformers import HfArgumentParser, Seq2SeqTrainingArguments\n"
                                "from my_trainer import MyTrainer\n"
                                "(args,) = HfArgumentParser(Seq2SeqTrainingArguments).parse_args_into_dataclasses()\n"
                                "trainer = MyTrainer(model=model, args=args)\n"
                                "out = trainer.predict(test_dataset)\n",
                    "my_trainer.py": "from transformers import Seq2SeqTrainer\n"
                                     "class MyTrainer(Seq2SeqTrainer):\n"
                                     "    def save_model(self, output_dir=None, _internal_call=False):\n"
                                     "        super().save_model(output_dir, _internal_call)\n"
                                     "        if self.args.push_to_hub and not _internal_call:\n"
                                     "            self.push_to_hub(commit_message='Model save')\n",
                    "ds.json": '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}\n'},
             flags=False, note="a Trainer subclass's save_model override is not a save by the run"),
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
        # the methods the run calls; not those a Trainer subclass's own save_model/push_to_hub
        # override calls (BELLE's src/trainer.py: the implementation, not a save)
        methods = {getattr(cs.node.func, "attr", None) for pf in setup.scripts for cs in pf.calls
                   if getattr(cs.in_def, "name", None) not in _SAVES}
        # checkpoints are written inside train(): a script that only predicts or evaluates
        # (BELLE's ZeRO-3 inference through Seq2SeqTrainer.predict) never saves by strategy
        only_infers = "train" not in methods and bool(methods & {"predict", "evaluate"})
        saves = not only_infers and any(
            (s := effective(site, "save_strategy")) is not None and s.value != "no" for site in setup.sites)
        saves = saves or bool(methods & _SAVES)
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


_SAVES = frozenset({"save_model", "push_to_hub"})
