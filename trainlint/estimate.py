"""The memory estimate of a resolved setup: from what the files say to a ``TrainingShape``.

Stdlib only (no torch, transformers or deepspeed): everything is read statically.

Where each input of the estimate comes from, first match wins:

=================  ==========================================================================
model              the first argument of a model class's ``from_pretrained(...)`` (a literal,
                   a constant, an argparse ``default=`` or a dataclass field default); a hub id
                   from the shipped table or a local folder's ``config.json``
precision          ``bf16``/``fp16`` of TrainingArguments; DeepSpeed ``bf16``/``fp16.enabled``
                   (``true``; ``"auto"`` follows TrainingArguments); accelerate
                   ``mixed_precision``; else fp32
parameter dtype    ``from_pretrained(dtype=/torch_dtype=)``; else fp32 (transformers 4; see
                   the note on transformers 5's ``dtype="auto"`` below)
optimizer          DeepSpeed ``optimizer.type`` when the config has one, else ``optim``
                   (default ``adamw_torch``)
ZeRO               DeepSpeed ``zero_optimization``: stage, ``offload_optimizer/param.device``,
                   bucket sizes (``"auto"`` as transformers fills them: ``reduce_bucket_size
                   = h*h``, ``stage3_prefetch_bucket_size = 0.9*h*h``), ``overlap_comm``
checkpointing      ``gradient_checkpointing``/``activation_checkpointing=True`` or a
                   ``model.gradient_checkpointing_enable()`` call
micro batch        ``per_device_train_batch_size`` (default 8), else the DeepSpeed integer
sequence length    the largest ``max_length=`` of a tokenizer call (or ``max_length`` /
                   ``max_seq_length`` of a TRL config); a call with ``truncation=True`` or
                   ``padding="max_length"`` but no ``max_length`` pads/truncates to the
                   tokenizer's ``model_max_length``, taken as the model's
                   ``max_position_embeddings`` (512 for T5, whose tokenizer says 512);
                   nothing written: 512, capped at the model's positions (an assumption, said)
world size         ``setup.world_size`` (launch line or ``--gpus``), else the accelerate
                   config's ``num_processes``; else 1
LoRA               ``get_peft_model(model, LoraConfig(r=..., target_modules=...))``: per layer,
                   each targeted linear ``in x out`` adds ``r * (in + out)`` trainable
                   parameters; PEFT's default targets per model type when none are given
=================  ==========================================================================

transformers 5 loads checkpoints in their stored dtype when ``from_pretrained`` gets no dtype
(``dtype="auto"``); the estimate keeps fp32 weights then (transformers 4's behaviour), the larger
of the two, and says so.

``assumed`` in the result lists the inputs that no file states; the memory rule replaces those
with the most favourable reading before it decides, so it never flags on a guess.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainlint.memory import Estimate, TrainingShape, estimate, shape_from_model
from trainlint.script_values import (  # noqa: F401 - some are used by importers of this module
    _argparse_default,
    _receiver_class,
    _sequence_length,
    _site_value,
    _tokenizer_length,
    _tokenizer_names,
    _where,
    resolve_expr,
)
from trainlint.setup import UNKNOWN

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.diagnostics import Span
    from trainlint.knowledge.gpus import Gpu
    from trainlint.knowledge.models import ModelInfo
    from trainlint.setup import ArgsSite, Setup
    from trainlint.sources.python import PythonFile

__all__ = [
    "DEFAULT_MICRO_BATCH",
    "DEFAULT_SEQ_LEN",
    "SetupEstimate",
    "estimate_for_script",
    "estimate_setup",
    "find_model",
    "lora_trainable_params",
    "shape_from_setup",
]

DEFAULT_MICRO_BATCH = 8  # TrainingArguments.per_device_train_batch_size default (4.x and 5.x)
DEFAULT_SEQ_LEN = 512
T5_MODEL_MAX_LENGTH = 512  # t5/flan-t5 tokenizer_config.json model_max_length

# from_pretrained receivers that do not load a model
_NOT_MODELS = ("Tokenizer", "TokenizerFast", "Config", "Processor", "FeatureExtractor", "ImageProcessor",
               "GenerationConfig", "PeftConfig", "LoraConfig")
_DTYPES = {"float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16"}

# peft/utils/constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING (peft 0.18)
PEFT_DEFAULT_TARGETS: dict[str, tuple[str, ...]] = {
    "t5": ("q", "v"), "mt5": ("q", "v"), "bart": ("q_proj", "v_proj"), "gpt2": ("c_attn",),
    "bloom": ("query_key_value",), "opt": ("q_proj", "v_proj"), "gptj": ("q_proj", "v_proj"),
    "gpt_neox": ("query_key_value",), "gpt_neo": ("q_proj", "v_proj"), "bert": ("query", "value"),
    "roberta": ("query", "value"), "xlm-roberta": ("query", "value"), "electra": ("query", "value"),
    "deberta-v2": ("query_proj", "value_proj"), "llama": ("q_proj", "v_proj"), "falcon": ("query_key_value",),
    "mistral": ("q_proj", "v_proj"), "mixtral": ("q_proj", "v_proj"), "phi": ("q_proj", "v_proj", "fc1", "fc2"),
    "gemma": ("q_proj", "v_proj"), "gemma2": ("q_proj", "v_proj"), "qwen2": ("q_proj", "v_proj"),
    "qwen3": ("q_proj", "v_proj"), "distilbert": ("q_lin", "v_lin"), "phi3": ("qkv_proj",),
}

# Linear layers by the names models give them: (in, out) in units of
# h = hidden, kv = num_kv_heads * head_dim, I = MLP width. Per transformer layer.
_LINEAR_SHAPES: dict[str, tuple[str, str]] = {
    **{n: ("h", "h") for n in ("q", "q_proj", "query", "q_lin", "query_proj", "o", "o_proj", "out_proj",
                              "out_lin", "dense", "wo_attn", "c_proj_attn")},
    **{n: ("h", "kv") for n in ("k", "k_proj", "key", "k_lin", "key_proj", "v", "v_proj", "value", "v_lin",
                               "value_proj")},
    **{n: ("h", "qkv") for n in ("c_attn", "query_key_value", "qkv_proj", "Wqkv", "in_proj")},
    **{n: ("h", "I") for n in ("gate_proj", "up_proj", "w1", "w3", "wi", "wi_0", "wi_1", "fc1", "c_fc",
                              "intermediate.dense", "lin1", "dense_h_to_4h")},
    **{n: ("I", "h") for n in ("down_proj", "w2", "wo", "fc2", "c_proj", "output.dense", "lin2",
                              "dense_4h_to_h")},
}
_ALL_LINEAR = {
    "llama": ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
    "t5": ("q", "k", "v", "o", "wi_0", "wi_1", "wo"),
    "bert": ("query", "key", "value", "dense", "intermediate.dense", "output.dense"),
    "gpt2": ("c_attn", "c_proj_attn", "c_fc", "c_proj"),
}
for _mt in ("mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "phi3"):
    _ALL_LINEAR[_mt] = _ALL_LINEAR["llama"]
for _mt in ("roberta", "xlm-roberta", "electra"):
    _ALL_LINEAR[_mt] = _ALL_LINEAR["bert"]
_ALL_LINEAR["mt5"] = _ALL_LINEAR["t5"]


@dataclass
class SetupEstimate:
    """The estimate of one setup and how it was built."""

    shape: TrainingShape
    estimate: Estimate
    model: ModelInfo
    notes: list[str] = field(default_factory=list)  # provenance: "precision bf16 (train.py:48 bf16=True)"
    assumed: set[str] = field(default_factory=set)  # shape fields no file states
    gpu: Gpu | None = None
    script: str = ""
    model_span: Span | None = None
    quantized: bool = False  # loaded 4/8-bit: not modelled, the estimate is an upper bound
    launch: str = ""  # the launch line that starts it ("run.sh:3: torchrun --nproc_per_node 4 train.py ...")

    @property
    def total_with_context(self) -> int:
        from trainlint.memory import CUDA_CONTEXT_BYTES

        return self.estimate.total + CUDA_CONTEXT_BYTES

    def judged(self) -> tuple[TrainingShape, Estimate]:
        """The shape and estimate that ``trainlint estimate`` prints and the memory rule (TL550)
        judges: one source, with unstated inputs at their cheapest plausible reading."""
        cached = self.__dict__.get("_judged")
        if cached is None:
            from trainlint.memory import estimate as _estimate

            shape = self.favourable_shape()
            cached = self.__dict__["_judged"] = (shape, self.estimate if shape == self.shape else _estimate(shape))
        return cached

    def judged_notes(self) -> list[str]:
        """What the judged shape reads differently from the stated one, and why."""
        s, j = self.shape, self.judged()[0]
        out = []
        if j.seq_len != s.seq_len:
            out.append(f"sequence length {j.seq_len}: no file states it, so the cheapest plausible reading is used "
                       f"(set max_length / max_seq_length for a precise figure)")
        if j.precision != s.precision:
            out.append(f"precision {j.precision}: not statically known, the cheapest reading is used")
        if j.world_size != s.world_size:
            out.append(f"world size {j.world_size}: not stated, ZeRO's partitioning is read at its most favourable")
        return out

    def favourable_shape(self) -> TrainingShape:
        """The shape with every assumed input replaced by its cheapest plausible reading."""
        s = self.shape
        if "seq_len" in self.assumed:
            s = replace(s, seq_len=min(s.seq_len, 128))
        if "precision" in self.assumed:
            s = replace(s, precision="bf16")
        if "world_size" in self.assumed and s.zero_stage > 0:
            s = replace(s, world_size=max(s.world_size, 8))
        return s


@dataclass
class ModelRef:
    name: str | None  # the resolved first argument (None: not resolvable)
    call: ast.Call
    pf: PythonFile
    where: str
    kwargs: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------ resolving expressions


# ------------------------------------------------------------------ model


def _is_model_class(qn: str) -> bool:
    last = qn.rsplit(".", 1)[-1]
    root = qn.split(".", 1)[0]
    if root not in ("transformers", "peft", "trl") and not last.startswith("Auto"):
        return False
    return not any(last.endswith(s) for s in _NOT_MODELS)


def find_model(pf: PythonFile) -> ModelRef | None:
    """The first model ``from_pretrained`` call of the file, its first argument resolved."""
    for cs in pf.calls:
        qn = _receiver_class(pf, cs.node)
        if qn is None or not _is_model_class(qn):
            continue
        arg = cs.node.args[0] if cs.node.args else None
        if arg is None:
            kw = pf.keyword(cs.node, "pretrained_model_name_or_path")
            arg = kw.value if kw is not None else None
        value, where = resolve_expr(pf, arg, cs.scope)
        kwargs = {}
        for kw in cs.node.keywords:
            if kw.arg:
                kwargs[kw.arg] = resolve_expr(pf, kw.value, cs.scope)[0]
                if kwargs[kw.arg] is UNKNOWN and isinstance(kw.value, ast.Attribute):
                    kwargs[kw.arg] = kw.value.attr  # torch.bfloat16 -> "bfloat16"
        return ModelRef(name=value if isinstance(value, str) else None, call=cs.node, pf=pf,
                        where=where or _where(pf, cs.node), kwargs=kwargs)
    return None


# ------------------------------------------------------------------ tokenizer / sequence length


# ------------------------------------------------------------------ LoRA


def _lora(pf: PythonFile) -> tuple[int | None, Any, str] | None:
    """(r, target_modules, where) of ``get_peft_model(model, LoraConfig(...))``; None without
    PEFT; r None when not static."""
    for cs in pf.calls:
        qn = pf.qualname(cs.node.func) or (cs.node.func.id if isinstance(cs.node.func, ast.Name) else "")
        if not qn or qn.rsplit(".", 1)[-1] != "get_peft_model":
            continue
        cfg = cs.node.args[1] if len(cs.node.args) > 1 else None
        if cfg is None:
            kw = pf.keyword(cs.node, "peft_config")
            cfg = kw.value if kw is not None else None
        scope = cs.scope
        if isinstance(cfg, ast.Name):
            b = pf.binding_of(cfg.id, scope)
            cfg = b.value if b is not None and b.kind in ("assign", "annassign") else None
        if not isinstance(cfg, ast.Call):
            return None, None, _where(pf, cs.node)
        cname = pf.qualname(cfg.func) or (cfg.func.id if isinstance(cfg.func, ast.Name) else "")
        if not cname.endswith("LoraConfig"):
            return None, None, _where(pf, cs.node)
        rkw = pf.keyword(cfg, "r")
        r = resolve_expr(pf, rkw.value, scope)[0] if rkw is not None else 8  # LoraConfig.r default
        tkw = pf.keyword(cfg, "target_modules")
        targets = resolve_expr(pf, tkw.value, scope)[0] if tkw is not None else None
        return (r if isinstance(r, int) and not isinstance(r, bool) else None), targets, _where(pf, cfg)
    return None


def lora_trainable_params(info: ModelInfo, r: int, target_modules: Any = None) -> tuple[int, str]:
    """LoRA's trainable parameters: each targeted linear ``in x out`` gets A (r x in) and
    B (out x r). Per layer; encoder-decoders count both stacks (cross-attention is left out,
    a small under-count). ``target_modules`` None: PEFT's default for the model type."""
    h = info.hidden_size or 0
    heads = info.num_heads or 1
    kv = (info.num_kv_heads or heads) * (h // heads if heads else 0)
    inter = info.intermediate_size or 4 * h
    dims = {"h": h, "kv": kv, "I": inter, "qkv": h + 2 * kv}
    if target_modules is None:
        targets = PEFT_DEFAULT_TARGETS.get(info.model_type, ("q_proj", "v_proj"))
        how = f"PEFT's default targets for {info.model_type}: {', '.join(targets)}"
    elif isinstance(target_modules, str):
        if target_modules == "all-linear":
            targets = _ALL_LINEAR.get(info.model_type, _ALL_LINEAR["llama"])
        else:
            targets = tuple(n for n in _LINEAR_SHAPES if n == target_modules or target_modules.endswith(n))
        how = f"target_modules={target_modules!r}"
    else:
        targets = tuple(str(t) for t in target_modules)
        how = f"target_modules={list(targets)}"
    layers = (info.num_layers or 0) * (2 if info.encoder_decoder else 1)
    per_layer = 0
    for t in targets:
        shape = _LINEAR_SHAPES.get(t) or _LINEAR_SHAPES.get(t.rsplit(".", 1)[-1])
        if shape is None:
            continue
        per_layer += r * (dims[shape[0]] + dims[shape[1]])
    return per_layer * layers, f"r={r} x (in + out) per targeted linear x {layers} layers ({how})"


# ------------------------------------------------------------------ configs


def _read_deepspeed(path: Path):
    from trainlint.sources.deepspeed import DeepSpeedConfig

    try:
        text = path.read_text(encoding="utf-8")
        json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    try:
        return DeepSpeedConfig.parse(text, str(path))
    except Exception:  # noqa: BLE001 - a broken config: no DeepSpeed facts
        return None


def _deepspeed_config(setup: Setup, sites: list[ArgsSite], pfs: dict[str, PythonFile]) -> tuple[Any, str]:
    ds = setup.extra.get("deepspeed")
    if ds is not None:
        return ds, f"{Path(getattr(ds, 'path', '') or '').name}"
    for site in sites:
        v, where = _site_value(site, "deepspeed", pfs)
        if not isinstance(v, str) or not v:
            continue
        bases = [Path(site.path).parent, Path.cwd()]
        for base in bases:
            p = Path(v) if Path(v).is_absolute() else base / v
            if p.is_file():
                cfg = _read_deepspeed(p)
                if cfg is not None:
                    return cfg, f"{p.name}, from {where}"
    return None, ""


def _int(v: Any) -> int | None:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


_DS_OPTIMIZERS = {"adam": "adamw_torch", "adamw": "adamw_torch", "cpuadam": "adamw_torch", "fusedadam": "adamw_torch",
                  "lamb": "adamw_torch", "onebitadam": "adamw_torch", "zerooneadam": "adamw_torch",
                  "onebitlamb": "adamw_torch", "adagrad": "adagrad", "lion": "lion", "muadam": "adamw_torch",
                  "sgd": "sgd"}


# ------------------------------------------------------------------ shape


def shape_from_setup(setup: Setup, *, gpus: int | None = None,
                     accelerate: Any = None) -> tuple[TrainingShape, list[str]] | None:
    """The training shape of ``setup`` and provenance notes; None when no model is found or
    its size is unknown. ``accelerate``: an AccelerateConfig to use when the setup links none."""
    r = _analyse(setup, gpus=gpus, accelerate=accelerate)
    if r is None or isinstance(r, str):
        return None
    return r.shape, r.notes


def launch_text(setup: Setup, limit: int = 100) -> str:
    """``run.sh:3: torchrun --nproc_per_node 4 train.py --per_device_train_batch_size 8 ...``:
    what tells two setups of the same script apart; "" without a launch line."""
    launch = setup.extra.get("launch")
    if launch is None:
        return ""
    parts = [launch.launcher]
    parts += [f.raw for f in getattr(launch, "launcher_flags", [])]
    if launch.script is not None:
        parts.append(launch.script[0])
    elif launch.module is not None:
        parts.append(f"-m {launch.module}")
    parts += [f.raw for f in launch.script_args]
    text = " ".join(p for p in parts if p)
    if len(text) > limit:
        text = text[: limit - 4].rstrip() + " ..."
    return f"{Path(launch.path).name}:{_launch_line(launch.path, launch.span.line)}: {text}"


def _launch_line(path: str, line: int) -> str:
    """``3``, or in a notebook ``cell 4:2`` (its launch lines are on virtual lines)."""
    if not path.lower().endswith(".ipynb"):
        return str(line)
    from trainlint.sources.errors import ReadError
    from trainlint.sources.files import ReadProblem, read_text
    from trainlint.sources.notebook import load_cells, layout

    try:
        loc = layout(path, load_cells(path, read_text(path).text)[1]).locate(line, 1)
    except (ReadError, ReadProblem):
        return str(line)
    return f"cell {loc[0]}:{loc[1]}" if loc is not None else str(line)


def estimate_setup(setup: Setup, *, gpus: int | None = None, accelerate: Any = None) -> SetupEstimate | str | None:
    """A SetupEstimate; a message (str) when a model is named but its size is unknown; None
    when the setup loads no model that can be found."""
    return _analyse(setup, gpus=gpus, accelerate=accelerate)


def _analyse(setup: Setup, *, gpus: int | None, accelerate: Any) -> SetupEstimate | str | None:
    from trainlint.knowledge.models import lookup_model

    ref = None
    for pf in setup.scripts:
        ref = find_model(pf)
        if ref is not None:
            break
    if ref is None:
        return None
    pf = ref.pf
    pfs = {p.path: p for p in setup.scripts}
    if ref.name is None:
        return f"{_where(pf, ref.call)}: the model name of from_pretrained is not a literal trainlint can read"
    info = lookup_model(ref.name, base_dir=Path(pf.path).parent)
    if info is None or not info.known:
        return (f"unknown model {ref.name!r} ({_where(pf, ref.call)}): not in trainlint's model table and not a "
                f"local folder with a config.json; no estimate")
    src = f"config.json in {Path(info.from_config).parent}" if info.from_config else "trainlint's model table"
    notes: list[str] = [f"model {ref.name!r} ({ref.where}): {info.params:,} parameters ({src})"]
    assumed: set[str] = set()
    sites = list(setup.sites)
    site = sites[0] if sites else None
    kw: dict[str, Any] = {}

    def sv(name: str) -> tuple[Any, str]:
        """The value of ``name`` in the first site that writes it (launch-line flags, an args
        file or the Python call)."""
        for st in sites:
            v = _site_value(st, name, pfs)
            if v[0] is not None:
                return v
        return None, ""

    ds, ds_note = _deepspeed_config(setup, sites, pfs)
    acc = setup.extra.get("accelerate") or accelerate

    # precision
    precision = None
    for name in ("bf16", "fp16"):
        if site is None:
            break
        v, where = sv(name)
        if v is True:
            precision, pnote = name, where
            break
        if v is UNKNOWN:
            assumed.add("precision")
    if precision is None and any(st.open_ended for st in sites):
        assumed.add("precision")  # a **kwargs may set it
    if precision is None and ds is not None:
        for name in ("bf16", "fp16"):
            v = ds.precision_enabled(name)
            if v is not None and v.value is True:
                precision, pnote = name, f"{ds_note}: {v.name}=true"
                break
    if precision is None and acc is not None:
        mp = acc.mixed_precision
        if mp is not None and mp.value in ("bf16", "fp16"):
            precision, pnote = mp.value, f"accelerate mixed_precision={mp.value} ({mp.where()})"
    if precision is None:
        precision, pnote = "fp32", "no bf16/fp16 set"
    notes.append(f"precision {precision}: {pnote}")
    kw["precision"] = precision

    # parameter dtype
    dt = ref.kwargs.get("dtype", ref.kwargs.get("torch_dtype"))
    if isinstance(dt, str) and dt in _DTYPES:
        kw["param_dtype"] = _DTYPES[dt]
        notes.append(f"weights loaded in {dt} (from_pretrained dtype)")
    elif dt == "auto":
        kw["param_dtype"] = _DTYPES.get(info.torch_dtype or "float32", "fp32")
        notes.append(f"weights loaded in the checkpoint's {info.torch_dtype} (dtype='auto')")
    elif info.torch_dtype in ("float16", "bfloat16"):
        tf = setup.target_transformers or "newest known"
        if setup.transformers_tuple()[0] >= 5:
            kw["param_dtype"] = _DTYPES.get(info.torch_dtype, "fp32")
            notes.append(f"weights loaded in the checkpoint's {info.torch_dtype}: from_pretrained defaults to "
                         f"dtype='auto' in transformers 5 (target {tf})")
        else:
            notes.append(f"weights loaded in fp32: from_pretrained defaults to float32 in transformers 4 "
                         f"(target {tf}); the checkpoint is {info.torch_dtype}")
    quantized = any(k in ref.kwargs for k in ("quantization_config", "load_in_4bit", "load_in_8bit"))
    if quantized:
        notes.append("quantized loading (4/8-bit) is not modelled: the estimate is an upper bound")
    attn = ref.kwargs.get("attn_implementation")
    if attn == "eager":
        kw["attention"] = "eager"

    # optimizer
    opt = None
    if ds is not None and ds.optimizer_type is not None and isinstance(ds.optimizer_type.value, str):
        t = ds.optimizer_type.value
        opt = _DS_OPTIMIZERS.get(t.lower().replace("_", ""), "adamw_torch")
        notes.append(f"optimizer {t} ({ds_note}: optimizer.type)")
    elif site is not None:
        v, where = sv("optim")
        if isinstance(v, str):
            opt = v
            notes.append(f"optimizer {v} ({where})")
    if opt is None:
        opt = "adamw_torch"
        notes.append("optimizer adamw_torch (the default optim)")
    kw["optimizer"] = opt

    # ZeRO
    if ds is not None:
        st = ds.stage
        stage = _int(st.value) if st is not None else 0
        kw["zero_stage"] = stage if stage in (0, 1, 2, 3) else 0
        parts = [f"ZeRO stage {kw['zero_stage']}"]
        for which, key in (("optimizer", "offload_optimizer"), ("param", "offload_param")):
            d = ds.offload_device(which)
            if d is not None and d.value in ("cpu", "nvme"):
                kw[key] = d.value
                parts.append(f"{key} {d.value}")
        hidden = info.hidden_size or 0
        for key, val in ds.buckets().items():
            if key not in ("allgather_bucket_size", "reduce_bucket_size", "stage3_prefetch_bucket_size",
                           "stage3_param_persistence_threshold"):
                continue
            n = _int(val.value)
            if val.value == "auto" and hidden:
                n = {"reduce_bucket_size": hidden * hidden, "stage3_prefetch_bucket_size": int(0.9 * hidden * hidden),
                     "stage3_param_persistence_threshold": 10 * hidden}.get(key)
            if n is not None:
                kw[key] = n
        oc = ds.overlap_comm
        if oc is not None and isinstance(oc.value, bool):
            kw["overlap_comm"] = oc.value
            parts.append(f"overlap_comm {oc.value}")
        mb = ds.micro_batch_size
        ds_mb = _int(mb.value) if mb is not None else None
        notes.append(f"{', '.join(parts)} ({ds_note})")
    else:
        ds_mb = None

    # gradient checkpointing
    gc = False
    for name in ("gradient_checkpointing", "activation_checkpointing"):
        if site is not None:
            v, where = sv(name)
            if v is True:
                gc = True
                notes.append(f"gradient checkpointing ({where})")
                break
    if not gc:
        for cs in pf.calls:
            f = cs.node.func
            if isinstance(f, ast.Attribute) and f.attr == "gradient_checkpointing_enable":
                gc = True
                notes.append(f"gradient checkpointing ({_where(pf, cs.node)} gradient_checkpointing_enable())")
                break
    kw["gradient_checkpointing"] = gc

    # batch
    mb_v, mb_where = sv("per_device_train_batch_size")
    if isinstance(mb_v, int) and not isinstance(mb_v, bool) and mb_v > 0:
        kw["micro_batch"] = mb_v
        notes.append(f"micro batch {mb_v} ({mb_where})")
    elif ds_mb:
        kw["micro_batch"] = ds_mb
        notes.append(f"micro batch {ds_mb} ({ds_note}: train_micro_batch_size_per_gpu)")
    else:
        kw["micro_batch"] = DEFAULT_MICRO_BATCH
        if mb_v is UNKNOWN:
            assumed.add("micro_batch")
        notes.append(f"micro batch {DEFAULT_MICRO_BATCH} (the per_device_train_batch_size default)"
                     if mb_v is None else f"micro batch {DEFAULT_MICRO_BATCH} assumed (not static)")
    ga, _ = sv("gradient_accumulation_steps")
    if isinstance(ga, int) and not isinstance(ga, bool) and ga > 0:
        kw["grad_accum"] = ga

    # sequence length
    n, where, to_max = _sequence_length(pf, sites, pfs)
    model_max = info.max_positions or (T5_MODEL_MAX_LENGTH if info.model_type in ("t5", "mt5") else None)
    if n is not None:
        kw["seq_len"] = n
        notes.append(f"sequence length {n} ({where})")
    elif to_max and model_max:
        kw["seq_len"] = model_max
        notes.append(f"sequence length {model_max}: the tokenizer truncates/pads to model_max_length "
                     f"(taken as the model's {model_max} positions)")
    else:
        kw["seq_len"] = min(DEFAULT_SEQ_LEN, model_max or DEFAULT_SEQ_LEN)
        assumed.add("seq_len")
        notes.append("sequence length not stated (no max_length in the script or the config)")

    # world size
    world = setup.world_size_value
    if world is not None:
        kw["world_size"] = world
        sw = setup.world_size
        notes.append(f"world size {world} ({sw.name + ', ' if sw is not None and sw.name else ''}"
                     f"{sw.where() if sw is not None else ''})")
    elif gpus:
        kw["world_size"] = gpus
        notes.append(f"world size {gpus} (--gpus)")
    elif acc is not None and acc.world_size():
        kw["world_size"] = acc.world_size()
        nm = acc.num_machines
        if nm is not None and isinstance(nm.value, int) and nm.value > 1:
            kw["num_nodes"] = nm.value
        notes.append(f"world size {kw['world_size']} (accelerate num_processes, {acc.num_processes.where()})")
    else:
        kw["world_size"] = 1
        assumed.add("world_size")
        notes.append("world size 1 assumed (no launch line, accelerate config or --gpus)")

    # LoRA
    lora = _lora(pf)
    params = info.params or 0
    if lora is not None:
        r, targets, lwhere = lora
        if r is None:
            notes.append(f"PEFT model ({lwhere}) with a config trainlint cannot read: all parameters taken as "
                         f"trainable (an upper bound)")
        else:
            added, how = lora_trainable_params(info, r, targets)
            if added > 0:
                kw["params"] = params + added
                kw["trainable_fraction"] = added / (params + added)
                notes.append(f"LoRA ({lwhere}): {added:,} trainable parameters = {how}")

    shape = shape_from_model(info, **kw)
    try:
        est = estimate(shape)
    except ValueError as e:
        return f"cannot estimate: {e}"
    return SetupEstimate(shape=shape, estimate=est, model=info, notes=notes, assumed=assumed, gpu=setup.gpu,
                         launch=launch_text(setup),
                         script=pf.path, model_span=pf.span(ref.call), quantized=quantized)


# ------------------------------------------------------------------ for verify


def estimate_for_script(script_path: str | Path, gpus: int | None = None) -> Estimate | None:
    """The memory estimate of the training run ``script_path`` starts (for ``trainlint
    verify``'s "estimate vs measured"); None when the script loads no known model."""
    from trainlint.config import load_settings
    from trainlint.resolve import build_setups, norm, read_workspace

    path = Path(script_path)
    settings = load_settings(path, {"gpus": gpus} if gpus else None)
    ws = read_workspace([path], settings, {})
    want = norm(path)
    for setup in build_setups(ws, settings):
        if not any(norm(s.path) == want for s in setup.scripts):
            continue
        r = estimate_setup(setup, gpus=gpus)
        if isinstance(r, SetupEstimate):
            return r.judged()[1]  # the figure `trainlint estimate` prints
    return None
