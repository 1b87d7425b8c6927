"""The floor of a notebook's own work (issue 16): read every notebook of a ``notebooks.py`` tree
and ``json.loads`` it, against reading the same programs as scripts. CPU seconds, medians of
interleaved rounds, in one process (no trainlint code runs).

    python benchmarks/notebook_floor.py DIR/x1000 [ROUNDS]   # DIR from notebooks.py --keep DIR

Whatever trainlint does beyond this, a check that validates every notebook's JSON (TL003) costs
at least ``read + json.loads`` of the notebooks where the scripts cost their read.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time


def _files(folder: str) -> list[str]:
    return sorted(os.path.join(folder, f) for f in os.listdir(folder))


def main() -> None:
    root = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    notebooks, scripts = _files(os.path.join(root, "nb")), _files(os.path.join(root, "py"))

    def read(paths: list[str], decode: bool) -> None:
        for p in paths:
            with open(p, encoding="utf-8") as f:
                text = f.read()
            if decode:
                json.loads(text)

    steps = {"read notebooks": (notebooks, False), "read + json.loads notebooks": (notebooks, True),
             "read scripts": (scripts, False)}
    seconds: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(rounds):
        for name, (paths, decode) in steps.items():
            start = time.process_time()
            read(paths, decode)
            seconds[name].append(time.process_time() - start)
    print(f"{len(notebooks)} notebooks, {len(scripts)} scripts; CPU medians of {rounds} interleaved rounds")
    for name, values in seconds.items():
        print(f"  {name:28s} {statistics.median(values):.3f} s")


if __name__ == "__main__":
    main()
