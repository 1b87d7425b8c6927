import math
from dataclasses import replace

import pytest

from trainlint.knowledge.gpus import lookup_gpu
from trainlint.knowledge.models import lookup_model
from trainlint.memory import (
    GIB,
    TrainingShape,
    deepspeed_zero2_model_states,
    deepspeed_zero3_model_states,
    estimate,
    optimizer_state_bytes,
    savings,
    shape_from_model,
)

# bigscience/T0_3B as DeepSpeed counts it (AutoModel): "2783M total params, 65M largest layer"
T0_P = lookup_model("bigscience/T0_3B").backbone_params
T0_LL = lookup_model("bigscience/T0_3B").largest_layer_params
# t5-3b (AutoModel): "2851M total params, 32M largest layer params"
T5_3B_P = lookup_model("t5-3b").backbone_params
T5_3B_LL = lookup_model("t5-3b").largest_layer_params


def gib(n):
    return round(n / GIB, 2)


def states(P, LL, *, stage, per_node=1, nodes=1, opt="none", param="none", zero_init=True):
    """Model-state-only shape: bf16 mixed precision, Adam, no activations."""
    return TrainingShape(params=P, largest_layer_params=LL, world_size=per_node * nodes, gpus_per_node=per_node,
                         num_nodes=nodes, precision="bf16", optimizer="adamw_torch", zero_stage=stage,
                         offload_optimizer=opt, offload_param=param, zero_init=zero_init, layers=0)


def test_model_counts_used_by_the_deepspeed_docs():
    assert int(T0_P / 1e6) == 2783 and int(T0_LL / 1e6) == 65
    assert int(T5_3B_P / 1e6) == 2851 and int(T5_3B_LL / 1e6) == 32


# transformers docs/source/en/deepspeed.md, "Memory requirements": T0_3B, 1 node, 1 GPU
#   per CPU  |  per GPU |   Options
#    70.00GB |   0.25GB | offload_param=cpu , offload_optimizer=cpu , zero_init=1
#    70.00GB |   0.25GB | offload_param=cpu , offload_optimizer=cpu , zero_init=0
#    62.23GB |   5.43GB | offload_param=none, offload_optimizer=cpu , zero_init=1
#    62.23GB |   5.43GB | offload_param=none, offload_optimizer=cpu , zero_init=0
#     0.37GB |  46.91GB | offload_param=none, offload_optimizer=none, zero_init=1
#    15.56GB |  46.91GB | offload_param=none, offload_optimizer=none, zero_init=0
T0_1GPU = [
    ("cpu", "cpu", True, 70.00, 0.25),
    ("cpu", "cpu", False, 70.00, 0.25),
    ("none", "cpu", True, 62.23, 5.43),
    ("none", "cpu", False, 62.23, 5.43),
    ("none", "none", True, 0.37, 46.91),
    ("none", "none", False, 15.56, 46.91),
]
# the same with 2 GPUs per node (DeepSpeed/transformers docs, zh translation of the guide)
T0_2GPU = [
    ("cpu", "cpu", True, 70.00, 0.25),
    ("none", "cpu", True, 62.23, 2.84),
    ("none", "none", True, 0.74, 23.58),
    ("none", "none", False, 31.11, 23.58),
]
# DeepSpeed docs/code-docs/source/memory.rst: t5-3b, 1 node, 8 GPUs, live model
T5_3B_8GPU = [
    ("cpu", "cpu", True, 71.71, 0.12),
    ("cpu", "cpu", False, 127.48, 0.12),
    ("none", "cpu", True, 63.74, 0.79),
    ("none", "cpu", False, 127.48, 0.79),
    ("none", "none", True, 1.47, 6.10),
    ("none", "none", False, 127.48, 6.10),
]
# ... and "cold" with total_params=2851e6, largest_layer_params=32e6
T5_3B_8GPU_COLD = [
    ("cpu", "cpu", True, 71.69, 0.12),
    ("cpu", "cpu", False, 127.45, 0.12),
    ("none", "cpu", True, 63.72, 0.78),
    ("none", "cpu", False, 127.45, 0.78),
    ("none", "none", True, 1.43, 6.09),
    ("none", "none", False, 127.45, 6.09),
]


@pytest.mark.parametrize(
    "P, LL, per_node, rows",
    [
        (T0_P, T0_LL, 1, T0_1GPU),
        (T0_P, T0_LL, 2, T0_2GPU),
        (T5_3B_P, T5_3B_LL, 8, T5_3B_8GPU),
        (int(2851e6), int(32e6), 8, T5_3B_8GPU_COLD),
    ],
)
def test_zero3_matches_deepspeed_tables(P, LL, per_node, rows):
    for param, opt, zi, cpu_gib, gpu_gib in rows:
        est = estimate(states(P, LL, stage=3, per_node=per_node, opt=opt, param=param, zero_init=zi))
        assert gib(est.model_states) == gpu_gib, (param, opt, zi, est.model_states / GIB)
        assert gib(est.host_bytes) == cpu_gib, (param, opt, zi, est.host_bytes / GIB)
        # and the verbatim DeepSpeed function agrees to the byte (up to int truncation per term)
        cpu, gpu = deepspeed_zero3_model_states(P, LL, per_node, 1, cpu_offload=opt == "cpu",
                                                cpu_offload_params=param == "cpu", zero_init=zi)
        assert abs(est.model_states - gpu) <= 8 and est.host_bytes == cpu


def test_t0_3b_zero3_one_gpu_is_46_91_gib():
    est = estimate(states(T0_P, T0_LL, stage=3))
    assert est.model_states == 4 * T0_LL + 18 * T0_P
    assert f"{est.model_states / GIB:.2f}" == "46.91"
    assert est.per_gpu["weights"] == 2 * T0_P + 4 * T0_LL
    assert est.per_gpu["gradients"] == 4 * T0_P
    assert est.per_gpu["optimizer"] == (4 + 8) * T0_P


# DeepSpeed memory.rst, ZeRO-2, t5-3b, 1 node, 8 GPUs:
#   127.48GB |   5.31GB | offload_optimizer=cpu
#   127.48GB |  15.93GB | offload_optimizer=none     (cold 2851e6: 127.45 / 5.31 / 15.93)
# The 15.93 was printed by an older estimator (4Ψ + 16Ψ/G); DeepSpeed's source now says
# 2Ψ + 18Ψ/G (11.28 GiB here). 4Ψ + 16Ψ/G is exactly trainlint's ZeRO-1 number.
@pytest.mark.parametrize("P, cpu_gib", [(T5_3B_P, 127.48), (int(2851e6), 127.45)])
def test_zero2_matches_deepspeed(P, cpu_gib):
    off = estimate(states(P, None, stage=2, per_node=8, opt="cpu"))
    assert gib(off.model_states) == 5.31 and gib(off.host_bytes) == cpu_gib
    assert (off.host_bytes, off.model_states) == deepspeed_zero2_model_states(P, 8, 1, cpu_offload=True)
    none = estimate(states(P, None, stage=2, per_node=8))
    cpu, gpu = deepspeed_zero2_model_states(P, 8, 1, cpu_offload=False)
    assert gib(none.host_bytes) == cpu_gib and none.host_bytes == cpu
    assert abs(none.model_states - gpu) <= 8 and abs(none.model_states / GIB - 11.28) < 0.015
    z1 = estimate(states(P, None, stage=1, per_node=8))
    assert gib(z1.model_states) == 15.93


def test_zero2_one_gpu_t0():
    est = estimate(states(T0_P, T0_LL, stage=2))
    cpu, gpu = deepspeed_zero2_model_states(T0_P, 1, 1, cpu_offload=False)
    assert est.model_states == gpu == 20 * T0_P and est.host_bytes == cpu


def test_zero2_multinode_offload_uses_total_gpus():
    # DeepSpeed: cpu = Ψ * max(4 * total_gpus, 16) * 1.5
    est = estimate(states(10**9, None, stage=2, per_node=8, nodes=2, opt="cpu"))
    assert est.host_bytes == deepspeed_zero2_model_states(10**9, 8, 2, cpu_offload=True)[0] == int(10**9 * 64 * 1.5)


def test_zero3_multinode_matches_deepspeed():
    for opt, param in (("cpu", "cpu"), ("cpu", "none"), ("none", "none")):
        for zi in (True, False):
            est = estimate(states(T5_3B_P, T5_3B_LL, stage=3, per_node=4, nodes=2, opt=opt, param=param,
                                  zero_init=zi))
            cpu, gpu = deepspeed_zero3_model_states(T5_3B_P, T5_3B_LL, 4, 2, cpu_offload=opt == "cpu",
                                                    cpu_offload_params=param == "cpu", zero_init=zi)
            assert abs(est.model_states - gpu) <= 8 and abs(est.host_bytes - cpu) <= 2, (opt, param, zi)


def test_deepspeed_docs_t5_large_cases():
    # memory.rst: t5-large, 4 GPUs: case1 3291MB, case2 125MB, case3 477MB (bytes >> 20)
    P, LL = lookup_model("t5-large").backbone_params, lookup_model("t5-large").largest_layer_params
    assert round(P / 1e6, 2) == 737.67 and round(LL / 1e6, 2) == 32.90
    case1 = estimate(states(P, LL, stage=3, per_node=4)).model_states
    case2 = estimate(states(P, LL, stage=3, per_node=4, opt="cpu", param="cpu")).model_states
    case3 = estimate(states(P, LL, stage=3, per_node=4, opt="cpu")).model_states
    assert (case1 >> 20, case2 >> 20, case3 >> 20) == (3291, 125, 477)


def test_zero_paper_stage_table():
    # ZeRO paper's 16Ψ / (4Ψ + 12Ψ/N) / (2Ψ + 14Ψ/N) / 16Ψ/N with Ψ=7.5B, N=64 used 120/31.4/16.6/1.9 GB.
    # DeepSpeed's bookkeeping adds the fp32 gradient copy (4Ψ/N), so ours is that much higher.
    P, N = 7_500_000_000, 64
    z1 = estimate(states(P, 0, stage=1, per_node=8, nodes=8)).model_states
    z2 = estimate(states(P, 0, stage=2, per_node=8, nodes=8)).model_states
    z3 = estimate(states(P, 0, stage=3, per_node=8, nodes=8)).model_states
    assert abs(z1 - (4 * P + 12 * P / N + 4 * P / N)) < 64
    assert abs(z2 - (2 * P + 14 * P / N + 4 * P / N)) < 64
    assert abs(z3 - (16 * P / N + 2 * P / N)) < 64


def test_lora_only_trainable_params_carry_grads_and_states():
    P = 7_000_000_000
    full = estimate(states(P, 0, stage=2))
    lora = estimate(replace(states(P, 0, stage=2), trainable_fraction=0.01))
    assert lora.per_gpu["weights"] == full.per_gpu["weights"] == 2 * P
    T = int(P * 0.01)
    assert lora.per_gpu["gradients"] == 6 * T
    assert lora.per_gpu["optimizer"] == 12 * T


def test_ddp_amp_bookkeeping():
    P = 1_000_000_000
    sh = TrainingShape(params=P, precision="bf16", optimizer="adamw_torch", world_size=1)
    est = estimate(sh)
    # fp32 weights + autocast 16-bit copies, fp32 grads, Adam 8 B
    assert est.per_gpu["weights"] == 6 * P
    assert est.per_gpu["gradients"] == 4 * P
    assert est.per_gpu["optimizer"] == 8 * P
    assert est.per_gpu["buffers"] == 0
    ddp = estimate(replace(sh, world_size=4))
    assert ddp.per_gpu["buffers"] == 4 * P  # DDP's flat gradient buckets
    fp32 = estimate(replace(sh, precision="fp32"))
    assert fp32.per_gpu["weights"] == 4 * P
    pure16 = estimate(replace(sh, param_dtype="bf16"))
    assert pure16.per_gpu["weights"] == 2 * P and pure16.per_gpu["gradients"] == 2 * P
    assert pure16.per_gpu["optimizer"] == 4 * P  # torch AdamW keeps its states in the param dtype


@pytest.mark.parametrize(
    "opt, k",
    [("adamw_torch", 8), ("adamw_torch_fused", 8), ("adamw_hf", 8), ("adamw_bnb_8bit", 2), ("adamw_8bit", 2),
     ("paged_adamw_8bit", 2), ("lion_32bit", 4), ("lion_8bit", 1), ("sgd", 0), ("sgd_momentum", 4),
     ("adagrad", 4), ("ADAMW-TORCH", 8)],
)
def test_optimizer_state_bytes(opt, k):
    assert optimizer_state_bytes(opt)[0] == k


def test_adafactor_is_factored_and_unknown_optimizer_assumes_adam():
    k, why, known = optimizer_state_bytes("adafactor", trainable=10**9, hidden=4096)
    assert k == pytest.approx(8 / 4096) and known
    k2, _, _ = optimizer_state_bytes("adafactor", trainable=10**6)
    assert k2 * 10**6 == pytest.approx(8 * 1000)
    k3, why3, known3 = optimizer_state_bytes("my_fancy_opt")
    assert k3 == 8 and not known3 and "unknown" in why3
    est = estimate(TrainingShape(params=1000, optimizer="my_fancy_opt"))
    assert any("unknown optimizer" in n for n in est.notes)


def test_activation_formula_is_korthikanti_for_gpt_shapes():
    s, b, h, a, L = 2048, 4, 4096, 32, 32
    sh = TrainingShape(params=0, layers=L, hidden=h, heads=a, seq_len=s, micro_batch=b, precision="bf16",
                       attention="eager", lm_head=False)
    act = estimate(sh).per_gpu["activations"]
    assert act == L * s * b * h * (34 + 5 * a * s / h)
    sdpa = estimate(replace(sh, attention="sdpa")).per_gpu["activations"]
    assert sdpa == L * s * b * h * 34
    fp32 = estimate(replace(sh, attention="sdpa", precision="fp32")).per_gpu["activations"]
    assert fp32 == 2 * sdpa


def test_gradient_checkpointing_keeps_layer_inputs_plus_one_layer():
    s, b, h, L = 1024, 8, 2048, 24
    sh = TrainingShape(params=0, layers=L, hidden=h, heads=16, seq_len=s, micro_batch=b, precision="bf16",
                       lm_head=False)
    full = estimate(sh).per_gpu["activations"]
    ckpt = estimate(replace(sh, gradient_checkpointing=True)).per_gpu["activations"]
    assert ckpt == 2 * s * b * h * L + full // L
    assert ckpt < full / 5


def test_logits_term_and_micro_batch_scaling():
    sh = TrainingShape(params=0, layers=2, hidden=64, heads=4, vocab=32000, seq_len=1024, micro_batch=2,
                       precision="bf16")
    est = estimate(sh)
    logits = [t for t in est.terms if t.name.startswith("logits")][0]
    assert logits.bytes == 2 * 1024 * 32000 * 6
    half = estimate(replace(sh, micro_batch=1))
    assert half.per_gpu["activations"] * 2 == est.per_gpu["activations"]


def test_buffers_overlap_comm_costs_9_gb_at_5e8():
    sh = replace(states(10**9, None, stage=2), overlap_comm=True)
    est = estimate(sh)
    assert est.per_gpu["buffers"] == 9 * 10**9  # 5e8 x 2 B x 2 x 4.5 (transformers guide)
    off = estimate(replace(sh, overlap_comm=False))
    assert off.per_gpu["buffers"] == 2 * 10**9
    z3 = estimate(replace(states(10**9, 10**7, stage=3), layers=10, hidden=1024))
    names = {t.name for t in z3.terms if t.category == "buffers"}
    assert names == {"reduce bucket", "prefetch bucket", "persistent small parameters"}


def test_totals_add_up_and_terms_are_explained():
    info = lookup_model("meta-llama/Llama-2-7b-hf")
    sh = shape_from_model(info, seq_len=2048, micro_batch=4, precision="bf16", zero_stage=3, world_size=8,
                          gradient_checkpointing=True)
    est = estimate(sh)
    cats = ("weights", "gradients", "optimizer", "activations", "buffers")
    assert est.per_gpu["total"] == sum(est.per_gpu[c] for c in cats)
    for c in cats:
        assert est.per_gpu[c] == sum(t.bytes for t in est.terms if t.category == c)
    for t in est.terms:
        assert t.formula and t.source and t.bytes >= 0
    assert "total" in est.describe()


def test_shape_from_model():
    t0 = shape_from_model(lookup_model("bigscience/T0_3B"), seq_len=512)
    assert t0.layers == 48 and t0.gated_mlp and t0.lm_head and t0.hidden == 2048
    bert = shape_from_model(lookup_model("bert-base-uncased"))
    assert not bert.lm_head and not bert.gated_mlp and bert.layers == 12
    llama = shape_from_model(lookup_model("meta-llama/Meta-Llama-3-8B"), micro_batch=1)
    assert llama.gated_mlp and llama.intermediate == 14336 and llama.micro_batch == 1


def test_llama_7b_full_finetune_does_not_fit_one_a100_and_savings_help():
    gpu = lookup_gpu("A100-80GB")
    sh = shape_from_model(lookup_model("meta-llama/Llama-2-7b-hf"), seq_len=2048, micro_batch=8,
                          precision="fp32", optimizer="adamw_torch")
    base = estimate(sh)
    assert base.total > gpu.memory_bytes
    sug = savings(sh, gpu.memory_bytes)
    changes = [s.change for s in sug]
    assert any("gradient_checkpointing" in c for c in changes)
    assert any("bf16" in c for c in changes)
    assert any("8-bit" in c for c in changes)
    assert any("offload" in c.lower() for c in changes)
    assert not any("ZeRO stage" in c for c in changes)  # one GPU: sharding does not help
    assert [s.saving for s in sug] == sorted((s.saving for s in sug), reverse=True)
    for s in sug:
        assert s.new_total == estimate(s.shape).total and s.saving == base.total - s.new_total
        assert s.fits == (s.new_total <= gpu.memory_bytes)
    eight = [s for s in sug if "8-bit" in s.change][0]
    assert eight.saving == 6 * sh.params  # 8 B -> 2 B per param


def test_savings_next_stage_and_no_suggestion_when_already_minimal():
    sh = states(10**9, 10**7, stage=1, per_node=8)
    sug = savings(sh, 80 * GIB)
    assert any(s.change == "DeepSpeed ZeRO stage 2" for s in sug)
    tiny = TrainingShape(params=1000, micro_batch=1, gradient_checkpointing=True, precision="bf16", zero_stage=3,
                         offload_optimizer="cpu", optimizer="sgd", world_size=1)
    assert savings(tiny) == []


def test_invalid_inputs():
    with pytest.raises(ValueError):
        estimate(TrainingShape(params=1, zero_stage=4))
    with pytest.raises(ValueError):
        estimate(TrainingShape(params=1, precision="fp8"))
    assert math.isfinite(estimate(TrainingShape(params=0)).total)
