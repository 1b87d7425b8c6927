import json
import stat
from importlib import resources

import pytest

from trainlint.knowledge.gpus import (
    GIB,
    Gpu,
    gpu_from_nvidia_smi,
    is_ampere_or_newer,
    lookup_gpu,
    lookup_gpu_variants,
    parse_nvidia_smi,
)


@pytest.mark.parametrize(
    "text, name",
    [
        ("A100", "A100-80GB"),  # bare family name: the larger variant
        ("a100", "A100-80GB"),
        ("a100-80gb", "A100-80GB"),
        ("A100 80GB", "A100-80GB"),
        ("A100-40GB", "A100-40GB"),
        ("a100_40g", "A100-40GB"),
        ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100-40GB"),
        ("NVIDIA A100-PCIE-40GB", "A100-40GB"),
        ("NVIDIA A100 80GB PCIe", "A100-80GB"),
        ("h100", "H100-SXM"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("NVIDIA H100 NVL", "H100-NVL"),
        ("H100 NVL 94GB", "H100-NVL"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA H200 NVL", "H200-NVL"),
        ("NVIDIA GH200 480GB", "GH200"),
        ("4090", "RTX 4090"),
        ("RTX4090", "RTX 4090"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("rtx 4060 ti", "RTX 4060 Ti"),
        ("RTX 4060 Ti 8GB", "RTX 4060 Ti 8GB"),
        ("NVIDIA GeForce RTX 3060", "RTX 3060"),
        ("NVIDIA GeForce RTX 2080 Ti", "RTX 2080 Ti"),
        ("Tesla V100-SXM2-16GB", "V100-16GB"),
        ("Tesla V100-SXM2-32GB", "V100-32GB"),
        ("Tesla V100S-PCIE-32GB", "V100-32GB"),
        ("V100", "V100-32GB"),
        ("Tesla T4", "T4"),
        ("Tesla P100-PCIE-16GB", "P100-16GB"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA A10", "A10"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA RTX A6000", "RTX A6000"),
        ("A6000", "RTX A6000"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
        ("NVIDIA B200", "B200"),
        ("GB200", "GB200"),
        ("NVIDIA GeForce RTX 5090", "RTX 5090"),
        ("AMD Instinct MI300X", "MI300X"),
        ("mi250", "MI250"),
    ],
)
def test_lookup_spellings(text, name):
    gpu = lookup_gpu(text)
    assert gpu is not None, text
    assert gpu.name == name


@pytest.mark.parametrize("text", ["", "   ", "A100-60GB", "Voodoo 5", "H100 12GB", "banana"])
def test_lookup_unknown(text):
    assert lookup_gpu(text) is None


def test_ambiguous_family_lists_all_variants_assumed_first():
    names = [g.name for g in lookup_gpu_variants("A100")]
    assert names == ["A100-80GB", "A100-40GB"]
    assert [g.name for g in lookup_gpu_variants("A100-40GB")] == ["A100-40GB"]


def test_facts_of_key_rows():
    a100 = lookup_gpu("A100-40GB")
    assert a100.memory_gib == 40 and a100.memory_bytes == 40 * GIB
    assert a100.compute_capability == (8, 0) and a100.arch == "Ampere"
    assert a100.bf16 and a100.tf32 and not a100.fp8
    v100 = lookup_gpu("V100-16GB")
    assert v100.compute_capability == (7, 0) and not v100.bf16 and not v100.tf32
    t4 = lookup_gpu("T4")
    assert t4.compute_capability == (7, 5) and t4.memory_gib == 16 and not t4.bf16
    assert lookup_gpu("RTX 4090").fp8 and lookup_gpu("RTX 4090").compute_capability == (8, 9)
    assert lookup_gpu("A10G").compute_capability == (8, 6)
    assert lookup_gpu("H100").fp8 and lookup_gpu("H100").compute_capability == (9, 0)
    assert lookup_gpu("H200").memory_gib == 141
    assert lookup_gpu("H100 NVL").memory_gib == 94
    assert lookup_gpu("RTX 5090").compute_capability == (12, 0)
    mi = lookup_gpu("MI300X")
    assert mi.vendor == "amd" and mi.compute_capability is None and mi.memory_gib == 192 and mi.bf16


def test_table_is_consistent():
    raw = json.loads(resources.files("trainlint.knowledge").joinpath("data/gpus.json").read_text())
    rows = raw["gpus"]
    assert len(rows) >= 60
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names))
    families: dict[str, int] = {}
    for r in rows:
        assert r["source"].startswith("https://"), r["name"]
        assert r["memory_bytes"] == int(r["memory_gib"] * GIB)
        if r["vendor"] == "nvidia":
            cc = tuple(r["compute_capability"])
            assert r["bf16"] == (cc >= (8, 0)) and r["tf32"] == (cc >= (8, 0))
            assert r["fp8"] == (cc >= (8, 9))
        else:
            assert r["compute_capability"] is None
        families[r["family"]] = families.get(r["family"], 0) + int(r["default"])
        # every spelling of a row finds that row
        for spelling in (r["name"], *r["aliases"]):
            assert lookup_gpu(spelling).name == r["name"], spelling
    # a family with several rows has exactly one default
    for fam in {r["family"] for r in rows}:
        members = [r for r in rows if r["family"] == fam]
        if len(members) > 1:
            assert families[fam] == 1, fam


def test_is_ampere_or_newer():
    assert is_ampere_or_newer(lookup_gpu("A100"))
    assert is_ampere_or_newer(lookup_gpu("RTX 3090"))
    assert is_ampere_or_newer(lookup_gpu("H100"))
    assert not is_ampere_or_newer(lookup_gpu("V100"))
    assert not is_ampere_or_newer(lookup_gpu("T4"))
    assert not is_ampere_or_newer(lookup_gpu("RTX 2080 Ti"))
    assert is_ampere_or_newer(lookup_gpu("MI250"))  # bf16 matmul in hardware
    assert not is_ampere_or_newer(None)


def test_parse_nvidia_smi_known_and_unknown():
    out = (
        "NVIDIA A100-SXM4-80GB, 81920, 8.0\n"
        "NVIDIA H100 80GB HBM3, 81559, 9.0\n"
        "Tesla V100-SXM2-16GB, 16384, 7.0\n"
        "NVIDIA Future GPU, 100000, 13.0\n"
        "\n"
    )
    gpus = parse_nvidia_smi(out)
    assert [g.name for g in gpus] == ["A100-80GB", "H100-SXM", "V100-16GB", "NVIDIA Future GPU"]
    assert gpus[0].memory_bytes == 81920 * 2**20 and gpus[0].measured
    assert gpus[1].memory_gib == round(81559 / 1024, 2)
    assert not gpus[2].bf16
    fut = gpus[3]
    assert fut.compute_capability == (13, 0) and fut.bf16 and fut.fp8 and fut.tf32


def test_parse_nvidia_smi_picks_variant_by_reported_memory():
    # the name alone does not say the size; memory.total does
    gpus = parse_nvidia_smi("NVIDIA A100-PCIE, 40536, 8.0\n")
    assert gpus[0].name == "A100-40GB"


def test_parse_nvidia_smi_without_compute_cap_field():
    gpus = parse_nvidia_smi("Tesla T4, 15360\n")
    assert gpus[0].name == "T4" and gpus[0].compute_capability == (7, 5)


def _fake_smi(tmp_path, script: str):
    exe = tmp_path / "nvidia-smi"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(tmp_path)


def test_gpu_from_nvidia_smi_runs_the_binary(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _fake_smi(tmp_path, 'echo "NVIDIA L4, 23034, 8.9"\n'))
    gpus = gpu_from_nvidia_smi()
    assert len(gpus) == 1 and gpus[0].name == "L4" and gpus[0].fp8


def test_gpu_from_nvidia_smi_old_driver_retries_without_compute_cap(tmp_path, monkeypatch):
    script = (
        'case "$1" in *compute_cap*) echo "Field compute_cap is not a valid field" >&2; exit 2;; esac\n'
        'echo "Tesla V100-PCIE-32GB, 32510"\n'
    )
    monkeypatch.setenv("PATH", _fake_smi(tmp_path, script))
    gpus = gpu_from_nvidia_smi()
    assert [g.name for g in gpus] == ["V100-32GB"] and gpus[0].compute_capability == (7, 0)


def test_gpu_from_nvidia_smi_failures(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no binary
    assert gpu_from_nvidia_smi() == []
    monkeypatch.setenv("PATH", _fake_smi(tmp_path, "echo 'NVIDIA-SMI has failed' ; exit 9\n"))
    assert gpu_from_nvidia_smi() == []
    monkeypatch.setenv("PATH", _fake_smi(tmp_path, "sleep 5\n"))
    assert gpu_from_nvidia_smi(timeout=0.3) == []


def test_gpu_is_frozen():
    g = lookup_gpu("A100")
    assert isinstance(g, Gpu)
    with pytest.raises(Exception):
        g.name = "x"  # type: ignore[misc]
