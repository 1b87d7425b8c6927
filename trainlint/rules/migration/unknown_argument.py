"""TL602 unknown-argument: an argument name TrainingArguments never had (with did-you-mean)"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.knowledge import training_args as ta
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    parser_dataclasses,
    target,
    target_text,
    valid_names,
)
from trainlint.rules.base import Case, Rule
from trainlint.rules.migration._migration_common import (
    TRL_GRPO_PROJECT,
    TRL_SFT,
    V524,
    _shown,
    _written_with_status,
)
from trainlint.setup import Setup


class UnknownArgument(Rule):
    """
    ## What it does
    Flags an argument name that no version of `TrainingArguments` (or the TRL config class)
    has ever had: a misspelt keyword, `--flag` or args-file key. The message suggests the
    closest valid names of the target version. Local subclasses' own annotated fields, and the
    other dataclasses an `HfArgumentParser` / `TrlParser` script parses into, count as valid:
    the project's own dataclasses, and TRL's `ScriptArguments`, `ModelConfig`,
    `GRPOScriptArguments`... with their fields in the target TRL version (generated from the
    released wheels). A name one of those TRL classes had in another release (`torch_dtype` of
    `ModelConfig`) is not reported here. Keys that an unresolved `**kwargs` may add, and
    parsers that read a dataclass whose fields cannot be known, are never reported.

    ## Why is this bad?
    `TrainingArguments(learning_rat=1e-4)` raises `TypeError` at construction, and
    `HfArgumentParser` rejects `--learning_rat 1e-4` ("the following arguments are not
    recognized"); `TrlParser.parse_args_and_config` raises `ValueError` for a `--config` YAML
    key no dataclass of the parser has ("Unknown arguments from config file").

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", learning_rat=1e-4)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", learning_rate=1e-4)
    ```

    ## Fix safety
    No automatic fix: the closest name is a guess.

    ## References
    - transformers `TrainingArguments` (a dataclass: unknown keywords raise `TypeError`)
    - transformers `HfArgumentParser.parse_args_into_dataclasses` ("Some specified arguments are
      not used by the HfArgumentParser")
    - TRL `TrlParser.parse_args_and_config` and `set_defaults_with_config`
      (https://huggingface.co/docs/trl/main/en/script_utils)
    """

    code = "TL602"
    name = "unknown-argument"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fix_safety = "none"
    summary = "an argument name TrainingArguments never had (with did-you-mean)"

    cases = [
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", learning_rat=1e-4)
            """),
        Case("""
            from transformers import Seq2SeqTrainingArguments
            opts = dict(output_dir="o", predict_with_generat=True)
            args = Seq2SeqTrainingArguments(**opts)
            """),
        Case("""
            from dataclasses import dataclass, field
            from transformers import TrainingArguments
            @dataclass
            class MyArgs(TrainingArguments):
                lora_rank: int = 8
            args = MyArgs(output_dir="o", lora_rank=16, lerning_rate=1e-4)
            """, note="the subclass's own field is fine, the typo is not"),
        # must not flag
        Case("""
            from dataclasses import dataclass, field
            from transformers import TrainingArguments
            @dataclass
            class MyArgs(TrainingArguments):
                lora_rank: int = 8
            args = MyArgs(output_dir="o", lora_rank=16)
            """, flags=False),
        Case("""
            from transformers import TrainingArguments
            class MyArgs(TrainingArguments):
                def __init__(self, lerning_rate=None, **kw):
                    super().__init__(learning_rate=lerning_rate, **kw)
            args = MyArgs(output_dir="o", lerning_rate=1e-4)
            """, flags=False, note="its own __init__ decides"),
        Case("""
            from transformers import TrainingArguments
            def build(**kw):
                return TrainingArguments(output_dir="o", **kw)
            """, flags=False),
        Case("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="o", evaluation_strategy="epoch")
            """, options=V524, flags=False, note="a removed name is TL601's"),
        Case("""
            from mylib import TrainingArguments
            args = TrainingArguments(output_dir="o", learning_rat=1e-4)
            """, flags=False),
        # TrlParser with TRL's own ScriptArguments / ModelConfig
        Case(files={"run.sh": "accelerate launch sft.py --config recipe.yaml\n", "sft.py": TRL_SFT,
                    "recipe.yaml": "model_name_or_path: Qwen/Qwen2-0.5B\ndataset_name: trl-lib/Capybara\n"
                                   "use_peft: true\nlora_r: 16\nlearning_rat: 2.0e-5\noutput_dir: out\n"},
             message="did you mean learning_rate?", note="a typo in the --config YAML"),
        Case(files={"run.sh": "python sft.py --config recipe.yaml --lora_alpha 32 --dataset_nme x\n",
                    "sft.py": TRL_SFT, "recipe.yaml": "output_dir: out\n"},
             message="did you mean --dataset_name?", note="a flag near a ScriptArguments field"),
        Case(files={"run.sh": "python grpo.py --config recipe.yaml\n", "grpo.py": TRL_GRPO_PROJECT,
                    "recipe.yaml": "output_dir: out\nnum_generatons: 8\nmy_reward_weight: 2.0\n"},
             message="num_generations", note="the project's subclass of trl.ScriptArguments"),
        Case(files={"run.sh": "accelerate launch sft.py --config recipe.yaml --lora_alpha 32\n", "sft.py": TRL_SFT,
                    "recipe.yaml": "model_name_or_path: Qwen/Qwen2-0.5B\ndataset_name: trl-lib/Capybara\n"
                                   "attn_implementation: sdpa\nuse_peft: true\nlora_r: 16\noutput_dir: out\n"
                                   "dataset_train_split: train\nload_in_4bit: true\n"},
             flags=False, note="every key is a field of one of the parser's dataclasses"),
        Case(files={"run.sh": "python sft.py --config recipe.yaml\n", "sft.py": TRL_SFT,
                    "recipe.yaml": "torch_dtype: bfloat16\noutput_dir: out\n"},
             options={"trl_version": "1.16.0"}, flags=False,
             note="a ModelConfig field of earlier releases is not an unknown name"),
        Case(files={"run.sh": "python grpo.py --config recipe.yaml\n", "grpo.py": TRL_GRPO_PROJECT,
                    "recipe.yaml": "output_dir: out\nnum_generations: 8\nmy_reward_weight: 2.0\n"
                                   "dataset_name: x\n"},
             flags=False, note="the project's own field"),
        Case(files={"run.sh": "python sft.py --config recipe.yaml\n",
                    "sft.py": TRL_SFT.replace("ModelConfig, ", "").replace(", ModelConfig", ", MyArgs")
                    .replace("from trl", "from mylib import MyArgs\nfrom trl"),
                    "recipe.yaml": "output_dir: out\nsome_key: 1\n"},
             flags=False, note="a dataclass from outside the repository: its fields are not known"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site, name, value, _ in _written_with_status(setup, "unknown"):
            tf, _, trl, _ = target(setup)
            try:
                guesses = ta.did_you_mean(site.class_name, name, tf, trl)
            except ta.UnknownClassError:
                guesses = []
            others = parser_dataclasses(setup) if site.call is None else ([], [])
            if not guesses and (others[0] or others[1]):
                import difflib  # only for a near miss

                valid = valid_names(setup, site) or frozenset()
                guesses = difflib.get_close_matches(name, sorted(valid), n=3, cutoff=0.8)
            if value.origin == "flag":
                guesses = [f"--{g}" for g in guesses]
            hint = f"; did you mean {' or '.join(guesses)}?" if guesses else ""
            # a TRL class's fields are TRL's (over TrainingArguments'): both targets are named
            versions = target_text(setup) + (f", {target_text(setup, 'trl')}"
                                             if others[1] or ta.is_trl_class(site.class_name) else "")
            if others[0] or others[1]:
                names = ", ".join([site.class_name, *others[0], *others[1]])
                message = (f"no dataclass of the parser ({names}) has an argument {_shown(value)} ({versions}): "
                           f"parsing fails{hint}")
            else:
                message = (f"{site.class_name} has no argument {_shown(value)} ({versions}): construction "
                           f"fails{hint}")
            span = value.key_span or value.span or site.span
            if span is None:
                continue
            yield self.diagnostic(span, message)
