"""The safe fixes of the migration rules (TL601 swallowed flags, TL609-TL612), run on the
installed libraries: the fixed code does what the original meant, and the original fails (or
loses the setting) where the rule says so."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from helpers import run_cli, write_files


def _fix(tmp_path: Path, files: dict[str, str], select: str, *extra: str) -> dict[str, str]:
    write_files(tmp_path, files)
    r = run_cli("fix", "--apply", "--select", select, *extra, str(tmp_path), cwd=tmp_path)
    assert r.returncode in (0, 1), r.stderr
    return {rel: (tmp_path / rel).read_text(encoding="utf-8") for rel in files}


def _run(code: str, namespace: dict) -> dict:
    exec(compile(code, "train.py", "exec"), namespace)  # noqa: S102 - the fixed test script
    return namespace


def test_tl610_moving_sft_keywords_into_the_sftconfig(tmp_path):
    trl = pytest.importorskip("trl")
    from trl import SFTConfig, SFTTrainer

    src = ("from trl import SFTConfig, SFTTrainer\n"
           "MAX_LEN = 256\n"
           f"args = SFTConfig(output_dir={str(tmp_path / 'out')!r}, report_to=[], bf16=False)\n"
           "trainer = SFTTrainer(model=None, args=args, dataset_text_field='content', packing=True,\n"
           "                     max_seq_length=MAX_LEN)\n")
    fixed = _fix(tmp_path, {"train.py": src}, "TL610", "--trl-version", trl.__version__)["train.py"]
    assert "dataset_text_field" not in fixed.split("SFTTrainer(")[1]

    real = inspect.signature(SFTTrainer.__init__)
    calls = []

    class Recorder:  # binds to the real constructor's signature, without building a model
        def __init__(self, **kwargs):
            real.bind(None, **kwargs)
            calls.append(kwargs)

    with pytest.raises(TypeError):  # the original call on the installed TRL
        _run(src.replace("from trl import SFTConfig, SFTTrainer", ""), {"SFTConfig": SFTConfig, "SFTTrainer": Recorder})
    ns = _run(fixed.replace("from trl import SFTConfig, SFTTrainer", ""), {"SFTConfig": SFTConfig,
                                                                          "SFTTrainer": Recorder})
    cfg = ns["args"]
    assert (cfg.dataset_text_field, cfg.packing, cfg.max_length) == ("content", True, 256)
    assert calls and calls[-1]["args"] is cfg


def test_tl610_dpo_and_reward_configs_take_the_moved_fields():
    pytest.importorskip("trl")
    from trl import DPOConfig, RewardConfig

    assert DPOConfig(output_dir="o", beta=0.3, loss_type="ipo", max_length=128, report_to=[], bf16=False).beta == 0.3
    assert RewardConfig(output_dir="o", max_length=64, report_to=[], bf16=False).max_length == 64


def test_tl611_peft_rename_runs(tmp_path):
    pytest.importorskip("peft")
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    fixed = _fix(tmp_path, {"train.py": "from peft import prepare_model_for_int8_training\n"
                                         "model = prepare_model_for_int8_training(model)\n"}, "TL611")["train.py"]
    assert "prepare_model_for_kbit_training" in fixed and "int8" not in fixed
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=2))
    ns = _run(fixed, {"model": model})
    assert ns["model"] is model


def test_tl611_experimental_import_runs(tmp_path):
    trl = pytest.importorskip("trl")
    fixed = _fix(tmp_path, {"train.py": "from trl import ORPOConfig, ORPOTrainer\n"}, "TL611",
                 "--trl-version", trl.__version__)["train.py"]
    assert fixed == "from trl.experimental.orpo import ORPOConfig, ORPOTrainer\n"
    with pytest.raises(ImportError):
        _run("from trl import ORPOTrainer\n", {})
    ns = _run(fixed, {})
    assert ns["ORPOTrainer"].__name__ == "ORPOTrainer"


def test_tl612_token_rename_runs(tmp_path):
    pytest.importorskip("transformers")
    from transformers import LlamaConfig, Trainer

    LlamaConfig(vocab_size=64).save_pretrained(tmp_path / "tiny")
    src = f"from transformers import AutoConfig\ncfg = AutoConfig.from_pretrained({str(tmp_path / 'tiny')!r}, use_auth_token=False)\n"
    fixed = _fix(tmp_path, {"train.py": src}, "TL612")["train.py"]
    assert "token=False" in fixed and "use_auth_token" not in fixed
    ns = _run(fixed, {})
    assert ns["cfg"].vocab_size == 64 and not hasattr(ns["cfg"], "token")
    _run(src, {})  # the original does not fail on transformers 5 either: the keyword is just not read
    # push_to_hub hands unknown keywords to create_model_card, which has no **kwargs
    with pytest.raises(TypeError):
        inspect.signature(Trainer.create_model_card).bind(None, use_auth_token="t")
    inspect.signature(Trainer.push_to_hub).bind(None, token="t")


def test_tl609_rename_runs(tmp_path):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    src = ("model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={'use_reentrant': False})\n"
           "on = model.is_gradient_checkpointing\n")
    write_files(tmp_path, {"train.py": "from transformers import AutoModelForCausalLM\n" + src})
    r = run_cli("fix", "--apply", "--select", "TL609", str(tmp_path), cwd=tmp_path)
    assert r.returncode in (0, 1), r.stderr
    fixed = (tmp_path / "train.py").read_text()
    assert "activation_checkpointing_enable(activation_checkpointing_kwargs=" in fixed
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=2))
    ns = _run(fixed, {"model": model})
    assert ns["on"] is True


def test_tl601_swallowed_flag_rename(tmp_path):
    from transformers import HfArgumentParser, TrainingArguments

    files = {
        "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                    "parser = HfArgumentParser(TrainingArguments)\n"
                    "(args, rest) = parser.parse_args_into_dataclasses(return_remaining_strings=True)\n",
        "run.sh": f"python train.py --output_dir {tmp_path / 'o'} --evaluation_strategy steps --eval_steps 5\n",
    }
    fixed = _fix(tmp_path, files, "TL601")["run.sh"]
    parser = HfArgumentParser(TrainingArguments)
    before = parser.parse_args_into_dataclasses(files["run.sh"].split()[2:], return_remaining_strings=True)
    assert before[0].eval_strategy == "no" and "--evaluation_strategy" in before[1]  # silently lost
    after = parser.parse_args_into_dataclasses(fixed.split()[2:], return_remaining_strings=True)
    assert after[0].eval_strategy == "steps" and after[1] == []
