"""The generator's extraction on small synthetic sources (no network)."""

from __future__ import annotations

import ast
import importlib.util
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("gen_training_args", ROOT / "scripts" / "gen_training_args.py")
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)  # type: ignore[union-attr]

TA = '''
from dataclasses import dataclass, field
from typing import Optional, Union
from .trainer_utils import IntervalStrategy

levels = {"debug": 10, "info": 20}
trainer_levels = dict(**levels, passive=-1)

@dataclass
class TrainingArguments:
    framework = "pt"
    default_optim = "adamw_torch"
    output_dir: str = field(metadata={"help": "Where to write."})
    learning_rate: float = field(default=5e-5, metadata={"help": "The " "learning rate."})
    eval_strategy: Union[IntervalStrategy, str] = field(default="no")
    evaluation_strategy: Optional[str] = field(default=None, metadata={"help": "Deprecated. Use eval_strategy"})
    log_level: str = field(default="passive", metadata={"choices": trainer_levels.keys()})
    optim: str = field(default=default_optim)
    report_to: Optional[list] = field(default_factory=lambda: ["all"])
    no_cuda: bool = False
    _n_gpu: int = field(init=False, repr=False, default=-1)
    mode: str = field(default="a", metadata={"choices": ["a", "b"]})

    def __post_init__(self):
        if self.no_cuda:
            warnings.warn("using `no_cuda` is deprecated and will be removed. Use `use_cpu` instead")
        if isinstance(self.eval_strategy, IntervalStrategy):
            warnings.warn("using `IntervalStrategy` for `eval_strategy` is deprecated")
        if self.mode == "a":
            warnings.warn(f"`mode='a'` is deprecated, {self.mode}")
'''

S2S = '''
from dataclasses import dataclass, field
from .training_args import TrainingArguments

@dataclass
class Seq2SeqTrainingArguments(TrainingArguments):
    predict_with_generate: bool = field(default=False, metadata={"help": "Use generate."})
'''

TU = '''
class IntervalStrategy(ExplicitEnum):
    NO = "no"
    STEPS = "steps"
    EPOCH = "epoch"
'''


def make_wheel(tmp_path: Path) -> Path:
    whl = tmp_path / "transformers-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("transformers/training_args.py", TA)
        z.writestr("transformers/training_args_seq2seq.py", S2S)
        z.writestr("transformers/trainer_utils.py", TU)
    return whl


def test_extract_transformers_fields(tmp_path):
    out = gen.extract_transformers(make_wheel(tmp_path))
    f = out["TrainingArguments"]["fields"]
    assert "framework" not in f and "default_optim" not in f
    assert f["output_dir"] == {"type": "str", "required": True, "help": "Where to write."}
    assert f["learning_rate"]["default"] == 5e-5 and f["learning_rate"]["help"] == "The learning rate."
    assert f["eval_strategy"]["choices"] == ["no", "steps", "epoch"]
    assert f["log_level"]["choices"] == ["debug", "info", "passive"]
    assert f["optim"]["default"] == "adamw_torch"  # a class constant bound once
    assert f["report_to"]["default"] == ["all"]
    assert f["no_cuda"]["default"] is False and f["no_cuda"]["type"] == "bool"
    assert f["_n_gpu"]["init"] is False
    deps = out["TrainingArguments"]["deprecations"]
    assert set(deps) == {"no_cuda", "evaluation_strategy"}  # not eval_strategy, not mode
    s2s = out["Seq2SeqTrainingArguments"]
    assert list(s2s["fields"]) == ["predict_with_generate"] and s2s["bases"] == ["TrainingArguments"]


def test_deprecated_subjects():
    fields = {"push_to_hub_model_id", "push_to_hub_organization", "hub_model_id", "eval_strategy", "loss_type"}
    msg = ("`--push_to_hub_model_id` and `--push_to_hub_organization` are deprecated and will be removed. "
           "Use `--hub_model_id` instead")
    assert gen.deprecated_subjects(msg, fields) == ["push_to_hub_model_id", "push_to_hub_organization"]
    assert gen.deprecated_subjects("using `EvaluationStrategy` for `eval_strategy` is deprecated", fields) == []
    assert gen.deprecated_subjects("`loss_type='x'` is deprecated. Use `loss_type='y'`", fields) == []
    assert gen.deprecated_subjects("nothing here", fields) == []


def test_help_deprecation():
    fields = {"local_rank", "per_gpu_train_batch_size"}
    assert gen.help_deprecation("per_gpu_train_batch_size", "Deprecated, the use of X is preferred.", fields)
    assert gen.help_deprecation("x", "This argument is deprecated. It will be removed.", fields)
    assert gen.help_deprecation(
        "local_rank", "When using torch.distributed.launch (Deprecated), it will pass `local_rank`", fields
    ) is None


def test_compact_merges_equal_consecutive_versions():
    data = {
        v: {"C": {"module": "m", "bases": [], "fields": {"a": {"type": "int", "default": d}}, "deprecations": {}}}
        for v, d in (("1.0", 1), ("1.1", 1), ("1.2", 2), ("1.3", 1))
    }
    texts = gen.Texts()
    out = gen.compact(data, ["1.0", "1.1", "1.2", "1.3"], texts)
    assert out["C"]["fields"]["a"] == [
        {"v": [0, 1], "type": "int", "default": 1},
        {"v": [2, 2], "type": "int", "default": 2},
        {"v": [3, 3], "type": "int", "default": 1},
    ]
    assert out["C"]["modules"] == [[0, 3, "m"]]


def test_select_transformers_keeps_yanked_anchors():
    avail = ["4.39.0", "4.40.0", "4.40.2", "4.46.1", "4.46.3", "4.57.1", "4.57.6", "5.0.0", "5.1.0"]
    sel = gen.select_transformers(avail)
    assert "4.39.0" not in sel and "4.46.0" in sel and "4.57.6" in sel and "5.1.0" in sel
    assert sel == sorted(sel, key=gen.vkey)


def test_parse_module_is_plain_ast():
    assert isinstance(gen.parse_module("x = 1"), ast.Module)
