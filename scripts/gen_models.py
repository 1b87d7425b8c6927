"""Generate trainlint/knowledge/data/models.json from the hub config values below.

The config values are those of each model's ``config.json`` on the Hugging Face hub (the
``source`` URL). Counts come from trainlint's own architecture formulas
(``trainlint.knowledge.models.count_parameters``). With ``--verify`` every config is also built
by the installed transformers on the meta device (no weights, no download) and the counts
(total, AutoModel backbone, DeepSpeed's largest layer) must agree exactly.

    python scripts/gen_models.py [--verify]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trainlint.knowledge.models import model_from_config  # noqa: E402

HUB = "https://huggingface.co/{}/blob/main/config.json"


def bert(v=30522, h=768, L=12, a=12, i=3072, p=512, t=2, mt="bert", **kw):
    return dict(model_type=mt, vocab_size=v, hidden_size=h, num_hidden_layers=L, num_attention_heads=a,
                intermediate_size=i, max_position_embeddings=p, type_vocab_size=t, **kw)


def t5(d, dkv, dff, L, H, gated, tied, v=32128, mt="t5", dtype=None):
    c = dict(model_type=mt, vocab_size=v, d_model=d, d_kv=dkv, d_ff=dff, num_layers=L, num_decoder_layers=L,
             num_heads=H, relative_attention_num_buckets=32,
             feed_forward_proj="gated-gelu" if gated else "relu", tie_word_embeddings=tied)
    if dtype:
        c["torch_dtype"] = dtype
    return c


def llama(v, h, i, L, a, kv, p, tied=False, dtype="bfloat16", mt="llama", **kw):
    return dict(model_type=mt, vocab_size=v, hidden_size=h, intermediate_size=i, num_hidden_layers=L,
                num_attention_heads=a, num_key_value_heads=kv, max_position_embeddings=p,
                tie_word_embeddings=tied, torch_dtype=dtype, **kw)


def neox(h, L, a, v=50304, dtype="float16"):
    return dict(model_type="gpt_neox", vocab_size=v, hidden_size=h, intermediate_size=4 * h, num_hidden_layers=L,
                num_attention_heads=a, max_position_embeddings=2048, tie_word_embeddings=False,
                rotary_pct=0.25, torch_dtype=dtype)


def opt(h, L, a, ffn, proj=None, ln_before=True, dtype="float16"):
    return dict(model_type="opt", vocab_size=50272, hidden_size=h, num_hidden_layers=L, num_attention_heads=a,
                ffn_dim=ffn, word_embed_proj_dim=proj or h, max_position_embeddings=2048,
                do_layer_norm_before=ln_before, enable_bias=True, torch_dtype=dtype)


def gpt2(h, L, a, v=50257):
    return dict(model_type="gpt2", vocab_size=v, n_embd=h, n_layer=L, n_head=a, n_positions=1024, n_ctx=1024)


# (hub_id, aliases, config, published count note)
MODELS = [
    ("google-bert/bert-base-uncased", ["bert-base-uncased"], bert(), "110M (model card); 109,482,240 for BertModel"),
    ("google-bert/bert-base-cased", ["bert-base-cased"], bert(v=28996), "109M (model card)"),
    ("google-bert/bert-large-uncased", ["bert-large-uncased"], bert(h=1024, L=24, a=16, i=4096), "336M (model card)"),
    ("google-bert/bert-large-cased", ["bert-large-cased"], bert(v=28996, h=1024, L=24, a=16, i=4096), "333M (model card)"),
    ("google-bert/bert-base-multilingual-cased", ["bert-base-multilingual-cased"], bert(v=119547), "179M (model card)"),
    ("distilbert/distilbert-base-uncased", ["distilbert-base-uncased"],
     dict(model_type="distilbert", vocab_size=30522, dim=768, hidden_dim=3072, n_layers=6, n_heads=12,
          max_position_embeddings=512), "66M (model card)"),
    ("distilbert/distilbert-base-cased", ["distilbert-base-cased"],
     dict(model_type="distilbert", vocab_size=28996, dim=768, hidden_dim=3072, n_layers=6, n_heads=12,
          max_position_embeddings=512), "65M (model card)"),
    ("FacebookAI/roberta-base", ["roberta-base"], bert(v=50265, p=514, t=1, mt="roberta"), "125M (model card)"),
    ("FacebookAI/roberta-large", ["roberta-large"], bert(v=50265, h=1024, L=24, a=16, i=4096, p=514, t=1, mt="roberta"),
     "355M (model card)"),
    ("FacebookAI/xlm-roberta-base", ["xlm-roberta-base"], bert(v=250002, p=514, t=1, mt="xlm-roberta"), "279M (model card)"),
    ("FacebookAI/xlm-roberta-large", ["xlm-roberta-large"],
     bert(v=250002, h=1024, L=24, a=16, i=4096, p=514, t=1, mt="xlm-roberta"), "561M (model card)"),
    ("microsoft/deberta-v3-base", ["deberta-v3-base"],
     bert(v=128100, t=0, mt="deberta-v2", relative_attention=True, position_buckets=256, norm_rel_ebd="layer_norm",
          share_att_key=True, pos_att_type="p2c|c2p", position_biased_input=False, max_relative_positions=-1),
     "86M backbone + 98M embedding = 184M (model card)"),
    ("microsoft/deberta-v3-large", ["deberta-v3-large"],
     bert(v=128100, h=1024, L=24, a=16, i=4096, t=0, mt="deberta-v2", relative_attention=True, position_buckets=256,
          norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type="p2c|c2p", position_biased_input=False,
          max_relative_positions=-1),
     "304M backbone + 131M embedding = 435M (model card)"),
    ("microsoft/deberta-v3-small", ["deberta-v3-small"],
     bert(v=128100, L=6, t=0, mt="deberta-v2", relative_attention=True, position_buckets=256, norm_rel_ebd="layer_norm",
          share_att_key=True, pos_att_type="p2c|c2p", position_biased_input=False, max_relative_positions=-1),
     "44M backbone + 98M embedding (model card)"),
    ("albert/albert-base-v2", ["albert-base-v2"],
     bert(v=30000, mt="albert", embedding_size=128, num_hidden_groups=1, inner_group_num=1), "11M (model card)"),
    ("albert/albert-large-v2", ["albert-large-v2"],
     bert(v=30000, h=1024, L=24, a=16, i=4096, mt="albert", embedding_size=128, num_hidden_groups=1, inner_group_num=1),
     "17M (model card)"),
    ("albert/albert-xxlarge-v2", ["albert-xxlarge-v2"],
     bert(v=30000, h=4096, L=12, a=64, i=16384, mt="albert", embedding_size=128, num_hidden_groups=1,
          inner_group_num=1), "223M (model card)"),
    ("google/electra-small-discriminator", ["electra-small-discriminator"],
     bert(h=256, a=4, i=1024, mt="electra", embedding_size=128), "14M (ELECTRA paper)"),
    ("google/electra-base-discriminator", ["electra-base-discriminator"],
     bert(mt="electra", embedding_size=768), "110M (ELECTRA paper)"),
    ("google/electra-large-discriminator", ["electra-large-discriminator"],
     bert(h=1024, L=24, a=16, i=4096, mt="electra", embedding_size=1024), "335M (ELECTRA paper)"),
    ("google-t5/t5-small", ["t5-small"], t5(512, 64, 2048, 6, 8, False, True), "60M (T5 paper / model card)"),
    ("google-t5/t5-base", ["t5-base"], t5(768, 64, 3072, 12, 12, False, True), "220M (model card)"),
    ("google-t5/t5-large", ["t5-large"], t5(1024, 64, 4096, 24, 16, False, True), "770M (model card)"),
    ("google-t5/t5-3b", ["t5-3b"], t5(1024, 128, 16384, 24, 32, False, True), "2.8B (model card)"),
    ("google-t5/t5-11b", ["t5-11b"], t5(1024, 128, 65536, 24, 128, False, True), "11B (model card)"),
    ("google/flan-t5-small", ["flan-t5-small"], t5(512, 64, 1024, 8, 6, True, False), "77M (hub)"),
    ("google/flan-t5-base", ["flan-t5-base"], t5(768, 64, 2048, 12, 12, True, False), "248M (hub)"),
    ("google/flan-t5-large", ["flan-t5-large"], t5(1024, 64, 2816, 24, 16, True, False), "783M (hub)"),
    ("google/flan-t5-xl", ["flan-t5-xl"], t5(2048, 64, 5120, 24, 32, True, False), "2.85B (hub)"),
    ("google/flan-t5-xxl", ["flan-t5-xxl"], t5(4096, 64, 10240, 24, 64, True, False), "11.3B (hub)"),
    ("google/t5-v1_1-base", ["t5-v1_1-base"], t5(768, 64, 2048, 12, 12, True, False), "248M"),
    ("google/mt5-small", ["mt5-small"], t5(512, 64, 1024, 8, 6, True, False, v=250112, mt="mt5"), "300M (mT5 paper)"),
    ("google/mt5-base", ["mt5-base"], t5(768, 64, 2048, 12, 12, True, False, v=250112, mt="mt5"), "580M (mT5 paper)"),
    ("bigscience/T0_3B", ["T0_3B", "T0-3B"], t5(2048, 64, 5120, 24, 32, True, False),
     "2783M params (AutoModel, no LM head), 65M largest layer (DeepSpeed memory-requirements docs)"),
    ("facebook/bart-base", ["bart-base"],
     dict(model_type="bart", vocab_size=50265, d_model=768, encoder_layers=6, decoder_layers=6,
          encoder_attention_heads=12, decoder_attention_heads=12, encoder_ffn_dim=3072, decoder_ffn_dim=3072,
          max_position_embeddings=1024), "139M (hub)"),
    ("facebook/bart-large", ["bart-large"],
     dict(model_type="bart", vocab_size=50265, d_model=1024, encoder_layers=12, decoder_layers=12,
          encoder_attention_heads=16, decoder_attention_heads=16, encoder_ffn_dim=4096, decoder_ffn_dim=4096,
          max_position_embeddings=1024), "406M (hub)"),
    ("openai-community/gpt2", ["gpt2"], gpt2(768, 12, 12), "124M (model card)"),
    ("openai-community/gpt2-medium", ["gpt2-medium"], gpt2(1024, 24, 16), "355M (model card)"),
    ("openai-community/gpt2-large", ["gpt2-large"], gpt2(1280, 36, 20), "774M (model card)"),
    ("openai-community/gpt2-xl", ["gpt2-xl"], gpt2(1600, 48, 25), "1.5B (model card)"),
    ("distilbert/distilgpt2", ["distilgpt2"], gpt2(768, 6, 12), "82M (model card)"),
    ("meta-llama/Llama-2-7b-hf", ["meta-llama/Llama-2-7b-chat-hf", "Llama-2-7b"],
     llama(32000, 4096, 11008, 32, 32, 32, 4096, dtype="float16"), "6.74B (hub)"),
    ("meta-llama/Llama-2-13b-hf", ["meta-llama/Llama-2-13b-chat-hf", "Llama-2-13b"],
     llama(32000, 5120, 13824, 40, 40, 40, 4096, dtype="float16"), "13.0B (hub)"),
    ("meta-llama/Llama-2-70b-hf", ["meta-llama/Llama-2-70b-chat-hf", "Llama-2-70b"],
     llama(32000, 8192, 28672, 80, 64, 8, 4096, dtype="float16"), "69.0B (hub)"),
    ("meta-llama/Meta-Llama-3-8B", ["meta-llama/Meta-Llama-3-8B-Instruct", "Llama-3-8B"],
     llama(128256, 4096, 14336, 32, 32, 8, 8192), "8.03B (hub)"),
    ("meta-llama/Meta-Llama-3-70B", ["meta-llama/Meta-Llama-3-70B-Instruct", "Llama-3-70B"],
     llama(128256, 8192, 28672, 80, 64, 8, 8192), "70.6B (hub)"),
    ("meta-llama/Llama-3.1-8B", ["meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Meta-Llama-3.1-8B",
                                 "meta-llama/Meta-Llama-3.1-8B-Instruct"],
     llama(128256, 4096, 14336, 32, 32, 8, 131072), "8.03B (hub)"),
    ("meta-llama/Llama-3.1-70B", ["meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Meta-Llama-3.1-70B",
                                  "meta-llama/Meta-Llama-3.1-70B-Instruct", "meta-llama/Llama-3.3-70B-Instruct"],
     llama(128256, 8192, 28672, 80, 64, 8, 131072), "70.6B (hub)"),
    ("meta-llama/Llama-3.1-405B", ["meta-llama/Llama-3.1-405B-Instruct", "meta-llama/Meta-Llama-3.1-405B"],
     llama(128256, 16384, 53248, 126, 128, 8, 131072), "406B (hub)"),
    ("meta-llama/Llama-3.2-1B", ["meta-llama/Llama-3.2-1B-Instruct"],
     llama(128256, 2048, 8192, 16, 32, 8, 131072, tied=True, head_dim=64), "1.24B (hub)"),
    ("meta-llama/Llama-3.2-3B", ["meta-llama/Llama-3.2-3B-Instruct"],
     llama(128256, 3072, 8192, 28, 24, 8, 131072, tied=True, head_dim=128), "3.21B (hub)"),
    ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", ["TinyLlama-1.1B"],
     llama(32000, 2048, 5632, 22, 32, 4, 2048), "1.1B (hub)"),
    ("mistralai/Mistral-7B-v0.1", ["mistralai/Mistral-7B-Instruct-v0.1", "Mistral-7B"],
     llama(32000, 4096, 14336, 32, 32, 8, 32768, mt="mistral"), "7.24B (hub)"),
    ("mistralai/Mistral-7B-v0.3", ["mistralai/Mistral-7B-Instruct-v0.3"],
     llama(32768, 4096, 14336, 32, 32, 8, 32768, mt="mistral"), "7.25B (hub)"),
    ("mistralai/Mixtral-8x7B-v0.1", ["mistralai/Mixtral-8x7B-Instruct-v0.1", "Mixtral-8x7B"],
     llama(32000, 4096, 14336, 32, 32, 8, 32768, mt="mixtral", num_local_experts=8, num_experts_per_tok=2),
     "46.7B (hub)"),
    ("Qwen/Qwen2-7B", ["Qwen/Qwen2-7B-Instruct"],
     llama(152064, 3584, 18944, 28, 28, 4, 131072, mt="qwen2"), "7.62B (hub)"),
    ("Qwen/Qwen2.5-0.5B", ["Qwen/Qwen2.5-0.5B-Instruct"],
     llama(151936, 896, 4864, 24, 14, 2, 32768, tied=True, mt="qwen2"), "0.49B (model card)"),
    ("Qwen/Qwen2.5-1.5B", ["Qwen/Qwen2.5-1.5B-Instruct"],
     llama(151936, 1536, 8960, 28, 12, 2, 131072, tied=True, mt="qwen2"), "1.54B (model card)"),
    ("Qwen/Qwen2.5-3B", ["Qwen/Qwen2.5-3B-Instruct"],
     llama(151936, 2048, 11008, 36, 16, 2, 32768, tied=True, mt="qwen2"), "3.09B (model card)"),
    ("Qwen/Qwen2.5-7B", ["Qwen/Qwen2.5-7B-Instruct"],
     llama(152064, 3584, 18944, 28, 28, 4, 131072, mt="qwen2"), "7.61B (model card)"),
    ("Qwen/Qwen2.5-14B", ["Qwen/Qwen2.5-14B-Instruct"],
     llama(152064, 5120, 13824, 48, 40, 8, 131072, mt="qwen2"), "14.7B (model card)"),
    ("Qwen/Qwen2.5-32B", ["Qwen/Qwen2.5-32B-Instruct"],
     llama(152064, 5120, 27648, 64, 40, 8, 131072, mt="qwen2"), "32.5B (model card, rounded)"),
    ("Qwen/Qwen2.5-72B", ["Qwen/Qwen2.5-72B-Instruct"],
     llama(152064, 8192, 29568, 80, 64, 8, 131072, mt="qwen2"), "72.7B (model card)"),
    ("google/gemma-2b", ["google/gemma-2b-it"],
     llama(256000, 2048, 16384, 18, 8, 1, 8192, tied=True, mt="gemma", head_dim=256), "2.51B (hub)"),
    ("google/gemma-7b", ["google/gemma-7b-it"],
     llama(256000, 3072, 24576, 28, 16, 16, 8192, tied=True, mt="gemma", head_dim=256), "8.54B (hub)"),
    ("google/gemma-2-2b", ["google/gemma-2-2b-it"],
     llama(256000, 2304, 9216, 26, 8, 4, 8192, tied=True, mt="gemma2", head_dim=256, dtype="float32"),
     "2.61B (hub)"),
    ("google/gemma-2-9b", ["google/gemma-2-9b-it"],
     llama(256000, 3584, 14336, 42, 16, 8, 8192, tied=True, mt="gemma2", head_dim=256, dtype="float32"),
     "9.24B (hub)"),
    ("google/gemma-2-27b", ["google/gemma-2-27b-it"],
     llama(256000, 4608, 36864, 46, 32, 16, 8192, tied=True, mt="gemma2", head_dim=128, dtype="float32"),
     "27.2B (hub)"),
    ("microsoft/phi-2", ["phi-2"],
     dict(model_type="phi", vocab_size=51200, hidden_size=2560, intermediate_size=10240, num_hidden_layers=32,
          num_attention_heads=32, max_position_embeddings=2048, partial_rotary_factor=0.4, tie_word_embeddings=False,
          torch_dtype="float16"), "2.78B (hub)"),
    ("microsoft/Phi-3-mini-4k-instruct", ["Phi-3-mini", "microsoft/Phi-3-mini-128k-instruct",
                                          "microsoft/Phi-3.5-mini-instruct"],
     dict(model_type="phi3", vocab_size=32064, hidden_size=3072, intermediate_size=8192, num_hidden_layers=32,
          num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096, tie_word_embeddings=False,
          torch_dtype="bfloat16"), "3.82B (hub)"),
    ("facebook/opt-125m", ["opt-125m"], opt(768, 12, 12, 3072), "125M (OPT paper)"),
    ("facebook/opt-350m", ["opt-350m"], opt(1024, 24, 16, 4096, proj=512, ln_before=False), "331M (hub)"),
    ("facebook/opt-1.3b", ["opt-1.3b"], opt(2048, 24, 32, 8192), "1.3B (OPT paper)"),
    ("facebook/opt-6.7b", ["opt-6.7b"], opt(4096, 32, 32, 16384), "6.7B (OPT paper)"),
    ("tiiuae/falcon-7b", ["tiiuae/falcon-7b-instruct", "falcon-7b"],
     dict(model_type="falcon", vocab_size=65024, hidden_size=4544, num_hidden_layers=32, num_attention_heads=71,
          multi_query=True, parallel_attn=True, new_decoder_architecture=False, bias=False, alibi=False,
          torch_dtype="bfloat16"), "7B (model card); 6.92B (hub)"),
    ("tiiuae/falcon-40b", ["tiiuae/falcon-40b-instruct", "falcon-40b"],
     dict(model_type="falcon", vocab_size=65024, hidden_size=8192, num_hidden_layers=60, num_attention_heads=128,
          num_kv_heads=8, multi_query=True, parallel_attn=True, new_decoder_architecture=True, bias=False,
          alibi=False, torch_dtype="bfloat16"), "40B (model card)"),
    ("EleutherAI/pythia-70m", ["pythia-70m", "EleutherAI/pythia-70m-deduped"], neox(512, 6, 8), "70,426,624 (Pythia README)"),
    ("EleutherAI/pythia-160m", ["pythia-160m", "EleutherAI/pythia-160m-deduped"], neox(768, 12, 12),
     "162,322,944 (Pythia README)"),
    ("EleutherAI/pythia-410m", ["pythia-410m", "EleutherAI/pythia-410m-deduped"], neox(1024, 24, 16),
     "405,334,016 (Pythia README)"),
    ("EleutherAI/pythia-1b", ["pythia-1b", "EleutherAI/pythia-1b-deduped"], neox(2048, 16, 8),
     "1,011,781,632 (Pythia README)"),
    ("EleutherAI/pythia-1.4b", ["pythia-1.4b", "EleutherAI/pythia-1.4b-deduped"], neox(2048, 24, 16),
     "1,414,647,808 (Pythia README)"),
    ("EleutherAI/pythia-2.8b", ["pythia-2.8b", "EleutherAI/pythia-2.8b-deduped"], neox(2560, 32, 32),
     "2,775,208,960 (Pythia README)"),
    ("EleutherAI/pythia-6.9b", ["pythia-6.9b", "EleutherAI/pythia-6.9b-deduped"], neox(4096, 32, 32, v=50432),
     "6,857,302,016 (Pythia README)"),
    ("EleutherAI/pythia-12b", ["pythia-12b", "EleutherAI/pythia-12b-deduped"], neox(5120, 36, 40, v=50688),
     "11,846,072,320 (Pythia README)"),
]


def build() -> dict:
    rows = []
    for hub_id, aliases, cfg, published in MODELS:
        info = model_from_config(cfg, hub_id=hub_id)
        assert info.params is not None, hub_id
        rows.append(
            dict(
                hub_id=hub_id,
                aliases=aliases,
                model_type=info.model_type,
                params=info.params,
                backbone_params=info.backbone_params,
                largest_layer_params=info.largest_layer_params,
                num_layers=info.num_layers,
                hidden_size=info.hidden_size,
                intermediate_size=info.intermediate_size,
                num_heads=info.num_heads,
                num_kv_heads=info.num_kv_heads,
                vocab_size=info.vocab_size,
                max_positions=info.max_positions,
                torch_dtype=info.torch_dtype,
                tied_embeddings=info.tied_embeddings,
                encoder_decoder=info.encoder_decoder,
                published=published,
                source=HUB.format(hub_id),
                config=cfg,
            )
        )
    return {
        "about": (
            "Popular fine-tuning models. params: the model as fine-tuned (LM head counted unless tied; "
            "encoders: AutoModel with pooler); backbone_params: AutoModel without LM head; "
            "largest_layer_params: DeepSpeed's largest layer (most parameters one module owns directly, "
            "transformers 5 module layout). Counted by trainlint.knowledge.models from 'config' "
            "(values of the hub config.json at 'source'), verified against transformers on the meta "
            "device by scripts/gen_models.py --verify. Generated: do not edit by hand."
        ),
        "models": rows,
    }


def verify(doc: dict) -> int:
    import torch
    from transformers import (AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM)

    bad = 0
    for row in doc["models"]:
        cfg = dict(row["config"])
        mt = cfg.pop("model_type")
        cfg.pop("torch_dtype", None)
        config = AutoConfig.for_model(mt, **cfg)
        with torch.device("meta"):
            base = AutoModel.from_config(config)
            if row["encoder_decoder"]:
                full = AutoModelForSeq2SeqLM.from_config(config)
            elif mt in ("bert", "roberta", "xlm-roberta", "electra", "distilbert", "albert", "deberta-v2"):
                full = base
            else:
                full = AutoModelForCausalLM.from_config(config)
        n_full = sum(p.numel() for p in full.parameters())
        n_base = sum(p.numel() for p in base.parameters())
        largest = max(sum(p.numel() for p in m.parameters(recurse=False)) for m in full.modules())
        if mt in ("t5", "mt5") and row["config"].get("tie_word_embeddings") is False and n_full == n_base:
            # transformers 5 always ties T5's LM head (configuration_t5.py forces
            # tie_word_embeddings=True); the checkpoints (v1.1, flan, mT5, T0) ship an untied one,
            # which transformers 4 loads as its own parameter. The table keeps the checkpoint's size.
            n_full = n_base + row["vocab_size"] * row["hidden_size"]
        ok = (n_full, n_base, largest) == (row["params"], row["backbone_params"], row["largest_layer_params"])
        bad += not ok
        print(("ok  " if ok else "BAD ") + row["hub_id"], n_full, row["params"], n_base, row["backbone_params"],
              largest, row["largest_layer_params"], flush=True)
        del full, base
    return bad


if __name__ == "__main__":
    doc = build()
    out = ROOT / "trainlint" / "knowledge" / "data" / "models.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {len(doc['models'])} models to {out}")
    if "--verify" in sys.argv:
        sys.exit(1 if verify(doc) else 0)
