"""Issue 4 done-when: migration findings on the shipped examples by target version, the fixes
keeping the formatting, did-you-mean for misspelt arguments, and the target-version wiring."""

from __future__ import annotations

import ast
import difflib
import json
import shutil
from pathlib import Path

import pytest
from helpers import fix_folder, lint_folder, run_cli, write_files

from trainlint.config import load_settings
from trainlint.engine import lint
from trainlint.resolve import build_setups, read_workspace

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def _tl6(path: Path, version: str):
    settings = load_settings(path, {"transformers-version": version, "select": ["TL6"]})
    return lint([path], settings).diagnostics


def test_bert_imdb_on_524_reports_each_migration_at_its_line():
    script = EXAMPLES / "bert_imdb" / "train.py"
    found = {(d.code, d.line) for d in _tl6(script, "5.24.0")}
    assert ("TL601", _line_of(script, "evaluation_strategy=")) in found
    assert ("TL601", _line_of(script, "logging_dir=")) in found
    assert ("TL605", _line_of(script, "tokenizer=tokenizer")) in found
    msgs = " ".join(d.message for d in _tl6(script, "5.24.0"))
    assert "removed from TrainingArguments in transformers 4.51.0" in msgs
    assert "target transformers 5.24.0 from --transformers-version" in msgs


def test_flan_t5_on_524_reports_each_migration_at_its_line():
    script = EXAMPLES / "flan_t5_multigpu" / "train.py"
    found = {(d.code, d.line) for d in _tl6(script, "5.24.0")}
    assert ("TL601", _line_of(script, "evaluation_strategy=")) in found
    assert ("TL601", _line_of(script, "overwrite_output_dir=")) in found
    assert ("TL605", _line_of(script, "tokenizer=tokenizer")) in found


@pytest.mark.parametrize("example", ["bert_imdb", "flan_t5_multigpu"])
def test_no_migration_findings_on_440(example):
    assert _tl6(EXAMPLES / example / "train.py", "4.40.0") == []


@pytest.mark.parametrize("example", ["bert_imdb", "flan_t5_multigpu"])
def test_fix_apply_rewrites_and_keeps_formatting(example, tmp_path):
    work = tmp_path / example
    shutil.copytree(EXAMPLES / example, work)
    script = work / "train.py"
    before = script.read_text()
    out = run_cli("fix", "--apply", "--select", "TL6", "--transformers-version", "5.24.0", str(script))
    assert out.returncode in (0, 1), out.stderr
    text = script.read_text()
    ast.parse(text)
    assert "evaluation_strategy" not in text and "eval_strategy=" in text
    assert "tokenizer=tokenizer" not in text and "processing_class=tokenizer" in text
    assert "overwrite_output_dir" not in text
    if example == "bert_imdb":
        assert '    eval_strategy="epoch",  # evaluate every epoch\n' in text
        assert "logging_dir" not in text  # report_to defaults to "none" in 5.24: no TensorBoard
    # only the migrated lines changed
    removed = [line for line in difflib.ndiff(before.splitlines(), text.splitlines()) if line.startswith("- ")]
    keys = ("evaluation_strategy=", "tokenizer=", "logging_dir=", "overwrite_output_dir=")
    assert removed and all(any(k in line for k in keys) for line in removed), removed
    again = run_cli("check", "--select", "TL6", "--transformers-version", "5.24.0", str(script), "--format", "json")
    assert json.loads(again.stdout) == []


def test_misspelt_keyword_gets_did_you_mean(tmp_path):
    write_files(tmp_path, {"train.py": "from transformers import TrainingArguments\n"
                                       "args = TrainingArguments(output_dir='o', learning_rat=1e-4)\n"})
    hits = [d for d in lint_folder(tmp_path, options={"transformers_version": "5.24.0"}).diagnostics
            if d.code == "TL602"]
    assert len(hits) == 1
    assert hits[0].severity.value == "error"
    assert "did you mean learning_rate" in hits[0].message
    assert (hits[0].line, hits[0].column) == (2, 42)


def test_an_unknown_argument_of_a_trl_config_names_both_targets(tmp_path):
    """DPOConfig's fields are TRL's over TrainingArguments': the message names the TRL target
    the fields were judged at, not only transformers'. A transformers class names one."""
    write_files(tmp_path, {
        "requirements.txt": "transformers==4.46.3\ntrl==0.12.1\n",
        "train.py": "from transformers import TrainingArguments\nfrom trl import DPOConfig\n"
                    "cfg = DPOConfig(output_dir='o', model_name_or_path='m')\n"
                    "args = TrainingArguments(output_dir='o', learning_rat=1e-4)\n"})
    hits = {d.line: d.message for d in lint_folder(tmp_path).diagnostics if d.code == "TL602"}
    assert set(hits) == {3, 4}, hits
    assert hits[3].startswith("DPOConfig has no argument model_name_or_path (target transformers 4.46.3 from "
                              "requirements.txt:1, target trl 0.12.1 from requirements.txt:2)"), hits[3]
    assert "target trl" not in hits[4] and "target transformers 4.46.3" in hits[4], hits[4]


def test_misspelt_flag_gets_did_you_mean(tmp_path):
    write_files(tmp_path, {
        "run.sh": "python train.py --output_dir out --learning_rat 1e-4\n",
        "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                    "parser = HfArgumentParser(TrainingArguments)\n"
                    "(args,) = parser.parse_args_into_dataclasses()\n",
    })
    hits = [d for d in lint_folder(tmp_path, options={"transformers_version": "5.24.0"}).diagnostics
            if d.code == "TL602"]
    assert len(hits) == 1, hits
    assert hits[0].path.endswith("run.sh")
    assert "did you mean --learning_rate" in hits[0].message


def test_removed_flag_is_renamed_in_the_launch_line(tmp_path):
    write_files(tmp_path, {
        "run.sh": "python train.py \\\n  --output_dir out \\\n  --evaluation_strategy epoch\n",
        "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                    "parser = HfArgumentParser(TrainingArguments)\n"
                    "(args,) = parser.parse_args_into_dataclasses()\n",
    })
    outcome = fix_folder(tmp_path, select=["TL601"], options={"transformers_version": "5.24.0"})
    assert outcome.fixed[str(tmp_path / "run.sh")] == \
        "python train.py \\\n  --output_dir out \\\n  --eval_strategy epoch\n"


# -- the target version wiring --------------------------------------------------------------------


def _setup_versions(root: Path, options: dict | None = None):
    settings = load_settings(root, options or {})
    ws = read_workspace([root], settings, {})
    setups = build_setups(ws, settings)
    assert setups
    s = setups[0]
    return s.transformers_version, s.trl_version


def test_target_version_from_the_command_line(tmp_path):
    write_files(tmp_path, {"train.py": "from transformers import TrainingArguments\n"})
    tf, trl = _setup_versions(tmp_path, {"transformers_version": "4.46.0", "trl_version": "0.19.1"})
    assert (tf.value, tf.note) == ("4.46.0", "--transformers-version")
    assert (trl.value, trl.note) == ("0.19.1", "--trl-version")


def test_target_version_from_tool_trainlint(tmp_path):
    write_files(tmp_path, {"pyproject.toml": '[tool.trainlint]\ntransformers-version = "4.57.1"\n',
                           "train.py": "from transformers import TrainingArguments\n"})
    tf, _ = _setup_versions(tmp_path)
    assert (tf.value, tf.note) == ("4.57.1", "pyproject.toml [tool.trainlint]")


def test_target_version_is_the_projects_pin_not_the_installed_package(tmp_path):
    import importlib.metadata

    write_files(tmp_path, {"train.py": "from transformers import TrainingArguments\n",
                           "requirements.txt": "transformers==4.46.0\n"})
    tf, _ = _setup_versions(tmp_path)
    assert (tf.value, tf.note) == ("4.46.0", "requirements.txt:1")
    write_files(tmp_path, {"requirements.txt": "transformers\n"})  # no range: the installed one
    tf, _ = _setup_versions(tmp_path)
    assert (tf.value, tf.note) == (importlib.metadata.version("transformers"), "installed")


def test_trl_version_used_for_trl_fields(tmp_path):
    write_files(tmp_path, {"train.py": "from trl import SFTConfig\ncfg = SFTConfig(output_dir='o', max_seq_length=8)\n"})
    old = [d for d in lint_folder(tmp_path, options={"trl_version": "0.19.1"}).diagnostics if d.code == "TL601"]
    new = [d for d in lint_folder(tmp_path, options={"trl_version": "0.20.0"}).diagnostics if d.code == "TL601"]
    assert old == []
    assert len(new) == 1 and "trl 0.20.0" in new[0].message


def test_trl_version_cli_option(tmp_path):
    write_files(tmp_path, {"train.py": "from trl import SFTConfig\ncfg = SFTConfig(output_dir='o', max_seq_length=8)\n"})
    out = run_cli("check", str(tmp_path / "train.py"), "--select", "TL601", "--trl-version", "0.20.0",
                  "--format", "concise")
    assert out.returncode == 1, out.stderr
    assert "max_seq_length was removed" in out.stdout


def test_never_rewrites_to_a_name_the_target_lacks(tmp_path):
    # fp16_backend -> half_precision_backend, but 5.0 removed both: the fix deletes instead
    write_files(tmp_path, {"train.py": "from transformers import TrainingArguments\n"
                                       "a = TrainingArguments(output_dir='o', fp16_backend='auto')\n"})
    outcome = fix_folder(tmp_path, select=["TL601"], options={"transformers_version": "5.0.0"})
    assert outcome.fixed[str(tmp_path / "train.py")] == \
        "from transformers import TrainingArguments\na = TrainingArguments(output_dir='o')\n"
    # group_by_length -> train_sampling_strategy exists only from 5.2: on 5.0 it is still valid
    write_files(tmp_path, {"train.py": "from transformers import TrainingArguments\n"
                                       "a = TrainingArguments(output_dir='o', group_by_length=True)\n"})
    assert [d for d in lint_folder(tmp_path, options={"transformers_version": "5.0.0"}).diagnostics
            if d.code.startswith("TL60")] == []
