"""A repository run against the parse floor, for this checkout and another one (the code
before a change), as whole processes in interleaved rounds (the order reversed every other
round), CPU medians: ``check . -j 1 --no-cache`` of both checkouts and ``scale.py``'s two floors:
``FLOOR_RULES`` (the Python files the rules' pre-filter keeps, the issue's floor) and
``FLOOR_CHECKED`` (also the scripts that are only syntax-checked for TL001).

usage: python benchmarks/floor_against.py --before DIR --repo NAME=DIR [--repo ...] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import _proc  # benchmarks/ is on the path when run as a script
from scale import FLOOR_CHECKED, FLOOR_RULES, PY

ROOT = Path(__file__).resolve().parent.parent
CHECK = [PY, "-m", "trainlint", "check", ".", "-j", "1", "--no-cache", "--exit-zero", "--format", "concise"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, type=Path, help="the other checkout (a plain tree of trainlint)")
    ap.add_argument("--repo", action="append", required=True, help="NAME=DIR")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    repos = dict(r.split("=", 1) for r in a.repo)
    runs = [("before", CHECK, a.before), ("after", CHECK, ROOT), ("floor", [PY, "-c", FLOOR_RULES, "."], ROOT),
            ("checked", [PY, "-c", FLOOR_CHECKED, "."], ROOT)]
    res: dict[tuple[str, str], list[float]] = {(r, k): [] for r in repos for k, _, _ in runs}
    for i in range(a.rounds):
        for name, folder in repos.items():
            for k, cmd, root in (runs if i % 2 == 0 else runs[::-1]):
                res[(name, k)].append(_proc.run_usage(cmd, Path(folder), root).cpu)
    print("| repository | before `-j 1` | after `-j 1` | parse floor | floor with syntax checks | after / before "
          "| before / floor | after / floor | after / floor with syntax checks |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in repos:
        b, m, f, c = (statistics.median(res[(name, k)]) for k in ("before", "after", "floor", "checked"))
        rounds = ", ".join(f"{x / y:.2f}" for x, y in zip(res[(name, "after")], res[(name, "floor")]))
        print(f"| {name} | {b:.2f} | {m:.2f} | {f:.2f} | {c:.2f} | {m / b:.2f} | {b / f:.2f} | {m / f:.2f} "
              f"(rounds {rounds}) | {m / c:.2f} |")


if __name__ == "__main__":
    main()
