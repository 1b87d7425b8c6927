"""The generated API data (TRL trainer signatures, public names, model methods and forward
signatures, loaders) against the catalog's facts and against the installed libraries."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from trainlint.knowledge import model_api, public_names, trl_trainers
from trainlint.knowledge.training_args import vkey


def _params(func) -> tuple[list[str], bool]:
    sig = inspect.signature(func)
    names = [p.name for p in sig.parameters.values()
             if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in ("self", "cls")]
    varkw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    return names, varkw


def _installed(package: str, known: list[str]):
    mod = pytest.importorskip(package)
    if mod.__version__ not in known:
        pytest.skip(f"installed {package} {mod.__version__} is not a data version")
    return mod


# --------------------------------------------------------------------------- TRL trainers


def test_sft_trainer_keywords_moved_to_sftconfig_in_013():
    for kw in ("dataset_text_field", "packing", "max_seq_length", "dataset_num_proc", "dataset_batch_size",
               "neftune_noise_alpha", "model_init_kwargs", "dataset_kwargs", "eval_packing", "num_of_sequences",
               "chars_per_token"):
        m = trl_trainers.moved("SFTTrainer", kw)
        assert m is not None, kw
        assert (m.config, m.removed_in, m.deprecated_in) == ("SFTConfig", "0.13.0", "0.12.0"), kw
        s12 = trl_trainers.signature("SFTTrainer", "0.12.2")
        assert kw in s12.params and kw in s12.deprecated
        assert not trl_trainers.signature("SFTTrainer", "0.13.0").accepts(kw)
    assert trl_trainers.moved("SFTTrainer", "formatting_func") is None  # still a trainer argument


def test_dpo_and_reward_trainer_moves():
    for kw in ("beta", "label_smoothing", "loss_type", "max_length", "max_prompt_length", "max_target_length",
               "truncation_mode", "padding_value", "precompute_ref_log_probs"):
        m = trl_trainers.moved("DPOTrainer", kw)
        assert m is not None and (m.config, m.removed_in) == ("DPOConfig", "0.13.0"), kw
    m = trl_trainers.moved("RewardTrainer", "max_length")
    assert m is not None and (m.config, m.removed_in) == ("RewardConfig", "0.14.0")


def test_tokenizer_alias_windows():
    assert trl_trainers.signature("SFTTrainer", "0.12.0").aliases == {"tokenizer": "processing_class"}
    assert "tokenizer" in trl_trainers.signature("SFTTrainer", "0.15.2").aliases
    assert "tokenizer" not in trl_trainers.signature("SFTTrainer", "0.16.0").aliases
    assert trl_trainers.signature("SFTTrainer", "0.12.0").config == "SFTConfig"
    assert trl_trainers.signature("GRPOTrainer", "0.13.0") is None  # GRPO came in 0.14


def test_experimental_stubs():
    s = trl_trainers.signature("BCOTrainer", "0.27.0")
    assert s is not None and s.stub and "trl.experimental" in s.stub
    assert s.params  # the stub forwards to the experimental class, whose parameters are kept
    assert trl_trainers.signature("BCOTrainer", "0.24.0").stub is None
    assert trl_trainers.signature("BCOTrainer", "0.29.0").module.startswith("trl.experimental.")


def test_version_mapping_takes_the_newest_not_newer():
    assert trl_trainers.signature("SFTTrainer", "0.12.9").version == "0.12.2"
    assert trl_trainers.signature("SFTTrainer", None).version == trl_trainers.known_versions()[-1]


def test_trainer_signatures_match_installed_trl():
    trl = _installed("trl", trl_trainers.known_versions())
    checked = 0
    for name in trl_trainers.trainers(trl.__version__):
        s = trl_trainers.signature(name, trl.__version__)
        if s is None:
            continue
        try:
            cls = getattr(importlib.import_module(s.module), name)
        except Exception:  # an optional dependency of an experimental trainer
            continue
        params, varkw = _params(cls.__init__)
        if s.aliases:
            continue  # a decorator wraps __init__; its signature is the wrapper's
        assert list(s.params) == params, name
        assert s.varkw == varkw, name
        checked += 1
    assert checked >= 5


# --------------------------------------------------------------------------- public names


def test_catalog_removals():
    h = public_names.history
    assert h("transformers", "AdamW").removed_in == "4.50.0"
    for name in ("TextDataset", "LineByLineTextDataset", "AutoModelWithLMHead"):
        assert h("transformers", name).removed_in == "5.0.0", name
    # the catalog says "absent from 5.x"; the wheels show it left the top level in 4.51.0
    assert h("transformers", "is_torch_tpu_available").removed_in == "4.51.0"
    assert public_names.exists("transformers", "is_torch_xla_available", "5.24.0")
    assert h("trl", "DataCollatorForCompletionOnlyLM").removed_in == "0.20.0"
    assert h("trl", "pack_examples").removed_in == "0.20.0"
    for name in ("AlignPropTrainer", "DDPOTrainer"):
        assert h("trl", name).removed_in == "0.24.0", name
    for name in ("BCOTrainer", "CPOTrainer", "GKDTrainer", "NashMDTrainer", "OnlineDPOTrainer", "ORPOTrainer",
                 "PPOTrainer", "PRMTrainer", "XPOTrainer"):
        assert h("trl", name).removed_in == "0.29.0", name
    assert h("peft", "prepare_model_for_int8_training").removed_in == "0.10.0"
    assert public_names.exists("peft", "prepare_model_for_kbit_training", "0.10.0")
    assert public_names.exists("transformers", "Trainer", "4.40.0") and public_names.exists("trl", "SFTTrainer")


def test_removed_names_file_agrees_with_the_full_table():
    removed = public_names.removed("trl", "BCOTrainer")
    assert removed is not None and removed.removed_in == "0.29.0"
    assert public_names.import_path("trl", "BCOTrainer", "0.29.0") == "trl.experimental.bco"
    assert public_names.import_path("trl", "BCOTrainer", "0.28.0") is None  # still top-level
    assert public_names.removed("transformers", "Trainer") is None
    assert public_names.removed("transformers", "AdamW").removed_in == "4.50.0"


def _re_added(package: str) -> list[str]:
    """The names of the data that a release dropped and a later one exports again (present in
    the newest known version, with more than one run)."""
    newest = public_names.known_versions(package)[-1]
    return [n for n in public_names.removed_names(package)
            if public_names.exists(package, n, newest) and len(public_names.removed(package, n).present) > 1]


def test_a_name_removed_then_re_added_is_missing_only_in_the_gap():
    re_added = _re_added("transformers")
    # transformers 4.45-4.51 listed each model's names in the top-level __init__, without the
    # layers; 4.52 read every model's __all__ (define_import_structure), which has them again
    assert "BertLayer" in re_added and len(re_added) >= 20, re_added
    h = public_names.removed("transformers", "BertLayer")
    assert h.removed_in is None and h.gaps == (("4.45.0", "4.52.1"),)
    for v in ("4.45.0", "4.48.0", "4.51.3", "4.51.9"):  # 4.51.9: between known releases, counts as 4.51.3
        m = public_names.missing_at("transformers", "BertLayer", v)
        assert m is not None and m.gap_at(v) == ("4.45.0", "4.52.1") and not m.present_in(v), v
    for v in ("4.40.0", "4.44.2", "4.52.1", "5.0.0", public_names.known_versions("transformers")[-1], None):
        assert public_names.missing_at("transformers", "BertLayer", v) is None, v
        assert public_names.exists("transformers", "BertLayer", v) and h.present_in(v or "5.0.0"), v
    # every re-added and every removed name: missing_at agrees with the full table at every known version
    vs = public_names.known_versions("transformers")
    for n in re_added + ["AdamW", "QDQBertLayer"]:
        first = public_names.history("transformers", n).first
        for v in vs:
            had = vkey(v) > vkey(first)
            missing = public_names.missing_at("transformers", n, v) is not None
            assert missing == (had and not public_names.exists("transformers", n, v)), (n, v)


def test_a_name_removed_twice_reports_the_gap_of_the_version():
    h = public_names.history("transformers", "QDQBertLayer")
    assert h.gaps == (("4.45.0", "4.52.1"), ("5.0.0", None)) and h.removed_in == "5.0.0"
    assert public_names.missing_at("transformers", "QDQBertLayer", "4.50.0").gap_at("4.50.0") == ("4.45.0", "4.52.1")
    assert public_names.missing_at("transformers", "QDQBertLayer", "5.1.0").gap_at("5.1.0") == ("5.0.0", None)
    assert public_names.missing_at("transformers", "QDQBertLayer", "4.57.6") is None


def _missing_backend(mod, name: str) -> bool:
    """``name`` is served as a placeholder whose backend is not installed (transformers'
    ``DummyObject``), which the lazy module's ``Fast`` fallback cannot resolve."""
    try:
        obj = getattr(mod, name)
    except (AttributeError, ImportError):
        return False
    return type(obj).__name__ == "DummyObject" or "Placeholder" in getattr(obj, "__qualname__", "")


@pytest.mark.parametrize("package", public_names.PACKAGES)
def test_public_names_match_installed(package):
    mod = _installed(package, public_names.known_versions(package))
    data = public_names.names(package, mod.__version__)
    installed = {n for n in dir(mod) if (not n.startswith("_") or n == "__version__")
                 and "." not in n and n != "DummyObject"}
    assert installed <= data, sorted(installed - data)[:20]
    root = Path(mod.__file__).parent
    init = (root / "__init__.py").read_text(encoding="utf-8")
    for n in data - installed:
        # a submodule not imported yet, or an object the lazy module serves on access
        if (root / n).is_dir() or (root / f"{n}.py").is_file():
            continue
        try:
            getattr(mod, n)
        except AttributeError:
            if n.endswith("Fast") and _missing_backend(mod, n[:-4]):
                continue  # a lazy fallback to a class whose backend (sentencepiece) is not installed here
            # listed in a branch of an optional backend that is not installed here (PilBackend)
            assert f'"{n}"' in init, n


def test_removed_transformers_names_fail_on_installed():
    """A name the data calls removed at the installed version is an AttributeError there, and
    one it restored (the lazy module's fallbacks: ``BertTokenizerFast`` -> ``BertTokenizer``,
    ``LayoutLMTokenizer`` through ``SLOW_TO_FAST_CONVERTERS``) imports."""
    mod = _installed("transformers", public_names.known_versions("transformers"))
    v = mod.__version__
    if not v.startswith("5."):
        pytest.skip("the fallbacks are transformers 5's")
    for n in ("BertTokenizerFast", "GPTNeoXTokenizerFast", "LayoutLMTokenizer", "LayoutLMTokenizerFast"):
        assert public_names.exists("transformers", n, v) and public_names.removed("transformers", n) is None, n
        getattr(mod, n)
    gone = [n for n in public_names.removed_names("transformers") if not public_names.exists("transformers", n, v)]
    assert "AdamW" in gone and "CLIPFeatureExtractor" in gone
    importable = []
    for n in gone:
        try:
            getattr(mod, n)
            importable.append(n)
        except (AttributeError, ImportError, RuntimeError):
            pass
    assert not importable, importable[:20]


# --------------------------------------------------------------------------- model API


def test_checkpointing_methods():
    new = model_api.method("activation_checkpointing_enable", "5.24.0")
    assert new is not None and "activation_checkpointing_kwargs" in new.params
    assert model_api.method("activation_checkpointing_enable", "5.22.0") is None
    old = model_api.method("gradient_checkpointing_enable", "5.24.0")
    assert old.deprecated and old.alias_of == "activation_checkpointing_enable"
    assert model_api.method("gradient_checkpointing_enable", "5.22.0").deprecated is None
    assert model_api.method_history("gradient_checkpointing_enable")[1] == "5.23.0"
    assert model_api.method("is_gradient_checkpointing", "5.24.0").alias_of == "is_activation_checkpointing"
    assert model_api.method("is_gradient_checkpointing", "5.24.0").kind == "property"


def test_forward_data():
    f = model_api.forward("LlamaForCausalLM", "4.40.0")
    assert f is not None and "labels" in f.params and not f.varkw
    assert not f.accepts("text")
    assert model_api.forward("LlamaForCausalLM", "5.24.0").varkw  # **kwargs: TransformersKwargs
    assert "token_type_ids" in model_api.forward("BertForSequenceClassification", "5.24.0").params
    assert model_api.forward("NoSuchModel") is None


def test_loader_kwargs():
    tok = model_api.loader("PreTrainedTokenizerBase.from_pretrained", "4.57.6")
    assert tok is not None and tok.handles("use_auth_token") and tok.handles("token")
    assert not model_api.loader("PreTrainedTokenizerBase.from_pretrained", "5.0.0").handles("use_auth_token")
    push = model_api.loader("Trainer.push_to_hub", "5.24.0")
    assert push.handles("commit_message") and not push.handles("use_auth_token") and not push.handles("repo_name")


def test_model_methods_match_installed_transformers():
    transformers = _installed("transformers", model_api.known_versions())
    from transformers import PreTrainedModel

    v = transformers.__version__
    checked = 0
    for name in ("gradient_checkpointing_enable", "gradient_checkpointing_disable", "activation_checkpointing_enable",
                 "activation_checkpointing_disable", "enable_input_require_grads", "resize_token_embeddings"):
        m = model_api.method(name, v)
        assert m is not None, name
        params, varkw = _params(getattr(PreTrainedModel, name))
        assert (list(m.params), m.varkw) == (params, varkw), name
        checked += 1
    assert model_api.method("is_activation_checkpointing", v).kind == "property"
    assert isinstance(inspect.getattr_static(PreTrainedModel, "is_activation_checkpointing"), property)
    assert checked == 6


def test_forward_matches_installed_transformers():
    transformers = _installed("transformers", model_api.known_versions())
    v = transformers.__version__
    checked = 0
    for cls_name in model_api.forward_classes():
        f = model_api.forward(cls_name, v)
        if f is None or not hasattr(transformers, cls_name):
            continue
        cls = getattr(transformers, cls_name)
        params, varkw = _params(inspect.unwrap(cls.forward))
        assert list(f.params) == params, cls_name
        assert f.varkw == varkw, cls_name
        checked += 1
    assert checked >= 50


def test_forward_names_cover_installed_model_classes():
    # every model class of the installed transformers with a forward of its own: what it takes
    # is in forward_names (the table's classes and forward_any)
    transformers = _installed("transformers", model_api.known_versions())
    checked = 0
    for name in ("SpeechT5ForTextToSpeech", "SpeechT5ForSpeechToText", "WhisperForConditionalGeneration",
                 "Wav2Vec2ForCTC", "BertForSequenceClassification", "CLIPModel", "VitsModel"):
        cls = getattr(transformers, name, None)
        if cls is None or "forward" not in vars(cls):
            continue
        params, _ = _params(inspect.unwrap(cls.forward))
        names = model_api.forward_names(name)
        assert names is not None and set(params) <= names, name
        checked += 1
    assert checked >= 5
    assert "speaker_embeddings" in model_api.forward_names("SpeechT5ForTextToSpeech")
    assert model_api.forward_names("SpeechT5Attention") is None  # layers are not model classes
    assert model_api.forward_names("NoSuchModelForAnything") is None


def test_loaders_match_installed_transformers():
    transformers = _installed("transformers", model_api.known_versions())
    from transformers import PreTrainedTokenizerBase, Seq2SeqTrainer, Trainer

    v = transformers.__version__
    for key, func in (("Trainer.push_to_hub", Trainer.push_to_hub),
                      ("Trainer.create_model_card", Trainer.create_model_card),
                      ("Trainer.__init__", Trainer.__init__),
                      ("Seq2SeqTrainer.__init__", Seq2SeqTrainer.__init__),
                      ("PreTrainedTokenizerBase.from_pretrained", PreTrainedTokenizerBase.from_pretrained)):
        lo = model_api.loader(key, v)
        params, varkw = _params(func)
        assert (list(lo.params), lo.varkw) == (params, varkw), key


def test_keyword_windows_of_the_loaders():
    """The release windows the migration rules read instead of version numbers."""
    assert model_api.keyword_window("Trainer.__init__", "processing_class") == ("4.46.0", None)
    assert model_api.keyword_window("Trainer.__init__", "tokenizer", alias=True) == ("4.40.0", "5.0.0")
    assert model_api.keyword_window("Trainer.__init__", "tokenizer") == ("4.40.0", "4.46.0")  # a parameter
    assert model_api.loader("Trainer.__init__", "4.57.1").aliases == {"tokenizer": "processing_class"}
    fp = "PreTrainedModel.from_pretrained"
    assert model_api.keyword_window(fp, "use_auth_token")[1] == "5.0.0"
    assert model_api.keyword_window(fp, "load_in_8bit")[1] == "5.0.0"
    assert model_api.keyword_window(fp, "dtype") == ("4.56.0", None)
    assert model_api.keyword_window(fp, "no_such_keyword") == (None, None)


# --------------------------------------------------------------------------- TRL parser dataclasses


def test_trl_script_args_versions_and_moves():
    from trainlint.knowledge import trl_script_args as sa

    assert sa.known_versions() == __import__("trainlint.knowledge.training_args", fromlist=["x"]).trl_known_versions()
    assert sa.class_at("trl.ScriptArguments", "0.12.2") == "trl.utils.ScriptArguments"
    assert sa.class_at("trl.ScriptArguments", "0.13.0") == "trl.scripts.utils.ScriptArguments"
    assert sa.class_at("trl.ScriptArguments", "0.8.6") is None  # older than the data: not guessed
    assert sa.class_at("trl.DPOScriptArguments", "0.13.0") is None
    mc_old = sa.field_names("trl.ModelConfig", "0.20.0")
    mc_new = sa.field_names("trl.ModelConfig", "1.16.0")
    assert {"model_name_or_path", "torch_dtype", "lora_r", "use_peft", "load_in_4bit"} <= mc_old
    assert "torch_dtype" not in mc_new and "dtype" in mc_new
    assert sa.present("trl.ModelConfig", "torch_dtype")[0][0] == "0.12.0"
    assert "torch_dtype" in sa.ever_fields("trl.ModelConfig")
    assert {"reward_model_name_or_path", "dataset_name"} <= sa.field_names("trl.scripts.grpo.GRPOScriptArguments",
                                                                         "0.20.0")
    assert not sa.is_known("trl.SFTConfig") and not sa.is_known("mylib.ModelConfig")


@pytest.mark.parametrize("name", ["ScriptArguments", "ModelConfig"])
def test_trl_script_args_match_installed_trl(name):
    import dataclasses

    from trainlint.knowledge import trl_script_args as sa

    trl = _installed("trl", sa.known_versions())
    cls = getattr(trl, name)
    installed = {f.name for f in dataclasses.fields(cls) if f.init}
    assert sa.field_names(f"trl.{name}", trl.__version__) == installed
    assert sa.class_at(f"trl.{name}", trl.__version__) == f"{cls.__module__}.{name}"


def test_auto_classes_have_no_forward_in_the_table():
    """``forward_names`` answers an ``AutoModel...`` class without reading model_forward.json."""
    from trainlint.knowledge import model_api

    data = model_api._forward_data()
    assert not [c for c in (*data["forward"], *data.get("forward_any", {})) if c.startswith("AutoModel")]
    assert model_api.forward_names("AutoModelForSequenceClassification") is None
    assert model_api.forward_names("BertForSequenceClassification") is not None


def test_keyword_window_reads_the_runs_as_the_loaders_do():
    """``keyword_window`` reads the runs directly; it says what ``loader`` says per version."""
    from trainlint.knowledge import model_api

    vs = model_api._data()["versions"]
    assert vs == sorted(set(vs), key=model_api._data()["versions"].index)  # distinct, in order
    for key, e in model_api._data()["loaders"].items():
        words = {w for _, _, ps in e["params"] if ps for w in ps} | {"tokenizer", "no_such_keyword"}
        words |= {w for _, _, ks in e["kwargs_keys"] if ks for w in ks}
        words |= {w for _, _, al in e.get("aliases", []) if al for w in al}
        for w in sorted(words):
            for alias in (False, True):
                flags = []
                for v in vs:
                    lo = model_api.loader(key, v)
                    flags.append(lo is not None and (lo.handles(w) or (alias and w in lo.aliases)))
                if not any(flags):
                    want = (None, None)
                else:
                    first, last = flags.index(True), len(flags) - 1 - flags[::-1].index(True)
                    want = (vs[first], vs[last + 1] if last + 1 < len(vs) else None)
                assert model_api.keyword_window(key, w, alias) == want, (key, w, alias)
