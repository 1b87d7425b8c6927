"""``fix`` against ``check`` on repositories (issue 18: ``fix`` within 1.5x ``check``), as CPU
medians of whole processes and their ratios in one run (interleaved rounds).

For each repository (``--repo NAME=DIR``), on a fresh copy of it each time (``--apply`` writes
the copy, never DIR):

* ``check``: ``check --no-cache --format concise .``
* ``fix``: ``fix .`` (the diff, nothing written)
* ``apply``: ``fix --apply .``
* ``fix-unsafe`` / ``apply-unsafe``: the same with ``--unsafe-fixes`` (more fixes, more passes)
* ``nothing``: ``fix --select TL3 .`` (DeepSpeed rules only: usually nothing to fix)

``--code DIR[,DIR...]``: the checkouts to run (default: this one), interleaved in every round,
to compare a change with the code before it. CPU seconds are user + system of the process and
its children (``os.wait4``): ``fix`` checks a changed group of linked files in a child process.

usage: python benchmarks/fix.py --repo trl=/path/to/trl [--repo ...] [--rounds 3]
                                [--code /path/before,/path/after] [--modes check,fix,apply]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODES = {
    "check": ["check", "--no-cache", "--exit-zero", "--format", "concise", "."],
    "fix": ["fix", "."],
    "apply": ["fix", "--apply", "."],
    "fix-unsafe": ["fix", "--unsafe-fixes", "."],
    "apply-unsafe": ["fix", "--apply", "--unsafe-fixes", "."],
    "nothing": ["fix", "--select", "TL3", "."],
}


def measure(cmd: list[str], cwd: Path, code: Path) -> tuple[float, float, float, str]:
    """(wall s, CPU s with children, peak RSS MiB, last line of stderr)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("TRAINLINT_CACHE_DIR", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), os.environ.get("PYTHONPATH", "")]))
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code_ = os.waitstatus_to_exitcode(status)
    if code_ not in (0, 1):
        raise SystemExit(f"failed ({code_}) in {cwd}: {' '.join(cmd)}\n{err[-2000:]}")
    last = err.strip().splitlines()[-1] if err.strip() else ""
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, last


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", action="append", default=[], help="NAME=DIR")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--code", default=str(ROOT), help="checkouts to compare, comma-separated")
    ap.add_argument("--modes", default=",".join(MODES))
    opts = ap.parse_args()
    repos = [tuple(r.split("=", 1)) for r in opts.repo]
    codes = [Path(c).resolve() for c in opts.code.split(",")]
    modes = opts.modes.split(",")
    for code in codes:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(code / "trainlint")], check=False)
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    work = Path(tempfile.mkdtemp(prefix="tl-fix-"))
    cpu: dict[tuple, list[float]] = {}
    try:
        for r in range(opts.rounds):
            for name, src in repos:
                for mode in modes:
                    for code in codes:
                        copy = work / name
                        shutil.rmtree(copy, ignore_errors=True)
                        shutil.copytree(src, copy, symlinks=True)
                        wall, c, peak, last = measure([sys.executable, "-m", "trainlint", *MODES[mode]], copy, code)
                        cpu.setdefault((name, mode, code), []).append(c)
                        print(f"round {r + 1} {name} {mode} ({code}): wall {wall:.1f} s, CPU {c:.2f} s, "
                              f"peak {peak:.0f} MiB  {last}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    print("| repository | code | " + " | ".join(modes) + " |")
    print("|---|---|" + "---|" * len(modes))
    for name, _ in repos:
        for code in codes:
            base = statistics.median(cpu[(name, "check", code)]) if (name, "check", code) in cpu else None
            cells = []
            for mode in modes:
                m = statistics.median(cpu[(name, mode, code)])
                cells.append(f"{m:.2f} s" + (f" ({m / base:.2f}x)" if base else ""))
            print(f"| {name} | {code.name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
