"""Catalog-2 rules (TL124-TL136, TL233-TL244, TL318-TL320, TL415-TL417, TL510-TL512) beyond
their embedded cases: the installed command on a mixed setup, version-dependent wording,
fixed code that runs on the installed libraries, and the module-name data against the installed
transformers."""

from __future__ import annotations

import json
import subprocess
import sys

from helpers import fix_folder, lint_folder, run_cli, write_files

from trainlint.diagnostics import Severity
from trainlint.rules._setup_models import model_facts

HF_SCRIPT = ("from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
             "(args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()\n"
             "Trainer(model=m, args=args, train_dataset=d).train()\n")


def _codes(result, code):
    return [d for d in result.diagnostics if d.code == code]


def test_cli_reports_catalog2_rules_across_file_kinds(tmp_path):
    write_files(tmp_path, {
        "run.sh": ("python -m torch.distributed.launch --nproc_per_node 2 train.py --output_dir o "
                   "--save_steps 25 --save_strategy epoch --eval_strategy steps --deepspeed ds_zero3_offload.json\n"),
        "train.py": HF_SCRIPT,
        "ds_zero3_offload.json": json.dumps({"zero_optimization": {"stage": 3, "offload_param": {"device": "none"}},
                                             "scheduler": {"type": "WarmupLR"},
                                             "train_micro_batch_size_per_gpu": "auto"}) + "\n",
    })
    out = run_cli("check", str(tmp_path), "--format", "json", "--exit-zero", "--no-cache")
    assert out.returncode == 0, out.stderr
    codes = {d["code"] for d in json.loads(out.stdout)}
    assert {"TL415", "TL233", "TL215", "TL416"} <= codes, codes
    assert "TL000" not in codes


def test_warmup_both_wording_follows_the_version(tmp_path):
    write_files(tmp_path, {"train.py": "from transformers import TrainingArguments\n"
                                       "a = TrainingArguments(output_dir='o', warmup_steps=500, warmup_ratio=0.1)\n"})
    old = _codes(lint_folder(tmp_path, options={"transformers_version": "4.57.1"}), "TL234")
    new = _codes(lint_folder(tmp_path, options={"transformers_version": "5.1.0"}), "TL234")
    assert old and "overrides warmup_ratio" in old[0].message
    assert new and "overwrites warmup_steps" in new[0].message


def test_early_stopping_severity_follows_the_version(tmp_path):
    write_files(tmp_path, {"train.py": (
        "from transformers import EarlyStoppingCallback, Trainer, TrainingArguments\n"
        "args = TrainingArguments(output_dir='o', eval_strategy='epoch', metric_for_best_model='acc')\n"
        "Trainer(model=m, args=args, callbacks=[EarlyStoppingCallback()])\n")})
    old = _codes(lint_folder(tmp_path, options={"transformers_version": "4.45.0"}), "TL242")
    new = _codes(lint_folder(tmp_path, options={"transformers_version": "5.24.0"}), "TL242")
    assert old[0].severity.value == "error" and new[0].severity.value == "warning"


def test_constant_scheduler_fix_runs_on_the_installed_transformers(tmp_path):
    src = ("from transformers import TrainingArguments\n"
           "args = TrainingArguments(output_dir='o', lr_scheduler_type='constant', warmup_steps=100)\n")
    write_files(tmp_path, {"train.py": src})
    fixed = fix_folder(tmp_path, unsafe=True, select=["TL235"]).fixed[str(tmp_path / "train.py")]
    assert "constant_with_warmup" in fixed
    code = fixed.replace("output_dir='o'", f"output_dir={str(tmp_path / 'out')!r}") + (
        "import torch\nfrom transformers import get_scheduler\n"
        "opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)\n"
        "s = get_scheduler(args.lr_scheduler_type, opt, num_warmup_steps=args.warmup_steps, num_training_steps=1000)\n"
        "assert opt.param_groups[0]['lr'] == 0.0, opt.param_groups[0]['lr']\n"
        "for _ in range(100):\n    opt.step(); s.step()\n"
        "assert abs(opt.param_groups[0]['lr'] - 1.0) < 1e-9\n"
        # the rule's fact: "constant" ignores the warmup (full learning rate from the first step)
        "opt2 = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)\n"
        "get_scheduler('constant', opt2, num_warmup_steps=100, num_training_steps=1000)\n"
        "assert opt2.param_groups[0]['lr'] == 1.0\nprint('ok')\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "ok" in run.stdout, run.stderr[-2000:]


def test_module_names_agree_with_the_installed_transformers():
    import torch
    from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig

    names = model_facts()["module_names"]
    for cfg, mt in ((GPT2Config(n_layer=1), "gpt2"), (LlamaConfig(num_hidden_layers=1), "llama")):
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(cfg)
        leaves = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules() if n and not n.rsplit(".", 1)[-1].isdigit()}
        assert leaves <= set(names[mt]), (mt, leaves - set(names[mt]))
    assert "q_proj" not in names["gpt2"] and "c_attn" in names["gpt2"]


def test_accelerate_keys_cover_the_installed_accelerate():
    import dataclasses

    from accelerate.commands.config.config_args import ClusterConfig

    from trainlint.rules.launch.accelerate_unknown_key import _keys

    fields = {f.name for f in dataclasses.fields(ClusterConfig)}
    assert fields <= set(_keys()["keys"]["cluster"]), fields - set(_keys()["keys"]["cluster"])


def test_a_step_count_beside_another_written_strategy_is_info(tmp_path):
    """TL233: ``eval_steps`` with the default ``eval_strategy="no"`` (the run never evaluates) is a
    warning; ``save_steps`` left beside a written ``save_strategy="epoch"`` (InternVL's recipes:
    the schedule was chosen, the number is a leftover) is info."""
    write_files(tmp_path, {"train.py": (
        "from transformers import TrainingArguments\n"
        "a = TrainingArguments(output_dir='o', eval_steps=200)\n"
        "b = TrainingArguments(output_dir='o', save_strategy='epoch', save_steps=3000)\n")})
    found = {d.line: d.severity for d in lint_folder(tmp_path, select=["TL233"]).diagnostics}
    assert found == {2: Severity.WARNING, 3: Severity.INFO}
