"""The API-data generators' extraction on small synthetic wheels (no network)."""

from __future__ import annotations

import ast
import importlib.util
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


wheel_ast = _load("wheel_ast")
names_gen = _load("gen_public_names")
trainers_gen = _load("gen_trl_trainers")
api_gen = _load("gen_model_api")


def make_wheel(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    whl = tmp_path / f"{name}-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return whl


def test_signature_reads_decorator_aliases():
    func = ast.parse('''
@_deprecate_arguments(version="0.13.0", deprecated_args=["packing", "max_seq_length"])
@deprecate_kwarg("tokenizer", "0.16.0", "processing_class")
def __init__(self, model=None, *, packing=False, max_seq_length=None, **kwargs): pass
''').body[0]
    sig = wheel_ast.signature(func)
    assert sig["params"] == ["model", "packing", "max_seq_length"]
    assert sig["varkw"] and not sig["varargs"]
    assert sig["aliases"] == {"tokenizer": "processing_class"}
    assert sig["deprecated"] == ["packing", "max_seq_length"]


def test_ranges():
    assert wheel_ast.ranges([1, 1, None, 2, 2, 1]) == [[0, 1, 1], [3, 4, 2], [5, 5, 1]]
    assert wheel_ast.present_ranges([True, False, True, True]) == [[0, 0], [2, 3]]


def test_public_names_of_a_lazy_package(tmp_path):
    whl = make_wheel(tmp_path, "pkg", {
        "pkg/__init__.py": '''
import sys
from typing import TYPE_CHECKING
_import_structure = {"trainer": ["Trainer"], "data.collator": ["Collator"]}
_import_structure["optimization"] = ["AdamW"]
_import_structure["trainer"].extend(["Helper"])
_import_structure["trainer"].append("Other")
if TYPE_CHECKING:
    from .trainer import Trainer
else:
    import_structure = define_import_structure(Path(__file__).parent / "models", prefix="models")
    sys.modules[__name__] = _LazyModule(__name__, globals()["__file__"], _import_structure)
''',
        "pkg/trainer.py": "class Trainer: pass\n",
        "pkg/models/llama/modeling_llama.py": "class LlamaModel: pass\n__all__ = [\n    'LlamaModel',\n]\n",
        "pkg/models/llama/modular_llama.py": "__all__ = ['NotExported']\n",
    })
    got = names_gen.public_names(whl, "pkg")
    assert {"Trainer", "Collator", "AdamW", "Helper", "Other", "LlamaModel", "models", "trainer", "data",
            "optimization", "__version__"} <= got
    assert "NotExported" not in got and "sys" not in got and "TYPE_CHECKING" not in got


def test_build_keeps_a_name_removed_then_re_added(monkeypatch):
    """A name a version drops and a later one exports again is a removal too: a project pinned in
    the gap lacks it (its last run reaching the newest version must not hide it)."""
    versions = ["1.0", "1.1", "1.2", "1.3", "1.4"]
    sets = {"1.0": {"Keep", "Back", "Gone", "Twice"}, "1.1": {"Keep", "Gone", "Twice", "New"},
            "1.2": {"Keep", "New", "Twice"}, "1.3": {"Keep", "Back", "New"}, "1.4": {"Keep", "Back", "New", "Twice"}}
    monkeypatch.setattr(names_gen, "public_names", lambda wheel, package: set(sets[wheel]))
    monkeypatch.setattr(names_gen, "_exporters", lambda wheel, package, wanted: {n: f"{package}.sub" for n in wanted})
    doc, removed = names_gen.build({p: (versions, {v: v for v in versions}) for p in ("transformers", "trl")})
    assert doc["transformers"]["always"] == ["Keep"]
    assert doc["transformers"]["changed"]["Back"] == [[0, 0], [3, 4]]
    for p in ("transformers", "trl"):
        assert removed[p]["removed"] == {"Back": [[0, 0], [3, 4]], "Gone": [[0, 1]], "Twice": [[0, 2], [4, 4]]}, p
    assert "New" not in removed["transformers"]["removed"]  # only added: no gap
    # where a gap name is exported instead: only the versions without it after it existed
    assert removed["trl"]["elsewhere"]["Back"] == [[1, 2, "trl.sub"]]
    assert removed["trl"]["elsewhere"]["Twice"] == [[3, 3, "trl.sub"]]
    assert names_gen.has_gap([[0, 0], [3, 4]], 5) and not names_gen.has_gap([[2, 4]], 5)


LAZY_GETATTR = '''
class _LazyModule:
    def __getattr__(self, name):
        if name.endswith("TokenizerFast"):
            fallback_name = name[:-4]
        if name.endswith("ImageProcessorFast"):
            fallback_name = name[:-4]
        from ..convert_slow_tokenizer import SLOW_TO_FAST_CONVERTERS
'''


def test_public_names_with_the_lazy_module_fallbacks(tmp_path):
    init = ('_import_structure = {"models.bert": ["BertTokenizer"], "models.vit": ["ViTImageProcessor"]}\n'
            'sys.modules[__name__] = _LazyModule(__name__, globals()["__file__"], _import_structure)\n')
    files = {
        "pkg/__init__.py": init,
        "pkg/convert_slow_tokenizer.py": "SLOW_TO_FAST_CONVERTERS = {\n    'BertTokenizer': BertConverter,\n"
                                         "    'LayoutLMTokenizer': BertConverter,\n    'XLMTokenizer': XLMConverter,\n}\n",
        "pkg/utils/import_utils.py": LAZY_GETATTR,
    }
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    got = names_gen.public_names(make_wheel(tmp_path / "a", "pkg", files), "pkg")
    assert {"BertTokenizerFast", "ViTImageProcessorFast", "LayoutLMTokenizer", "LayoutLMTokenizerFast"} <= got
    assert "XLMTokenizer" not in got  # its converter's tokenizer (XLMTokenizer) is not listed
    # a version without the fallbacks (transformers 4): only what is listed
    files["pkg/utils/import_utils.py"] = "class _LazyModule:\n    pass\n"
    got = names_gen.public_names(make_wheel(tmp_path / "b", "pkg", files), "pkg")
    assert "BertTokenizerFast" not in got and "LayoutLMTokenizer" not in got and "BertTokenizer" in got


def test_public_names_of_a_plain_package_and_where_names_moved(tmp_path):
    files = {
        "pkg/__init__.py": "from .utils import prepare, _private\nfrom .tuners import *\nVERSION = 1\n",
        "pkg/utils.py": "def prepare(): pass\n",
        "pkg/tuners/__init__.py": "from .lora import LoraConfig\n__all__ = ['LoraConfig']\n",
        "pkg/tuners/lora.py": "class LoraConfig: pass\n",
        "pkg/experimental/__init__.py": "",
        "pkg/experimental/bco/__init__.py": "from .bco_trainer import BCOTrainer\n",
        "pkg/experimental/bco/bco_trainer.py": "class BCOTrainer: pass\n",
    }
    whl = make_wheel(tmp_path, "pkg", files)
    got = names_gen.public_names(whl, "pkg")
    assert {"prepare", "LoraConfig", "VERSION", "tuners", "utils"} <= got and "_private" not in got
    assert names_gen._exporters(whl, "pkg", {"BCOTrainer"}) == {"BCOTrainer": "pkg.experimental.bco"}


TRL_SFT = '''
from ..trainer_base import Base
from .sft_config import SFTConfig
class SFTTrainer(Base):
    def __init__(self, model=None, args: Optional[SFTConfig] = None, formatting_func=None):
        pass
'''
TRL_SFT_OLD = '''
from .sft_config import SFTConfig
class SFTTrainer:
    @_deprecate_arguments(version="0.13.0", deprecated_args=["packing"])
    def __init__(self, model=None, args: Optional[SFTConfig] = None, packing=False, formatting_func=None):
        pass
'''
SFT_CONFIG = '''
from dataclasses import dataclass
from transformers import TrainingArguments
@dataclass
class SFTConfig(TrainingArguments):
    packing: bool = False
'''
STUB = '''
import warnings
from ..experimental.bco import BCOTrainer as _BCOTrainer
class BCOTrainer(_BCOTrainer):
    def __init__(self, *args, **kwargs):
        warnings.warn("The `BCOTrainer` is now located in `trl.experimental`.")
        super().__init__(*args, **kwargs)
'''


def test_trl_trainer_extraction_and_moves(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    old = make_wheel(tmp_path / "a", "trl", {
        "trl/__init__.py": "", "trl/trainer/__init__.py": "",
        "trl/trainer/sft_trainer.py": TRL_SFT_OLD, "trl/trainer/sft_config.py": SFT_CONFIG,
    })
    new = make_wheel(tmp_path / "b", "trl", {
        "trl/__init__.py": "", "trl/trainer/__init__.py": "", "trl/trainer_base.py": "class Base: pass\n",
        "trl/trainer/sft_trainer.py": TRL_SFT, "trl/trainer/sft_config.py": SFT_CONFIG,
        "trl/trainer/bco_trainer.py": STUB,
        "trl/experimental/__init__.py": "",
        "trl/experimental/bco/__init__.py": "from .bco_trainer import BCOTrainer\n",
        "trl/experimental/bco/bco_trainer.py": "class BCOTrainer:\n    def __init__(self, model, args=None): pass\n",
    })
    ex = trainers_gen.extract(new)
    assert ex["SFTTrainer"]["params"] == ["model", "args", "formatting_func"]
    assert ex["SFTTrainer"]["config"] == "SFTConfig"
    assert ex["BCOTrainer"]["stub"].startswith("The `BCOTrainer` is now located")
    assert ex["BCOTrainer"]["params"] == ["model", "args"] and ex["BCOTrainer"]["module"] == "trl.trainer.bco_trainer"
    doc = trainers_gen.build(["0.12.0", "0.13.0"], {"0.12.0": old, "0.13.0": new})
    moved = doc["trainers"]["SFTTrainer"]["moved"]
    assert moved == {"packing": {"config": "SFTConfig", "removed_in": "0.13.0", "deprecated_in": "0.12.0"}}


MODELING_UTILS = '''
class ModuleUtilsMixin:
    def num_parameters(self, only_trainable=False): pass
class PreTrainedModel(ModuleUtilsMixin):
    def activation_checkpointing_enable(self, activation_checkpointing_kwargs=None): pass
    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None, **kwargs):
        warnings.warn("`gradient_checkpointing_enable` is deprecated. Use `activation_checkpointing_enable`.")
        self.activation_checkpointing_enable(gradient_checkpointing_kwargs)
    def old_format(self):
        logger.warning("You are using an old version of the checkpointing format that is deprecated")
        self.num_parameters()
    @property
    def is_activation_checkpointing(self): return True
    @classmethod
    def from_pretrained(cls, name, *args, token=None, **kwargs):
        use_auth_token = kwargs.pop("use_auth_token", None)
        cls._helper(kwargs)
    @staticmethod
    def _helper(kwargs):
        kwargs.get("trust_remote_code")
'''
MODELING_LLAMA = '''
from ...modeling_utils import PreTrainedModel
from ...modeling_layers import GenericForSequenceClassification
class LlamaPreTrainedModel(PreTrainedModel): pass
class LlamaForCausalLM(LlamaPreTrainedModel):
    @deprecate_kwarg("past_key_values", new_name="cache")
    def forward(self, input_ids=None, labels=None, cache=None, **kwargs): pass
class LlamaForSequenceClassification(GenericForSequenceClassification, LlamaPreTrainedModel): pass
__all__ = ["LlamaPreTrainedModel", "LlamaForCausalLM", "LlamaForSequenceClassification"]
'''
LAYERS = "class GenericForSequenceClassification:\n    def forward(self, input_ids=None, labels=None): pass\n"


def test_model_api_extraction(tmp_path):
    whl = make_wheel(tmp_path, "transformers", {
        "transformers/__init__.py": "", "transformers/modeling_utils.py": MODELING_UTILS,
        "transformers/modeling_layers.py": LAYERS,
        "transformers/models/__init__.py": "", "transformers/models/llama/__init__.py": "",
        "transformers/models/llama/modeling_llama.py": MODELING_LLAMA,
    })
    methods, forward, loaders = api_gen.extract(whl, ["llama"])
    g = methods["gradient_checkpointing_enable"]
    assert g["alias_of"] == "activation_checkpointing_enable" and "deprecated" in g["deprecated"]
    assert methods["old_format"]["deprecated"] is None  # a warning about something else
    assert methods["num_parameters"]["params"] == ["only_trainable"]  # from a base class
    assert methods["is_activation_checkpointing"]["kind"] == "property"
    assert forward["LlamaForCausalLM"] == {"model_type": "llama", "params": ["input_ids", "labels", "cache"],
                                           "varkw": True, "aliases": {"past_key_values": "cache"}}
    assert forward["LlamaForSequenceClassification"]["params"] == ["input_ids", "labels"]
    assert "LlamaPreTrainedModel" not in forward
    lo = loaders["PreTrainedModel.from_pretrained"]
    assert {"use_auth_token", "trust_remote_code"} <= set(lo["kwargs_keys"]) and "token" in lo["params"]


script_args_gen = _load("gen_trl_script_args")

SCRIPT_UTILS = '''
from dataclasses import dataclass, field
@dataclass
class ScriptArguments:
    dataset_name: str = field(default=None, metadata={"help": "Dataset name."})
    dataset_train_split: str = "train"
@dataclass
class _Private:
    x: int = 1
'''
GRPO_SCRIPT = '''
from dataclasses import dataclass, field
from trl import ScriptArguments
@dataclass
class GRPOScriptArguments(ScriptArguments):
    reward_model_name_or_path: str = None
'''
MODEL_CONFIG = '''
from dataclasses import dataclass, field
@dataclass
class ModelConfig:
    model_name_or_path: str = None
    torch_dtype: str = field(default=None, metadata={"help": "Deprecated, use `dtype` instead."})
    dtype: str = "float32"
'''
COLLATOR = '''
from dataclasses import dataclass
from transformers.data.data_collator import DataCollatorMixin
@dataclass
class DataCollatorForPreference(DataCollatorMixin):
    pad_token_id: int = 0
'''


def test_trl_script_args_extraction_and_import_names(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    old = make_wheel(tmp_path / "a", "trl", {
        "trl/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .utils import ScriptArguments\n",
        "trl/utils.py": SCRIPT_UTILS,
        "trl/trainer/__init__.py": "", "trl/trainer/model_config.py": MODEL_CONFIG,
    })
    new = make_wheel(tmp_path / "b", "trl", {
        "trl/__init__.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                            "    from .scripts import ScriptArguments\n    from .trainer import ModelConfig\n"),
        "trl/scripts/__init__.py": "from .utils import ScriptArguments\n",
        "trl/scripts/utils.py": SCRIPT_UTILS, "trl/scripts/grpo.py": GRPO_SCRIPT,
        "trl/trainer/__init__.py": "from .model_config import ModelConfig\n",
        "trl/trainer/model_config.py": MODEL_CONFIG.replace("    torch_dtype: str = field(default=None, metadata="
                                                            "{\"help\": \"Deprecated, use `dtype` instead.\"})\n", ""),
        "trl/trainer/dpo_trainer.py": COLLATOR,
    })
    classes, names = script_args_gen.extract(new)
    assert set(classes) == {"trl.scripts.utils.ScriptArguments", "trl.scripts.grpo.GRPOScriptArguments",
                            "trl.trainer.model_config.ModelConfig"}  # no private class, no collator on a base
    # outside the wheel
    assert list(classes["trl.scripts.grpo.GRPOScriptArguments"]["fields"]) == [
        "dataset_name", "dataset_train_split", "reward_model_name_or_path"]
    assert "help" not in classes["trl.scripts.utils.ScriptArguments"]["fields"]["dataset_name"]
    assert names["trl.ScriptArguments"] == names["trl.scripts.ScriptArguments"] == "trl.scripts.utils.ScriptArguments"
    assert names["trl.ModelConfig"] == "trl.trainer.model_config.ModelConfig"
    old_classes, _ = script_args_gen.extract(old)
    assert old_classes["trl.trainer.model_config.ModelConfig"]["deprecations"]["torch_dtype"].startswith("Deprecated")
    doc = script_args_gen.build(["0.12.0", "0.13.0"], {"0.12.0": old, "0.13.0": new})
    assert doc["names"]["trl.ScriptArguments"] == [[0, 0, "trl.utils.ScriptArguments"],
                                                   [1, 1, "trl.scripts.utils.ScriptArguments"]]
    mc = doc["classes"]["trl.trainer.model_config.ModelConfig"]["fields"]
    assert [v["v"] for v in mc["torch_dtype"]] == [[0, 0]] and mc["torch_dtype"][0]["deprecated"] == 0
    assert [v["v"] for v in mc["dtype"]] == [[0, 1]]
