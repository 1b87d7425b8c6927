"""Model sizes for the memory estimate: a shipped table of popular hub models
(``data/models.json``) and parameter counting from a local ``config.json``.

Stdlib only: parameters are counted from the architecture formula of each supported
``model_type``, module by module, the way transformers builds the model. Two counts:

* ``params``: the model as fine-tuned with its usual head: ``*ForCausalLM`` /
  ``*ForConditionalGeneration`` for decoders and encoder-decoders (the LM head counted unless it
  is tied to the input embedding), the base ``AutoModel`` (with its pooler) for encoders, whose
  task heads are negligible.
* ``backbone_params``: the bare ``AutoModel`` (no LM head). DeepSpeed's documentation quotes
  this one (``AutoModel.from_pretrained("bigscience/T0_3B")``: 2783M).

``largest_layer_params`` is DeepSpeed's "largest layer": the most parameters one module owns
directly (``module.parameters(recurse=False)``), usually the token embedding. It follows
transformers 5's module layout (Mixtral's experts are one module with 3-D weights).

T5 v1.1 / Flan-T5 / mT5 / T0 checkpoints have an untied LM head (``tie_word_embeddings:
false``); they are counted with it (flan-t5-large: 783M), as transformers 4 loads them.
transformers 5 forces T5's head to be tied (750M for flan-t5-large), so the count is an upper
bound there, which is the safe side for a memory estimate.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from trainlint.record import Record, Row

__all__ = [
    "ModelInfo",
    "ParamCount",
    "SUPPORTED_MODEL_TYPES",
    "all_models",
    "count_parameters",
    "lookup_model",
    "model_from_config",
]


class ModelInfo(Row):
    """What the model table knows of one hub model: sizes and architecture numbers (a row of
    the table: a tuple, immutable and cheap to define: ``trainlint.record.Row``)."""

    __slots__ = ()
    _fields = ("hub_id", "model_type", "params", "backbone_params", "largest_layer_params", "num_layers",
               "hidden_size", "intermediate_size", "num_heads", "num_kv_heads", "vocab_size",
               "max_positions", "torch_dtype", "tied_embeddings", "encoder_decoder", "aliases", "source",
               "published", "from_config")
    hub_id: str
    model_type: str
    params: int | None  # None: architecture not supported, size unknown
    backbone_params: int | None
    largest_layer_params: int | None
    num_layers: int | None
    hidden_size: int | None
    intermediate_size: int | None
    num_heads: int | None
    num_kv_heads: int | None
    vocab_size: int | None
    max_positions: int | None
    torch_dtype: str | None  # the checkpoint's dtype per its config ("float32" when unset)
    tied_embeddings: bool | None
    encoder_decoder: bool
    aliases: tuple[str, ...]
    source: str
    published: str  # a published count the table was checked against
    from_config: str  # path of the config.json it was read from, for a local folder

    def __new__(_cls, hub_id: str, model_type: str, params: int | None, backbone_params: int | None,
                largest_layer_params: int | None, num_layers: int | None, hidden_size: int | None,
                intermediate_size: int | None, num_heads: int | None, num_kv_heads: int | None,
                vocab_size: int | None, max_positions: int | None, torch_dtype: str | None,
                tied_embeddings: bool | None = None, encoder_decoder: bool = False,
                aliases: tuple[str, ...] = (), source: str = "", published: str = "",
                from_config: str = "") -> ModelInfo:
        return tuple.__new__(_cls, (hub_id, model_type, params, backbone_params, largest_layer_params,
                                  num_layers, hidden_size, intermediate_size, num_heads, num_kv_heads,
                                  vocab_size, max_positions, torch_dtype, tied_embeddings, encoder_decoder,
                                  aliases, source, published, from_config))

    @property
    def known(self) -> bool:
        return self.params is not None


class ParamCount(Record):
    """Parameter counts computed from a config: total, backbone and the largest layer."""

    __slots__ = ("params", "backbone_params", "largest_layer_params", "__dict__")
    params: int
    backbone_params: int
    largest_layer_params: int

    def __init__(self, params: int, backbone_params: int, largest_layer_params: int) -> None:
        self.params = params
        self.backbone_params = backbone_params
        self.largest_layer_params = largest_layer_params


class _Acc:
    """Adds modules' directly owned parameters; keeps the total and the largest module."""

    def __init__(self) -> None:
        self.total = 0
        self.largest = 0

    def module(self, n: int, times: int = 1) -> None:
        if n <= 0 or times <= 0:
            return
        self.total += n * times
        self.largest = max(self.largest, n)

    def linear(self, i: int, o: int, bias: bool = True, times: int = 1) -> None:
        self.module(i * o + (o if bias else 0), times)

    def layernorm(self, h: int, bias: bool = True, times: int = 1) -> None:
        self.module(h * 2 if bias else h, times)

    def add(self, other: _Acc, times: int = 1) -> None:
        if times <= 0:
            return
        self.total += other.total * times
        self.largest = max(self.largest, other.largest)


def _g(cfg: dict[str, Any], *names: str, default: Any = None) -> Any:
    for n in names:
        if n in cfg and cfg[n] is not None:
            return cfg[n]
    return default


def _tied(cfg: dict[str, Any], default: bool) -> bool:
    v = cfg.get("tie_word_embeddings")
    return default if v is None else bool(v)


# ---------------------------------------------------------------- encoders


def _bert_like(cfg: dict[str, Any], *, pooler: bool, embedding_size: int | None = None) -> ParamCount:
    h = cfg["hidden_size"]
    inter = cfg["intermediate_size"]
    layers = cfg["num_hidden_layers"]
    e = embedding_size or h
    a = _Acc()
    a.module(cfg["vocab_size"] * e)
    a.module(cfg.get("max_position_embeddings", 512) * e)
    if cfg.get("type_vocab_size", 2) > 0:
        a.module(cfg.get("type_vocab_size", 2) * e)
    a.layernorm(e)
    if e != h:
        a.linear(e, h)  # electra embeddings_project
    layer = _Acc()
    layer.linear(h, h, times=4)
    layer.layernorm(h)
    layer.linear(h, inter)
    layer.linear(inter, h)
    layer.layernorm(h)
    a.add(layer, layers)
    if pooler:
        a.linear(h, h)
    return ParamCount(a.total, a.total, a.largest)


def _bert(cfg: dict[str, Any]) -> ParamCount:
    return _bert_like(cfg, pooler=True)


def _electra(cfg: dict[str, Any]) -> ParamCount:
    return _bert_like(cfg, pooler=False, embedding_size=cfg.get("embedding_size"))


def _distilbert(cfg: dict[str, Any]) -> ParamCount:
    h = cfg["dim"]
    inter = cfg["hidden_dim"]
    a = _Acc()
    a.module(cfg["vocab_size"] * h)
    a.module(cfg.get("max_position_embeddings", 512) * h)  # a parameter even when sinusoidal
    a.layernorm(h)
    layer = _Acc()
    layer.linear(h, h, times=4)
    layer.layernorm(h)
    layer.linear(h, inter)
    layer.linear(inter, h)
    layer.layernorm(h)
    a.add(layer, cfg["n_layers"])
    return ParamCount(a.total, a.total, a.largest)


def _albert(cfg: dict[str, Any]) -> ParamCount:
    h = cfg["hidden_size"]
    e = cfg.get("embedding_size", 128)
    inter = cfg["intermediate_size"]
    a = _Acc()
    a.module(cfg["vocab_size"] * e)
    a.module(cfg.get("max_position_embeddings", 512) * e)
    a.module(cfg.get("type_vocab_size", 2) * e)
    a.layernorm(e)
    a.linear(e, h)  # embedding_hidden_mapping_in
    layer = _Acc()
    layer.linear(h, h, times=4)
    layer.layernorm(h)
    layer.linear(h, inter)
    layer.linear(inter, h)
    layer.layernorm(h)
    # layers share weights: num_hidden_groups groups of inner_group_num layers
    a.add(layer, cfg.get("num_hidden_groups", 1) * cfg.get("inner_group_num", 1))
    a.linear(h, h)  # pooler
    return ParamCount(a.total, a.total, a.largest)


def _deberta_v2(cfg: dict[str, Any]) -> ParamCount:
    h = cfg["hidden_size"]
    inter = cfg["intermediate_size"]
    e = cfg.get("embedding_size") or h
    a = _Acc()
    a.module(cfg["vocab_size"] * e)
    if cfg.get("position_biased_input", True):
        a.module(cfg.get("max_position_embeddings", 512) * e)
    if cfg.get("type_vocab_size", 0) > 0:
        a.module(cfg["type_vocab_size"] * e)
    if e != h:
        a.linear(e, h, bias=False)
    a.layernorm(h)
    pos_att = cfg.get("pos_att_type") or []
    if isinstance(pos_att, str):
        pos_att = [x.strip() for x in pos_att.lower().split("|")]
    rel = bool(cfg.get("relative_attention", False))
    layer = _Acc()
    layer.linear(h, h, times=3)  # query/key/value proj
    if rel and not cfg.get("share_att_key", False):
        if "c2p" in pos_att:
            layer.linear(h, h)
        if "p2c" in pos_att:
            layer.linear(h, h)
    layer.linear(h, h)
    layer.layernorm(h)
    layer.linear(h, inter)
    layer.linear(inter, h)
    layer.layernorm(h)
    a.add(layer, cfg["num_hidden_layers"])
    if rel:
        max_rel = cfg.get("max_relative_positions", -1)
        if max_rel < 1:
            max_rel = cfg.get("max_position_embeddings", 512)
        buckets = cfg.get("position_buckets", -1)
        size = buckets * 2 if buckets > 0 else max_rel * 2
        a.module(size * h)
    norm_rel = [x.strip() for x in str(cfg.get("norm_rel_ebd", "none")).lower().split("|")]
    if "layer_norm" in norm_rel:
        a.layernorm(h)
    k = cfg.get("conv_kernel_size", 0)
    if k > 0:
        groups = cfg.get("conv_groups", 1)
        a.module(h * (h // groups) * k + h)  # conv
        a.layernorm(h)
    return ParamCount(a.total, a.total, a.largest)


# ------------------------------------------------------- encoder-decoders


def _t5(cfg: dict[str, Any]) -> ParamCount:
    d = cfg["d_model"]
    dkv = cfg.get("d_kv", 64)
    heads = cfg["num_heads"]
    dff = cfg["d_ff"]
    enc_layers = cfg["num_layers"]
    dec_layers = cfg.get("num_decoder_layers") or enc_layers
    buckets = cfg.get("relative_attention_num_buckets", 32)
    gated = str(cfg.get("feed_forward_proj", "relu")).startswith("gated-")
    inner = heads * dkv
    a = _Acc()
    a.module(cfg["vocab_size"] * d)  # shared (encoder and decoder embed_tokens point at it)

    def attn(acc: _Acc) -> None:
        acc.linear(d, inner, bias=False, times=3)
        acc.linear(inner, d, bias=False)

    def ff(acc: _Acc) -> None:
        acc.linear(d, dff, bias=False, times=2 if gated else 1)
        acc.linear(dff, d, bias=False)
        acc.layernorm(d, bias=False)

    enc = _Acc()
    attn(enc)
    enc.layernorm(d, bias=False)
    ff(enc)
    a.add(enc, enc_layers)
    a.module(buckets * heads)  # relative_attention_bias in the first encoder layer
    a.layernorm(d, bias=False)
    dec = _Acc()
    attn(dec)
    dec.layernorm(d, bias=False)
    attn(dec)
    dec.layernorm(d, bias=False)
    ff(dec)
    a.add(dec, dec_layers)
    a.module(buckets * heads)
    a.layernorm(d, bias=False)
    backbone = a.total
    if not _tied(cfg, True):
        a.linear(d, cfg["vocab_size"], bias=False)
    return ParamCount(a.total, backbone, a.largest)


def _bart(cfg: dict[str, Any]) -> ParamCount:
    d = cfg["d_model"]
    pos = cfg.get("max_position_embeddings", 1024) + 2  # BART's learned positions have offset 2
    a = _Acc()
    a.module(cfg["vocab_size"] * d)  # shared
    enc = _Acc()
    enc.linear(d, d, times=4)
    enc.layernorm(d)
    enc.linear(d, cfg["encoder_ffn_dim"])
    enc.linear(cfg["encoder_ffn_dim"], d)
    enc.layernorm(d)
    a.module(pos * d)
    a.layernorm(d)  # layernorm_embedding
    a.add(enc, cfg["encoder_layers"])
    dec = _Acc()
    dec.linear(d, d, times=4)
    dec.layernorm(d)
    dec.linear(d, d, times=4)
    dec.layernorm(d)
    dec.linear(d, cfg["decoder_ffn_dim"])
    dec.linear(cfg["decoder_ffn_dim"], d)
    dec.layernorm(d)
    a.module(pos * d)
    a.layernorm(d)
    a.add(dec, cfg["decoder_layers"])
    if cfg.get("add_final_layer_norm", False):
        a.layernorm(d, times=2)
    backbone = a.total
    if not _tied(cfg, True):
        a.linear(d, cfg["vocab_size"], bias=False)
    return ParamCount(a.total, backbone, a.largest)


# ---------------------------------------------------------------- decoders


def _gpt2(cfg: dict[str, Any]) -> ParamCount:
    h = cfg["n_embd"]
    inter = cfg.get("n_inner") or 4 * h
    a = _Acc()
    a.module(cfg["vocab_size"] * h)
    a.module(cfg.get("n_positions", 1024) * h)
    layer = _Acc()
    layer.layernorm(h)
    layer.linear(h, 3 * h)
    layer.linear(h, h)
    layer.layernorm(h)
    layer.linear(h, inter)
    layer.linear(inter, h)
    a.add(layer, cfg["n_layer"])
    a.layernorm(h)
    backbone = a.total
    if not _tied(cfg, True):
        a.linear(h, cfg["vocab_size"], bias=False)
    return ParamCount(a.total, backbone, a.largest)


def _llama_like(cfg: dict[str, Any], *, norms_per_layer: int = 2, qkv_bias: bool | None = None,
                tied_default: bool = False) -> ParamCount:
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads") or heads
    hd = cfg.get("head_dim") or h // heads
    inter = cfg["intermediate_size"]
    attn_bias = bool(cfg.get("attention_bias", False))
    qkvb = attn_bias if qkv_bias is None else qkv_bias
    mlp_bias = bool(cfg.get("mlp_bias", False))
    a = _Acc()
    a.module(cfg["vocab_size"] * h)
    layer = _Acc()
    layer.linear(h, heads * hd, bias=qkvb)
    layer.linear(h, kv * hd, bias=qkvb, times=2)
    layer.linear(heads * hd, h, bias=attn_bias)
    experts = cfg.get("num_local_experts")
    if experts:
        layer.module(experts * h)  # router
        layer.module(experts * 3 * h * inter)  # fused experts: gate_up_proj + down_proj
    else:
        layer.linear(h, inter, bias=mlp_bias, times=2)
        layer.linear(inter, h, bias=mlp_bias)
    layer.layernorm(h, bias=False, times=norms_per_layer)
    a.add(layer, cfg["num_hidden_layers"])
    a.layernorm(h, bias=False)
    backbone = a.total
    if not _tied(cfg, tied_default):
        a.linear(h, cfg["vocab_size"], bias=False)
    return ParamCount(a.total, backbone, a.largest)


def _llama(cfg: dict[str, Any]) -> ParamCount:
    return _llama_like(cfg)


def _qwen2(cfg: dict[str, Any]) -> ParamCount:
    return _llama_like(cfg, qkv_bias=True)


def _gemma(cfg: dict[str, Any]) -> ParamCount:
    return _llama_like(cfg, tied_default=True)


def _gemma2(cfg: dict[str, Any]) -> ParamCount:
    return _llama_like(cfg, norms_per_layer=4, tied_default=True)


def _phi(cfg: dict[str, Any]) -> ParamCount:
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads") or heads
    hd = h // heads
    inter = cfg["intermediate_size"]
    a = _Acc()
    a.module(cfg["vocab_size"] * h)
    layer = _Acc()
    layer.layernorm(h)  # input_layernorm (attention and MLP run in parallel)
    layer.linear(h, heads * hd)
    layer.linear(h, kv * hd, times=2)
    layer.linear(heads * hd, h)
    if cfg.get("qk_layernorm", False):
        layer.layernorm(hd, times=2)
    layer.linear(h, inter)
    layer.linear(inter, h)
    a.add(layer, cfg["num_hidden_layers"])
    a.layernorm(h)
    backbone = a.total
    if not _tied(cfg, False):
        a.linear(h, cfg["vocab_size"], bias=True)
    return ParamCount(a.total, backbone, a.largest)


def _phi3(cfg: dict[str, Any]) -> ParamCount:
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads") or heads
    hd = cfg.get("head_dim") or h // heads
    inter = cfg["intermediate_size"]
    a = _Acc()
    a.module(cfg["vocab_size"] * h)
    layer = _Acc()
    layer.linear(h, heads * hd + 2 * kv * hd, bias=False)
    layer.linear(heads * hd, h, bias=False)
    layer.linear(h, 2 * inter, bias=False)
    layer.linear(inter, h, bias=False)
    layer.layernorm(h, bias=False, times=2)
    a.add(layer, cfg["num_hidden_layers"])
    a.layernorm(h, bias=False)
    backbone = a.total
    if not _tied(cfg, False):
        a.linear(h, cfg["vocab_size"], bias=False)
    return ParamCount(a.total, backbone, a.largest)


def _opt(cfg: dict[str, Any]) -> ParamCount:
    h = cfg["hidden_size"]
    ffn = cfg["ffn_dim"]
    proj = cfg.get("word_embed_proj_dim") or h
    bias = cfg.get("enable_bias", True)
    a = _Acc()
    a.module(cfg["vocab_size"] * proj)
    a.module((cfg.get("max_position_embeddings", 2048) + 2) * h)
    if proj != h:
        a.linear(h, proj, bias=False)  # project_out
        a.linear(proj, h, bias=False)  # project_in
    if cfg.get("do_layer_norm_before", True) and not cfg.get("_remove_final_layer_norm", False):
        a.layernorm(h, bias=cfg.get("layer_norm_elementwise_affine", True))
    layer = _Acc()
    layer.linear(h, h, bias=bias, times=4)
    layer.layernorm(h)
    layer.linear(h, ffn, bias=bias)
    layer.linear(ffn, h, bias=bias)
    layer.layernorm(h)
    a.add(layer, cfg["num_hidden_layers"])
    backbone = a.total
    if not _tied(cfg, True):
        a.linear(proj, cfg["vocab_size"], bias=False)
    return ParamCount(a.total, backbone, a.largest)


def _falcon(cfg: dict[str, Any]) -> ParamCount:
    h = cfg["hidden_size"]
    heads = _g(cfg, "num_attention_heads", "n_head")
    hd = h // heads
    new_arch = bool(cfg.get("new_decoder_architecture", False))
    multi_query = bool(cfg.get("multi_query", True))
    kv = _g(cfg, "num_kv_heads", "n_head_kv", default=heads)
    bias = bool(cfg.get("bias", False))
    ffn = cfg.get("ffn_hidden_size") or 4 * h
    parallel = bool(cfg.get("parallel_attn", True))
    n_ln = cfg.get("num_ln_in_parallel_attn")
    if n_ln is None and new_arch:
        n_ln = 2
    if new_arch:
        qkv_out = (kv * 2 + heads) * hd
    elif multi_query:
        qkv_out = h + 2 * hd
    else:
        qkv_out = 3 * h
    a = _Acc()
    a.module(cfg["vocab_size"] * h)
    layer = _Acc()
    layer.linear(h, qkv_out, bias=bias)
    layer.linear(h, h, bias=bias)
    layer.linear(h, ffn, bias=bias)
    layer.linear(ffn, h, bias=bias)
    if not parallel:
        layer.layernorm(h, times=2)
    elif n_ln == 2:
        layer.layernorm(h, times=2)
    else:
        layer.layernorm(h)
    a.add(layer, _g(cfg, "num_hidden_layers", "n_layer"))
    a.layernorm(h)
    backbone = a.total
    if not _tied(cfg, True):
        a.linear(h, cfg["vocab_size"], bias=False)
    return ParamCount(a.total, backbone, a.largest)


def _gpt_neox(cfg: dict[str, Any]) -> ParamCount:
    h = cfg["hidden_size"]
    inter = cfg["intermediate_size"]
    bias = cfg.get("attention_bias", True)
    a = _Acc()
    a.module(cfg["vocab_size"] * h)
    layer = _Acc()
    layer.layernorm(h, times=2)
    layer.linear(h, 3 * h, bias=bias)
    layer.linear(h, h, bias=bias)
    layer.linear(h, inter)
    layer.linear(inter, h)
    a.add(layer, cfg["num_hidden_layers"])
    a.layernorm(h)
    backbone = a.total
    if not _tied(cfg, False):
        a.linear(h, cfg["vocab_size"], bias=False)
    return ParamCount(a.total, backbone, a.largest)


_COUNTERS = {
    "bert": _bert,
    "roberta": _bert,
    "xlm-roberta": _bert,
    "camembert": _bert,
    "electra": _electra,
    "distilbert": _distilbert,
    "albert": _albert,
    "deberta-v2": _deberta_v2,
    "t5": _t5,
    "mt5": _t5,
    "bart": _bart,
    "gpt2": _gpt2,
    "llama": _llama,
    "mistral": _llama,
    "mixtral": _llama,
    "qwen2": _qwen2,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "phi": _phi,
    "phi3": _phi3,
    "opt": _opt,
    "falcon": _falcon,
    "gpt_neox": _gpt_neox,
}
SUPPORTED_MODEL_TYPES = tuple(sorted(_COUNTERS))
_ENCODER_DECODER = {"t5", "mt5", "bart"}


def count_parameters(config: dict[str, Any]) -> ParamCount | None:
    """Count a model's parameters from its ``config.json`` contents; None when the
    ``model_type`` is not supported or the config lacks what the formula needs."""
    fn = _COUNTERS.get(str(config.get("model_type", "")).lower())
    if fn is None:
        return None
    try:
        return fn(config)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def _first(cfg: dict[str, Any], *names: str) -> int | None:
    v = _g(cfg, *names)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


_TIED_DEFAULT = {"t5": True, "mt5": False, "bart": True, "gpt2": True, "opt": True, "falcon": True,
                 "gemma": True, "gemma2": True, "gpt_neox": False, "phi": False, "phi3": False}


def model_from_config(config: dict[str, Any], *, hub_id: str = "", source: str = "",
                      aliases: tuple[str, ...] = (), published: str = "", from_config: str = "") -> ModelInfo:
    """A ModelInfo from ``config.json`` contents (params None for unsupported architectures)."""
    mt = str(config.get("model_type", "")).lower()
    counts = count_parameters(config)
    heads = _first(config, "num_attention_heads", "num_heads", "n_head", "n_heads", "encoder_attention_heads")
    kv = _first(config, "num_key_value_heads", "num_kv_heads", "n_head_kv")
    if mt == "falcon" and kv is None:
        kv = 1 if config.get("multi_query", True) and not config.get("new_decoder_architecture") else heads
    inter = _first(config, "intermediate_size", "d_ff", "ffn_dim", "encoder_ffn_dim", "hidden_dim", "n_inner",
                   "ffn_hidden_size")
    hidden = _first(config, "hidden_size", "d_model", "n_embd", "dim")
    if inter is None and hidden is not None and mt in ("gpt2", "falcon"):
        inter = 4 * hidden
    tied = config.get("tie_word_embeddings")
    if tied is None and mt in _TIED_DEFAULT:
        tied = _TIED_DEFAULT[mt] if mt != "mt5" else False
    dtype = config.get("torch_dtype") or config.get("dtype") or "float32"
    return ModelInfo(
        hub_id=hub_id or str(config.get("_name_or_path", "")),
        model_type=mt,
        params=counts.params if counts else None,
        backbone_params=counts.backbone_params if counts else None,
        largest_layer_params=counts.largest_layer_params if counts else None,
        num_layers=_first(config, "num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers"),
        hidden_size=hidden,
        intermediate_size=inter,
        num_heads=heads,
        num_kv_heads=kv if kv is not None else heads,
        vocab_size=_first(config, "vocab_size"),
        max_positions=_first(config, "max_position_embeddings", "n_positions", "n_ctx"),
        torch_dtype=str(dtype),
        tied_embeddings=bool(tied) if tied is not None else None,
        encoder_decoder=mt in _ENCODER_DECODER or bool(config.get("is_encoder_decoder", False)),
        aliases=aliases,
        source=source,
        published=published,
        from_config=from_config,
    )


# ------------------------------------------------------------------ table


def _norm(name: str) -> str:
    return name.strip().strip("/").lower()


@lru_cache(maxsize=1)
def _raw() -> list[dict]:
    return json.loads((Path(__file__).resolve().parent / "data" / "models.json").read_text(encoding="utf-8"))["models"]


@lru_cache(maxsize=None)
def _row(i: int) -> ModelInfo:
    """Row ``i`` of the table (built on first use: a one-file check looks up one or two)."""
    r = _raw()[i]
    return ModelInfo(
        hub_id=r["hub_id"],
        model_type=r["model_type"],
        params=r["params"],
        backbone_params=r["backbone_params"],
        largest_layer_params=r["largest_layer_params"],
        num_layers=r["num_layers"],
        hidden_size=r["hidden_size"],
        intermediate_size=r["intermediate_size"],
        num_heads=r["num_heads"],
        num_kv_heads=r["num_kv_heads"],
        vocab_size=r["vocab_size"],
        max_positions=r["max_positions"],
        torch_dtype=r["torch_dtype"],
        tied_embeddings=r["tied_embeddings"],
        encoder_decoder=r["encoder_decoder"],
        aliases=tuple(r.get("aliases", ())),
        source=r["source"],
        published=r.get("published", ""),
    )


def _table() -> tuple[ModelInfo, ...]:
    return tuple(_row(i) for i in range(len(_raw())))


@lru_cache(maxsize=1)
def _index() -> dict[str, int]:
    """Normalized hub id, alias and id without the organisation -> row."""
    idx: dict[str, int] = {}
    for i, r in enumerate(_raw()):
        hub_id = r["hub_id"]
        for name in (hub_id, *r.get("aliases", ())):
            idx.setdefault(_norm(name), i)
        # "Llama-2-7b-hf" without the organisation
        if "/" in hub_id:
            idx.setdefault(_norm(hub_id.split("/", 1)[1]), i)
    return idx


def all_models() -> list[ModelInfo]:
    return list(_table())


def _read_local(path: Path) -> ModelInfo | None:
    cfg_path = path / "config.json" if path.is_dir() else path
    if cfg_path.name != "config.json" or not cfg_path.is_file():
        return None
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(cfg, dict):
        return None
    name = cfg.get("_name_or_path") or str(path)
    return model_from_config(cfg, hub_id=str(name), source=str(cfg_path), from_config=str(cfg_path))


def lookup_model(name_or_path: str, base_dir: str | Path | None = None) -> ModelInfo | None:
    """The model a ``from_pretrained`` argument names: a local folder (its ``config.json`` is read
    and counted; relative paths resolve against ``base_dir`` when given, else the working
    directory), or a hub id / alias from the table (case-insensitive; a ``-hf`` suffix and the
    organisation may be left out). None when neither."""
    if not name_or_path or not isinstance(name_or_path, str):
        return None
    p = Path(name_or_path).expanduser()
    if not p.is_absolute() and base_dir is not None:
        p = Path(base_dir) / p
    try:
        if p.exists():
            local = _read_local(p)
            if local is not None:
                return local
    except OSError:
        pass
    key = _norm(name_or_path)
    idx = _index()
    if key in idx:
        return _row(idx[key])
    for suffix in ("-hf",):
        if key.endswith(suffix) and key[: -len(suffix)] in idx:
            return _row(idx[key[: -len(suffix)]])
        if key + suffix in idx:
            return _row(idx[key + suffix])
    return None
