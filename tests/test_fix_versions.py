"""A safe fix must work on every version the code runs on, not only the target.

Shapes from the real-repository classification (philschmid/deep-learning-pytorch-huggingface,
huggingface/alignment-handbook): a notebook that installs its own versions in a ``%pip`` cell
runs on them, whatever the machine has; a project that declares ``trl>=0.19.1`` runs there too.
A rename/move fix whose new name those versions lack is offered as unsafe, with the reason; the
same code without such a declaration keeps the safe fix.
"""

from __future__ import annotations

import json

import pytest
from helpers import fix_folder, lint_folder, write_files

from trainlint.knowledge import versions


def notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                                  "source": c.splitlines(keepends=True)} for c in cells],
                       "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                       "nbformat": 4, "nbformat_minor": 5})


PIP_OLD = ('%pip install  --upgrade \\\n  "transformers==4.38.2" \\\n  "datasets==2.16.1" \\\n'
           '  "trl==0.7.11" \\\n  "peft==0.8.2"\n')  # gemma-lora-example.ipynb
SFT = ("import torch\n"
       "from transformers import AutoModelForCausalLM, AutoTokenizer, TrainingArguments\n"
       "from trl import SFTTrainer\n"
       "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-3.1-8B', torch_dtype=torch.bfloat16)\n"
       "tokenizer = AutoTokenizer.from_pretrained('meta-llama/Llama-3.1-8B')\n"
       "args = TrainingArguments(output_dir='o', gradient_checkpointing=True, warmup_ratio=0.03, "
       "evaluation_strategy='epoch')\n"
       "trainer = SFTTrainer(model=model, args=args, train_dataset=ds, tokenizer=tokenizer)\n")
RULES = ["TL601", "TL603", "TL605", "TL608", "TL110"]


def _applicability(root, select, **kw) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for d in lint_folder(root, select=select, **kw).diagnostics:
        if d.fix is not None:
            out.setdefault(d.code, set()).add(d.fix.applicability)
    return out


def test_install_lines_are_read_from_notebook_cells_and_shell_scripts(tmp_path):
    write_files(tmp_path, {"nb.ipynb": notebook("# setup\n" + PIP_OLD, "import torch\n"),
                           "run.sh": "pip install 'peft==0.2.0' deepspeed\npython train.py\n",
                           "loose.ipynb": notebook("!pip install transformers datasets --upgrade\n"),
                           "comment.ipynb": notebook("# !pip install transformers==4.20.0\n"),
                           "train.py": "# pip install transformers==4.20.0\n"})
    spec, where = versions.file_installs("transformers", tmp_path / "nb.ipynb")
    assert str(spec) == "==4.38.2" and where == "nb.ipynb:cell 1"
    assert str(versions.file_installs("trl", tmp_path / "nb.ipynb")[0]) == "==0.7.11"
    assert versions.file_installs("peft", tmp_path / "run.sh")[1] == "run.sh line 1"
    assert versions.file_installs("transformers", tmp_path / "loose.ipynb") is None, "unpinned: the newest"
    assert versions.file_installs("transformers", tmp_path / "comment.ipynb") is None
    assert versions.file_installs("transformers", tmp_path / "train.py") is None, "a .py file runs no install line"
    write_files(tmp_path, {"git.ipynb": notebook("!pip install -q -U git+https://github.com/huggingface/transformers.git\n"
                                                 "!pip install git+https://github.com/huggingface/peft.git@v0.4.0\n")})
    assert versions.installs_unpinned("transformers", tmp_path / "git.ipynb"), "the main branch: the newest"
    assert not versions.installs_unpinned("peft", tmp_path / "git.ipynb"), "a tag is a pin"
    assert versions.installs_unpinned("transformers", tmp_path / "loose.ipynb")
    assert not versions.installs_unpinned("transformers", tmp_path / "nb.ipynb")


def test_a_notebook_that_installs_old_versions_gets_no_safe_rename(tmp_path):
    write_files(tmp_path, {"pinned/nb.ipynb": notebook(PIP_OLD, SFT),
                           "latest/nb.ipynb": notebook("%pip install --upgrade transformers trl peft\n", SFT)})
    pinned = _applicability(tmp_path / "pinned", RULES)
    latest = _applicability(tmp_path / "latest", RULES)
    # the same code without pins: these renames are safe on the target (the installed 5.x)
    assert set(latest) == set(RULES) and all(v == {"safe"} for v in latest.values()), latest
    assert set(pinned) == set(RULES) and all(v == {"unsafe"} for v in pinned.values()), pinned
    out = fix_folder(tmp_path / "pinned", select=RULES)
    assert not out.fixed, "nothing safe to write"
    msgs = [d.message for d in lint_folder(tmp_path / "pinned", select=RULES).diagnostics]
    assert any("nb.ipynb installs transformers 4.38.2 (nb.ipynb:cell 1)" in m for m in msgs), msgs
    # 4.44.2 (fine-tune-llms-in-2024-with-trl.ipynb) has gradient_checkpointing_kwargs (from 4.40
    # in the data) but not activation_checkpointing (5.23) nor processing_class in trl 0.9.6
    write_files(tmp_path, {"p444/nb.ipynb": notebook(PIP_OLD.replace("4.38.2", "4.44.2").replace("0.7.11", "0.9.6"),
                                                     SFT)})
    got = _applicability(tmp_path / "p444", RULES)
    assert got["TL110"] == {"safe"} and got["TL603"] == {"unsafe"} and got["TL605"] == {"unsafe"}, got
    # a TRL trainer: the TRL that the notebook installs must take processing_class (0.12)
    write_files(tmp_path, {"trl011/nb.ipynb": notebook('%pip install "transformers==4.46.3" "trl==0.11.1"\n', SFT)})
    msgs = [d.message for d in lint_folder(tmp_path / "trl011", select=["TL605"]).diagnostics]
    assert len(msgs) == 1 and "nb.ipynb installs trl 0.11.1" in msgs[0], msgs


def test_a_notebook_pinning_old_peft_gets_no_safe_kbit_import(tmp_path):
    body = ("from peft import LoraConfig, prepare_model_for_int8_training\n"
            "from transformers import TrainingArguments\n"
            "model = prepare_model_for_int8_training(model)\n"
            "args = TrainingArguments(output_dir='o')\n")
    write_files(tmp_path, {"old/nb.ipynb": notebook('!pip install "peft==0.2.0" "transformers==4.27.1"\n', body),
                           "new/nb.ipynb": notebook("!pip install peft transformers\n", body)})
    # every rule selected: with --select TL611 alone the merged notebook pre-filter skips these
    # notebooks (reported; not this test's subject)
    assert _applicability(tmp_path / "old", None).get("TL611") == {"unsafe"}
    assert _applicability(tmp_path / "new", None).get("TL611") == {"safe"}


@pytest.mark.parametrize("declared,safe", [("trl>=0.19.1", False), ("trl>=0.29.0", True), (None, True)])
def test_a_moved_trl_import_is_safe_only_where_every_allowed_version_has_it(tmp_path, declared, safe):
    """alignment-handbook declares trl>=0.19.1; trl.experimental.orpo exists from 0.29 (and as
    the 0.25-0.28 stubs say) on: the move breaks 0.19.1."""
    files = {"train.py": "from trl import ModelConfig, ORPOTrainer, TrlParser\n"}
    if declared:
        files["setup.py"] = f"from setuptools import setup\nsetup(install_requires=['{declared}'])\n"
    write_files(tmp_path, files)
    got = _applicability(tmp_path, ["TL611"], options={"trl_version": "1.0.0"})
    assert got == {"TL611": {"safe" if safe else "unsafe"}}, got


def test_a_trl_field_rename_is_safe_where_the_new_name_exists_across_the_range(tmp_path):
    """max_seq_length -> max_length: SFTConfig has max_length from trl 0.16, so a project that
    allows trl 0.19.1 (alignment-handbook) keeps the safe fix; one that allows 0.15 does not."""
    for declared, expect in (("trl>=0.19.1", "safe"), ("trl>=0.15.0", "unsafe")):
        root = tmp_path / declared.replace(">=", "")
        write_files(root, {"requirements.txt": declared + "\n",
                           "train.py": "from trl import SFTConfig\ncfg = SFTConfig(output_dir='o', max_seq_length=512)\n"})
        assert _applicability(root, ["TL601"], options={"trl_version": "1.16.0"}) == {"TL601": {expect}}, declared


def test_code_run_by_the_notebooks_of_its_folder_runs_on_their_versions(tmp_path):
    """philschmid's `training/`: notebooks that pin transformers 4.x run
    `scripts/run_sft.py --config receipes/x.yaml` and import `utils/*.py`; with no project
    declaration those files run on what the notebooks install, so a 5.23+ rename is unsafe. A
    notebook that installs transformers unpinned (`--upgrade`) runs the newest: it stays safe."""
    nb_old = notebook('%pip install "transformers==4.46.3" "trl==0.12.1"\n', "import utils.peft_utils\n")
    write_files(tmp_path, {
        "training/fine-tune.ipynb": nb_old,
        "training/utils/peft_utils.py": "from transformers import AutoModelForCausalLM, Trainer\n"
                                        "model = AutoModelForCausalLM.from_pretrained('m')\n"
                                        "model.gradient_checkpointing_enable()\n"
                                        "Trainer(model=model, args=args).train()\n",
        "training/latest.ipynb": notebook("!pip install --upgrade transformers\n",
                                          "from transformers import TrainingArguments\n"
                                          "args = TrainingArguments(output_dir='o', evaluation_strategy='epoch')\n"),
    })
    got: dict[tuple[str, str], set[str]] = {}
    for d in lint_folder(tmp_path, select=["TL601", "TL609"]).diagnostics:
        if d.fix is not None:
            got.setdefault((d.code, d.path.rsplit("/", 1)[-1]), set()).add(d.fix.applicability)
    assert got[("TL609", "peft_utils.py")] == {"unsafe"}, got
    assert got[("TL601", "latest.ipynb")] == {"safe"}, got


def test_a_notebook_that_installs_a_checkout_gets_no_safe_rename(tmp_path):
    """Transformers-Tutorials' LayoutXLM notebook clones a 2021 branch of a fork and installs it
    (`!pip install -q ./transformers`): its version is unknown, so no rename is vouched for."""
    body = ("from transformers import TrainingArguments\n"
            "args = TrainingArguments(output_dir='o', evaluation_strategy='epoch')\n")
    write_files(tmp_path, {
        "fork/nb.ipynb": notebook("!git clone -b add_layoutlm_relation_extraction https://github.com/nielsrogge/transformers.git\n"
                                  "!pip install -q ./transformers\n", body),
        "tag/nb.ipynb": notebook("!pip install git+https://github.com/huggingface/transformers.git@v4.30.0\n", body),
        "main/nb.ipynb": notebook("!pip install git+https://github.com/huggingface/transformers.git\n", body)})
    assert versions.installs_checkout("transformers", tmp_path / "fork/nb.ipynb") == "nb.ipynb:cell 1"
    assert _applicability(tmp_path / "fork", ["TL601"]) == {"TL601": {"unsafe"}}
    assert _applicability(tmp_path / "tag", ["TL601"]) == {"TL601": {"unsafe"}}
    assert _applicability(tmp_path / "main", ["TL601"]) == {"TL601": {"safe"}}
    msg = lint_folder(tmp_path / "fork", select=["TL601"]).diagnostics[0].message
    assert "nb.ipynb installs transformers from a checkout of unknown version (nb.ipynb:cell 1)" in msg, msg


@pytest.mark.parametrize("declared", ["transformers==4.38.2", "transformers>=4.28.1", "transformers>=4.28,<4.50"])
def test_a_declared_version_older_than_the_data_makes_the_rename_unsafe(tmp_path, declared):
    """``requirements.txt`` beside the script allows a transformers release older than the
    oldest the data knows (4.38.2): ``eval_strategy`` does not exist there, so the rename is
    unsafe. It once read as "nothing declared" (no known version in the range) and stayed safe.
    A declaration that the installed 5.x does not satisfy is the example's target itself (a
    sub-project's pin): ``evaluation_strategy`` still exists there, so there is nothing to fix."""
    write_files(tmp_path, {".git/HEAD": "ref: refs/heads/main\n",
                           "examples/sft/requirements.txt": declared + "\n",
                           "examples/sft/train.py": (
                               "from transformers import Trainer, TrainingArguments\n"
                               "args = TrainingArguments(output_dir='o', evaluation_strategy='epoch')\n"
                               "Trainer(model=None, args=args).train()\n")})
    installed_inside = declared == "transformers>=4.28.1"
    assert _applicability(tmp_path, ["TL601"]) == ({"TL601": {"unsafe"}} if installed_inside else {})
    low = versions.oldest_allowed("transformers", tmp_path / "examples" / "sft", ["4.40.0", "4.46.3", "5.24.0"])
    assert low is not None and low.version == declared.split("=")[-1].split(",")[0].lstrip("<>=")


def test_a_target_older_than_the_data_is_judged_as_an_assumption(tmp_path):
    """Firefly pins ``trl==0.7.11``; TRL's data starts at 0.12.0. Findings judged against 0.12.0
    say so and are info, their fixes unsafe: ``DPOTrainer(beta=)`` is the API of 0.7.11."""
    write_files(tmp_path, {"requirements.txt": "trl==0.7.11\ntransformers==4.38.2\n",
                           "train.py": ("from trl import DPOTrainer\n"
                                        "t = DPOTrainer(model, ref, args=args, beta=0.1, train_dataset=ds)\n")})
    [d] = [d for d in lint_folder(tmp_path, select=["TL610"]).diagnostics]
    assert d.severity.value == "info" and "older than trainlint's data, which starts at 0.12.0" in d.message
    assert d.fix is None or d.fix.applicability == "unsafe"
    write_files(tmp_path, {"requirements.txt": "trl==0.12.2\n"})
    [d] = [d for d in lint_folder(tmp_path, select=["TL610"]).diagnostics]
    assert d.severity.value != "info" and "older than" not in d.message


def test_an_undeclared_trl_is_the_one_that_installs_beside_the_pinned_transformers(tmp_path):
    """InternVL pins ``transformers==4.37.2`` and does not declare trl: the trl installed here
    (1.16, which requires transformers>=4.56.2) cannot run beside it. The target trl is the
    newest release whose requirement admits 4.37.2 (``trl_requires.json``, from the wheels'
    METADATA), where ``DPOConfig(rpo_alpha=)`` exists; declared, trl is taken as declared."""
    write_files(tmp_path, {"requirements.txt": "transformers==4.37.2\n",
                           "train.py": "from trl import DPOConfig\nargs = DPOConfig(output_dir='o', rpo_alpha=1.0)\n"})
    assert not [d for d in lint_folder(tmp_path, select=["TL601", "TL602"]).diagnostics]
    fit = versions.trl_for_transformers("4.37.2", "1.16.0")
    assert fit is not None and "trl is not declared" in fit.source
    assert versions.trl_for_transformers("4.57.0", "1.16.0") is None  # 1.16 admits it: kept
    write_files(tmp_path, {"requirements.txt": "transformers==4.37.2\ntrl==1.16.0\n"})
    found = lint_folder(tmp_path, select=["TL601", "TL602"]).diagnostics
    assert found and all("rpo_alpha" in d.message for d in found)
