"""False positives and misses found on real repositories never reviewed before (eighth
session: BELLE, zero_nlp, TinyLlama, accelerate examples, ...). Each case is written the way
the pattern appears there, with a variant spelling, and with the case that must still flag."""

from __future__ import annotations

from helpers import lint_folder, write_files

DS_BF16 = ('{"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": "auto",'
           ' "optimizer": {"type": "AdamW", "params": {"weight_decay": 0.01}}}\n')

# BELLE train/src/entry_point/ppo_train.py: the PPOConfig of trl < 0.12 (a plain dataclass,
# not TrainingArguments), under accelerate launch with a DeepSpeed config
OLD_PPO = """\
from trl import PPOConfig
config = PPOConfig(model_name="gpt2", learning_rate=1.4e-5, log_with="wandb", mini_batch_size=2,
                   ppo_epochs=4, init_kl_coef=0.2, adap_kl_ctrl=True, deepspeed="ds.json")
"""


def _codes(result, code=None):
    return sorted((d.code, d.path.rsplit("/", 1)[-1], d.line) for d in result.diagnostics
                  if code is None or d.code == code)


def test_config_class_the_target_trl_no_longer_has_is_not_judged(tmp_path):
    write_files(tmp_path, {"t.py": OLD_PPO, "ds.json": DS_BF16})
    result = lint_folder(tmp_path, options={"trl_version": "1.16.0"})
    codes = {d.code for d in result.diagnostics}
    assert "TL611" in codes  # the import itself fails at the target: that is the finding
    assert not codes & {"TL301", "TL602"}, _codes(result)


def test_config_class_the_target_trl_has_is_still_judged(tmp_path):
    write_files(tmp_path, {"t.py": OLD_PPO, "ds.json": DS_BF16})
    result = lint_folder(tmp_path, options={"trl_version": "0.20.0"})
    assert {"TL301", "TL602"} <= {d.code for d in result.diagnostics}, _codes(result)


def test_removed_class_through_a_variable_and_a_kwargs_dict(tmp_path):
    script = ("from trl import PPOConfig as Cfg\n"
              "kw = dict(model_name='gpt2', log_with=None, deepspeed='ds.json')\n"
              "config = Cfg(**kw)\n")
    write_files(tmp_path, {"t.py": script, "ds.json": DS_BF16})
    result = lint_folder(tmp_path, options={"trl_version": "1.16.0"})
    assert not {d.code for d in result.diagnostics} & {"TL301", "TL602"}, _codes(result)
