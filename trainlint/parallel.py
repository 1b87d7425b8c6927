"""The parallel scheduler: stand-alone scripts (``partition``) checked in a pool of worker
processes, while this process checks the rest of the run (``engine``).

The pool (``fork`` where available, so that the workers inherit the run's plan, settings,
context and rules instead of receiving them) is used only when there are more than
``MIN_FILES`` scripts to check and more than one job; workers never start pools of their own.
A worker sends back each script's findings, not its text (this process has it).
"""

from __future__ import annotations

import gc
import os
from typing import Any

from trainlint.checking import Outcome, check_unit, make_rules
from trainlint.partition import Unit
from trainlint.stack import with_deep_stack

MIN_FILES = 50
CHUNK = 16

_RUN: Any = None  # (units, settings, ctx, rules), inherited by forked workers or set by _init_worker


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _init_worker(units: list[Unit] | None, settings: Any, ctx: Any) -> None:
    global _RUN
    # what the worker inherited is never freed here: keep the collector off it (and off
    # copy-on-write pages), and collect rarely while parsed trees come and go
    gc.freeze()
    gc.set_threshold(20_000, 50, 1000)
    if units is None:  # not forked: the plan came pickled
        units = _RUN[0] if _RUN is not None else []
    _RUN = (units, settings, ctx, make_rules(settings))


def _work(index: int) -> Outcome:
    units, settings, ctx, rules = _RUN
    u = units[index]
    out = check_unit(u.path, u.explicit, u.text, settings, ctx, rules)
    if out.texts.get(u.path) == u.text:
        out.texts[u.path] = None  # type: ignore[assignment] - the parent has it
    return out


class PoolRun:
    """Units being checked by ``jobs`` worker processes; ``results()`` waits for them, in order."""

    def __init__(self, units: list[Unit], settings: Any, ctx: Any, jobs: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        global _RUN
        self.units = units
        methods = multiprocessing.get_all_start_methods()
        fork = "fork" in methods
        ctx_mp = multiprocessing.get_context("fork" if fork else None)
        _RUN = (units, settings, ctx, None)
        self.pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx_mp, initializer=_init_worker,
                                        initargs=(None if fork else units, settings, ctx))
        chunk = max(1, min(CHUNK, len(units) // (jobs * 4) or 1))
        self._it = self.pool.map(_in_deep_stack, range(len(units)), chunksize=chunk)

    def results(self) -> list[Outcome]:
        global _RUN
        try:
            out = list(self._it)
        finally:
            self.pool.shutdown()
            _RUN = None
        for u, o in zip(self.units, out):
            if u.path in o.texts and o.texts[u.path] is None:
                o.texts[u.path] = u.text
        return out


def _in_deep_stack(index: int) -> Outcome:
    return with_deep_stack(_work, index)
