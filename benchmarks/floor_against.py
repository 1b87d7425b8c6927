"""A repository run against the parse floor, for this checkout and another one (the code
before a change), as whole processes in interleaved rounds (the order reversed every other
round), CPU medians: ``check . -j 1 --no-cache`` of both checkouts and ``scale.py``'s floors:
``FLOOR_RULES`` (the Python files the rules' pre-filter keeps, the issue's floor),
``FLOOR_CHECKED`` (also the scripts that are only syntax-checked for TL001) and ``FLOOR_HELD``
(the issue's floor keeping every tree to the end with the collector off, as a group of linked
files is held: a reference, not the goal).

``--instructions`` runs each command once more under ``valgrind --tool=callgrind`` and reports
instructions executed (the same count run after run whatever the machine's load; it leaves out
what memory costs: page faults and cache misses, which holding the trees adds). Slow: about 60x
the command's time.

usage: python benchmarks/floor_against.py --before DIR --repo NAME=DIR [--repo ...] [--rounds 5] [--instructions]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
from pathlib import Path

import _proc  # benchmarks/ is on the path when run as a script
from scale import FLOOR_CHECKED, FLOOR_HELD, FLOOR_RULES, PY

ROOT = Path(__file__).resolve().parent.parent
CHECK = [PY, "-m", "trainlint", "check", ".", "-j", "1", "--no-cache", "--exit-zero", "--format", "concise"]


def instructions(cmd: list[str], cwd: Path, root: Path) -> int:
    """Instructions ``cmd`` executes (callgrind's total), trainlint of the checkout ``root``."""
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], cwd=cwd,
                          env=_proc.env(root), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if found is None:
        raise SystemExit(f"callgrind gave no count in {cwd}: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, type=Path, help="the other checkout (a plain tree of trainlint)")
    ap.add_argument("--repo", action="append", required=True, help="NAME=DIR")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--instructions", action="store_true", help="also count instructions under callgrind")
    a = ap.parse_args()
    if a.instructions and shutil.which("valgrind") is None:
        ap.error("--instructions needs valgrind on the PATH")
    repos = dict(r.split("=", 1) for r in a.repo)
    runs = [("before", CHECK, a.before), ("after", CHECK, ROOT), ("floor", [PY, "-c", FLOOR_RULES, "."], ROOT),
            ("checked", [PY, "-c", FLOOR_CHECKED, "."], ROOT), ("held", [PY, "-c", FLOOR_HELD, "."], ROOT)]
    res: dict[tuple[str, str], list[float]] = {(r, k): [] for r in repos for k, _, _ in runs}
    for i in range(a.rounds):
        for name, folder in repos.items():
            for k, cmd, root in (runs if i % 2 == 0 else runs[::-1]):
                res[(name, k)].append(_proc.run_usage(cmd, Path(folder), root).cpu)
    print("| repository | before `-j 1` | after `-j 1` | parse floor | floor with syntax checks | floor, trees held "
          "| after / before | before / floor | after / floor | after / floor with syntax checks "
          "| after / floor, trees held |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in repos:
        b, m, f, c, h = (statistics.median(res[(name, k)]) for k in ("before", "after", "floor", "checked", "held"))
        rounds = ", ".join(f"{x / y:.2f}" for x, y in zip(res[(name, "after")], res[(name, "floor")]))
        print(f"| {name} | {b:.2f} | {m:.2f} | {f:.2f} | {c:.2f} | {h:.2f} | {m / b:.2f} | {b / f:.2f} | {m / f:.2f} "
              f"(rounds {rounds}) | {m / c:.2f} | {m / h:.2f} |")
    if a.instructions:
        print("\n| repository | before `-j 1` (G instructions) | after `-j 1` | parse floor | floor, trees held "
              "| after / before | after / floor | after / floor, trees held |")
        print("|---|---|---|---|---|---|---|---|")
        for name, folder in repos.items():
            n = {k: instructions(cmd, Path(folder), root) for k, cmd, root in runs if k != "checked"}
            print(f"| {name} | {n['before'] / 1e9:.2f} | {n['after'] / 1e9:.2f} | {n['floor'] / 1e9:.2f} "
                  f"| {n['held'] / 1e9:.2f} | {n['after'] / n['before']:.3f} | {n['after'] / n['floor']:.3f} "
                  f"| {n['after'] / n['held']:.3f} |")


if __name__ == "__main__":
    main()
