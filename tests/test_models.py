import json
from importlib import resources

import pytest

from trainlint.knowledge.models import (
    SUPPORTED_MODEL_TYPES,
    count_parameters,
    lookup_model,
    model_from_config,
)

M = 10**6
B = 10**9


def _rows():
    return json.loads(resources.files("trainlint.knowledge").joinpath("data/models.json").read_text())["models"]


def test_table_size_and_fields():
    rows = _rows()
    assert len(rows) >= 40
    ids = [r["hub_id"].lower() for r in rows]
    assert len(ids) == len(set(ids))
    for r in rows:
        assert r["source"] == f"https://huggingface.co/{r['hub_id']}/blob/main/config.json"
        assert r["model_type"] in SUPPORTED_MODEL_TYPES
        assert r["params"] >= r["backbone_params"] >= r["largest_layer_params"] > 0
        assert r["torch_dtype"] in ("float32", "float16", "bfloat16")
        assert r["num_layers"] and r["hidden_size"] and r["vocab_size"] and r["num_heads"]


def test_table_counts_match_the_formula_for_the_recorded_config():
    for r in _rows():
        c = count_parameters(r["config"])
        assert (c.params, c.backbone_params, c.largest_layer_params) == (
            r["params"], r["backbone_params"], r["largest_layer_params"]), r["hub_id"]


# Published counts (model cards, papers, DeepSpeed docs). Exact where the source is exact.
PUBLISHED = [
    ("bert-base-uncased", "params", 109_482_240, 0),
    ("bert-base-uncased", "params", 109.5 * M, 0.001),
    ("bert-large-uncased", "params", 335 * M, 0.01),
    ("distilbert-base-uncased", "params", 66 * M, 0.01),
    ("roberta-base", "params", 125 * M, 0.01),
    ("roberta-large", "params", 355 * M, 0.01),
    ("microsoft/deberta-v3-base", "params", 184 * M, 0.01),
    ("microsoft/deberta-v3-large", "params", 435 * M, 0.01),
    ("albert-base-v2", "params", 11.7 * M, 0.01),
    ("bigscience/T0_3B", "backbone_params", 2783 * M, 0.001),  # DeepSpeed docs
    ("bigscience/T0_3B", "largest_layer_params", 65.8 * M, 0.01),  # "65M largest layer"
    ("google/flan-t5-large", "params", 783 * M, 0.001),
    ("google/flan-t5-xl", "params", 2.85 * B, 0.01),
    ("google/flan-t5-small", "params", 77 * M, 0.01),
    ("t5-small", "params", 60.5 * M, 0.01),
    ("t5-base", "params", 223 * M, 0.01),
    ("t5-large", "params", 738 * M, 0.01),
    ("facebook/bart-large", "params", 406 * M, 0.01),
    ("gpt2", "params", 124_439_808, 0),
    ("gpt2-xl", "params", 1.558 * B, 0.001),
    ("meta-llama/Llama-2-7b-hf", "params", 6_738_415_616, 0),
    ("meta-llama/Llama-2-13b-hf", "params", 13.016 * B, 0.001),
    ("meta-llama/Llama-2-70b-hf", "params", 68.98 * B, 0.001),
    ("meta-llama/Meta-Llama-3-8B", "params", 8.03 * B, 0.001),
    ("meta-llama/Meta-Llama-3-70B", "params", 70.55 * B, 0.001),
    ("meta-llama/Llama-3.1-405B", "params", 405.85 * B, 0.001),
    ("meta-llama/Llama-3.2-1B", "params", 1.236 * B, 0.001),
    ("meta-llama/Llama-3.2-3B", "params", 3.213 * B, 0.001),
    ("mistralai/Mistral-7B-v0.1", "params", 7.24 * B, 0.001),
    ("mistralai/Mixtral-8x7B-v0.1", "params", 46.7 * B, 0.001),
    ("Qwen/Qwen2.5-0.5B", "params", 0.49 * B, 0.01),
    ("Qwen/Qwen2.5-7B", "params", 7.61 * B, 0.001),
    ("Qwen/Qwen2.5-72B", "params", 72.7 * B, 0.001),
    ("google/gemma-2b", "params", 2.51 * B, 0.002),
    ("google/gemma-7b", "params", 8.54 * B, 0.001),
    ("google/gemma-2-9b", "params", 9.24 * B, 0.001),
    ("google/gemma-2-27b", "params", 27.2 * B, 0.002),
    ("microsoft/phi-2", "params", 2.78 * B, 0.001),
    ("microsoft/Phi-3-mini-4k-instruct", "params", 3.82 * B, 0.001),
    ("facebook/opt-125m", "params", 125 * M, 0.01),
    ("facebook/opt-1.3b", "params", 1.3 * B, 0.02),
    ("tiiuae/falcon-7b", "params", 6.92 * B, 0.001),
    ("EleutherAI/pythia-70m", "params", 70_426_624, 0),
    ("EleutherAI/pythia-1b", "params", 1_011_781_632, 0),
    ("EleutherAI/pythia-12b", "params", 11_846_072_320, 0),
]


@pytest.mark.parametrize("name, field, value, tol", PUBLISHED)
def test_published_counts(name, field, value, tol):
    info = lookup_model(name)
    assert info is not None, name
    got = getattr(info, field)
    assert abs(got - value) <= tol * value, (name, field, got, value)


def test_facts_of_key_rows():
    t0 = lookup_model("bigscience/T0_3B")
    assert t0.model_type == "t5" and t0.encoder_decoder and t0.num_layers == 24 and t0.hidden_size == 2048
    assert t0.largest_layer_params == 32128 * 2048
    llama = lookup_model("meta-llama/Llama-2-7b-hf")
    assert llama.torch_dtype == "float16" and llama.num_kv_heads == 32 and llama.vocab_size == 32000
    assert llama.largest_layer_params == 32000 * 4096
    l3 = lookup_model("meta-llama/Meta-Llama-3-8B")
    assert l3.torch_dtype == "bfloat16" and l3.num_kv_heads == 8 and l3.intermediate_size == 14336
    assert lookup_model("bert-base-uncased").torch_dtype == "float32"
    assert lookup_model("meta-llama/Llama-3.2-1B").tied_embeddings is True


@pytest.mark.parametrize(
    "text, hub_id",
    [
        ("bert-base-uncased", "google-bert/bert-base-uncased"),
        ("BERT-BASE-UNCASED", "google-bert/bert-base-uncased"),
        ("google-bert/bert-base-uncased", "google-bert/bert-base-uncased"),
        ("bigscience/t0_3b", "bigscience/T0_3B"),
        ("T0_3B", "bigscience/T0_3B"),
        ("meta-llama/llama-2-7b-chat-hf", "meta-llama/Llama-2-7b-hf"),
        ("Llama-2-7b-hf", "meta-llama/Llama-2-7b-hf"),
        ("meta-llama/Llama-2-7b", "meta-llama/Llama-2-7b-hf"),  # without -hf
        ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B"),
        ("gpt2", "openai-community/gpt2"),
        ("t5-small", "google-t5/t5-small"),
        ("google/flan-t5-large", "google/flan-t5-large"),
        (" google/flan-t5-large/ ", "google/flan-t5-large"),
    ],
)
def test_lookup_names(text, hub_id):
    info = lookup_model(text)
    assert info is not None and info.hub_id == hub_id


@pytest.mark.parametrize("text", ["", "someone/unknown-model", "./no/such/folder", "bert"])
def test_lookup_unknown(text):
    assert lookup_model(text) is None


def test_unknown_architecture_from_local_folder(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mamba", "hidden_size": 768,
                                                      "num_hidden_layers": 24, "vocab_size": 50280}))
    info = lookup_model(str(tmp_path))
    assert info is not None and info.model_type == "mamba"
    assert info.params is None and info.largest_layer_params is None and not info.known
    assert info.hidden_size == 768 and info.num_layers == 24


def test_broken_local_config(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    assert lookup_model(str(tmp_path)) is None
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))  # fields missing
    info = lookup_model(str(tmp_path))
    assert info is not None and info.params is None


def test_relative_path_against_base_dir(tmp_path):
    d = tmp_path / "ckpt"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(_rows()[0]["config"]))
    info = lookup_model("ckpt", base_dir=tmp_path)
    assert info is not None and info.params == _rows()[0]["params"] and info.from_config.endswith("config.json")


def test_local_folder_shadows_hub_name(tmp_path, monkeypatch):
    d = tmp_path / "gpt2"
    d.mkdir()
    cfg = dict(model_type="gpt2", vocab_size=1000, n_embd=64, n_layer=2, n_head=4, n_positions=128)
    (d / "config.json").write_text(json.dumps(cfg))
    monkeypatch.chdir(tmp_path)
    info = lookup_model("gpt2")
    assert info.vocab_size == 1000  # the folder, as from_pretrained would load it


def test_model_from_config_fields():
    info = model_from_config(_rows()[0]["config"], hub_id="x")
    assert info.hub_id == "x" and info.params == 109_482_240 and info.intermediate_size == 3072


# ---------------------------------------------------------------- against real torch models

TINY = {
    "bert": dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                 max_position_embeddings=128),
    "roberta": dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=128, max_position_embeddings=130, type_vocab_size=1),
    "xlm-roberta": dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=130, type_vocab_size=1),
    "electra": dict(vocab_size=1000, embedding_size=32, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=128, max_position_embeddings=128),
    "distilbert": dict(vocab_size=1000, dim=64, hidden_dim=128, n_layers=2, n_heads=4, max_position_embeddings=128),
    "albert": dict(vocab_size=1000, embedding_size=16, hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                   intermediate_size=128, max_position_embeddings=128),
    "deberta-v2": dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=128, max_position_embeddings=128, relative_attention=True,
                       position_buckets=16, norm_rel_ebd="layer_norm", share_att_key=False,
                       pos_att_type=["p2c", "c2p"], position_biased_input=False, type_vocab_size=0),
    "t5": dict(vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=3, num_heads=4),
    "mt5": dict(vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4),
    "bart": dict(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                 decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=96, max_position_embeddings=128),
    "gpt2": dict(vocab_size=1000, n_embd=64, n_layer=2, n_head=4, n_positions=128),
    "llama": dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=128),
    "mistral": dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128),
    "mixtral": dict(vocab_size=1000, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, max_position_embeddings=128, num_local_experts=4),
    "qwen2": dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=128, tie_word_embeddings=True),
    "gemma": dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=1, head_dim=32, max_position_embeddings=128),
    "gemma2": dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=16, max_position_embeddings=128),
    "phi": dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                max_position_embeddings=128),
    "phi3": dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=128, pad_token_id=0),
    "opt": dict(vocab_size=1000, hidden_size=64, ffn_dim=128, num_hidden_layers=2, num_attention_heads=4,
                word_embed_proj_dim=32, max_position_embeddings=128, do_layer_norm_before=False),
    "falcon": dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4),
    "gpt_neox": dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, max_position_embeddings=128),
}
FALCON_NEW = dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=8, num_kv_heads=2,
                  new_decoder_architecture=True, bias=True)


def _real_counts(config):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    mt = config.model_type
    with torch.device("meta"):
        base = transformers.AutoModel.from_config(config)
        if mt in ("t5", "mt5", "bart"):
            full = transformers.AutoModelForSeq2SeqLM.from_config(config)
        elif mt in ("bert", "roberta", "xlm-roberta", "electra", "distilbert", "albert", "deberta-v2"):
            full = base
        else:
            full = transformers.AutoModelForCausalLM.from_config(config)
    n_full = sum(p.numel() for p in full.parameters())
    n_base = sum(p.numel() for p in base.parameters())
    largest = max(sum(p.numel() for p in m.parameters(recurse=False)) for m in full.modules())
    return n_full, n_base, largest


def _check_folder(tmp_path, config):
    config.save_pretrained(tmp_path)
    info = lookup_model(str(tmp_path))
    assert info is not None and info.known, config.model_type
    assert (info.params, info.backbone_params, info.largest_layer_params) == _real_counts(config)
    return info


@pytest.mark.parametrize("model_type", sorted(TINY))
def test_local_config_matches_torch_model(tmp_path, model_type):
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model(model_type, **TINY[model_type])
    _check_folder(tmp_path, config)


def test_every_supported_type_has_a_torch_check():
    assert set(TINY) == set(SUPPORTED_MODEL_TYPES) - {"camembert"}


def test_falcon_new_decoder_architecture(tmp_path):
    transformers = pytest.importorskip("transformers")
    _check_folder(tmp_path, transformers.FalconConfig(**FALCON_NEW))


def test_tiny_bert_with_the_real_model_class(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(**TINY["bert"])
    config.save_pretrained(tmp_path)
    model = transformers.BertModel(config)  # real weights on CPU, tiny
    info = lookup_model(str(tmp_path))
    assert info.params == sum(p.numel() for p in model.parameters())
    assert info.num_layers == 2 and info.hidden_size == 64 and info.vocab_size == 1000
    del torch


def test_tied_and_untied_llama(tmp_path):
    transformers = pytest.importorskip("transformers")
    tied = transformers.LlamaConfig(**TINY["llama"], tie_word_embeddings=True)
    a = _check_folder(tmp_path / "a", tied)
    untied = transformers.LlamaConfig(**TINY["llama"], tie_word_embeddings=False)
    b = _check_folder(tmp_path / "b", untied)
    assert b.params - a.params == 1000 * 64
    assert a.tied_embeddings is True and b.tied_embeddings is False
