"""Pathological inputs: time and peak memory must grow linearly with the input.

1. ``pairs``: one file with N ``TrainingArguments``/``Trainer`` pairs (N = 1,000, 2,000, 4,000
   by default). ``trainlint check`` time per pair should stay flat: following each Trainer's
   model used to scan every call of the file for every Trainer (quadratic: 5.6 s at 1,000
   pairs, 44 s at 3,000).
2. ``big``: one Python file of S MB (1, 2, 4 by default; ``--big-mb 10`` for the issue's
   size) whose every block has findings with safe fixes. ``trainlint check`` and
   ``trainlint fix`` (diff only, nothing written): seconds per MB and peak RSS per MB of source
   should stay flat. ``ast.parse`` alone peaks at about 120 bytes per byte of source, which
   is the floor for anything built on Python's syntax tree; ``fix`` used to grow to 1 GB per MB
   (libcst reading the whole fixed file).

Peak memory is the child's ``ru_maxrss`` (Linux: KiB). Each line prints the size, seconds,
peak MiB and the ratios to the smallest size; the last column says whether growth is linear
(the per-unit figure of the largest size is within 1.6x of the smallest's).

usage: python benchmarks/pathological.py [--pairs 1000 2000 4000] [--big-mb 1 2 4] [--skip-fix]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pairs_file(path: Path, n: int) -> Path:
    lines = ["from transformers import TrainingArguments, Trainer", ""]
    for i in range(n):
        lines.append(f"args{i} = TrainingArguments(output_dir='o{i}', logging_steps=1, learning_rate=1e-4)")
        lines.append(f"trainer{i} = Trainer(model=model, args=args{i})")
    path.write_text("\n".join(lines) + "\n")
    return path


BLOCK = '''
def build_{i}(model, ds):
    x_{i} = [j * 2 for j in range(100)]  # a comment, as real code has
    args = TrainingArguments(output_dir="out_{i}", logging_steps=1, learning_rate=0.0001, report_to="none")
    enc = tok(ds["text"], padding="max_length", truncation=True)
    return Trainer(model=model, args=args, train_dataset=ds)
'''


def big_file(path: Path, mb: float) -> Path:
    parts = ["from transformers import TrainingArguments, Trainer, AutoTokenizer",
             "tok = AutoTokenizer.from_pretrained('gpt2')", ""]
    size, i = 0, 0
    while size < mb * 1_000_000:
        block = BLOCK.format(i=i)
        parts.append(block)
        size += len(block)
        i += 1
    path.write_text("\n".join(parts))
    return path


_PEAK = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
         "stderr=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def measure(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one run of ``cmd``, measured from a fresh intermediate
    process (``ru_maxrss`` of its only child)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _PEAK, *cmd], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    return wall, int(out.stdout.strip() or 0) / 1024


def report(title: str, unit: str, rows: list[tuple[float, float, float]]) -> None:
    print(f"\n{title}")
    base_s = rows[0][1] / rows[0][0]
    base_m = rows[0][2] / rows[0][0]
    for size, s, mib in rows:
        print(f"  {size:>8g} {unit}: {s:7.2f} s ({s / size * (1000 if unit == 'pairs' else 1):6.3f} s/"
              f"{'1000 pairs' if unit == 'pairs' else unit}, x{s / size / base_s:4.2f})  peak {mib:7.0f} MiB "
              f"({mib / size:6.1f} MiB/{unit[:-1] if unit.endswith('s') else unit}, x{mib / size / base_m:4.2f})")
    last = rows[-1]
    linear = last[1] / last[0] <= 1.6 * base_s
    print(f"  time linear: {'yes' if linear else 'NO'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, nargs="*", default=[1000, 2000, 4000])
    ap.add_argument("--big-mb", type=float, nargs="*", default=[1, 2, 4])
    ap.add_argument("--skip-fix", action="store_true")
    opts = ap.parse_args()
    exe = [sys.executable, "-m", "trainlint"]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        rows = []
        for n in sorted(opts.pairs):
            f = pairs_file(tmp / f"pairs{n}.py", n)
            s, mib = measure([*exe, "check", "--no-cache", "--format", "concise", str(f)])
            rows.append((n, s, mib))
        if rows:
            report("check: TrainingArguments/Trainer pairs in one file", "pairs", rows)
        for cmd in (["check", "--no-cache", "--format", "concise"], None if opts.skip_fix else ["fix"]):
            if cmd is None:
                continue
            rows = []
            for mb in sorted(opts.big_mb):
                f = big_file(tmp / f"big{mb:g}.py", mb)
                s, mib = measure([*exe, *cmd, str(f)])
                rows.append((mb, s, mib))
            report(f"{cmd[0]}: one large Python file", "MB", rows)


if __name__ == "__main__":
    main()
