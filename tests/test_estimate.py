"""trainlint.estimate (shape from a resolved setup), the estimate command and TL550 messages."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from helpers import REPO_ROOT, lint_folder, run_cli, settings_for, write_files

from trainlint.estimate import (
    SetupEstimate,
    estimate_for_script,
    estimate_setup,
    lora_trainable_params,
    shape_from_setup,
)
from trainlint.knowledge.models import lookup_model
from trainlint.memory import CUDA_CONTEXT_BYTES, deepspeed_zero2_model_states, estimate
from trainlint.resolve import build_setups, read_workspace

FLAN = REPO_ROOT / "examples" / "flan_t5_multigpu"
FLAN_PARAMS = 783_150_080


def setups_of(root: Path, **options):
    settings = settings_for(root, options=options)
    ws = read_workspace([root], settings, {})
    return build_setups(ws, settings)


def one(root: Path, files: dict[str, str], **options) -> SetupEstimate:
    write_files(root, {k: textwrap.dedent(v).lstrip() for k, v in files.items()})
    (setup,) = setups_of(root, **options)
    r = estimate_setup(setup)
    assert isinstance(r, SetupEstimate), r
    return r


# ------------------------------------------------------------------ flan-t5 example


def test_flan_example_json_matches_deepspeed_zero2_offload_formula():
    p = run_cli("estimate", str(FLAN), "--gpu", "A100-80GB", "--gpus", "4", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["model"]["name"] == "google/flan-t5-large"
    assert doc["model"]["params"] == FLAN_PARAMS
    shape = doc["shape"]
    assert (shape["zero_stage"], shape["offload_optimizer"], shape["precision"], shape["world_size"]) == \
        (2, "cpu", "bf16", 4)
    assert shape["micro_batch"] == 2 and shape["seq_len"] == 512
    cpu, gpu = deepspeed_zero2_model_states(FLAN_PARAMS, num_gpus_per_node=4, cpu_offload=True)
    per = doc["per_gpu"]
    assert per["weights"] + per["gradients"] + per["optimizer"] == gpu == 2 * FLAN_PARAMS
    assert doc["host"] == cpu  # Ψ · max(4·4, 16) · 1.5
    # overlap_comm with 2e8 buckets: 4.5 x (2e8 + 2e8) x 2 B
    assert per["buffers"] == int(4.5 * 4e8 * 2)
    assert per["total"] == sum(per[k] for k in ("weights", "gradients", "optimizer", "activations", "buffers"))
    assert 1 * 2**30 < per["activations"] < 4 * 2**30
    assert doc["gpu"] == {"name": "A100-80GB", "memory_bytes": 80 * 2**30, "fits": True,
                          "headroom_bytes": 80 * 2**30 - per["total"] - CUDA_CONTEXT_BYTES}
    assert {t["category"] for t in doc["terms"]} >= {"weights", "activations", "buffers", "host"}
    assert all(t["formula"] for t in doc["terms"])
    assert doc["estimates"][0]["per_gpu"] == per and doc["messages"] == []


def test_flan_world_size_from_the_accelerate_config_without_gpus():
    p = run_cli("estimate", str(FLAN), "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["shape"]["world_size"] == 4
    assert any("num_processes" in n for n in doc["provenance"])
    assert doc["gpu"] is None


def test_flan_text_table():
    p = run_cli("estimate", str(FLAN), "--gpu", "A100-80GB", "--gpus", "4", env={"COLUMNS": "200"})
    assert p.returncode == 0, p.stderr
    for word in ("weights", "gradients", "optimizer", "activations", "buffers", "total", "host memory per node",
                 "fits", "2 B x 783,150,080", "ds_config.json"):
        assert word in p.stdout, word


def test_estimate_for_script_flan():
    est = estimate_for_script(FLAN / "train.py", gpus=4)
    assert est is not None
    assert est.model_states == 2 * FLAN_PARAMS
    assert est.shape.zero_stage == 2 and est.shape.world_size == 4


def test_estimate_for_script_without_model(tmp_path):
    write_files(tmp_path, {"t.py": "from transformers import TrainingArguments\nTrainingArguments(output_dir='o')\n"})
    assert estimate_for_script(tmp_path / "t.py") is None


# ------------------------------------------------------------------ the command's messages


def test_unknown_model_says_so_and_exits_0(tmp_path):
    write_files(tmp_path, {"train.py": (
        "from transformers import AutoModelForCausalLM, TrainingArguments\n"
        "m = AutoModelForCausalLM.from_pretrained('someone/not-a-known-model')\n"
        "a = TrainingArguments(output_dir='o')\n")})
    p = run_cli("estimate", str(tmp_path), "--gpu", "A100")
    assert p.returncode == 0, p.stderr
    assert "unknown model 'someone/not-a-known-model'" in p.stdout
    pj = run_cli("estimate", str(tmp_path), "--format", "json")
    doc = json.loads(pj.stdout)
    assert doc["estimates"] == [] and "unknown model" in doc["messages"][0]


def test_unknown_gpu_is_a_usage_error(tmp_path):
    p = run_cli("estimate", str(FLAN), "--gpu", "Voodoo5")
    assert p.returncode == 2 and "unknown GPU" in p.stderr


def test_estimate_command_imports_nothing_heavy():
    import subprocess
    import sys

    code = ("import sys, trainlint.estimate_command, trainlint.estimate; "
            "print([m for m in ('torch', 'transformers', 'accelerate', 'deepspeed', 'rich') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT,
                         env={"PYTHONPATH": str(REPO_ROOT)}, check=True).stdout.strip()
    assert out == "[]"


def test_estimate_registered_in_cli():
    p = run_cli("--help")
    assert "estimate" in p.stdout


# ------------------------------------------------------------------ shape from the setup


def test_model_from_constant_argparse_default_and_dataclass(tmp_path):
    r = one(tmp_path / "a", {"train.py": """
        from transformers import AutoModelForCausalLM, TrainingArguments
        NAME = "gpt2"
        m = AutoModelForCausalLM.from_pretrained(NAME)
        a = TrainingArguments(output_dir="o")
        """})
    assert r.model.hub_id == "openai-community/gpt2"
    r = one(tmp_path / "b", {"train.py": """
        import argparse
        from transformers import AutoModelForCausalLM, AutoTokenizer, TrainingArguments
        p = argparse.ArgumentParser()
        p.add_argument("--model-name", default="gpt2")
        p.add_argument("--bs", type=int, default=4)
        args = p.parse_args()
        tok = AutoTokenizer.from_pretrained(args.model_name)
        m = AutoModelForCausalLM.from_pretrained(args.model_name)
        a = TrainingArguments(output_dir="o", per_device_train_batch_size=args.bs)
        """})
    assert r.model.hub_id == "openai-community/gpt2" and r.shape.micro_batch == 4
    assert "train.py:4" in r.notes[0]  # the argparse default's line
    r = one(tmp_path / "c", {"train.py": """
        from dataclasses import dataclass, field
        from transformers import AutoModel, HfArgumentParser, TrainingArguments
        @dataclass
        class ModelArguments:
            model_name_or_path: str = field(default="bert-base-uncased")
        margs, targs = HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()
        m = AutoModel.from_pretrained(margs.model_name_or_path)
        """})
    assert r.model.hub_id == "google-bert/bert-base-uncased"


def test_tokenizer_from_pretrained_is_not_the_model(tmp_path):
    r = one(tmp_path, {"train.py": """
        from transformers import AutoConfig, AutoTokenizer, AutoModelForSequenceClassification, TrainingArguments
        tok = AutoTokenizer.from_pretrained("gpt2")
        cfg = AutoConfig.from_pretrained("gpt2")
        m = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
        a = TrainingArguments(output_dir="o")
        """})
    assert r.model.hub_id == "google-bert/bert-base-uncased"


def test_local_folder_config(tmp_path):
    cfg = {"model_type": "bert", "vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 2, "intermediate_size": 128, "max_position_embeddings": 128,
           "type_vocab_size": 2}
    write_files(tmp_path, {"tiny/config.json": json.dumps(cfg)})
    r = one(tmp_path, {"train.py": """
        from transformers import AutoModelForSequenceClassification, AutoTokenizer, TrainingArguments
        tok = AutoTokenizer.from_pretrained("tiny")
        m = AutoModelForSequenceClassification.from_pretrained("tiny")
        def f(b):
            return tok(b["text"], truncation=True)
        a = TrainingArguments(output_dir="o")
        """})
    assert r.model.from_config.endswith("config.json")
    assert r.shape.hidden == 64 and r.shape.seq_len == 128  # truncation to model_max_length = positions
    assert r.shape.micro_batch == 8  # the default


def test_precision_optimizer_checkpointing_and_seq_len(tmp_path):
    r = one(tmp_path, {"train.py": """
        from transformers import AutoModelForCausalLM, AutoTokenizer, TrainingArguments
        tokenizer = AutoTokenizer.from_pretrained("gpt2")
        model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.bfloat16)
        model.gradient_checkpointing_enable()
        MAX = 256
        ds = data.map(lambda b: tokenizer(b["t"], max_length=MAX, truncation=True))
        a = TrainingArguments(output_dir="o", bf16=True, optim="adamw_bnb_8bit",
                              per_device_train_batch_size=16, gradient_accumulation_steps=4)
        """})
    s = r.shape
    assert (s.precision, s.param_dtype, s.optimizer, s.gradient_checkpointing) == ("bf16", "bf16", "adamw_bnb_8bit",
                                                                                    True)
    assert (s.seq_len, s.micro_batch, s.grad_accum, s.world_size) == (256, 16, 4, 1)
    assert r.assumed == {"world_size"}


def test_unstated_seq_len_is_assumed_and_capped(tmp_path):
    r = one(tmp_path, {"train.py": """
        from transformers import AutoModelForCausalLM, TrainingArguments
        m = AutoModelForCausalLM.from_pretrained("gpt2")
        a = TrainingArguments(output_dir="o")
        """})
    assert r.shape.seq_len == 512 and "seq_len" in r.assumed and r.shape.precision == "fp32"
    assert r.favourable_shape().seq_len == 128


def test_deepspeed_literal_keyword_zero3_auto_buckets(tmp_path):
    r = one(tmp_path, {
        "train.py": """
            from transformers import AutoModelForCausalLM, TrainingArguments
            m = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
            a = TrainingArguments(output_dir="o", deepspeed="cfg/z3.json", bf16=True)
            """,
        "cfg/z3.json": json.dumps({"bf16": {"enabled": "auto"}, "zero_optimization": {
            "stage": 3, "offload_param": {"device": "cpu"}, "offload_optimizer": {"device": "nvme"},
            "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
            "stage3_param_persistence_threshold": "auto", "overlap_comm": True}}),
    }, gpus=8)
    s = r.shape
    assert (s.zero_stage, s.offload_param, s.offload_optimizer, s.world_size) == (3, "cpu", "nvme", 8)
    assert s.reduce_bucket_size == 4096 * 4096
    assert s.stage3_prefetch_bucket_size == int(0.9 * 4096 * 4096)
    assert s.stage3_param_persistence_threshold == 40960


def test_deepspeed_precision_and_optimizer_from_config(tmp_path):
    r = one(tmp_path, {
        "train.py": """
            from transformers import AutoModelForCausalLM, TrainingArguments
            m = AutoModelForCausalLM.from_pretrained("gpt2")
            a = TrainingArguments(output_dir="o", deepspeed="ds.json")
            """,
        "ds.json": json.dumps({"fp16": {"enabled": True}, "optimizer": {"type": "Lion"},
                               "zero_optimization": {"stage": 1}, "train_micro_batch_size_per_gpu": 3}),
    })
    s = r.shape
    assert (s.precision, s.optimizer, s.zero_stage) == ("fp16", "lion", 1)
    assert s.micro_batch == 3  # written in the DeepSpeed config, not in TrainingArguments


def test_no_model_gives_none(tmp_path):
    write_files(tmp_path, {"train.py": "from transformers import TrainingArguments\nTrainingArguments(output_dir='o')\n"})
    (setup,) = setups_of(tmp_path)
    assert estimate_setup(setup) is None and shape_from_setup(setup) is None


# ------------------------------------------------------------------ LoRA


def test_lora_count_matches_peft_for_llama_7b_r16_q_v():
    # PEFT prints "trainable params: 4,194,304" for r=8 and 8,388,608 for r=16 on Llama-2-7b (q_proj, v_proj)
    info = lookup_model("meta-llama/Llama-2-7b-hf")
    assert lora_trainable_params(info, 16, ["q_proj", "v_proj"])[0] == 8_388_608
    assert lora_trainable_params(info, 8, None)[0] == 4_194_304  # PEFT's default targets for llama


def test_lora_all_linear_llama():
    info = lookup_model("meta-llama/Llama-2-7b-hf")
    h, i, L, r = 4096, 11008, 32, 8
    want = L * r * (4 * (h + h) + 2 * (h + i) + (i + h))
    assert lora_trainable_params(info, r, "all-linear")[0] == want  # 19,988,480


def test_lora_in_setup_lowers_gradients_and_optimizer(tmp_path):
    r = one(tmp_path, {"train.py": """
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM, TrainingArguments
        model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", dtype="bfloat16")
        config = LoraConfig(r=16, target_modules=["q_proj", "v_proj"], lora_alpha=32)
        model = get_peft_model(model, config)
        a = TrainingArguments(output_dir="o", bf16=True)
        """})
    assert r.shape.trainable == 8_388_608
    assert r.estimate.per_gpu["optimizer"] < 0.1 * 2**30
    assert any("LoRA" in n for n in r.notes)


# ------------------------------------------------------------------ TL550 message


def test_tl550_message_has_breakdown_and_savings(tmp_path):
    write_files(tmp_path, {"train.py": textwrap.dedent("""
        from transformers import AutoModelForCausalLM, TrainingArguments
        m = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", dtype="float32")
        a = TrainingArguments(output_dir="o", per_device_train_batch_size=4)
        """)})
    (d,) = [d for d in lint_folder(tmp_path, options={"gpu": "A100-40GB"}).diagnostics if d.code == "TL550"]
    assert d.severity.value == "error" and d.line == 3
    for part in ("exceeds the A100-40GB", "weights", "gradients", "optimizer", "activations", "8-bit AdamW",
                 "gradient_checkpointing"):
        assert part in d.message, part
    assert d.related and d.related[0].line == 4


def test_tl550_suggests_a_change_that_fits(tmp_path):
    # gpt2 at 16 x 1024 tokens in fp32: the activations do not fit a 16 GB T4, checkpointing fits
    write_files(tmp_path, {"train.py": textwrap.dedent("""
        from transformers import AutoModelForCausalLM, AutoTokenizer, TrainingArguments
        tok = AutoTokenizer.from_pretrained("gpt2")
        m = AutoModelForCausalLM.from_pretrained("gpt2")
        f = lambda b: tok(b["text"], max_length=1024, truncation=True)
        a = TrainingArguments(output_dir="o", per_device_train_batch_size=16)
        """)})
    hits = [d for d in lint_folder(tmp_path, options={"gpu": "T4"}).diagnostics if d.code == "TL550"]
    assert hits, "gpt2 16x1024 fp32 should not fit a T4"
    assert "changes that would fit" in hits[0].message


@pytest.mark.parametrize("gpu", ["A100-80GB", "H100"])
def test_flan_example_fits(gpu):
    res = lint_folder(FLAN, options={"gpu": gpu, "gpus": 4})
    assert not [d for d in res.diagnostics if d.code == "TL550"]


def test_model_states_of_flan_estimate_equal_memory_module():
    est = estimate_for_script(FLAN / "train.py", gpus=4)
    assert est is not None
    again = estimate(est.shape)
    assert again.per_gpu == est.per_gpu
