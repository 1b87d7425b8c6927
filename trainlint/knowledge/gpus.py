"""GPU facts: memory, compute capability and number formats, from ``data/gpus.json``.

Stdlib only. ``lookup_gpu`` accepts the spellings people and tools use: ``A100``,
``a100-80gb``, ``A100 80GB``, ``NVIDIA A100-SXM4-80GB`` (an ``nvidia-smi`` name), ``h100``,
``4090``, ``RTX4090``, ``AMD Instinct MI300X``.

Ambiguous names: a bare family name that has several memory sizes (``A100``, ``V100``,
``H100``, ``RTX 4060 Ti``) means the **larger-memory** variant (``A100`` -> A100-80GB). The
memory rule then only flags what does not fit even on the larger card, so it errs towards
silence, never towards a false out-of-memory finding. ``lookup_gpu_variants`` returns every
variant so a message can say which one was assumed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

GIB = 2**30

__all__ = [
    "Gpu",
    "all_gpus",
    "arch_for_compute_capability",
    "gpu_from_nvidia_smi",
    "is_ampere_or_newer",
    "lookup_gpu",
    "lookup_gpu_variants",
    "nearest_gpus",
    "auto_gpu_problem",
    "assumed_variant_note",
    "parse_nvidia_smi",
]


@dataclass(frozen=True)
class Gpu:
    """One accelerator model from the GPU table: memory, architecture, bf16/tf32 support."""

    name: str
    vendor: str  # "nvidia" | "amd"
    memory_bytes: int
    memory_gib: float
    compute_capability: tuple[int, int] | None  # NVIDIA only
    arch: str
    bf16: bool
    tf32: bool
    fp8: bool
    aliases: tuple[str, ...] = ()
    family: str = ""
    source: str = ""
    note: str = ""
    # True when the record was built from what the machine reported (nvidia-smi), not the table.
    measured: bool = False

    def describe(self) -> str:
        mem = f"{self.memory_gib:g} GiB"
        cc = f", sm_{self.compute_capability[0]}{self.compute_capability[1]}" if self.compute_capability else ""
        return f"{self.name} ({mem}{cc})"


# Words that carry no identity: vendor and brand prefixes.
_NOISE = {"nvidia", "geforce", "tesla", "amd", "instinct", "radeon", "graphics", "gpu", "accelerator"}
# Form-factor words: they choose between same-family variants (H100 PCIe vs SXM) but do not
# name the family.
_FORMS = {
    "pcie": "pcie", "pci": "pcie", "sxm": "sxm", "sxm2": "sxm", "sxm3": "sxm", "sxm4": "sxm",
    "sxm5": "sxm", "sxm6": "sxm", "nvl": "nvl", "oam": "sxm",
}
# Memory technology words that nvidia-smi appends ("H100 80GB HBM3").
_MEMTECH = re.compile(r"^(hbm\d?e?|hbm|gddr\d+x?|lpddr\d+x?)$")
_MEM = re.compile(r"^(\d+(?:\.\d+)?)(?:g|gb|gib)$")


def _tokens(text: str) -> list[str]:
    t = text.lower().replace("pci-e", "pcie")
    # split letters/digits runs on punctuation and spaces only; "a100" stays one token
    return [tok for tok in re.split(r"[^a-z0-9.]+", t) if tok]


def _key(text: str) -> str:
    """Normalised identity: lowercase alphanumerics without vendor words."""
    return "".join(tok.replace(".", "") for tok in _tokens(text) if tok not in _NOISE)


@lru_cache(maxsize=1)
def _table() -> tuple[tuple[Gpu, str | None, bool], ...]:
    raw = json.loads((Path(__file__).resolve().parent / "data" / "gpus.json").read_text(encoding="utf-8"))
    out = []
    for row in raw["gpus"]:
        cc = row.get("compute_capability")
        gpu = Gpu(
            name=row["name"],
            vendor=row["vendor"],
            memory_bytes=int(row["memory_bytes"]),
            memory_gib=float(row["memory_gib"]),
            compute_capability=(int(cc[0]), int(cc[1])) if cc else None,
            arch=row["arch"],
            bf16=bool(row["bf16"]),
            tf32=bool(row["tf32"]),
            fp8=bool(row["fp8"]),
            aliases=tuple(row.get("aliases", ())),
            family=row["family"],
            source=row.get("source", ""),
            note=row.get("note", ""),
        )
        out.append((gpu, row.get("form"), bool(row.get("default"))))
    return tuple(out)


def all_gpus() -> list[Gpu]:
    return [g for g, _, _ in _table()]


@lru_cache(maxsize=1)
def _exact_index() -> dict[str, Gpu]:
    index: dict[str, Gpu] = {}
    for gpu, _, _ in _table():
        for spelling in (gpu.name, *gpu.aliases):
            k = _key(spelling)
            index.setdefault(k, gpu)
            if k.startswith("rtx") and not k.startswith("rtxa") and not k.startswith("rtxpro"):
                index.setdefault(k[3:], gpu)  # "4090" for "RTX 4090"
    return index


def _family_rows(family: str) -> list[tuple[Gpu, str | None, bool]]:
    rows = [r for r in _table() if r[0].family == family]
    if not rows and family.isdigit():
        rows = [r for r in _table() if r[0].family == "rtx" + family]
    if not rows and family.startswith("a") and family[1:].isdigit():
        # "A6000" -> "RTX A6000"
        rows = [r for r in _table() if r[0].family == "rtx" + family]
    return rows


def lookup_gpu_variants(text: str) -> list[Gpu]:
    """Every table row ``text`` may mean, the assumed one first. [] when unknown."""
    if not text or not text.strip():
        return []
    exact = _exact_index().get(_key(text))
    if exact is not None:
        others = [g for g, _, _ in _table() if g.family == exact.family and g is not exact]
        # an exact spelling is unambiguous unless it is the bare family name
        if _key(text) in (exact.family, exact.family.removeprefix("rtx")) and others:
            return [exact, *others]
        return [exact]
    mem: float | None = None
    form: str | None = None
    rest: list[str] = []
    for tok in _tokens(text):
        if tok in _NOISE or _MEMTECH.match(tok):
            continue
        m = _MEM.match(tok)
        if m:
            mem = float(m.group(1))
            continue
        if tok in _FORMS:
            form = _FORMS[tok]
            continue
        rest.append(tok.replace(".", ""))
    family = "".join(rest)
    rows = _family_rows(family)
    if not rows and family in _exact_index():
        # a spelling of one row (e.g. "V100S" in "Tesla V100S-PCIE-32GB")
        hit = _exact_index()[family]
        rows = [r for r in _table() if r[0] is hit]
    if not rows:
        return []
    if mem is not None:
        rows = [r for r in rows if r[0].memory_gib == mem]
        if not rows:
            return []
    if form is not None and any(r[1] == form for r in rows):
        rows = [r for r in rows if r[1] == form]
    rows.sort(key=lambda r: (not r[2], -r[0].memory_gib))
    return [r[0] for r in rows]


def assumed_variant_note(text: str, texts: dict[str, str]) -> str | None:
    """For an ambiguous ``--gpu`` (``A100``: 40 or 80 GB): when one of the checked files names
    another variant (``A100-40GB``, ``a100_40gb``, ``A100 40GB``), say which one was assumed."""
    variants = lookup_gpu_variants(text)
    if len(variants) < 2:
        return None
    assumed, others = variants[0], variants[1:]
    for other in others:
        for spelling in (other.name, *other.aliases):
            toks = [t for t in _tokens(spelling) if t not in _NOISE]
            if len(toks) < 2:
                continue
            pat = re.compile(r"(?<![a-z0-9])" + r"[\s_-]?".join(
                re.escape(t).replace("gb", r"\s?gb?") for t in toks) + r"(?![a-z0-9])", re.I)
            for path, body in texts.items():
                if pat.search(body):
                    return (f"--gpu {text} was taken as {assumed.name} ({assumed.memory_gib:g} GiB, the larger "
                            f"variant), but {path} names {other.name}: pass --gpu {other.name} if that is the target")
    return None


def lookup_gpu(text: str) -> Gpu | None:
    """The GPU ``text`` names, or None. A bare family name means its larger-memory variant."""
    variants = lookup_gpu_variants(text)
    return variants[0] if variants else None


def arch_for_compute_capability(cc: tuple[int, int]) -> str:
    major, minor = cc
    if major >= 12 or major == 11 or major == 10:
        return "Blackwell"
    if major == 9:
        return "Hopper"
    if (major, minor) == (8, 9):
        return "Ada"
    if major == 8:
        return "Ampere"
    if (major, minor) == (7, 5):
        return "Turing"
    if major == 7:
        return "Volta"
    if major == 6:
        return "Pascal"
    if major == 5:
        return "Maxwell"
    return "Kepler" if major == 3 else "unknown"


def is_ampere_or_newer(gpu: Gpu | None) -> bool:
    """Ampere-generation features (bf16 and tf32 tensor-core matmul).

    NVIDIA: compute capability >= 8.0. Other vendors have no compute capability; there it is
    whether the GPU does bf16 matmul in hardware (AMD MI100 and newer), which is what the
    fp16-versus-bf16 advice needs.
    """
    if gpu is None:
        return False
    if gpu.compute_capability is not None:
        return gpu.compute_capability >= (8, 0)
    return gpu.bf16


def parse_nvidia_smi(output: str) -> list[Gpu]:
    """Parse ``nvidia-smi --query-gpu=name,memory.total[,compute_cap] --format=csv,noheader,nounits``.

    The memory is what the card reports (MiB); capability, formats and architecture come from
    the table when the name is known, else from the reported compute capability.
    """
    gpus: list[Gpu] = []
    for line in output.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if not parts or not parts[0]:
            continue
        name = parts[0]
        mem_bytes: int | None = None
        cc: tuple[int, int] | None = None
        if len(parts) > 1:
            try:
                mem_bytes = int(float(parts[1]) * 2**20)
            except ValueError:
                mem_bytes = None
        if len(parts) > 2:
            m = re.match(r"^(\d+)\.(\d+)$", parts[2])
            if m:
                cc = (int(m.group(1)), int(m.group(2)))
        known = lookup_gpu(name)
        if known is not None and mem_bytes:
            # nvidia-smi's size picks the variant when the name does not say (e.g. "A100-PCIE")
            same = [g for g in lookup_gpu_variants(name) if abs(g.memory_bytes - mem_bytes) < 8 * GIB]
            if same:
                known = same[0]
        if cc is None and known is not None:
            cc = known.compute_capability
        if cc is None:
            continue  # not enough to say anything
        ge8 = cc >= (8, 0)
        gpus.append(
            Gpu(
                name=known.name if known else name,
                vendor="nvidia",
                memory_bytes=mem_bytes if mem_bytes else (known.memory_bytes if known else 0),
                memory_gib=round(mem_bytes / GIB, 2) if mem_bytes else (known.memory_gib if known else 0.0),
                compute_capability=cc,
                arch=known.arch if known else arch_for_compute_capability(cc),
                bf16=known.bf16 if known else ge8,
                tf32=known.tf32 if known else ge8,
                fp8=known.fp8 if known else cc >= (8, 9),
                aliases=(name,) if known and known.name != name else (),
                family=known.family if known else _key(name),
                source="nvidia-smi",
                measured=True,
            )
        )
    return gpus


def _run_smi(fields: str, timeout: float) -> str | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout


def auto_gpu_problem() -> str | None:
    """Why ``--gpu auto`` finds no GPU (``nvidia-smi`` missing or failing), else None."""
    if shutil.which("nvidia-smi") is None:
        return "nvidia-smi is not on PATH (no NVIDIA driver here)"
    if _run_smi("name", 5.0) is None:
        return "nvidia-smi reported no GPU it could describe"
    return None


def nearest_gpus(text: str, n: int = 3) -> list[str]:
    """The table names closest to an unknown spelling (for "did you mean")."""
    import difflib

    names = {}
    for gpu, _, _ in _table():
        for spelling in (gpu.name, *gpu.aliases):
            names.setdefault(_key(spelling), gpu.name)
    keys = difflib.get_close_matches(_key(text), list(names), n=n * 3, cutoff=0.5)
    out: list[str] = []
    typo = lookup_gpu(re.sub(r"(?<=\d)[oO]|[oO](?=\d)", "0", text))  # "A10O" -> A100
    if typo is not None:
        out.append(typo.name)
    for k in keys:
        if names[k] not in out:
            out.append(names[k])
    if not out:  # same digits: "4080 super" -> RTX 4080 SUPER
        digits = "".join(ch for ch in text if ch.isdigit())
        out = [g.name for g, _, _ in _table() if digits and digits in _key(g.name)]
    return out[:n]


def gpu_from_nvidia_smi(timeout: float = 5.0) -> list[Gpu]:
    """The machine's GPUs per ``nvidia-smi`` (for ``--gpu auto``); [] without it or on error.

    Older drivers do not know the ``compute_cap`` field; then the query runs again without it
    and the capability comes from the table.
    """
    out = _run_smi("name,memory.total,compute_cap", timeout)
    if out is None:
        out = _run_smi("name,memory.total", timeout)
    if out is None:
        return []
    return parse_nvidia_smi(out)
