"""Per-GPU memory estimate of a training setup. Stdlib only.

Model states (weights, gradients, optimizer) follow DeepSpeed's own estimators exactly for
ZeRO-2 and ZeRO-3 with Adam in mixed precision (``deepspeed/runtime/zero/stage_1_and_2.py``
``estimate_zero2_model_states_mem_needs`` and ``stage3.py``
``estimate_zero3_model_states_mem_needs``, ``additional_buffer_factor=1.5``), and generalise
them per component so that other optimizers, fp32, a trainable fraction (LoRA/PEFT), ZeRO-1 and
plain DDP come out of the same bookkeeping. Ψ = parameters, T = trainable parameters,
G = world size, LL = DeepSpeed's largest layer, K = optimizer state bytes per trainable param.

DeepSpeed, 16-bit mixed precision (bytes per GPU):

============  ===========  ===============================  ===============
stage         weights      gradients                        optimizer
============  ===========  ===============================  ===============
ZeRO-1        2Ψ           2T (16-bit) + 4T/G (fp32 copy)   (4 master + K)T/G
ZeRO-2        2Ψ           (2 + 4)T/G                       (4 + K)T/G
ZeRO-3        2Ψ/G + 4LL   4T/G                             (4 + K)T/G
============  ===========  ===============================  ===============

With T = Ψ and K = 8 (Adam) this is DeepSpeed's ``2Ψ + 18Ψ/G`` (ZeRO-2) and ``4LL + 18Ψ/G``
(ZeRO-3); ZeRO-1 gives ``4Ψ + 16Ψ/G``. Optimizer offload leaves ``2Ψ`` (ZeRO-1/2) or
``4LL + 2Ψ/G`` (ZeRO-3) on the GPU, parameter offload (ZeRO-3) ``4LL``. Host memory per node is
DeepSpeed's formula, the 1.5 buffer factor included.

Plain DDP (``zero_stage=0``) with torch AMP keeps fp32 weights (4Ψ), fp32 gradients (4T), K·T
optimizer states and, under autocast, a 16-bit copy of the weights for the forward (2Ψ); a
model loaded in 16-bit (``param_dtype``) and trained without AMP keeps everything in 16 bits.
DDP also holds a flat copy of all gradients in its communication buckets
(``gradient_as_bucket_view=False``, the PyTorch default).

Activations: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models", eq. 1: per layer ``s·b·h·(34 + 5·a·s/h)`` bytes in 16-bit, generalised to the MLP
width; the ``5·a·s/h`` attention-score term only with eager attention (SDPA/flash kernels do not
keep the score matrix). Gradient checkpointing keeps each layer's input (2·s·b·h per layer) plus
one layer's full activations during its recomputation. Language-model heads add the logits:
16-bit ``b·s·V·2`` plus the fp32 upcast transformers' loss makes, ``b·s·V·4``.

Buffers: DeepSpeed ZeRO-1/2 buckets, ``overlap_comm`` costing 4.5 × (allgather_bucket_size +
reduce_bucket_size) × 2 bytes (transformers DeepSpeed guide); ZeRO-3 reduce and prefetch buckets
and persistent (unpartitioned) small parameters.

Not included: the CUDA context (see ``CUDA_CONTEXT_BYTES``), allocator fragmentation and
temporary buffers of individual kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "CUDA_CONTEXT_BYTES",
    "Estimate",
    "Suggestion",
    "Term",
    "TrainingShape",
    "deepspeed_zero2_model_states",
    "deepspeed_zero3_model_states",
    "estimate",
    "format_bytes",
    "optimizer_state_bytes",
    "savings",
    "shape_from_model",
]

GIB = 2**30
# What the CUDA context and kernels take outside PyTorch's allocator (nvidia-smi shows it,
# torch.cuda.max_memory_reserved does not). Typical, not measured: a few hundred MiB.
CUDA_CONTEXT_BYTES = 512 * 2**20
ADDITIONAL_BUFFER_FACTOR = 1.5

SRC_DS_Z2 = "deepspeed runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs"
SRC_DS_Z3 = "deepspeed runtime/zero/stage3.py estimate_zero3_model_states_mem_needs"
SRC_ZERO = "Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054), section 3.1"
SRC_ACT = "Korthikanti et al. 2022, Reducing Activation Recomputation (arXiv:2205.05198), eq. 1"
SRC_HF_DS = "transformers docs/source/en/deepspeed.md (ZeRO-2 overlap_comm; 'auto' bucket sizes)"
SRC_DDP = "torch.nn.parallel.DistributedDataParallel docs, gradient_as_bucket_view"
SRC_AMP = "torch.autocast: casts weights to 16 bits for the forward and keeps them for backward"
SRC_HF_LOSS = "transformers loss/loss_utils.py ForCausalLMLoss: logits.float()"

# Optimizer state bytes per trainable parameter (not counting master weights), states in fp32.
_OPT_STATE: dict[str, tuple[float, str]] = {}


def _reg(names: str, nbytes: float, why: str) -> None:
    for n in names.split():
        _OPT_STATE[n] = (nbytes, why)


_reg("adamw_torch adamw_torch_fused adamw_torch_xla adamw_torch_npu_fused adamw_apex_fused adamw_hf adamw adam "
     "paged_adamw_32bit adamw_anyprecision stable_adamw grokadamw fusedadam cpuadam adamw_bnb_32bit",
     8, "Adam: exp_avg + exp_avg_sq, 4 B each")
_reg("adamw_bnb_8bit adamw_8bit paged_adamw_8bit adamw_torch_8bit", 2, "8-bit Adam: two 1-byte states")
_reg("adamw_torch_4bit", 1, "4-bit Adam: two 0.5-byte states")
_reg("ademamix paged_ademamix_32bit", 12, "AdEMAMix: two first moments + second moment, 4 B each")
_reg("ademamix_8bit paged_ademamix_8bit", 3, "8-bit AdEMAMix: three 1-byte states")
_reg("lion_32bit paged_lion_32bit lion", 4, "Lion: one momentum, 4 B")
_reg("lion_8bit paged_lion_8bit", 1, "8-bit Lion: one 1-byte momentum")
_reg("sgd", 0, "SGD without momentum: no state (optim_args momentum>0 adds 4 B: use 'sgd_momentum')")
_reg("sgd_momentum", 4, "SGD with momentum: one buffer, 4 B")
_reg("adagrad", 4, "Adagrad: one sum of squares, 4 B")
_reg("rmsprop rmsprop_bnb rmsprop_bnb_32bit", 4, "RMSprop: one square average, 4 B")
_reg("rmsprop_bnb_8bit", 1, "8-bit RMSprop: one 1-byte state")
_reg("lomo adalomo", 0, "LOMO fuses the update into backward: no optimizer state")
_reg("schedule_free_adamw schedule_free_radam", 8, "schedule-free AdamW: z and second moment, 4 B each")
_reg("schedule_free_sgd", 4, "schedule-free SGD: z, 4 B")


def _norm_opt(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def optimizer_state_bytes(optimizer: str, *, trainable: int = 0, hidden: int | None = None) -> tuple[float, str, bool]:
    """(bytes per trainable parameter, explanation, known). Unknown names assume Adam (8 B).

    Adafactor (transformers' default use: no first moment, factored second moment) keeps a row
    and a column vector per weight matrix: about 4·(r + c) bytes for r·c parameters, i.e.
    ``8/h`` bytes per parameter for h-wide square matrices; without the width it is taken as one
    square matrix, ``8·sqrt(T)`` bytes in all.
    """
    key = _norm_opt(optimizer)
    if key.startswith("adafactor") or key == "galore_adafactor":
        if hidden:
            return 8.0 / hidden, f"Adafactor: factored second moment, ~8/h = 8/{hidden} B per param", True
        per = 8.0 * math.sqrt(trainable) / trainable if trainable else 0.0
        return per, "Adafactor: factored second moment, ~8*sqrt(T) B in all (width unknown)", True
    if key in _OPT_STATE:
        b, why = _OPT_STATE[key]
        return b, why, True
    if key.startswith("galore_adamw") or key.startswith("apollo_adamw"):
        return 8, "GaLore/APOLLO AdamW: low-rank states, Adam's 8 B taken as an upper bound", True
    return 8, f"unknown optimizer {optimizer!r}: Adam's 8 B assumed", False


_DTYPE_BYTES = {"fp32": 4, "float32": 4, "fp16": 2, "float16": 2, "half": 2, "bf16": 2, "bfloat16": 2}


@dataclass
class TrainingShape:
    """Everything the estimate needs. Sizes in parameters/elements; memory in bytes."""

    params: int
    largest_layer_params: int | None = None  # DeepSpeed's largest layer; default: vocab*hidden
    layers: int = 0
    hidden: int = 0
    heads: int = 0
    vocab: int = 0
    seq_len: int = 512
    micro_batch: int = 8
    grad_accum: int = 1
    world_size: int = 1
    gpus_per_node: int | None = None  # default: world_size / num_nodes
    num_nodes: int = 1
    precision: str = "fp32"  # "fp32" | "fp16" | "bf16": the training precision (AMP / DeepSpeed)
    param_dtype: str = "fp32"  # dtype the model is loaded in (from_pretrained torch_dtype)
    optimizer: str = "adamw_torch"
    zero_stage: int = 0  # 0 = DDP (or one GPU) without DeepSpeed ZeRO
    offload_optimizer: str = "none"  # "none" | "cpu" | "nvme"
    offload_param: str = "none"  # ZeRO-3 only
    zero_init: bool = True  # deepspeed.zero.Init (transformers does it for ZeRO-3 from_pretrained)
    gradient_checkpointing: bool = False
    trainable_fraction: float = 1.0  # LoRA/PEFT: share of parameters that train
    overlap_comm: bool | None = None  # DeepSpeed default: True for ZeRO-3, else False
    allgather_bucket_size: int = 500_000_000
    reduce_bucket_size: int = 500_000_000
    stage3_prefetch_bucket_size: int = 50_000_000
    stage3_param_persistence_threshold: int = 100_000
    intermediate: int | None = None  # MLP width; default 4*hidden
    gated_mlp: bool = False  # SwiGLU/GeGLU MLPs (llama, mistral, qwen2, gemma, t5 v1.1)
    attention: str = "sdpa"  # "eager" keeps the attention-score matrix
    lm_head: bool = True  # vocabulary logits (causal/seq2seq LM); False for classifiers
    optimizer_state_bytes: float | None = None  # override K
    additional_buffer_factor: float = ADDITIONAL_BUFFER_FACTOR
    model_name: str = ""

    @property
    def total_gpus(self) -> int:
        return max(1, self.world_size)

    @property
    def per_node(self) -> int:
        if self.gpus_per_node:
            return self.gpus_per_node
        return max(1, self.total_gpus // max(1, self.num_nodes))

    @property
    def trainable(self) -> int:
        return int(round(self.params * max(0.0, min(1.0, self.trainable_fraction))))

    @property
    def mixed(self) -> bool:
        return self.precision in ("fp16", "bf16")

    @property
    def ll(self) -> int:
        if self.largest_layer_params is not None:
            return self.largest_layer_params
        return self.vocab * self.hidden


@dataclass(frozen=True)
class Term:
    """One line of an estimate: bytes, the formula and where the formula comes from."""

    name: str
    bytes: int
    formula: str
    source: str
    category: str = ""  # weights | gradients | optimizer | activations | buffers | host


@dataclass
class Estimate:
    """The memory estimate of one training shape: per-GPU terms and host memory."""

    shape: TrainingShape
    per_gpu: dict[str, int]
    host_bytes: int  # CPU memory per node
    terms: list[Term] = field(default_factory=list)
    nvme_bytes: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.per_gpu["total"]

    @property
    def model_states(self) -> int:
        """Weights + gradients + optimizer: what DeepSpeed's estimators report per GPU."""
        return self.per_gpu["weights"] + self.per_gpu["gradients"] + self.per_gpu["optimizer"]

    def describe(self) -> str:
        lines = [f"{t.category:<11} {t.name:<38} {format_bytes(t.bytes):>11}  {t.formula}" for t in self.terms]
        lines.append(f"{'total':<11} {'per GPU':<38} {format_bytes(self.total):>11}")
        lines.append(f"{'host':<11} {'per node':<38} {format_bytes(self.host_bytes):>11}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Suggestion:
    """A change to the training shape with its estimated saving and whether it then fits."""

    change: str
    new_total: int
    saving: int
    fits: bool
    shape: TrainingShape | None = None


def format_bytes(n: float) -> str:
    return f"{n / GIB:.2f} GiB"


# ------------------------------------------------------------ DeepSpeed's formulas, verbatim


def deepspeed_zero2_model_states(total_params: int, num_gpus_per_node: int = 1, num_nodes: int = 1,
                                 cpu_offload: bool = True,
                                 additional_buffer_factor: float = ADDITIONAL_BUFFER_FACTOR) -> tuple[int, int]:
    """(cpu_bytes, gpu_bytes) as DeepSpeed's ``estimate_zero2_model_states_mem_needs``."""
    total_gpus = num_nodes * num_gpus_per_node
    if cpu_offload:
        gpu = 2 * total_params
        cpu = total_params * max(4 * total_gpus, 16) * additional_buffer_factor
    else:
        gpu = 2 * total_params + int(18 * total_params / total_gpus)
        cpu = total_params * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu), int(gpu)


def deepspeed_zero3_model_states(total_params: int, largest_layer_params: int, num_gpus_per_node: int = 1,
                                 num_nodes: int = 1, cpu_offload: bool = True, cpu_offload_params: bool = True,
                                 zero_init: bool = True,
                                 additional_buffer_factor: float = ADDITIONAL_BUFFER_FACTOR) -> tuple[int, int]:
    """(cpu_bytes, gpu_bytes) as DeepSpeed's ``estimate_zero3_model_states_mem_needs``."""
    total_gpus = num_nodes * num_gpus_per_node
    gpus_factor = 1 / num_nodes
    ll_mem = 4 * largest_layer_params
    if cpu_offload:
        if cpu_offload_params:
            gpu = ll_mem
            mult = 18 * gpus_factor if zero_init else max(4 * num_gpus_per_node, 18 * gpus_factor)
        else:
            gpu = ll_mem + int(2 * total_params / total_gpus)
            mult = 16 * gpus_factor if zero_init else max(4 * num_gpus_per_node, 16 * gpus_factor)
        cpu = total_params * mult * additional_buffer_factor
    else:
        gpu = ll_mem + int(18 * total_params / total_gpus)
        base = largest_layer_params if zero_init else total_params
        cpu = base * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu), int(gpu)


# ------------------------------------------------------------------------------- estimate


def _i(x: float) -> int:
    return int(x)


def estimate(shape: TrainingShape) -> Estimate:
    s = shape
    if s.zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be 0..3, got {s.zero_stage}")
    if s.precision not in ("fp32", "fp16", "bf16"):
        raise ValueError(f"precision must be fp32, fp16 or bf16, got {s.precision!r}")
    P, T, G, LL = s.params, s.trainable, s.total_gpus, s.ll
    terms: list[Term] = []
    notes: list[str] = []

    def add(cat: str, name: str, n: float, formula: str, source: str) -> None:
        terms.append(Term(name=name, bytes=_i(n), formula=formula, source=source, category=cat))

    if s.optimizer_state_bytes is not None:
        K, kwhy, kknown = float(s.optimizer_state_bytes), "given", True
    else:
        K, kwhy, kknown = optimizer_state_bytes(s.optimizer, trainable=T, hidden=s.hidden or None)
    if not kknown:
        notes.append(kwhy)
    opt_off = s.offload_optimizer in ("cpu", "nvme") and s.zero_stage >= 1
    par_off = s.offload_param in ("cpu", "nvme") and s.zero_stage == 3
    if s.zero_stage == 0 and s.offload_optimizer not in ("none", "", None):
        notes.append("optimizer offload needs DeepSpeed ZeRO; ignored for zero_stage 0")
    pdt = _DTYPE_BYTES.get(s.param_dtype, 4)

    # ---- model states
    if s.zero_stage == 0:
        half_params = pdt == 2
        if half_params and not s.mixed:
            notes.append(f"model loaded in {s.param_dtype} and trained without AMP: pure 16-bit training")
        w = pdt * P
        add("weights", "parameters", w, f"{pdt} B x {P:,} params", SRC_ZERO)
        if s.mixed and not half_params:
            add("weights", "autocast 16-bit weight copies", 2 * P, f"2 B x {P:,} params", SRC_AMP)
        add("gradients", "gradients", pdt * T, f"{pdt} B x {T:,} trainable", SRC_ZERO)
        k_eff = K * (0.5 if half_params and K >= 4 and _norm_opt(s.optimizer) in _FP32_STATE_OPTS else 1.0)
        add("optimizer", "optimizer states", k_eff * T, f"{k_eff:g} B x {T:,} trainable ({kwhy})", SRC_ZERO)
        if G > 1:
            add("buffers", "DDP gradient buckets", pdt * T, f"{pdt} B x {T:,} (a flat copy of the gradients)",
                SRC_DDP)
        host = P * pdt * s.per_node * s.additional_buffer_factor
        host_formula = f"{pdt} B x {P:,} x {s.per_node} ranks x {s.additional_buffer_factor}"
    else:
        w16 = 2 if s.mixed else 4
        master = 4 if s.mixed else 0
        g32 = 4 if s.mixed else 0  # DeepSpeed's fp32 gradient copy for the optimizer step
        if s.zero_stage == 3:
            if par_off:
                add("weights", "gathered largest layer (params+grads)", 4 * LL, f"4 B x {LL:,} largest layer",
                    SRC_DS_Z3)
            else:
                add("weights", "16-bit parameter shard", w16 * P / G, f"{w16} B x {P:,} / {G}", SRC_DS_Z3)
                add("weights", "gathered largest layer (params+grads)", 4 * LL, f"4 B x {LL:,} largest layer",
                    SRC_DS_Z3)
            if not opt_off:
                if s.mixed:
                    add("gradients", "fp32 gradient shard", g32 * T / G, f"4 B x {T:,} / {G}", SRC_DS_Z3)
                else:
                    add("gradients", "gradient shard", 4 * T / G, f"4 B x {T:,} / {G}", SRC_DS_Z3)
        else:
            add("weights", "16-bit parameters" if s.mixed else "parameters", w16 * P, f"{w16} B x {P:,}",
                SRC_DS_Z2)
            if not opt_off:
                if s.zero_stage == 1:
                    add("gradients", "16-bit gradients (not partitioned in ZeRO-1)" if s.mixed else "gradients",
                        w16 * T, f"{w16} B x {T:,}", SRC_ZERO)
                    if s.mixed:
                        add("gradients", "fp32 gradient partition", g32 * T / G, f"4 B x {T:,} / {G}", SRC_DS_Z2)
                else:
                    add("gradients", "gradient partition", (w16 + g32) * T / G, f"{w16 + g32} B x {T:,} / {G}",
                        SRC_DS_Z2)
        if not opt_off:
            if master:
                add("optimizer", "fp32 master weights", master * T / G, f"4 B x {T:,} / {G}",
                    SRC_DS_Z3 if s.zero_stage == 3 else SRC_DS_Z2)
            add("optimizer", "optimizer states", K * T / G, f"{K:g} B x {T:,} / {G} ({kwhy})",
                SRC_DS_Z3 if s.zero_stage == 3 else SRC_DS_Z2)
        host, host_formula = _host_deepspeed(s, P, T, LL, K, opt_off, par_off)

    # ---- activations
    _activations(s, add)

    # ---- buffers
    if s.zero_stage in (1, 2):
        overlap = bool(s.overlap_comm) if s.overlap_comm is not None else False
        buckets = s.allgather_bucket_size + s.reduce_bucket_size
        if overlap:
            add("buffers", "overlap_comm buckets", 4.5 * buckets * 2,
                f"4.5 x ({s.allgather_bucket_size:,} + {s.reduce_bucket_size:,}) x 2 B", SRC_HF_DS)
        else:
            add("buffers", "communication buckets", buckets * 2,
                f"({s.allgather_bucket_size:,} + {s.reduce_bucket_size:,}) x 2 B", SRC_HF_DS)
    elif s.zero_stage == 3:
        add("buffers", "reduce bucket", s.reduce_bucket_size * 2, f"{s.reduce_bucket_size:,} x 2 B", SRC_HF_DS)
        add("buffers", "prefetch bucket", s.stage3_prefetch_bucket_size * 2,
            f"{s.stage3_prefetch_bucket_size:,} x 2 B", SRC_HF_DS)
        # parameters under the persistence threshold stay whole on every GPU: in transformer
        # layers those are the norm weights/biases and biases, about 4·h per layer
        if s.layers and s.hidden and s.hidden <= s.stage3_param_persistence_threshold:
            add("buffers", "persistent small parameters", 2 * 4 * s.hidden * s.layers,
                f"2 B x 4 x {s.hidden} x {s.layers} layers (tensors <= param_persistence_threshold)", SRC_HF_DS)

    cats = ("weights", "gradients", "optimizer", "activations", "buffers")
    per = {c: sum(t.bytes for t in terms if t.category == c) for c in cats}
    per["total"] = sum(per[c] for c in cats)
    terms.append(Term("host memory per node", _i(host), host_formula,
                      SRC_DS_Z3 if s.zero_stage == 3 else SRC_DS_Z2, "host"))
    nvme = 0
    if s.zero_stage >= 1 and s.offload_optimizer == "nvme":
        nvme += _i((4 + 4 + K) * T / max(1, s.num_nodes))
    if par_off and s.offload_param == "nvme":
        nvme += _i(2 * P / max(1, s.num_nodes))
    return Estimate(shape=s, per_gpu=per, host_bytes=_i(host), terms=terms, nvme_bytes=nvme, notes=notes)


# optimizers whose torch implementation keeps its state in the parameter's dtype
_FP32_STATE_OPTS = {"adamw_torch", "adamw_torch_fused", "adamw_hf", "adamw", "adam", "sgd_momentum", "adagrad",
                    "rmsprop", "lion_32bit", "lion", "ademamix"}


def _host_deepspeed(s: TrainingShape, P: int, T: int, LL: int, K: float, opt_off: bool,
                    par_off: bool) -> tuple[float, str]:
    """Host bytes per node, DeepSpeed's formulas with the optimizer's bytes generalised
    (16 = 4 fp32 params + 4 fp32 grads + 8 Adam; 18 adds 2 for offloaded 16-bit params)."""
    f = s.additional_buffer_factor
    nodes = max(1, s.num_nodes)
    n = s.per_node
    states = (4 + 4 + K) * T  # fp32 master + fp32 grads + optimizer
    if s.zero_stage in (1, 2):
        if opt_off:
            host = max(4 * P * s.total_gpus, states) * f
            return host, f"max(4 B x {P:,} x {s.total_gpus} GPUs, {8 + K:g} B x {T:,}) x {f}"
        return P * 4 * n * f, f"4 B x {P:,} x {n} GPUs/node x {f}"
    if opt_off:
        if par_off:
            states += 2 * P
        per_node = states / nodes
        if s.zero_init:
            return per_node * f, f"{states / max(P, 1):.3g} B x {P:,} / {nodes} nodes x {f}"
        return max(4 * P * n, per_node) * f, f"max(4 B x {P:,} x {n}, states / {nodes} nodes) x {f}"
    base = LL if s.zero_init else P
    return base * 4 * n * f, f"4 B x {base:,} ({'largest layer, zero.Init' if s.zero_init else 'params'}) x {n} x {f}"


def _activations(s: TrainingShape, add: Any) -> None:
    b, q, h, a, L = s.micro_batch, s.seq_len, s.hidden, max(1, s.heads), s.layers
    if not (b and q and h and L):
        return
    inter = s.intermediate or 4 * h
    scale = 1.0 if s.mixed else 2.0  # the formula counts 16-bit activations
    sbh = q * b * h
    attn = 11 * sbh + (5 * a * q * q * b if s.attention == "eager" else 0)
    ln = 4 * sbh
    mlp = (2 * sbh + 8 * q * b * inter) if s.gated_mlp else (3 * sbh + 4 * q * b * inter)
    per_layer = (attn + ln + mlp) * scale
    eager = "5as^2b (eager attention) + " if s.attention == "eager" else ""
    mlp_f = "2sbh + 8sbI (gated MLP)" if s.gated_mlp else "3sbh + 4sbI"
    base_formula = f"11sbh + {eager}4sbh + {mlp_f}; s={q} b={b} h={h} I={inter}" + (
        "" if s.mixed else ", x2 for fp32")
    if s.gradient_checkpointing:
        kept = 2 * sbh * L * scale
        add("activations", "checkpointed layer inputs", kept, f"2sbh x {L} layers", SRC_ACT)
        add("activations", "one layer recomputed", per_layer, f"one layer: {base_formula}", SRC_ACT)
    else:
        add("activations", "layer activations", per_layer * L, f"{L} layers x ({base_formula})", SRC_ACT)
    if s.lm_head and s.vocab:
        logits = b * q * s.vocab
        if s.mixed:
            add("activations", "logits (16-bit) + fp32 upcast for the loss", logits * 6,
                f"b*s*V x (2 + 4) B, V={s.vocab}", SRC_HF_LOSS)
        else:
            add("activations", "logits (fp32)", logits * 4, f"b*s*V x 4 B, V={s.vocab}", SRC_HF_LOSS)


# -------------------------------------------------------------------------------- savings


def savings(shape: TrainingShape, gpu_memory_bytes: int | None = None, *, bf16_ok: bool = True) -> list[Suggestion]:
    """Changes that lower the per-GPU total, biggest saving first. ``fits`` says whether the
    new total is under ``gpu_memory_bytes`` (always False when that is unknown)."""
    base = estimate(shape).total
    tries: list[tuple[str, TrainingShape]] = []
    if not shape.gradient_checkpointing:
        tries.append(("enable gradient_checkpointing", replace(shape, gradient_checkpointing=True)))
    if shape.micro_batch > 1:
        mb = shape.micro_batch // 2
        tries.append((f"per_device_train_batch_size {shape.micro_batch} -> {mb} with gradient_accumulation_steps "
                      f"{shape.grad_accum} -> {shape.grad_accum * 2}",
                      replace(shape, micro_batch=mb, grad_accum=shape.grad_accum * 2)))
    if shape.precision == "fp32" and bf16_ok:
        tries.append(("train in bf16 (bf16=True)", replace(shape, precision="bf16")))
    if shape.zero_stage < 3 and shape.total_gpus > 1:
        nxt = shape.zero_stage + 1
        tries.append((f"DeepSpeed ZeRO stage {nxt}", replace(shape, zero_stage=nxt)))
    k = _norm_opt(shape.optimizer)
    if shape.optimizer_state_bytes is None and _OPT_STATE.get(k, (0, ""))[0] == 8:
        tries.append(("8-bit AdamW (optim='adamw_bnb_8bit')", replace(shape, optimizer="adamw_bnb_8bit")))
    if shape.offload_optimizer == "none":
        if shape.zero_stage >= 1:
            tries.append(("offload the optimizer to CPU (offload_optimizer.device='cpu')",
                          replace(shape, offload_optimizer="cpu")))
        else:
            tries.append(("DeepSpeed ZeRO-2 with the optimizer offloaded to CPU",
                          replace(shape, zero_stage=2, offload_optimizer="cpu")))
    out = []
    for change, sh in tries:
        new = estimate(sh).total
        if new < base:
            out.append(Suggestion(change=change, new_total=new, saving=base - new,
                                  fits=gpu_memory_bytes is not None and new <= gpu_memory_bytes, shape=sh))
    out.sort(key=lambda x: -x.saving)
    return out


def shape_from_model(info: Any, **kw: Any) -> TrainingShape:
    """A TrainingShape from a ``trainlint.knowledge.models.ModelInfo`` plus training settings.

    Encoder-decoders count encoder and decoder layers; gated MLPs for the architectures that
    use them; no vocabulary logits for encoder-only models (their heads are classifiers)."""
    mt = getattr(info, "model_type", "")
    gated = mt in ("llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2", "phi3")
    if mt in ("t5", "mt5"):
        gated = True  # v1.1/flan/mT5; original T5 is not, a small difference
    encoder_only = mt in ("bert", "roberta", "xlm-roberta", "camembert", "electra", "distilbert", "albert",
                          "deberta-v2")
    layers = info.num_layers or 0
    if getattr(info, "encoder_decoder", False):
        layers *= 2
    fields: dict[str, Any] = dict(
        params=info.params or 0,
        largest_layer_params=info.largest_layer_params,
        layers=layers,
        hidden=info.hidden_size or 0,
        heads=info.num_heads or 0,
        vocab=info.vocab_size or 0,
        intermediate=info.intermediate_size,
        gated_mlp=gated,
        lm_head=not encoder_only,
        model_name=getattr(info, "hub_id", ""),
    )
    fields.update(kw)
    return TrainingShape(**fields)
