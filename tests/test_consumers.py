"""Issue 13: every TrainingArguments value has a consumer (section 1), values cross the
repository's modules (section 3), the target version is the project's (section 4). Each
case is written the way the pattern appears in real repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import lint_folder, settings_for, write_files

from trainlint.config import load_settings
from trainlint.engine import lint
from trainlint.resolve import build_setups, read_workspace

# -- fixtures written as the real repositories have them -----------------------------------------

# alignment-handbook style: a TrlParser script, recipes in YAML, the command in the README
SFT_SCRIPT = """\
from trl import ModelConfig, ScriptArguments, SFTConfig, SFTTrainer, TrlParser, get_peft_config


def main(script_args, training_args, model_args):
    trainer = SFTTrainer(model=model_args.model_name_or_path, args=training_args,
                         peft_config=get_peft_config(model_args))
    trainer.train()


if __name__ == "__main__":
    parser = TrlParser((ScriptArguments, SFTConfig, ModelConfig))
    script_args, training_args, model_args = parser.parse_args_and_config()
    main(script_args, training_args, model_args)
"""
RECIPE = """\
# Model arguments
model_name_or_path: Qwen/Qwen2.5-0.5B
torch_dtype: bfloat16
# Data training arguments
dataset_name: trl-lib/Capybara
# SFT trainer config
learning_rate: 2.0e-05
logging_steps: 1
evaluation_strategy: steps
output_dir: data/qwen-sft
report_to: none
save_total_limit: 1
"""
README = """\
# Recipes

Full training with ZeRO-3:

```shell
ACCELERATE_LOG_LEVEL=info accelerate launch --config_file recipes/accelerate_configs/zero3.yaml \\
    scripts/sft.py --config recipes/qwen/sft/config_full.yaml
```
"""
ZERO3 = "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\nnum_processes: 8\n"


def _recipes(tmp_path: Path, readme: str = README, recipe: str = RECIPE) -> None:
    write_files(tmp_path, {"scripts/sft.py": SFT_SCRIPT, "recipes/qwen/sft/config_full.yaml": recipe,
                           "recipes/accelerate_configs/zero3.yaml": ZERO3, "README.md": readme,
                           "pyproject.toml": "[project]\nname = 'x'\n"})


def _found(result, code: str, name: str | None = None):
    return [d for d in result.diagnostics if d.code == code and (name is None or Path(d.path).name == name)]


def _sites(root: Path):
    settings = load_settings(root)
    ws = read_workspace([root], settings, {})
    return [s for setup in build_setups(ws, settings) for s in setup.all_sites]


# -- section 1: the consumer -------------------------------------------------------------------


def test_trlparser_recipe_fed_by_a_readme_command_is_judged_as_sftconfig(tmp_path):
    _recipes(tmp_path)
    r = lint_folder(tmp_path, options={"transformers_version": "4.57.1", "trl_version": "0.21.0"})
    (removed,) = _found(r, "TL601", "config_full.yaml")
    assert "evaluation_strategy" in removed.message
    assert "read by SFTConfig (trl) through TrlParser --config in sft.py" in removed.message
    (low,) = _found(r, "TL201", "config_full.yaml")
    assert low.line == 8
    # keys of the parser's other dataclasses (ScriptArguments, ModelConfig) are not "unknown"
    assert not _found(r, "TL602")
    # the README itself was walked for its command only: no finding is placed in it
    assert not [d for d in r.diagnostics if d.path.endswith("README.md")]


def test_trlparser_flags_override_the_recipe(tmp_path):
    _recipes(tmp_path, readme=README.replace("config_full.yaml", "config_full.yaml --logging_steps 25"))
    r = lint_folder(tmp_path)
    assert not _found(r, "TL201")
    (site,) = [s for s in _sites(tmp_path) if s.path.endswith("config_full.yaml")]
    assert site.values["logging_steps"].value == 25 and site.values["logging_steps"].origin == "flag"
    assert site.values["learning_rate"].origin == "argsfile"


def test_trlparser_script_given_a_positional_yaml_does_not_read_it(tmp_path):
    # alignment-handbook's README once ran `scripts/dpo.py recipes/.../config_qlora.yaml`: TrlParser
    # reads a YAML only after --config, so that file never reaches DPOConfig
    _recipes(tmp_path, readme=README.replace("--config recipes", "recipes"))
    r = lint_folder(tmp_path, options={"transformers_version": "4.57.1", "trl_version": "0.21.0"})
    assert not [d for d in r.diagnostics if d.path.endswith("config_full.yaml")]


def test_custom_loop_repository_yaml_that_looks_like_training_arguments_is_not_judged(tmp_path):
    write_files(tmp_path, {
        "configs/train.yaml": "output_dir: runs/a\nlearning_rate: 1e-5\nlogging_steps: 1\n"
                              "evaluation_strategy: steps\nnum_train_epochs: 3\n",
        "train.py": "import sys\nimport yaml\nfrom dataclasses import dataclass\n\n\n@dataclass\nclass Config:\n"
                    "    output_dir: str\n    learning_rate: float\n    logging_steps: int\n"
                    "    evaluation_strategy: str\n    num_train_epochs: int\n\n\n"
                    "cfg = Config(**yaml.safe_load(open(sys.argv[1])))\n"
                    "for epoch in range(cfg.num_train_epochs):\n    pass  # the project's own loop\n",
        "run.sh": "python train.py configs/train.yaml\n",
    })
    r = lint_folder(tmp_path)
    judged = [d for d in r.diagnostics if d.path.endswith("train.yaml") and d.code[:3] in ("TL2", "TL6", "TL5")]
    assert judged == []
    (site,) = [s for s in _sites(tmp_path) if s.path.endswith("train.yaml")]
    assert site.reader.kind == "project" and not site.judged
    assert "yaml.safe_load in train.py" in site.reader.describe()


def test_yaml_with_no_reader_anywhere_is_not_judged_but_a_parse_yaml_file_beside_it_is(tmp_path):
    write_files(tmp_path, {"args/run.yaml": "output_dir: o\nlogging_steps: 1\n"})
    assert not _found(lint_folder(tmp_path), "TL201")
    (site,) = _sites(tmp_path)
    assert site.reader.kind == "unknown"
    # a script in the folder above parses sys.argv[1] with parse_yaml_file: a Hugging Face reader
    write_files(tmp_path, {"args/train.py": "import os, sys\nfrom transformers import HfArgumentParser, TrainingArguments\n"
                                            "parser = HfArgumentParser(TrainingArguments)\n"
                                            "(args,) = parser.parse_yaml_file(os.path.abspath(sys.argv[1]))\n"})
    (d,) = _found(lint_folder(tmp_path), "TL201")
    assert "parse_yaml_file(sys.argv[1]) in train.py" in d.message


def test_args_file_named_on_the_command_line_is_judged_with_the_assumption_said(tmp_path):
    (p,) = write_files(tmp_path, {"args.json": '{"output_dir": "o", "logging_steps": 1}\n'})
    r = lint([p], settings_for(tmp_path))
    (d,) = _found(r, "TL201")
    assert "assumed" in d.message and "named on the command line" in d.message


def test_parse_yaml_file_with_a_literal_path_feeds_that_file(tmp_path):
    write_files(tmp_path, {
        "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                    "(args,) = HfArgumentParser(TrainingArguments).parse_yaml_file('conf/args.yaml')\n",
        "conf/args.yaml": "output_dir: o\nlogging_steps: 1\n"})
    (d,) = _found(lint_folder(tmp_path), "TL201")
    assert "parse_yaml_file('conf/args.yaml') in train.py" in d.message


UNSLOTH = """\
from unsloth import FastLanguageModel
from trl import SFTConfig, SFTTrainer

model, tokenizer = FastLanguageModel.from_pretrained("unsloth/Llama-3.2-1B-Instruct-bnb-4bit", max_seq_length=2048)
trainer = SFTTrainer(
    model=model,
    tokenizer=tokenizer,
    args=SFTConfig(output_dir="outputs", max_seq_length=2048, logging_steps=10),
)
"""


def test_unsloth_script_patched_trl_accepts_tokenizer_and_max_seq_length(tmp_path):
    write_files(tmp_path, {"train.py": UNSLOTH})
    r = lint_folder(tmp_path, options={"trl_version": "0.21.0"})
    assert not _found(r, "TL605") and not _found(r, "TL601")
    # the same script without unsloth: both are errors on that TRL
    write_files(tmp_path, {"train.py": UNSLOTH.replace("from unsloth import FastLanguageModel\n", "")})
    r = lint_folder(tmp_path, options={"trl_version": "0.21.0"})
    assert _found(r, "TL605") and _found(r, "TL601")


UNSLOTH_GRPO = """\
from unsloth import FastLanguageModel
from vllm import SamplingParams
from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer

args = GRPOConfig(output_dir="o", vllm_sampling_params=SamplingParams(min_p=0.1), unsloth_num_chunks=4)
trainer = SFTTrainer(model=model, train_dataset=ds, dataset_text_field="text", max_seq_length=2048,
                     packing=False, args=SFTConfig(output_dir="o"))
"""


def test_unsloth_config_fields_and_moved_trainer_keywords(tmp_path):
    # unsloth's generated Unsloth<Name>Config adds vllm_sampling_params and unsloth_num_chunks;
    # its _backwards_compatible_trainer moves config fields given to the trainer into args=
    write_files(tmp_path, {"train.py": UNSLOTH_GRPO})
    r = lint_folder(tmp_path, options={"trl_version": "0.22.2"})
    assert not _found(r, "TL602") and not _found(r, "TL610")
    write_files(tmp_path, {"train.py": UNSLOTH_GRPO.replace("from unsloth import FastLanguageModel\n", "")})
    r = lint_folder(tmp_path, options={"trl_version": "0.22.2"})
    assert {d.message.split(" has no argument ")[1].split(" ")[0] for d in _found(r, "TL602")} \
        == {"vllm_sampling_params", "unsloth_num_chunks"}
    assert len(_found(r, "TL610")) == 3


def test_unsloth_imported_after_trl_does_not_patch_the_config(tmp_path):
    text = "from trl import SFTConfig\nimport unsloth\nargs = SFTConfig(output_dir='o', max_seq_length=8)\n"
    write_files(tmp_path, {"train.py": text})
    assert _found(lint_folder(tmp_path, options={"trl_version": "0.21.0"}), "TL601")


def test_framework_deepspeed_preset_is_not_a_missing_file(tmp_path):
    write_files(tmp_path, {
        "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                    "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n",
        "run.sh": "torchrun --nproc_per_node 2 train.py --output_dir o --deepspeed zero2\n"
                  "torchrun --nproc_per_node 2 train.py --output_dir o --deepspeed ds/zero2.json\n"})
    missing = _found(lint_folder(tmp_path), "TL004")
    assert [d.line for d in missing] == [2]


# -- section 3: values across the repository's modules -------------------------------------------


def test_imported_training_args_reach_the_trainer_that_uses_them(tmp_path):
    write_files(tmp_path, {
        "pyproject.toml": "[project]\nname = 'x'\n",
        "config.py": "from transformers import TrainingArguments\n\n"
                     "training_args = TrainingArguments(output_dir='out', per_device_eval_batch_size=64,\n"
                     "                                  predict_with_generate=False, eval_strategy='steps')\n",
        "train.py": "from transformers import AutoModelForCausalLM, Trainer\nfrom config import training_args\n\n"
                    "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
                    "trainer = Trainer(model=model, args=training_args, train_dataset=ds)\n"})
    settings = load_settings(tmp_path)
    ws = read_workspace([tmp_path], settings, {})
    setups = build_setups(ws, settings)
    (setup,) = [s for s in setups if any(p.path.endswith("train.py") for p in setup_scripts(s))]
    assert [s.path.rsplit("/", 1)[-1] for s in setup.sites] == ["config.py"]
    assert not [s for s in setups if [p.path for p in s.scripts] == [str(tmp_path / "config.py")]]
    # the Trainer has no eval_dataset while eval_strategy="steps": known only with both files
    assert _found(lint_folder(tmp_path), "TL213") or _found(lint_folder(tmp_path), "TL212") \
        or any("eval_dataset" in d.message for d in lint_folder(tmp_path).diagnostics)


def setup_scripts(setup):
    return setup.scripts


def test_relative_import_of_settings_args(tmp_path):
    write_files(tmp_path, {
        ".git/HEAD": "ref: refs/heads/main\n",
        "pkg/__init__.py": "",
        "pkg/settings.py": "from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', logging_steps=1)\n",
        "pkg/train.py": "from transformers import Trainer\nfrom .settings import args\ntrainer = Trainer(model=m, args=args)\n"})
    (d,) = _found(lint_folder(tmp_path), "TL201")
    assert d.path.endswith("settings.py")


TRAINERS = "from transformers import Trainer\n\n\nclass MyTrainer(Trainer):\n    def compute_loss(self, model, inputs, " \
           "return_outputs=False, num_items_in_batch=None):\n        return super().compute_loss(model, inputs)\n"


def test_trainer_subclasses_from_other_modules_are_recognised(tmp_path):
    write_files(tmp_path, {
        ".git/HEAD": "x\n",
        "src/proj/__init__.py": "from .trainers import MyTrainer\n",
        "src/proj/trainers.py": TRAINERS,
        "src/proj/helpers.py": "from .trainers import MyTrainer\n\n\nclass CustomTrainer(MyTrainer):\n    pass\n",
        "scripts/train.py": "from transformers import AutoModelForCausalLM, TrainingArguments\nfrom proj import MyTrainer\n"
                            "from proj import helpers\n\nmodel = AutoModelForCausalLM.from_pretrained('gpt2')\n"
                            "model.to('cuda')\nargs = TrainingArguments(output_dir='o')\n"
                            "t = MyTrainer(model=model, args=args, tokenizer=tok)\n"
                            "t2 = helpers.CustomTrainer(model=model, args=args, tokenizer=tok)\n"})
    r = lint_folder(tmp_path, options={"transformers_version": "5.24.0"})
    assert [d.line for d in _found(r, "TL605")] == [8, 9]
    assert _found(r, "TL101")


def test_same_names_from_installed_packages_are_not_followed(tmp_path):
    write_files(tmp_path, {"train.py": "from mylib.trainers import MyTrainer\nt = MyTrainer(model=m, tokenizer=tok)\n"})
    assert not _found(lint_folder(tmp_path, options={"transformers_version": "5.24.0"}), "TL605")


def test_dataclass_default_flows_through_hfargumentparser(tmp_path):
    script = ("from dataclasses import dataclass, field\nfrom transformers import HfArgumentParser, Trainer, TrainingArguments\n\n\n"
              "@dataclass\nclass ScriptArguments:\n    log_every: int = field(default=1, metadata={'help': 'x'})\n\n\n"
              "parser = HfArgumentParser((ScriptArguments,))\n(script_args,) = parser.parse_args_into_dataclasses()\n"
              "args = TrainingArguments(output_dir='o', logging_steps=script_args.log_every)\n"
              "trainer = Trainer(model=m, args=args)\n")
    write_files(tmp_path, {"train.py": script})
    (d,) = _found(lint_folder(tmp_path), "TL201")
    assert (d.line, d.column) == (7, 36)  # the default in the dataclass
    write_files(tmp_path, {"run.sh": "python train.py --log_every 50\n"})
    assert not _found(lint_folder(tmp_path), "TL201")


def test_dataclass_in_another_module(tmp_path):
    write_files(tmp_path, {
        ".git/HEAD": "x\n",
        "arguments.py": "from dataclasses import dataclass\n\n\n@dataclass\nclass ScriptArguments:\n    log_every: int = 1\n",
        "train.py": "from transformers import HfArgumentParser, TrainingArguments\nfrom arguments import ScriptArguments\n"
                    "parser = HfArgumentParser((ScriptArguments, TrainingArguments))\n"
                    "script_args, training_args = parser.parse_args_into_dataclasses()\n"
                    "args = TrainingArguments(output_dir='o', logging_steps=script_args.log_every)\n"})
    (d,) = _found(lint_folder(tmp_path), "TL201")
    assert d.path.endswith("train.py") and d.line == 5


def test_project_subclass_redeclaring_a_removed_field(tmp_path):
    from trainlint.rules._versioned import own_fields, redeclared_removed

    write_files(tmp_path, {
        ".git/HEAD": "x\n",
        "myargs.py": "from dataclasses import dataclass\nfrom transformers import TrainingArguments\n\n\n@dataclass\n"
                     "class MyTrainingArguments(TrainingArguments):\n    warmup_ratio: float = 0.1\n    lora_r: int = 8\n",
        "train.py": "from myargs import MyTrainingArguments\nargs = MyTrainingArguments(output_dir='o', warmup_ratio=0.05, lora_r=4)\n"})
    r = lint_folder(tmp_path, options={"transformers_version": "5.24.0"})
    assert not _found(r, "TL601") and not _found(r, "TL602")  # the subclass accepts both
    settings = load_settings(tmp_path, {"transformers_version": "5.24.0"})
    ws = read_workspace([tmp_path], settings, {})
    (setup,) = [s for s in build_setups(ws, settings) if s.sites and s.sites[0].path.endswith("train.py")]
    site = setup.sites[0]
    assert own_fields(setup, site) == {"warmup_ratio", "lora_r"}
    assert set(redeclared_removed(setup, site)) == {"warmup_ratio"}
    # on 4.x the parent still has it: nothing re-declared is dead
    settings = load_settings(tmp_path, {"transformers_version": "4.57.1"})
    ws = read_workspace([tmp_path], settings, {})
    (setup,) = [s for s in build_setups(ws, settings) if s.sites and s.sites[0].path.endswith("train.py")]
    assert redeclared_removed(setup, setup.sites[0]) == {}


# -- section 4: the project's versions ------------------------------------------------------------


def test_pinned_versions_decide_the_migration_findings(tmp_path):
    script = "from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', evaluation_strategy='epoch')\n"
    write_files(tmp_path, {"train.py": script, "requirements.txt": "transformers==4.44.2\n"})
    r = lint_folder(tmp_path)
    assert not _found(r, "TL601")
    (d,) = _found(r, "TL603")  # deprecated there, with the source of the target
    assert "requirements.txt:1" in d.message
    write_files(tmp_path, {"requirements.txt": "transformers>=4.52\n"})
    (d,) = _found(lint_folder(tmp_path), "TL601")
    assert "requirements.txt:1" in d.message


def test_jobs_1_and_jobs_2_agree(tmp_path):
    files = {"requirements.txt": "transformers==4.46.0\ntrl==0.12.0\n", ".git/HEAD": "x\n",
             "config.py": "from transformers import TrainingArguments\nta = TrainingArguments(output_dir='o', logging_steps=1)\n",
             "main.py": "from transformers import Trainer\nfrom config import ta\nt = Trainer(model=m, args=ta)\n"}
    for i in range(60):
        files[f"pkg{i % 3}/s{i}.py"] = ("from transformers import TrainingArguments\n"
                                        f"a = TrainingArguments(output_dir='o', evaluation_strategy='epoch', logging_steps={i % 4})\n")
    write_files(tmp_path, files)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    outs = []
    for jobs in ("1", "2"):
        p = subprocess.run([sys.executable, "-m", "trainlint", "check", str(tmp_path), "--format", "json", "-j", jobs,
                            "--no-cache", "--exit-zero"], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        outs.append(json.loads(p.stdout))
    assert outs[0] == outs[1]
    found = outs[0]["diagnostics"] if isinstance(outs[0], dict) else outs[0]
    assert any("requirements.txt:1" in d["message"] for d in found)


def test_code_guarded_by_require_version_is_judged_only_on_those_versions(tmp_path):
    # LLaMA-Factory's PPO trainer: old-TRL PPOConfig keywords behind require_version("trl<=0.9.6")
    text = ("from transformers.utils.versions import require_version\nfrom trl import PPOConfig\n\n\n"
            "def build():\n    require_version(\"trl>=0.8.6,<=0.9.6\", \"PPO needs the old TRL\")\n"
            "    return PPOConfig(model_name='m', ppo_epochs=4, logging_steps=1)\n")
    write_files(tmp_path, {"ppo.py": text})
    r = lint_folder(tmp_path, options={"trl_version": "0.21.0"})
    assert not [d for d in r.diagnostics if d.code.startswith(("TL2", "TL6"))]
    write_files(tmp_path, {"ppo.py": text.replace('    require_version("trl>=0.8.6,<=0.9.6", "PPO needs the old TRL")\n', "")})
    assert _found(lint_folder(tmp_path, options={"trl_version": "0.21.0"}), "TL602")


def test_a_guard_on_another_package_reads_its_declared_or_installed_version(tmp_path):
    """``require_version("peft<0.3")`` (or accelerate, deepspeed): the package's target comes
    from the project's declaration, else the installed version (``Setup.target_of``). Code
    guarded for a release the project does not run is not judged; a guard the target satisfies
    does not hide anything."""
    def text(guard: str) -> str:
        return ("from transformers.utils.versions import require_version\n"
                "from transformers import Trainer, TrainingArguments\n\n\n"
                f"def build(model):\n    require_version({guard!r})\n"
                "    args = TrainingArguments(output_dir='o', evaluation_strategy='epoch')\n"
                "    return Trainer(model=model, args=args)\n")

    write_files(tmp_path, {"train.py": text("peft>=0.1,<0.3"), "requirements.txt": "peft==0.2.0\n"})
    assert _found(lint_folder(tmp_path), "TL601")  # peft 0.2.0 declared: the guard holds, the code runs
    write_files(tmp_path, {"requirements.txt": "peft==0.13.2\n"})
    assert not [d for d in lint_folder(tmp_path).diagnostics if d.code == "TL601"], \
        "the project runs peft 0.13.2: the code under require_version('peft<0.3') is not what runs"
    write_files(tmp_path, {"train.py": text("peft>=0.10")})
    assert _found(lint_folder(tmp_path), "TL601")


# -- a function of another module that returns the arguments ------------------------------------

MAKE_ARGS = """\
from transformers import TrainingArguments


def make_args(output_dir, lr=2e-5, strategy="epoch", **kwargs):
    args = TrainingArguments(
        output_dir=output_dir,
        learning_rate=lr,
        eval_strategy=strategy,
        save_strategy="steps",
        **kwargs,
    )
    return args
"""


def _sites_of(tmp_path, script: str):
    settings = load_settings(tmp_path)
    ws = read_workspace([tmp_path], settings, {})
    setups = build_setups(ws, settings)
    (setup,) = [s for s in setups if any(p.path.endswith(script) for p in s.scripts) and s.sites]
    return setup.sites


def test_function_in_another_module_that_returns_training_arguments(tmp_path):
    write_files(tmp_path, {
        ".git/HEAD": "x\n",
        "utils.py": MAKE_ARGS,
        "train.py": "from transformers import AutoModelForCausalLM, Trainer\nfrom utils import make_args\n\n"
                    "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
                    "args = make_args('out', lr='1e-4', load_best_model_at_end=True)\n"
                    "trainer = Trainer(model=model, args=args, train_dataset=ds, eval_dataset=ev)\n"})
    (site,) = _sites_of(tmp_path, "train.py")
    assert site.path.endswith("utils.py") and site.call is not None
    lr = site.get("learning_rate")
    # the literal passed at the call site, its keyword where it is written in utils.py
    assert lr.value == "1e-4" and lr.span.path.endswith("train.py") and lr.span.line == 5
    assert lr.key_span.path.endswith("utils.py") and lr.key_span.line == 7
    assert "passed to make_args() at train.py:5" in lr.note
    # a parameter not passed: its default, at the def
    ev = site.get("eval_strategy")
    assert ev.value == "epoch" and ev.span.path.endswith("utils.py") and ev.span.line == 4
    # a literal keyword of the returned call stays at its line in utils.py
    assert site.get("save_strategy").span.line == 9
    # **kwargs handed on: the call's other keywords; the site stays open to other calls' keywords
    assert site.get("load_best_model_at_end").value is True and site.open_ended
    r = lint_folder(tmp_path)
    (s,) = _found(r, "TL225")
    assert s.path.endswith("train.py") and s.line == 5  # the string is written at the call
    (m,) = _found(r, "TL505")  # load_best needs matching strategies: epoch (default) vs steps
    assert "utils.py" in m.message
    assert not [d for d in r.diagnostics if d.path.endswith("utils.py") and d.code == "TL225"]


def test_function_called_through_its_module_and_not_followed_when_it_cannot_be_known(tmp_path):
    write_files(tmp_path, {
        ".git/HEAD": "x\n",
        "pkg/__init__.py": "",
        "pkg/utils.py": MAKE_ARGS,
        "pkg/other.py": "from transformers import TrainingArguments\n\n\ndef two(flag):\n"
                        "    if flag:\n        return TrainingArguments(output_dir='a', learning_rate='1e-4')\n"
                        "    return TrainingArguments(output_dir='b')\n",
        "pkg/train.py": "from transformers import Trainer\nfrom pkg import utils\nfrom pkg.other import two\n\n"
                        "trainer = Trainer(model=m, args=utils.make_args('o', lr='3e-5'))\n"
                        "t2 = Trainer(model=m, args=two(True))\n"
                        "t3 = Trainer(model=m, args=utils.make_args(*xs))\n"})
    r = lint_folder(tmp_path)
    hits = _found(r, "TL225")
    # utils.make_args('o', lr='3e-5') is followed; two() has two returns (not followed: its own
    # site in other.py is judged alone); make_args(*xs) may set any parameter: lr stays unknown
    assert sorted((os.path.basename(d.path), d.line) for d in hits) == [("other.py", 6), ("train.py", 5)]


def test_the_fallback_arguments_of_a_trainer_class_are_not_a_run(tmp_path):
    """``if args is None: args = TrainingArguments(output_dir="tmp_trainer")`` in a function that
    takes ``args`` (Trainer.__init__'s own fallback, vendored by ChatGLM's ptuning/trainer.py) is
    not a run's configuration: it is not judged. The arguments the script passes are."""
    write_files(tmp_path, {"trainer.py": (
        "from transformers import Trainer, TrainingArguments\n\n\n"
        "class MyTrainer(Trainer):\n    def __init__(self, model=None, args=None, **kw):\n"
        "        if args is None:\n            args = TrainingArguments(output_dir='tmp_trainer')\n"
        "        super().__init__(model=model, args=args, **kw)\n\n\n"
        "MyTrainer(model=m, args=TrainingArguments(output_dir='o')).train()\n")})
    lines = {d.line for d in lint_folder(tmp_path, select=["TL224", "TL227"]).diagnostics}
    assert lines == {11}


def test_an_argparse_flag_that_names_the_args_file_hf_reads(tmp_path):
    """Firefly's train.py: argparse reads ``--train_args_file``, then the same name ``parser`` is
    bound to an HfArgumentParser that ``parse_json_file``-s it. A launch line's flags are the
    argparse parser's, not TrainingArguments (no unknown ``--train_args_file``, no defaults
    judged on the launch line); the JSON file the flag names is the args file read."""
    write_files(tmp_path, {
        ".git/HEAD": "ref: refs/heads/main\n",
        "train.py": (
            "import argparse\nfrom transformers import HfArgumentParser, TrainingArguments, Trainer\n\n\n"
            "def main():\n    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--train_args_file', type=str, default='args/a.json')\n"
            "    args = parser.parse_args()\n    train_args_file = args.train_args_file\n"
            "    parser = HfArgumentParser((TrainingArguments,))\n"
            "    (training_args,) = parser.parse_json_file(json_file=train_args_file)\n"
            "    Trainer(model=None, args=training_args).train()\n\n\nmain()\n"),
        "args/a.json": '{"output_dir": "o", "logging_steps": 10, "save_total_limit": 2, "report_to": "none"}\n',
        "args/b.json": '{"output_dir": "o", "logging_steps": 1, "save_strategy": "epoch", "save_steps": 5, '
                       '"report_to": "none"}\n',
        "run.sh": "deepspeed --num_gpus=8 train.py --train_args_file args/b.json\n",
    })
    found = lint_folder(tmp_path).diagnostics
    assert not [d for d in found if d.path.endswith("run.sh") or d.code == "TL602"], [d.message for d in found]
    assert {d.code for d in found if d.path.endswith("args/b.json")} >= {"TL201", "TL233"}
    assert any(d.code == "TL201" and "on 8 GPUs" in d.message for d in found if d.path.endswith("args/b.json"))


def test_repository_subclass_of_hf_argument_parser_reads_the_args_file(tmp_path):
    # SimPO / alignment-handbook: H4ArgumentParser(HfArgumentParser), imported from the project's
    # package, with its own parse() that reads sys.argv[1] as a YAML
    write_files(tmp_path, {
        "pyproject.toml": "[project]\nname = 'recipes'\n",  # the repository root: imports resolve from it
        "alignment/__init__.py": "from .configs import H4ArgumentParser\n",
        "alignment/configs.py": "import sys\nfrom transformers import HfArgumentParser\n"
                                "class H4ArgumentParser(HfArgumentParser):\n"
                                "    def parse(self):\n        return self.parse_yaml_file(sys.argv[1])\n",
        "scripts/run.py": "from alignment import H4ArgumentParser\nfrom transformers import TrainingArguments\n"
                          "parser = H4ArgumentParser((TrainingArguments,))\nargs = parser.parse()\n",
        "recipes/config.yaml": "output_dir: o\nevaluation_strategy: steps\n",
        "run.sh": "accelerate launch --num_processes 4 scripts/run.py recipes/config.yaml\n"})
    (d,) = _found(lint_folder(tmp_path, options={"transformers_version": "4.46.0"}), "TL603")
    assert d.path.endswith("recipes/config.yaml") and "HfArgumentParser in run.py" in d.message
    # a class of the same name that is not a parser: the file is not read as its args
    write_files(tmp_path, {"alignment/configs.py": "class H4ArgumentParser:\n    def parse(self):\n        pass\n"})
    assert not _found(lint_folder(tmp_path, options={"transformers_version": "4.46.0"}), "TL603")


def test_parser_uses_walks_no_file_that_calls_only_classes_that_are_no_parser():
    """A script that calls its own classes (``Config(...)``, argparse's ``ArgumentParser``) but
    no parser is not walked for parser calls; a local subclass of HfArgumentParser is still
    read as the parser it is."""
    from trainlint.consumers import parser_uses
    from trainlint.sources.python import parse_python

    plain = parse_python("plain.py", "import argparse\nclass Config:\n    pass\n"
                                     "cfg = Config()\nparser = argparse.ArgumentParser()\n")
    assert parser_uses(plain) == [] and not plain._walked
    sub = parse_python("sub.py", "from transformers import HfArgumentParser, TrainingArguments\n"
                                 "class Config:\n    pass\n"
                                 "class MyParser(HfArgumentParser):\n    pass\n"
                                 "cfg = Config()\nparser = MyParser((TrainingArguments,))\n"
                                 "(args,) = parser.parse_args_into_dataclasses()\n")
    (use,) = parser_uses(sub)
    assert (use.kind, use.class_name) == ("HfArgumentParser", "TrainingArguments")


def test_project_readers_walks_no_file_without_a_reader_module():
    """``torch.load(...)`` is no config reader: a file whose text names none of the readers'
    modules is not walked; ``yaml.safe_load`` under an alias still is one."""
    from trainlint.consumers import project_readers
    from trainlint.sources.python import parse_python

    plain = parse_python("plain.py", "import torch\nstate = torch.load('m.pt')\n")
    assert project_readers(plain) == [] and not plain._walked
    aliased = parse_python("aliased.py", "import yaml as y\nimport torch\ncfg = y.safe_load(open('c.yaml'))\n"
                                         "state = torch.load('m.pt')\n")
    assert project_readers(aliased) == ["yaml.safe_load"]
