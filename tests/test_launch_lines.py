"""Issue 13, sections 2 and 5: launch lines are never dropped, shell as people write it, and
files that are not configs. Each case is written as the pattern appears in real repositories."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import run_cli, settings_for, write_files

from trainlint.diagnostics import Severity
from trainlint.engine import lint
from trainlint.sources.kinds import detect_kind
from trainlint.sources.shell import (
    SCRIPT_DIR,
    extract_shell_blocks,
    markdown_launches,
    parse_shell,
)

V5 = {"transformers_version": "5.24.0"}
TRAIN_PY = ("from transformers import HfArgumentParser, TrainingArguments, Trainer\n"
            "parser = HfArgumentParser((TrainingArguments,))\n"
            "(args,) = parser.parse_args_into_dataclasses()\n")


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    write_files(root, files)
    return root


def _lint(root: Path, *paths: Path, options=V5):
    return lint(list(paths) or [root], settings_for(root, options=options))


def _found(result, code: str | None = None):
    return [d for d in result.diagnostics if code is None or d.code == code]


# -- scripts that are not in the repository -----------------------------------------------------

GLUE_SH = """#!/bin/bash
# run from a transformers checkout
export TASK_NAME=${TASK_NAME:-mrpc}
python examples/pytorch/text-classification/run_glue.py \\
  --model_name_or_path bert-base-cased \\
  --task_name $TASK_NAME \\
  --do_train \\
  --do_eval \\
  --max_seq_length 128 \\
  --per_device_train_batch_size 32 \\
  --evaluation_strategy steps \\
  --output_dir /tmp/$TASK_NAME/
"""


def test_hf_example_from_another_checkout_is_read_as_hfargumentparser(tmp_path):
    root = _repo(tmp_path, {"scripts/run_glue.sh": GLUE_SH})
    result = _lint(root)
    (missing,) = _found(result, "TL004")
    assert missing.severity is Severity.INFO and missing.line == 4
    assert "not in this repository" in missing.message and "looked for" in missing.message
    assert "HfArgumentParser(TrainingArguments)" in missing.message
    (removed,) = _found(result, "TL601")  # the flag is still checked
    assert removed.line == 11 and removed.severity is Severity.ERROR  # the HF examples: a known parser
    assert "script not in this repository: read as HfArgumentParser would" in removed.message
    # the script's own dataclasses (--task_name, --max_seq_length ...) are not judged
    assert not _found(result, "TL602")


def test_missing_script_in_an_existing_folder_is_an_error(tmp_path):
    root = _repo(tmp_path, {"src/model.py": "x = 1\n",
                            "scripts/train.sh": "torchrun --nproc_per_node 2 src/train.py "
                                                "--per_device_train_batch_size 4 --logging_steps 10\n"})
    (d,) = _found(_lint(root), "TL004")
    assert d.severity is Severity.ERROR and "src/train.py" in d.message and "looked for" in d.message


def test_missing_script_named_elsewhere_in_the_repository_says_where(tmp_path):
    root = _repo(tmp_path, {"training/train.py": TRAIN_PY,
                            "run.sh": "python train.py --per_device_train_batch_size 4 --bf16\n"})
    (d,) = _found(_lint(root), "TL004")
    assert d.severity is Severity.ERROR and "training/train.py" in d.message


def test_missing_script_in_a_folder_that_is_nowhere_here_is_info_run_from_another_checkout(tmp_path):
    """open-instruct's `python src/scripts/train/sft/OLMo-sft.py train ...` and `python
    oe-eval-internal/oe_eval/launch.py`: neither the folder nor a file of that name is anywhere
    in the repository, so the command runs in another project's checkout (info, said so)."""
    root = _repo(tmp_path, {"scripts/train/olmo3/7b_sft.sh":
                            "python src/scripts/train/sft/OLMo-sft.py train run1 $CKPT ai2/jupiter "
                            "--per_device_train_batch_size 4 --gradient_accumulation_steps 2\n",
                            "scripts/eval/oe.sh": "python oe-eval-internal/oe_eval/launch.py --model m --task t\n",
                            "open_instruct/finetune.py": TRAIN_PY})
    found = _found(_lint(root), "TL004")
    assert sorted(d.path.rsplit("/", 1)[-1] for d in found) == ["7b_sft.sh", "oe.sh"]
    for d in found:
        assert d.severity is Severity.INFO, d.message
        assert "anywhere in this repository" in d.message and "checkout of another project" in d.message


def test_missing_script_in_a_folder_that_is_not_here_is_a_warning(tmp_path):
    """The same line is a warning when the repository has a folder of that name elsewhere (the
    command runs from there) or one whose name is a typo away from it."""
    root = _repo(tmp_path, {"run.sh": "python trainer_code/finetune.py --per_device_train_batch_size 4 "
                                      "--gradient_accumulation_steps 2\n",
                            "sub/trainer_code/model.py": "x = 1\n"})
    (d,) = _found(_lint(root), "TL004")
    assert d.severity is Severity.WARNING and "no folder 'trainer_code' beside it or above it" in d.message
    assert "sub/trainer_code" in d.message
    root = _repo(tmp_path / "typo", {"run.sh": "python scirpts/finetune.py --per_device_train_batch_size 4 "
                                               "--gradient_accumulation_steps 2\n",
                                     "scripts/model.py": "x = 1\n"})
    (d,) = _found(_lint(root), "TL004")
    assert d.severity is Severity.WARNING and "did you mean 'scripts'" in d.message


def test_found_script_is_not_reported(tmp_path):
    root = _repo(tmp_path, {"src/train.py": TRAIN_PY,
                            "scripts/train.sh": "torchrun --nproc_per_node 2 src/train.py --logging_steps 10\n"})
    assert not _found(_lint(root), "TL004")


def test_guessed_parser_caps_findings_at_warning(tmp_path):
    """A script of another project (not laid out as the HF examples): the parser is a guess."""
    root = _repo(tmp_path, {"run.sh": "python /opt/other/finetune.py --per_device_train_batch_size 4 "
                                      "--evaluation_strategy steps\n"})
    result = _lint(root)
    (missing,) = _found(result, "TL004")
    assert missing.severity is Severity.INFO and "absolute path outside this repository" in missing.message
    (removed,) = _found(result, "TL601")
    assert removed.severity is Severity.WARNING and "read as HfArgumentParser would" in removed.message


def test_flags_that_are_not_a_training_run_are_not_judged(tmp_path):
    """A preprocessing script of another checkout with two generic flags: no site, no guess."""
    root = _repo(tmp_path, {"prep.sh": "python /opt/tools/prepare.py --output_dir data --seed 1 "
                                       "--max_length 128\n"})
    result = _lint(root)
    assert [d.code for d in result.diagnostics] == ["TL004"]


def test_module_launch_reads_the_module(tmp_path):
    root = _repo(tmp_path, {"fastchat/__init__.py": "",
                            "fastchat/train/__init__.py": "",
                            "fastchat/train/train.py": TRAIN_PY,
                            "scripts/train.sh": "torchrun --nproc_per_node=4 -m fastchat.train.train "
                                                "--per_device_train_batch_size 2 --evaluation_strategy steps\n"})
    result = _lint(root)
    assert not _found(result, "TL004")
    (removed,) = _found(result, "TL601")  # judged against the module's own parser
    assert "not in this repository" not in removed.message


def test_module_missing_from_its_package_is_an_error(tmp_path):
    root = _repo(tmp_path, {"fastchat/__init__.py": "",
                            "train.sh": "python -m fastchat.train.train_mem --per_device_train_batch_size 2 "
                                        "--bf16\n"})
    (d,) = _found(_lint(root), "TL004")
    assert d.severity is Severity.ERROR and "fastchat/train/train_mem.py" in d.message


def test_installed_tool_modules_are_not_launches(tmp_path):
    root = _repo(tmp_path, {"setup.sh": "python -m pip install -r requirements.txt\npython -m venv .venv\n"})
    assert _found(_lint(root)) == []


def test_script_under_a_variable(tmp_path):
    root = _repo(tmp_path, {
        "src/train.py": TRAIN_PY,
        "run.sh": "python $PROJECT_ROOT/src/train.py --per_device_train_batch_size 4 --evaluation_strategy steps\n"
                  "python ${HF_HOME}/examples/run_clm.py --per_device_train_batch_size 4 --gradient_accumulation_steps 8\n",
    })
    result = _lint(root)
    (missing,) = _found(result, "TL004")  # the first one is found under the repository
    assert missing.line == 2 and missing.severity is Severity.INFO and "${HF_HOME}" in missing.message
    (removed,) = _found(result, "TL601")
    assert removed.line == 1 and "not in this repository" not in removed.message


# -- framework command lines --------------------------------------------------------------------


def test_llamafactory_cli_train_yaml(tmp_path):
    root = _repo(tmp_path, {
        "examples/llama3_lora_sft.yaml": "model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\n"
                                         "stage: sft\nfinetuning_type: lora\ntemplate: llama3\ncutoff_len: 2048\n"
                                         "output_dir: saves/llama3\nper_device_train_batch_size: 1\n"
                                         "evaluation_strategy: steps\n",
        "run.sh": "llamafactory-cli train examples/llama3_lora_sft.yaml\n",
    })
    result = _lint(root)
    (removed,) = _found(result, "TL601")
    assert removed.path.endswith("llama3_lora_sft.yaml") and removed.line == 8
    assert "llamafactory-cli train" in removed.message
    assert not _found(result, "TL602")  # stage, template, cutoff_len: LLaMA-Factory's own dataclasses


def test_trl_cli_config(tmp_path):
    root = _repo(tmp_path, {
        "recipes/sft.yaml": "model_name_or_path: Qwen/Qwen2.5-0.5B\ndataset_name: trl-lib/Capybara\n"
                            "output_dir: out\nlearning_rate: 2.0e-5\nfp16: true\nbf16: true\n",
        "train.sh": "trl sft --config recipes/sft.yaml --per_device_train_batch_size 2\n",
    })
    result = _lint(root)
    both = _found(result, "TL507")
    assert both and all(d.path.endswith("sft.yaml") for d in both)
    assert any("trl sft" in d.message for d in both)


def test_trl_cli_missing_config_is_reported(tmp_path):
    root = _repo(tmp_path, {"recipes/other.yaml": "x: 1\n", "train.sh": "trl dpo --config recipes/dpo.yaml\n"})
    (d,) = _found(_lint(root), "TL004")
    assert d.severity is Severity.ERROR and "recipes/dpo.yaml" in d.message


def test_external_script_with_an_args_file(tmp_path):
    root = _repo(tmp_path, {"args.json": json.dumps({"output_dir": "o", "per_device_train_batch_size": 8,
                                                     "evaluation_strategy": "steps"}),
                            "run.sh": "python examples/pytorch/language-modeling/run_clm.py args.json\n"})
    result = _lint(root)
    (removed,) = _found(result, "TL601")
    assert removed.path.endswith("args.json") and "not in this repository" in removed.message


def test_trl_env_is_not_a_training_run(tmp_path):
    root = _repo(tmp_path, {"env.sh": "trl env\nllamafactory-cli webui\n"})
    assert _found(_lint(root)) == []


# -- shell as people write it -------------------------------------------------------------------


def test_readme_command_with_placeholders(tmp_path):
    readme = """# Fine-tuning

```bash
$ torchrun --nproc_per_node 8 --master_port=<PORT> train.py \\
    --model_name_or_path <path-to-model> \\
    --deepspeed <ds_config> \\
    --fp16 --bf16
```
"""
    root = _repo(tmp_path, {"README.md": readme, "train.py": TRAIN_PY})
    assert _found(_lint(root)) == []  # a walked README feeds readers; its own findings only when named
    result = _lint(root, root / "README.md")
    assert not _found(result, "TL004")  # no placeholder is taken for a file
    (both,) = _found(result, "TL507")
    assert both.path.endswith("README.md") and both.line == 7
    assert both.severity is Severity.WARNING  # a command in the docs: at most a warning
    launch = markdown_launches(readme, "README.md")[0]
    assert launch.launcher_arg("master_port").unresolved
    assert launch.flag("model_name_or_path").unresolved


def test_unlabelled_and_console_blocks(tmp_path):
    md = ("Run:\n\n```\npython train.py --bf16\n```\n\n```console\n$ deepspeed train.py --fp16\n"
          "Loading...\n```\n\n```\nsome: yaml\n```\n")
    blocks = extract_shell_blocks(md)
    assert len(blocks) == 2
    assert [launch.launcher for launch in markdown_launches(md, "x.md")] == ["python", "deepspeed"]


def test_indented_fence_in_a_list():
    md = "1. Train:\n    ```bash\n    torchrun train.py --bf16\n    ```\n"
    (launch,) = markdown_launches(md, "x.md")
    assert launch.span.line == 3


def test_cd_before_the_command_resolves_paths(tmp_path):
    files = {"training/train.py": TRAIN_PY,
             "training/configs/ds.json": '{"train_micro_batch_size_per_gpu": "auto", '
                                         '"zero_optimization": {"stage": 2}}\n',
             "scripts/run.sh": "(cd training && deepspeed train.py --deepspeed configs/ds.json)\n"
                               "cd training\ndeepspeed train.py --deepspeed configs/ds.json\n"}
    root = _repo(tmp_path, files)
    assert not _found(_lint(root), "TL004")
    write_files(root, {"scripts/run.sh": "cd training\ndeepspeed train.py --deepspeed ds_missing.json\n"})
    (d,) = _found(_lint(root), "TL004")
    assert d.severity is Severity.ERROR and "training/ds_missing.json" in d.message


def test_cd_to_the_script_folder(tmp_path):
    root = _repo(tmp_path, {"scripts/train.py": TRAIN_PY,
                            "scripts/run.sh": 'cd "$(dirname "$0")"\npython train.py --bf16 --fp16\n'
                                              'SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)\n'
                                              'python $SCRIPT_DIR/train.py --bf16 --fp16\n'})
    result = _lint(root)
    assert not _found(result, "TL004")
    assert len(_found(result, "TL507")) == 2
    script = parse_shell('cd "$(dirname "$0")"/..\npython x.py\n', "s/run.sh")
    assert script.launches[0].cwd == SCRIPT_DIR + "/.."


def test_cd_into_a_cloned_checkout_is_elsewhere(tmp_path):
    root = _repo(tmp_path, {"run.sh": "git clone https://github.com/huggingface/transformers\n"
                                      "cd transformers/examples/pytorch/summarization\n"
                                      "python run_summarization.py --predict_with_generate "
                                      "--per_device_train_batch_size 4 --evaluation_strategy epoch\n"})
    result = _lint(root)
    (d,) = _found(result, "TL004")
    assert d.severity is Severity.INFO and "git clone" in d.message
    (removed,) = _found(result, "TL601")
    assert "Seq2SeqTrainingArguments" in removed.message or "read as HfArgumentParser" in removed.message


def test_cd_to_an_unknown_folder_is_not_an_error(tmp_path):
    root = _repo(tmp_path, {"run.sh": "cd $WORK\npython train.py --bf16 --per_device_train_batch_size 2\n"})
    (d,) = _found(_lint(root), "TL004")
    assert d.severity is Severity.INFO and "cd" in d.message


def test_default_values_and_exports(tmp_path):
    root = _repo(tmp_path, {"train.py": TRAIN_PY,
                            "run.sh": "export EVAL=${EVAL:-steps}\nSTRAT=${UNSET:-$OTHER}\n"
                                      "python train.py --evaluation_strategy $EVAL --save_strategy $STRAT\n"})
    result = _lint(root)
    (removed,) = _found(result, "TL601")
    assert removed.line == 3
    assert not [d for d in result.diagnostics if "save_strategy" in d.message]


def test_heredoc_written_config_is_not_missing(tmp_path):
    run = ("cat > ds_config.json <<EOF\n{\"train_micro_batch_size_per_gpu\": \"auto\", "
           "\"zero_optimization\": {\"stage\": $STAGE}}\nEOF\n"
           "deepspeed train.py --deepspeed ds_config.json --bf16\n")
    root = _repo(tmp_path, {"train.py": TRAIN_PY, "run.sh": run})
    assert not _found(_lint(root), "TL004")
    write_files(root, {"run.sh": "deepspeed train.py --deepspeed ds_config.json --bf16\n"})
    assert [d.code for d in _found(_lint(root), "TL004")] == ["TL004"]


def test_continuation_broken_by_a_trailing_comment(tmp_path):
    run = ("torchrun --nproc_per_node 2 train.py \\\n"
           "  --per_device_train_batch_size 8 \\  # per GPU\n"
           "  --bf16 \\\n"
           "  --deepspeed ds.json\n")
    root = _repo(tmp_path, {"train.py": TRAIN_PY, "run.sh": run})
    result = _lint(root)
    (d,) = [d for d in _found(result, "TL003") if "not passed" in d.message]
    assert d.line == 3 and d.severity is Severity.ERROR and "--bf16" in d.message
    assert not _found(result, "TL004")  # ds.json is never passed: the shell drops that line
    ok = run.replace(" \\  # per GPU\n", " \\\n")
    write_files(root, {"run.sh": "# per GPU batch below\n" + ok})
    assert not _found(_lint(root), "TL003")


def test_comment_line_inside_a_command(tmp_path):
    run = "python train.py \\\n  --bf16 \\\n#  --fp16 \\\n  --logging_steps 5\n"
    script = parse_shell(run, "run.sh")
    (p,) = [p for p in script.problems if p.kind == "broken-continuation"]
    assert p.span.line == 4


def test_missing_backslash_is_named_as_the_cause(tmp_path):
    # DeepSpeedExamples' autotuning test_tune.sh: the line before the orphan lacks its backslash
    run = 'python train.py \\\n  --save_strategy "no"\n  --sharded_ddp zero_dp_2\n'
    (p,) = [p for p in parse_shell(run, "run.sh").problems if p.kind == "broken-continuation"]
    assert p.span.line == 3 and "the missing backslash at the end of line 2" in p.message
    (p,) = [p for p in parse_shell("python train.py \\\n  --bf16 \\\n#  --fp16 \\\n  --logging_steps 5\n",
                                   "run.sh").problems if p.kind == "broken-continuation"]
    assert "a comment or blank line inside the command" in p.message


def test_unterminated_quote_is_a_finding(tmp_path):
    root = _repo(tmp_path, {"train.py": TRAIN_PY,
                            "run.sh": "python train.py --run_name 'exp 1 --bf16\necho done\n"})
    (d,) = _found(_lint(root), "TL003")
    assert "unterminated single quote" in d.message and d.line == 1


def test_prose_marked_bash_is_not_judged(tmp_path):
    root = _repo(tmp_path, {"README.md": "```bash\nIt's the output of the run\n```\n"})
    assert _found(_lint(root)) == []


def test_several_commands_per_file_and_heredoc_body_skipped():
    run = ("python a.py --bf16; python b.py --fp16 && torchrun c.py\n"
           "python - <<'PY'\nimport os\nprint('python d.py --x')\nPY\n"
           "deepspeed e.py --deepspeed ds.json\n")
    script = parse_shell(run, "run.sh")
    assert [launch.script[0] for launch in script.launches] == ["a.py", "b.py", "c.py", "-", "e.py"]


# -- files that are not configs -----------------------------------------------------------------

TRAINER_STATE = json.dumps({"best_metric": None, "epoch": 3.0, "global_step": 300, "log_history": [
    {"loss": 1.0, "step": 10}], "logging_steps": 10, "max_steps": 300, "num_train_epochs": 3,
    "save_steps": 500, "train_batch_size": 8}).replace("null", "NaN")


def test_broken_json_in_no_known_dialect_is_still_reported(tmp_path):
    root = _repo(tmp_path, {"conf/args_cut.json": '{"model_name_or_path": "roberta-base", "task_'})
    assert [d.code for d in _found(_lint(root))] == ["TL003"]


def test_data_and_dumps_are_not_configs(tmp_path):
    root = _repo(tmp_path, {
        "data/train.json": '{"instruction": "a", "output": "b"}\n{"instruction": "c", "output": "d"}\n',
        "data/train.jsonl": '{"text": "x"}\n',
        "out/checkpoint-300/trainer_state.json": TRAINER_STATE,
        "out/all_results.json": '{"eval_loss": NaN, "epoch": 3.0}\n',
        "data/dataset_info.json": '{"alpaca": {"file_name": "a.json"}, "alpaca": {"file_name": "b.json"}}\n',
        "schema/ds.schema.json": json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                                             "properties": {"zero_optimization": {"type": "object"},
                                                            "train_micro_batch_size_per_gpu": {"type": "integer"}}}),
        "docs/example.json": '// an example\n{"example": {"zero_optimization": {"stage": 3}}}\n',
        "app.json": '{"wandb": {"project": "x"}, "checkpoint": {"dir": "c"}, "pipeline": {"stages": 2}}\n',
    })
    assert _found(_lint(root)) == []
    assert detect_kind("trainer_state.json", TRAINER_STATE) == "data"
    assert detect_kind("x.schema.json", (root / "schema/ds.schema.json").read_text()) == "json"


def test_deepspeed_config_recognised_by_shape():
    assert detect_kind("a.json", '{"zero_optimization": {"stage": 3, "overlap_comm": true}}') == "deepspeed"
    assert detect_kind("a.json", '{"train_micro_batch_size_per_gpu": "auto"}') == "deepspeed"
    assert detect_kind("a.json", '{"steps_per_print": 10, "gradient_clipping": 1.0}') == "deepspeed"
    assert detect_kind("a.json", '// zero 2\n{"zero_optimization": {"stage": 2}}') == "deepspeed"
    assert detect_kind("a.json", '{"zero_optimization": {"stage": 2},') == "deepspeed"  # broken, still clear
    assert detect_kind("a.json", '{"docs": "set zero_optimization.stage", "train_batch_size": 8}') == "json"
    assert detect_kind("a.json", '{"wandb": {}, "tensorboard": {}, "checkpoint": {}}') == "json"


def test_a_referenced_data_file_is_still_a_finding_when_broken(tmp_path):
    """A walked JSON kept silent is reported once something references it as a config."""
    root = _repo(tmp_path, {"train.py": TRAIN_PY, "ds.json": '// ZeRO 2\n{"stage": 2}\n',
                            "run.sh": "deepspeed train.py --deepspeed ds.json\n"})
    assert [d.code for d in _found(_lint(root), "TL003")] == ["TL003"]
    write_files(root, {"run.sh": "echo nothing\n"})
    assert _found(_lint(root), "TL003") == []


# -- the installed command ----------------------------------------------------------------------


def test_cli_reports_the_missing_example_script_as_info(tmp_path):
    root = _repo(tmp_path, {"scripts/run_glue.sh": GLUE_SH.replace("--evaluation_strategy steps", "--eval_strategy steps")})
    out = run_cli("check", str(root), "--format", "json", "--transformers-version", "5.24.0")
    assert out.returncode == 0, out.stdout + out.stderr  # info only: not a failure
    found = json.loads(out.stdout)
    assert [(d["code"], d["severity"]) for d in found] == [("TL004", "info")]
    out = run_cli("check", str(root / "scripts/run_glue.sh"), "--format", "concise",
                  "--transformers-version", "4.40.0")
    assert "TL004" in out.stdout


def test_cli_broken_continuation_fails_the_run(tmp_path):
    root = _repo(tmp_path, {"train.py": TRAIN_PY,
                            "run.sh": "python train.py \\ \n  --bf16\n"})
    out = run_cli("check", str(root), "--format", "concise")
    assert out.returncode == 1 and "TL003" in out.stdout and "not passed" in out.stdout


def test_parallel_equals_serial_with_module_launches(tmp_path):
    files = {f"pkg/m{i}.py": TRAIN_PY.replace("Trainer\n", f"Trainer\nX{i} = 1\n") for i in range(6)}
    files.update({"pkg/__init__.py": "", "run.sh": "torchrun -m pkg.m1 --evaluation_strategy steps\n",
                  "README.md": "```bash\npython -m pkg.m2 --bf16 --fp16\n```\n",
                  "tool/__main__.py": TRAIN_PY, "other.sh": "python -m tool --evaluation_strategy steps\n"})
    root = _repo(tmp_path, files)
    settings = settings_for(root, options=V5)

    def dump(r):
        return sorted((d.path, d.line, d.code, d.message) for d in r.diagnostics)

    serial = lint([root], settings, jobs=1)
    assert any(d.code == "TL601" for d in serial.diagnostics)
    assert dump(lint([root], settings, jobs=2, min_files=0)) == dump(serial)
    from trainlint.partition import split

    plan = split([root], settings, {})
    alone = {os.path.relpath(u.path, root) for u in plan.units}
    assert {"pkg/m1.py", "pkg/m2.py", "tool/__main__.py"}.isdisjoint(alone)  # -m pkg.m1, -m tool name them
    assert "pkg/m3.py" in alone
    group_of = {os.path.relpath(p, root): i for i, g in enumerate(plan.groups) for p, _ in g}
    assert group_of["pkg/m1.py"] == group_of["run.sh"] and group_of["pkg/m2.py"] == group_of["README.md"]
    assert group_of["tool/__main__.py"] == group_of["other.sh"]


def test_launcher_options_in_a_variable_with_an_unknown_value_keep_the_launch(tmp_path):
    """Qwen's and FastChat's pattern: ``DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE ..."``
    where the GPU count comes from ``python -c`` or the environment. The launch line, its
    script and its flags are kept (the world size is unknown), as when the options are written
    out in the line; it used to be dropped."""
    from trainlint.sources.shell import parse_shell

    script = ('GPUS_PER_NODE=$(python -c "import torch; print(torch.cuda.device_count())")\n'
              'DISTRIBUTED_ARGS="\n    --nproc_per_node $GPUS_PER_NODE \\\n    --nnodes ${NNODES:-1} \\\n'
              '    --master_port 6001\n"\n'
              'torchrun $DISTRIBUTED_ARGS finetune.py \\\n    --lr_scheduler_type "cosine" \\\n'
              '    --logging_steps 1 \\\n    --deepspeed ds.json\n')
    [launch] = parse_shell(script, "run.sh").launches
    assert launch.launcher == "torchrun" and launch.script[0] == "finetune.py"
    assert [f.key for f in launch.script_args] == ["lr_scheduler_type", "logging_steps", "deepspeed"]
    write_files(tmp_path, {
        "run.sh": script,
        "ds.json": '{"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}}}\n',
        "finetune.py": ("from transformers import HfArgumentParser, TrainingArguments\n"
                        "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"),
    })
    found = {d.code: d for d in lint([tmp_path], settings_for(tmp_path), jobs=1).diagnostics}
    assert "TL318" in found and found["TL318"].path.endswith("run.sh")  # cosine with DeepSpeed's WarmupLR
    assert "TL201" in found and "GPUs" not in found["TL201"].message  # the world size is not known


def test_a_placeholder_folder_in_a_template_is_info(tmp_path):
    """smollm's slurm_scripts_templates accelerate config names
    `./experiments/pretraining/vloom/xxxx/ds_config.json`: a template to fill in, not a missing file."""
    root = _repo(tmp_path, {"vision/experiments/pretraining/vloom/tr_1/config.yaml": "a: 1\n",
                            "vision/templates/accelerate_config.yaml":
                            "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
                            "deepspeed_config:\n  deepspeed_config_file: ./experiments/pretraining/vloom/xxxx/ds_config.json\n"
                            "  zero3_init_flag: true\nnum_processes: 8\n"})
    (d,) = _found(_lint(root), "TL004")
    assert d.severity is Severity.INFO and "'xxxx' in it is a placeholder" in d.message, d.message


@pytest.mark.parametrize("config, filler", [("YOUR_CONFIG_DIR/ds_z3.json", "YOUR_CONFIG_DIR"),
                                            ("your-configs/ds_z3.json", "your-configs"),
                                            ("path_to_deepspeed/ds_z3.json", "path_to_deepspeed"),
                                            ("path/to/ds_z3.json", "path/to"),
                                            ("PATH_TO/ds_z3.json", "PATH_TO")])
def test_a_filler_folder_in_a_launch_line_is_info(tmp_path, config, filler):
    """READMEs' and scripts' `--deepspeed YOUR_CONFIG_DIR/ds.json`, `path/to/ds.json`: a path to
    fill in, not a missing file of this repository."""
    root = _repo(tmp_path, {"configs/other.json": "{}\n", "train.py": TRAIN_PY,
                            "run.sh": f"torchrun --nproc_per_node 2 train.py --deepspeed {config} --logging_steps 10\n"})
    (d,) = _found(_lint(root), "TL004")
    assert d.severity is Severity.INFO and f"{filler!r} in it is a placeholder" in d.message, d.message


@pytest.mark.parametrize("config", ["configs/ds_z3.json", "yourself/ds_z3.json", "mypath/to/ds_z3.json"])
def test_a_missing_config_in_a_real_folder_name_is_still_reported(tmp_path, config):
    root = _repo(tmp_path, {"configs/other.json": "{}\n", "train.py": TRAIN_PY,
                            "yourself/x.json": "{}\n", "mypath/to/x.json": "{}\n",
                            "run.sh": f"torchrun --nproc_per_node 2 train.py --deepspeed {config} --logging_steps 10\n"})
    (d,) = _found(_lint(root), "TL004")
    assert d.severity is not Severity.INFO and "placeholder" not in d.message, d.message


def test_an_ellipsis_placeholder_in_a_launch_template_is_info(tmp_path):
    """BELLE's run_dpo.sh: `deepspeed_config=...` and `--deepspeed ${deepspeed_config}`, paths
    written `/.../${model_name}`: an ellipsis to fill in, not a missing file; `..` is still the
    parent folder, and a real missing config is still reported as missing."""
    run = ("deepspeed_config=...\nmodel=/.../llama\n"
           "torchrun --nproc_per_node 8 train.py --model_name_or_path ${model} --deepspeed ${deepspeed_config} "
           "--output_dir out\n")
    script = ("from transformers import HfArgumentParser, TrainingArguments\n"
              "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n")
    root = _repo(tmp_path, {"scripts/run.sh": run, "scripts/train.py": script})
    (d,) = _found(_lint(root), "TL004")
    assert d.severity is Severity.INFO and "'...' in it is a placeholder" in d.message, d.message
    (root / "scripts/run.sh").write_text(run.replace("deepspeed_config=...", "deepspeed_config=../configs/ds.json"))
    (d,) = _found(_lint(root), "TL004")
    assert d.severity is not Severity.INFO and "'../configs/ds.json' does not exist" in d.message, d.message


@pytest.mark.parametrize("files, module, expected", [
    ({"src/pkg/__init__.py": "", "src/pkg/train.py": TRAIN_PY}, "pkg.train", None),
    ({"pkg/__init__.py": "", "pkg/other.py": "x = 1\n"}, "pkg.train", "pkg/train.py"),
    ({"src/pkg/__init__.py": ""}, "pkg.sub.train", "pkg/sub/train.py"),
])
def test_python_m_module_verdict_is_the_first_candidates(tmp_path, files, module, expected):
    """``python -m pkg.train``: four candidates are looked for (``pkg/train.py``,
    ``pkg/train/__main__.py``, the same under ``src/``); when none is there, the finding says
    what the first one's verdict says (only the first is judged), and that the package is here."""
    root = _repo(tmp_path, {**files, "run.sh": f"python -m {module} --learning_rate 1e-4 --output_dir o\n"})
    found = [d for d in _lint(root).diagnostics if d.code == "TL004"]
    if expected is None:
        assert found == []
        return
    assert [(d.severity, d.message) for d in found] == [(
        Severity.ERROR,
        f"module {module!r} does not exist (looked for {root / expected}); the package 'pkg' is in this "
        "repository, but not this module")]
