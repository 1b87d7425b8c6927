"""Behaviour of TL308-TL317 and TL407-TL414 beyond their embedded cases: severities that depend
on the version or the finding, messages that name both places, what stays silent, and that the
generated model facts agree with the installed transformers."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from helpers import fix_folder, lint_folder, settings_for, write_files

from trainlint.rules._setup_models import model_facts

TRAINER = ("from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
           "model = AutoModelForCausalLM.from_pretrained({model})\n"
           "args = TrainingArguments(output_dir='o', deepspeed='ds.json'{extra})\n"
           "Trainer(model=model, args=args).train()\n")
FSDP = "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n"


def _codes(result, code):
    return [d for d in result.diagnostics if d.code == code]


def test_adafactor_with_ds_optimizer_is_an_error_on_4x_and_a_warning_on_5x(tmp_path):
    write_files(tmp_path, {
        "train.py": TRAINER.format(model="'m'", extra=", optim='adafactor'"),
        "ds.json": '{"optimizer": {"type": "AdamW"}, "train_micro_batch_size_per_gpu": "auto"}\n'})
    (old,) = _codes(lint_folder(tmp_path, options={"transformers-version": "4.57.1"}), "TL312")
    assert old.severity.value == "error" and "Only one optimizer" in old.message
    (new,) = _codes(lint_folder(tmp_path, options={"transformers-version": "5.24.0"}), "TL312")
    assert new.severity.value == "warning" and "ignores optim" in new.message
    assert [Path(r.path).name for r in new.related] == ["ds.json"]


def test_offload_not_needed_uses_the_world_size_and_stays_silent_when_states_do_not_fit(tmp_path):
    ds = '{"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}, "offload_optimizer": ' \
         '{"device": "cpu"}}, "train_micro_batch_size_per_gpu": "auto"}\n'
    script = TRAINER.format(model="'meta-llama/Llama-2-7b-hf'", extra="")
    # 7B under ZeRO-3: 18 B x 6.7e9 / G; on 1 GPU 113 GiB -> keep the offload
    write_files(tmp_path, {"train.py": script, "ds.json": ds})
    assert not _codes(lint_folder(tmp_path, options={"gpu": "A100"}), "TL308")
    # on 8 GPUs about 14 GiB per GPU, under half of 80 GiB: both offloads are flagged
    write_files(tmp_path, {"run.sh": "torchrun --nproc_per_node 8 train.py\n"})
    hits = _codes(lint_folder(tmp_path, options={"gpu": "A100"}), "TL308")
    assert sorted(h.message.split(" ")[0] for h in hits) == ["offload_optimizer", "offload_param"]
    assert all("ZeRO-3 on 8 GPUs" in h.message for h in hits)


def test_warmup_not_positive_is_reported_once(tmp_path):
    write_files(tmp_path, {
        "train.py": TRAINER.format(model="'m'", extra=", warmup_steps=0"),
        "ds.json": '{"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 0}},'
                   ' "train_micro_batch_size_per_gpu": "auto"}\n'})
    r = lint_folder(tmp_path)
    assert len(_codes(r, "TL313")) == 1 and not _codes(r, "TL301")


def test_fp16_master_weights_severity_by_stage(tmp_path):
    def run(stage):
        zero = f'"zero_optimization": {{"stage": {stage}}}, ' if stage is not None else ""
        write_files(tmp_path, {"ds.json": '{' + zero + '"train_micro_batch_size_per_gpu": 8, '
                                          '"fp16": {"enabled": true, "fp16_master_weights_and_grads": true}}\n'})
        return [d.severity.value for d in _codes(lint_folder(tmp_path), "TL314")]

    assert run(None) == ["error"]
    assert run(1) == ["warning"]
    assert run(2) == []


def test_deepspeed_initialize_links_the_config_it_names(tmp_path):
    write_files(tmp_path, {
        "train.py": "import deepspeed\nCFG = 'conf/ds.json'\nengine, *_ = deepspeed.initialize(model=None, config=CFG)\n",
        "conf/ds.json": '{"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"}\n'})
    (d,) = _codes(lint_folder(tmp_path), "TL311")
    assert d.path.endswith("conf/ds.json") and "train_micro_batch_size_per_gpu, gradient_accumulation_steps" in d.message
    assert [(Path(x.path).name, x.line) for x in d.related] == [("train.py", 3)]


def test_fsdp2_ignored_settings_are_info_and_the_strategy_string_is_an_error(tmp_path):
    write_files(tmp_path, {"acc.yaml": FSDP + "  fsdp_version: 2\n  fsdp_reshard_after_forward: FULL_SHARD\n"
                                              "  fsdp_backward_prefetch: BACKWARD_PRE\n  fsdp_forward_prefetch: false\n"
                                              "  sync_module_states: true\n"})
    hits = _codes(lint_folder(tmp_path), "TL410")
    by_sev = sorted((d.severity.value, d.line) for d in hits)
    assert by_sev == [("error", 6), ("info", 7), ("info", 9)]  # forward_prefetch false: nothing to lose
    out = fix_folder(tmp_path, select=["TL410"])
    assert "  fsdp_reshard_after_forward: true\n" in out.fixed[str(tmp_path / "acc.yaml")]


def test_activation_checkpointing_twice_on_a_bare_flag_has_no_fix(tmp_path):
    write_files(tmp_path, {
        "run.sh": "accelerate launch --config_file acc.yaml run.py --output_dir o --gradient_checkpointing\n",
        "run.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                  "parser = HfArgumentParser((TrainingArguments,))\n(args,) = parser.parse_args_into_dataclasses()\n",
        "acc.yaml": FSDP + "  fsdp_activation_checkpointing: true\n"})
    (d,) = _codes(lint_folder(tmp_path), "TL411")
    assert d.path.endswith("run.sh") and d.fix is None and "acc.yaml:5" in d.message


def test_wrap_class_fix_is_offered_only_for_one_name(tmp_path):
    write_files(tmp_path, {
        "run.sh": "accelerate launch --config_file acc.yaml train.py\n",
        "train.py": "from transformers import AutoModelForSeq2SeqLM\nm = AutoModelForSeq2SeqLM.from_pretrained('t5-small')\n",
        "acc.yaml": FSDP + "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                           "  fsdp_transformer_layer_cls_to_wrap: T5Block,LlamaDecoderLayer\n"})
    (d,) = _codes(lint_folder(tmp_path), "TL407")
    assert "LlamaDecoderLayer is a llama layer" in d.message and "T5Block" in d.message and d.fix is None


def test_bf16_launch_flag_on_v100(tmp_path):
    write_files(tmp_path, {"run.sh": "accelerate launch --mixed_precision bf16 --num_processes 2 train.py\n",
                           "train.py": "import accelerate\n"})
    (d,) = _codes(lint_folder(tmp_path, options={"gpu": "V100"}), "TL414")
    assert d.path.endswith("run.sh") and "V100" in d.message


@pytest.mark.parametrize("model_type", sorted(model_facts()["layer_classes"]))
def test_layer_classes_match_installed_transformers(model_type):
    import transformers

    src = Path(transformers.__file__).parent / "models" / model_type / f"modeling_{model_type}.py"
    text = src.read_text()
    names = model_facts()["layer_classes"][model_type]
    for name in names:
        assert f"class {name}(" in text
    found: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_no_split_modules"
                                                for t in node.targets):
            found |= set(ast.literal_eval(node.value))
    assert found == set(names) or not found


def test_model_facts_were_generated_from_the_installed_transformers():
    import transformers

    data = json.loads((Path(__file__).parent.parent / "trainlint/knowledge/data/model_facts.json").read_text())
    assert data["transformers"] == transformers.__version__
    assert "musicgen" in data["no_hidden_size"] and "llama" not in data["no_hidden_size"]


def test_offload_not_needed_reads_the_estimate_that_trainlint_estimate_prints(tmp_path):
    """TL308 reads the setup's estimate (the one `trainlint estimate` and TL550 use): a LoRA
    run's optimizer states are the adapter's, so the 7B model's states fit an A100 without the
    offload, which a full-fine-tuning assumption would have missed."""
    from dataclasses import replace

    from trainlint.estimate import estimate_setup
    from trainlint.linking import link_setups
    from trainlint.memory import estimate, format_bytes
    from trainlint.workspace import read_workspace

    write_files(tmp_path, {
        "train.py": "from peft import LoraConfig, get_peft_model\n"
                    "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                    "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n"
                    "model = get_peft_model(model, LoraConfig(r=8, target_modules=['q_proj', 'v_proj']))\n"
                    "args = TrainingArguments(output_dir='o', deepspeed='ds.json', bf16=True)\n"
                    "Trainer(model=model, args=args).train()\n",
        "ds.json": '{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},'
                   ' "train_micro_batch_size_per_gpu": "auto"}\n'})
    (hit,) = _codes(lint_folder(tmp_path, options={"gpu": "A100"}), "TL308")
    settings = settings_for(tmp_path, options={"gpu": "A100"})
    ws = read_workspace([tmp_path], settings, {})
    (setup,) = [s for s in link_setups(ws, settings) if s.scripts]
    r = estimate_setup(setup)
    states = estimate(replace(r.shape, offload_optimizer="none", offload_param="none")).model_states
    assert f"take about {format_bytes(states)} per GPU" in hit.message
    assert r.shape.trainable_fraction < 0.01  # the adapter trains, not the model
