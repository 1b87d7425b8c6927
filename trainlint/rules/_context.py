"""The run context rules weigh a finding by: is this a test, a smoke run, a multi-second-step
LLM run, is memory tight?

One shared helper, so that every calibrated rule reads the same facts the same way:

* **test file**: a pytest file (``test_*.py``, ``*_test.py``, ``conftest.py``), a file under a
  ``tests``/``test`` folder, or a script that imports ``pytest``/``unittest`` and defines
  ``test_*`` functions;
* **short run**: ``max_steps`` in the tens (at most :data:`SHORT_MAX_STEPS`) or a tiny
  ``num_train_epochs`` (below :data:`TINY_EPOCHS`);
* **model size** from the model facts (``trainlint/knowledge/models.py``: the shipped table or a
  local ``config.json``), **sequence length** (``max_length``/``max_seq_length``, the largest
  tokenizer ``max_length=``), TRL **packing**, **gradient accumulation**, **world size**;
* **memory tightness** from the memory estimate (``trainlint/estimate.py``) against ``--gpu``.

Everything is computed on first use and cached per setup and site: a rule that asks only
whether the file is a test pays nothing for the estimate.
"""

from __future__ import annotations

import ast
import os
import re
from functools import cached_property
from pathlib import PurePath
from typing import Any

from trainlint.lazyre import lazy
from trainlint.setup import ArgsSite, Setup

SHORT_MAX_STEPS = 100  # "max_steps in the tens": a smoke or debug run
TINY_EPOCHS = 0.1
LARGE_MODEL_PARAMS = 6_000_000_000  # 7B-class models (Llama-2-7B has 6.7B parameters)
SMALL_MODEL_PARAMS = 1_000_000_000
LONG_SEQUENCE = 2048
SHORT_SEQUENCE = 512
HEAVY_ACCUMULATION = 8
TIGHT_FRACTION = 0.75  # estimate above this share of the GPU: little room left for buffers

MODEL_FLAGS = ("model_name_or_path", "model_name", "model_id", "base_model", "model")
# TRL / transformers names, then the spellings of frameworks that feed the Trainer
# (LLaMA-Factory ``cutoff_len``, axolotl ``sequence_len`` and ``sample_packing``)
SEQ_FLAGS = ("max_seq_length", "max_length", "model_max_length", "max_seq_len", "cutoff_len", "sequence_len")
PACKING_FLAGS = ("packing", "sample_packing")

_SIZE_IN_NAME = lazy(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)([bBmM])(?![a-zA-Z0-9])")
_TEST_NAME = lazy(r"^(test_.*|.*_test|conftest|tests?)\.py$")
_TEST_DIRS = {"tests", "test", "testing"}


def is_test_path(path: str) -> bool:
    """A pytest file or anything under a tests folder (by name only). The folders count from
    the working directory; of an absolute path outside it only the file's own folder counts
    (``/home/me/test/repo/train.py`` is not a test, ``/ci/repo/tests/train.py`` is)."""
    key = (path, os.getcwd() if os.path.isabs(path) else "")
    found = _TEST_PATHS.get(key)
    if found is None:
        found = _TEST_PATHS[key] = _is_test_path(path)
        if len(_TEST_PATHS) > 4096:
            _TEST_PATHS.clear()
    return found


_TEST_PATHS: dict[tuple[str, str], bool] = {}  # every setup's run context asks of each of its files


def _is_test_name(name: str) -> bool:
    """``_TEST_NAME.match(name)``, by hand for a name on one line."""
    if "\n" in name:
        return _TEST_NAME.match(name) is not None
    if not name.endswith(".py"):
        return False
    stem = name[:-3]
    return stem.startswith("test_") or stem.endswith("_test") or stem in ("conftest", "test", "tests")


def _is_test_path(path: str) -> bool:
    p = PurePath(path)
    if _is_test_name(p.name):
        return True
    parents = p.parts[:-1]
    if p.is_absolute():
        try:
            parents = p.relative_to(os.getcwd()).parts[:-1]
        except ValueError:
            parents = parents[-1:]
    return any(part.lower() in _TEST_DIRS for part in parents)


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v if isinstance(v, int) else None


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


class RunContext:
    """What the setup (and one TrainingArguments site of it) says about the run."""

    def __init__(self, setup: Setup, site: ArgsSite | None = None) -> None:
        self.setup = setup
        self.site = site

    # -- tests and short runs ---------------------------------------------------------

    @cached_property
    def test_file(self) -> str | None:
        """Why the run is a test (``tests/test_train.py is a test file``), else None."""
        paths = [self.site.path] if self.site is not None else []
        paths += [pf.path for pf in self.setup.scripts] + list(self.setup.files)
        for path in paths:
            if is_test_path(path):
                return f"{PurePath(path).name} is a test file"
        for pf in self.setup.scripts:
            if self.site is not None and pf.path != self.site.path:
                continue
            if (pf.uses_module("pytest") or pf.uses_module("unittest")) and any(
                    n.name.startswith("test") for kind in (ast.FunctionDef, ast.AsyncFunctionDef)
                    for n in pf.of_type(kind)):  # the statement index: no walk of the expressions
                return f"{PurePath(pf.path).name} is a test module"
        return None

    def _value(self, name: str) -> Any:
        sites = [self.site] if self.site is not None else list(self.setup.sites)
        for s in sites:
            v = s.get(name)
            if v is not None and v.known:
                return v.value
        return None

    @cached_property
    def max_steps(self) -> int | None:
        n = _int(self._value("max_steps"))
        return n if n is not None and n > 0 else None

    @cached_property
    def epochs(self) -> float | None:
        return _num(self._value("num_train_epochs"))

    @cached_property
    def short_run(self) -> str | None:
        """Why the run is a short (smoke/debug) run (``max_steps=3``), else None."""
        if self.max_steps is not None and self.max_steps <= SHORT_MAX_STEPS:
            return f"max_steps={self.max_steps}"
        if self.max_steps is None and self.epochs is not None and 0 < self.epochs < TINY_EPOCHS:
            return f"num_train_epochs={self.epochs:g}"
        return None

    @property
    def quiet_reason(self) -> str | None:
        """A test or a short run: advice about long-run costs does not apply."""
        return self.test_file or self.short_run

    # -- what one step costs ----------------------------------------------------------

    @cached_property
    def model(self) -> Any:
        """The ModelInfo of the one model the setup trains, when known."""
        from trainlint.rules._setup_models import single_model

        m = single_model(self.setup)
        if m is not None and m.info is not None and getattr(m.info, "params", None):
            return m.info
        # a launch line or args file naming the model for the script (--model_name_or_path ...)
        from trainlint.knowledge.models import lookup_model

        for name in MODEL_FLAGS:
            value = self._value(name)
            if isinstance(value, str) and value:
                info = lookup_model(value, str(self.setup.root))
                if info is not None and getattr(info, "params", None):
                    return info
        return None

    @cached_property
    def model_name(self) -> str | None:
        """The model id the setup names (from_pretrained, or a launch flag / args-file key)."""
        from trainlint.rules._setup_models import setup_models

        models = setup_models(self.setup)
        if models:
            return models[0].model_id
        for name in MODEL_FLAGS:
            value = self._value(name)
            if isinstance(value, str) and value:
                return value
        return None

    @cached_property
    def params(self) -> int | None:
        """Parameters from the model facts; else the size a hub id spells out (``Qwen3-30B-A3B``:
        30B, ``Llama-2-7b-hf``: 7B), which is what the name promises."""
        if self.model is not None:
            return self.model.params
        name = self.model_name
        if name:
            m = _SIZE_IN_NAME.search(name.rsplit("/", 1)[-1])
            if m:
                scale = {"b": 1e9, "m": 1e6}[m.group(2).lower()]
                return int(float(m.group(1)) * scale)
        return None

    @cached_property
    def seq_len(self) -> tuple[int, str] | None:
        """(tokens, where it is written) from the site or the script's tokenizer calls."""
        for name in SEQ_FLAGS:
            n = _int(self._value(name))
            if n is not None and n > 0 and not (self.site is not None and self.site.is_generation_class()):
                return n, f"{name}={n}"
        from trainlint.script_values import _sequence_length

        pfs = {p.path: p for p in self.setup.scripts}
        for pf in self.setup.scripts:
            n, where, _ = _sequence_length(pf, [], pfs)
            if n is not None:
                return n, where.split(" (")[0]
        return None

    @cached_property
    def packing(self) -> bool:
        return any(self._value(name) is True for name in PACKING_FLAGS)

    @cached_property
    def grad_accum(self) -> int | None:
        return _int(self._value("gradient_accumulation_steps"))

    @property
    def world_size(self) -> int | None:
        return self.setup.world_size_value

    @cached_property
    def heavy_steps(self) -> str | None:
        """Why each optimizer step takes seconds (a 7B+ model, long sequences, packing, heavy
        accumulation), so a per-step log costs nothing visible; else None."""
        if self.params is not None and self.params >= LARGE_MODEL_PARAMS:
            return f"a {self.params / 1e9:.1f}B-parameter model"
        if self.seq_len is not None and self.seq_len[0] >= LONG_SEQUENCE:
            return f"{self.seq_len[0]}-token sequences ({self.seq_len[1]})"
        if self.packing:
            return "packed sequences (packing=True)"
        if self.grad_accum is not None and self.grad_accum >= HEAVY_ACCUMULATION:
            return f"gradient_accumulation_steps={self.grad_accum}"
        return None

    @cached_property
    def fast_steps(self) -> str | None:
        """Why optimizer steps are fast (a small model, or short sequences), else None."""
        if self.heavy_steps is not None:
            return None
        if self.params is not None and self.params < SMALL_MODEL_PARAMS:
            return f"a {self.params / 1e6:.0f}M-parameter model"
        if self.seq_len is not None and self.seq_len[0] <= SHORT_SEQUENCE and self.params is None \
                and self.model_name is None:
            return f"{self.seq_len[0]}-token sequences"  # short sequences tell only without a big model
        return None

    # -- memory -----------------------------------------------------------------------

    @cached_property
    def memory(self) -> tuple[int, int] | None:
        """(estimated bytes per GPU with the CUDA context, the target GPU's bytes) when both are
        known; the estimate takes unstated inputs at their cheapest reading (as TL550 does)."""
        gpu = self.setup.gpu
        if gpu is None or not self.setup.scripts:
            return None
        from trainlint.estimate import SetupEstimate, estimate_setup
        from trainlint.memory import CUDA_CONTEXT_BYTES

        r = estimate_setup(self.setup)
        if not isinstance(r, SetupEstimate) or r.quantized:
            return None
        total = r.judged()[1].total + CUDA_CONTEXT_BYTES
        return total, gpu.memory_bytes

    @property
    def memory_tight(self) -> bool | None:
        """True/False when the estimate and the GPU are known, else None."""
        if self.memory is None:
            return None
        total, mem = self.memory
        return total > TIGHT_FRACTION * mem


def run_context(setup: Setup, site: ArgsSite | None = None) -> RunContext:
    """The (cached) run context of ``setup``, seen from ``site`` when given."""
    per: dict[int, RunContext] | None = setup.__dict__.get("_run_contexts")
    if per is None:
        per = setup.__dict__["_run_contexts"] = {}
    key = id(site) if site is not None else 0
    ctx = per.get(key)
    if ctx is None:
        ctx = per[key] = RunContext(setup, site)
    return ctx
