"""Whole-process measurement shared by the benchmarks: the environment a trainlint child runs
in (this checkout first on the path, bytecode written as an installed package has it, no cache
folder from the caller) and one run's wall time, CPU time and peak RSS."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent


def env(root: Path | None = None) -> dict[str, str]:
    """``root``: the checkout whose trainlint runs (this one by default)."""
    e = dict(os.environ)
    e.pop("PYTHONDONTWRITEBYTECODE", None)
    e.pop("TRAINLINT_CACHE_DIR", None)
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root or ROOT), e.get("PYTHONPATH", "")]))
    return e


class Usage(NamedTuple):
    """One run of a command: wall s, user and system CPU s (the process and its children),
    peak RSS in MiB of the largest, minor page faults."""

    wall: float
    user: float
    system: float
    peak_mib: float
    minor_faults: int

    @property
    def cpu(self) -> float:
        return self.user + self.system


def run_usage(cmd: list[str], cwd: Path, root: Path | None = None) -> Usage:
    """``cmd`` run once in ``cwd`` (trainlint of the checkout ``root``); exits with the
    command's stderr when it fails (exit codes 0 and 1 are a check's normal ends)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env(root), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"failed ({code}) in {cwd}: {' '.join(cmd)}\n{proc.stderr.read().decode()[-2000:]}")
    return Usage(wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss / 1024, usage.ru_minflt)


def measure(cmd: list[str], cwd: Path, root: Path | None = None) -> tuple[float, float, float]:
    """(wall s, CPU s of the process and its children, peak RSS in MiB of the largest); exits
    with the command's stderr when it fails (exit codes 0 and 1 are a check's normal ends)."""
    u = run_usage(cmd, cwd, root)
    return u.wall, u.cpu, u.peak_mib
