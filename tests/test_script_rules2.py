"""Helpers of TL115-TL122 that the embedded cases do not reach directly."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from helpers import lint_folder, write_files

from trainlint.rules.script.eval_logits import _is_argmax_last
from trainlint.rules.script.loss_num_items import uses_num_items
from trainlint.rules.script.unused_columns import collator_reads
from trainlint.rules.script.zero3_init_order import _stage_of_linked, _stage_of_mapping
from trainlint.setup import Setup


@dataclass
class _Linked:
    zero_stage: int


def test_zero_stage_from_linked_config_and_mapping():
    assert _stage_of_linked(Setup(root=Path("."), extra={"deepspeed": _Linked(3)})) == 3
    assert _stage_of_linked(Setup(root=Path("."), extra={"deepspeed": {"zero_optimization": {"stage": "2"}}})) == 2
    assert _stage_of_linked(Setup(root=Path("."))) is None
    assert _stage_of_mapping({"zero_optimization": {"stage": "auto"}}) is None


def test_argmax_forms():
    def arr(src):
        node = _is_argmax_last(ast.parse(src, mode="eval").body)
        return ast.unparse(node) if node is not None else None

    assert arr("np.argmax(logits, axis=-1)") == "logits"
    assert arr("logits.argmax(-1)") == "logits"
    assert arr("logits.argmax(dim=2)") == "logits"
    assert arr("np.argmax(logits, axis=1)") is None
    assert arr("np.argmax(logits)") is None


def test_uses_num_items_and_collator_reads():
    fn = ast.parse("def f(self, model, inputs, return_outputs=False, **kw):\n    return super().compute_loss(model, inputs, **kw)\n").body[0]
    assert uses_num_items(fn)
    fn = ast.parse("def f(self, model, inputs, return_outputs=False, num_items_in_batch=None):\n    return 1\n").body[0]
    assert not uses_num_items(fn)
    coll = ast.parse("def c(feats):\n    a = [f['text'] for f in feats]\n    b = feats[0]['img']\n    return a\n").body[0]
    assert sorted(k for k, _ in collator_reads(coll)) == ["img", "text"]


def test_zero3_linked_json_next_to_script(tmp_path):
    write_files(tmp_path, {
        "cfg/ds.json": '{"zero_optimization": {"stage": 3}}\n',
        "cfg/train.py": "from transformers import AutoModel, Trainer, TrainingArguments\n"
                        "def main():\n"
                        "    model = AutoModel.from_pretrained('m')\n"
                        "    args = TrainingArguments(output_dir='o', deepspeed='ds.json')\n"
                        "    Trainer(model=model, args=args)\n",
    })
    hits = [d for d in lint_folder(tmp_path).diagnostics if d.code == "TL119"]
    assert len(hits) == 1 and hits[0].line == 3


def _notebook(*cells: str) -> str:
    import json

    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                       "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                                  "source": c.splitlines(keepends=True)} for c in cells]})


def test_optim_package_installed_by_the_notebook_itself(tmp_path):
    # unslothai/notebooks: the cell installs bitsandbytes; requirements.txt does not list it
    install = ('%%capture\nimport os\nif "COLAB_" not in "".join(os.environ.keys()):\n    !pip install unsloth\n'
               'else:\n    !pip install --no-deps unsloth_zoo bitsandbytes accelerate peft trl\n')
    train = 'from trl import SFTConfig\nargs = SFTConfig(output_dir="o", optim="adamw_8bit")\n'
    write_files(tmp_path, {"requirements.txt": "torch\ntransformers\ntrl\n", "nb.ipynb": _notebook(install, train)})
    assert not [d for d in lint_folder(tmp_path).diagnostics if d.code == "TL121"]
    write_files(tmp_path, {"nb.ipynb": _notebook(install.replace("bitsandbytes ", ""), train)})
    (d,) = [d for d in lint_folder(tmp_path).diagnostics if d.code == "TL121"]
    assert "bitsandbytes" in d.message


def test_optim_package_read_again_when_the_dependency_file_changes(tmp_path):
    """TL121 keeps a dependency file's words per file version (every setup of a notebook
    collection asks the same files): a run after the file changed reads what it lists now,
    in the same process, and a cached answer still makes the file a dependency of the check."""
    import os

    train = 'from trl import SFTConfig\nargs = SFTConfig(output_dir="o", optim="adamw_8bit")\n'
    write_files(tmp_path, {"requirements.txt": "torch\ntransformers\ntrl\n", "train.py": train})
    assert [d.code for d in lint_folder(tmp_path).diagnostics if d.code == "TL121"] == ["TL121"]
    req = tmp_path / "requirements.txt"
    stamp = req.stat().st_mtime_ns
    req.write_text("torch\ntransformers\ntrl\nbitsandbytes>=0.45\n", encoding="utf-8")
    os.utime(req, ns=(stamp + 10**9, stamp + 10**9))
    assert not [d for d in lint_folder(tmp_path).diagnostics if d.code == "TL121"]
    from trainlint import reads
    from trainlint.rules.script.optional_optimizer import lists_package

    assert lists_package([req], "bitsandbytes")  # answered from the kept words
    with reads.recording() as seen:  # and the file is still noted as read
        assert lists_package([req], "bits_and.bytes") is False and lists_package([req], "BitsAndBytes")
    assert str(req) in seen


def test_optim_dependency_files_found_again_when_a_folder_changes(tmp_path):
    """TL121 keeps each folder's dependency files per version of its listing: a requirements
    file added later (at the root or under ``requirements/``) is found by the next run of the
    same process."""
    train = 'from trl import SFTConfig\nargs = SFTConfig(output_dir="o", optim="adamw_8bit")\n'
    write_files(tmp_path, {".git/HEAD": "ref: refs/heads/main\n", "sub/train.py": train})
    assert not [d for d in lint_folder(tmp_path).diagnostics if d.code == "TL121"]  # no dependency file
    write_files(tmp_path, {"requirements/base.txt": "torch\ntransformers\ntrl\n"})
    (d,) = [d for d in lint_folder(tmp_path).diagnostics if d.code == "TL121"]
    assert "base.txt" in d.message
    write_files(tmp_path, {"sub/requirements.txt": "bitsandbytes\n"})
    assert not [d for d in lint_folder(tmp_path).diagnostics if d.code == "TL121"]


def test_manual_device_placement_quotes_a_long_move_as_code(tmp_path):
    """smollm's Smol_VLM_FT notebook: ``Idefics3ForConditionalGeneration.from_pretrained(model_id,
    ...).to(DEVICE)``; the message quoted "`the model.to(...)`" (a phrase inside backquotes)."""
    write_files(tmp_path, {"train.py":
        "from transformers import Idefics3ForConditionalGeneration, Trainer\n"
        "DEVICE = 'cuda'\n"
        "model = Idefics3ForConditionalGeneration.from_pretrained(\n"
        "    model_id,\n    torch_dtype=torch.bfloat16,\n    _attn_implementation='flash_attention_2',\n"
        ").to(DEVICE)\n"
        "short = Idefics3ForConditionalGeneration.from_pretrained('m')\n"
        "short.cuda()\n"
        "trainer = Trainer(model=model)\nTrainer(model=short)\n"})
    msgs = sorted(d.message for d in lint_folder(tmp_path).diagnostics if d.code == "TL101")
    assert len(msgs) == 2, msgs
    assert msgs[0].startswith("`Idefics3ForConditionalGeneration.from_pretrained(...).to(DEVICE)` moves"), msgs
    assert msgs[1].startswith("`short.cuda()` moves"), msgs
