"""The parallel scheduler: the tasks of a run's plan (stand-alone scripts and groups of linked
files, ``partition``) checked by a pool of worker processes (``engine`` runs the same tasks in
this process otherwise).

The pool (``fork`` where available, so that the workers inherit the run's tasks, settings,
context and overlay instead of receiving them) is used only when there are more than
``engine.MIN_POOL_FILES`` files to check and more than one job (with the default jobs, also
only when the tasks are large and spread enough to pay for it: ``engine._pool_pays``); the
rules are made before the fork, so the workers inherit them; workers never start pools of
their own. Tasks go in batches of similar size, the largest first; a worker sends back each
task's findings, and a script's text only when this process does not have it.
"""

from __future__ import annotations

import gc
import os
from typing import Any

from trainlint import checking
from trainlint.checking import Outcome, run_task
from trainlint.stack import with_deep_stack

_RUN: Any = None  # (tasks, settings, ctx, overlay, rules), inherited by forked workers or sent


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _init_worker(sent: Any) -> None:
    global _RUN
    # what the worker inherited is never freed here: keep the collector off it (and off
    # copy-on-write pages), and let it run only between tasks
    gc.freeze()
    gc.set_threshold(0, 1_000_000, 1000)  # as in a run in-process (``engine.RUN_GC_THRESHOLDS``)
    tasks, settings, ctx, overlay, rules = sent if sent is not None else _RUN
    _RUN = (tasks, settings, ctx, overlay, rules if rules is not None else checking.make_rules(settings))
    end_with_parent()


def end_with_parent(poll_s: float = 0.5) -> None:
    """Make this worker process end when the process that started it dies (a killed
    ``check -j N`` must not leave workers blocked on a queue nobody reads): the kernel's
    parent-death signal on Linux, and everywhere a daemon thread that exits the process once
    it has been re-parented."""
    import threading
    import time

    parent = os.getppid()
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError, ImportError):  # not Linux
        pass
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="trainlint-parent-watch", daemon=True).start()


def _work(batch: list[int]) -> list[Outcome]:
    return with_deep_stack(_work_here, batch)


def _work_here(batch: list[int]) -> list[Outcome]:
    tasks, settings, ctx, overlay, rules = _RUN
    out = []
    for n, i in enumerate(batch):
        if n:
            gc.collect(1)  # between tasks, as ``engine.between_tasks``
        task = tasks[i]
        o = run_task(task, settings, overlay, ctx, rules)
        if not isinstance(task, list) and o.texts.get(task.path) == task.text:
            o.texts[task.path] = None  # type: ignore[assignment] - the parent has it
        out.append(o)
    return out


def batches(sizes: list[int], jobs: int) -> list[list[int]]:
    """Task indexes in batches of about 1/(8 x jobs) of the bytes, the largest tasks first (so
    that the last batches are small and the workers finish together)."""
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    target = max(1, sum(sizes) // (jobs * 8))
    out: list[list[int]] = []
    current: list[int] = []
    size = 0
    for i in order:
        current.append(i)
        size += sizes[i]
        if size >= target or len(current) >= 16:
            out.append(current)
            current, size = [], 0
    if current:
        out.append(current)
    return out


class PoolRun:
    """Tasks being checked by ``jobs`` worker processes; ``results()`` waits for them."""

    def __init__(self, tasks: list[Any], sizes: list[int], settings: Any, ctx: Any,
                 overlay: dict[str, str], jobs: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        global _RUN
        self.tasks = tasks
        fork = "fork" in multiprocessing.get_all_start_methods()
        rules = None
        if fork:
            # the rules made (their modules imported) once here, before the fork: every worker
            # inherits them instead of importing them again
            rules = checking.make_rules(settings)
            if isinstance(rules, checking.RuleSet):
                rules.make_all()
        _RUN = (tasks, settings, ctx, overlay, rules)
        self.pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context(
            "fork" if fork else None), initializer=_init_worker,
            initargs=(None if fork else (tasks, settings, ctx, overlay, None),))
        self.batches = batches(sizes, jobs)
        self.futures = [self.pool.submit(_work, b) for b in self.batches]

    def results(self) -> list[Outcome]:
        """Every task's outcome, in the order of the tasks."""
        global _RUN
        out: list[Any] = [None] * len(self.tasks)
        try:
            for batch, future in zip(self.batches, self.futures):
                for i, o in zip(batch, future.result()):
                    out[i] = o
        finally:
            self.pool.shutdown(cancel_futures=True)
            _RUN = None
        for task, o in zip(self.tasks, out):
            if not isinstance(task, list) and o.texts.get(task.path, "") is None:
                o.texts[task.path] = task.text
        return out
