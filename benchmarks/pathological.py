"""Pathological inputs: time and peak memory of ``check`` and ``fix`` must grow linearly with the
input, and peak memory stay a small multiple of it (issues 14 and 18).

Files (each at 1/4, 1/2 and full size):

1. ``calls``: 20,000 ``TrainingArguments(...)`` calls in one file (3 MB).
2. ``pairs``: 3,000 ``TrainingArguments``/``Trainer`` pairs (following each Trainer's model
   used to scan every call of the file for every Trainer: quadratic).
3. ``script``: a ~10 MB script of small helper functions and one Trainer at the end.
4. ``blocks``: a file of S MB (4 by default, ``--blocks-mb``) whose every block has findings
   with safe fixes (the heaviest case for ``fix``: every piece of the file is edited).

Commands: ``check --no-cache``, ``fix`` (the diff, nothing written) and ``fix --apply`` (on a
copy of the file). Each run is one process, measured with ``os.wait4``: wall seconds, CPU
seconds (user + system, of the process and its children) and peak RSS (the largest of the
process and its children). Each row gives the CPU per unit relative to the 1/4 size (1.00 is
linear) and the peak RSS over the input size. The start-up peak (a check of a 2-line file) is
measured once, and the (peak - start-up) column leaves it out. The parse floor is the peak of
a process that only reads the file and ``ast.parse``-es it (the syntax tree alone is 40-100
bytes per byte of source): each row gives the peak over it, and without start-ups (trainlint's
and a bare interpreter's). Benchmarks are not timed tests; state the load average with the figures.

usage: python benchmarks/pathological.py [--only calls,pairs,script,blocks] [--commands check,fix,apply]
                                         [--scale 1.0] [--blocks-mb 4]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _proc import measure  # benchmarks/ is on the path when run as a script

ROOT = Path(__file__).resolve().parent.parent

HEAD = "from transformers import Trainer, TrainingArguments\nmodel = ds = None\n"
ARGS = ("args_{i} = TrainingArguments(output_dir='o{i}', learning_rate=2e-5, per_device_train_batch_size=8, "
        "logging_steps=10, num_train_epochs=3, fp16=True)\n")
PAIR = ("args_{i} = TrainingArguments(output_dir='o{i}', learning_rate=2e-5, logging_steps=1)\n"
        "trainer_{i} = Trainer(model=model, args=args_{i}, train_dataset=ds)\n")
FILLER = ("def helper_{i}(x, y=2):\n    z = [v * y for v in range(x) if v % 3]\n"
          "    return {{'sum': sum(z), 'n': len(z), 'name': 'helper_{i}'}}\n\n")
BLOCK = '''
def build_{i}(model, ds):
    x_{i} = [j * 2 for j in range(100)]  # a comment, as real code has
    args = TrainingArguments(output_dir="out_{i}", logging_steps=1, learning_rate=0.0001, report_to="none")
    enc = tok(ds["text"], padding="max_length", truncation=True)
    return Trainer(model=model, args=args, train_dataset=ds)
'''
BLOCKS_HEAD = ("from transformers import TrainingArguments, Trainer, AutoTokenizer\n"
               "tok = AutoTokenizer.from_pretrained('gpt2')\n")


def pairs_file(path: Path, n: int) -> Path:
    path.write_text(HEAD + "".join(PAIR.format(i=i) for i in range(n)))
    return path


def calls_file(path: Path, n: int) -> Path:
    path.write_text(HEAD + "".join(ARGS.format(i=i) for i in range(n)))
    return path


def script_file(path: Path, n: int) -> Path:
    body = "".join(FILLER.format(i=i) for i in range(n))
    path.write_text(HEAD + body + "trainer = Trainer(model=model, args=TrainingArguments('o', logging_steps=1))\n")
    return path


def big_file(path: Path, mb: float) -> Path:
    """A file of about ``mb`` MB of ``BLOCK`` (each with fixable findings)."""
    parts = [BLOCKS_HEAD]
    size, i = 0, 0
    while size < mb * 1_000_000:
        block = BLOCK.format(i=i)
        parts.append(block)
        size += len(block)
        i += 1
    path.write_text("".join(parts))
    return path


def blocks_file(path: Path, n: int) -> Path:
    path.write_text(BLOCKS_HEAD + "".join(BLOCK.format(i=i) for i in range(n)))
    return path


def cases(blocks_mb: float, scale: float) -> dict[str, tuple[str, int, object]]:
    """label -> (unit name, units at full size, writer)."""
    return {
        "calls": ("calls", int(20_000 * scale), calls_file),
        "pairs": ("pairs", int(3_000 * scale), pairs_file),
        "script": ("defs", int(9.8e6 / len(FILLER.format(i=10000)) * scale), script_file),
        "blocks": ("blocks", int(blocks_mb * 1e6 / len(BLOCK.format(i=1000)) * scale), blocks_file),
    }




# the floor: a process that only reads the file and ``ast.parse``-es it whole
PARSE = "import ast, sys; ast.parse(open(sys.argv[1], encoding='utf-8').read())"

COMMANDS = {
    "check": ["check", "--no-cache", "--exit-zero", "--format", "concise"],
    "fix": ["fix"],
    "apply": ["fix", "--apply"],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="calls,pairs,script,blocks")
    ap.add_argument("--commands", default="check,fix,apply")
    ap.add_argument("--scale", type=float, default=1.0, help="full size times this (0.1 for a quick run)")
    ap.add_argument("--blocks-mb", type=float, default=4.0)
    opts = ap.parse_args()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "trainlint")], check=False)
    exe = [sys.executable, "-m", "trainlint"]
    print(f"load average at start: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}\n")
    base = Path(tempfile.mkdtemp(prefix="tl-patho-"))
    try:
        tiny = base / "tiny.py"
        tiny.write_text(HEAD)
        floor = measure([*exe, *COMMANDS["check"], str(tiny)], base)[2]
        print(f"start-up peak (check of a 2-line file): {floor:.0f} MiB\n")
        bare = measure([sys.executable, "-c", "pass"], base)[2]
        print(f"start-up peak of a bare interpreter: {bare:.0f} MiB\n")
        print("| file | size | units | MB | command | wall s | CPU s | peak MiB | CPU per unit vs 1/4 | peak / input "
              "| (peak - start-up) / input | parse floor MiB | peak / floor | (peak - start-up) / (floor - bare) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for label, (unit, full, writer) in cases(opts.blocks_mb, opts.scale).items():
            if label not in opts.only.split(","):
                continue
            files = {}
            floors = {}
            for frac in (4, 2, 1):
                n = full // frac
                files[frac] = (n, writer(base / f"{label}_{frac}.py", n))  # type: ignore[operator]
                floors[frac] = measure([sys.executable, "-c", PARSE, str(files[frac][1])], base)[2]
            for command in opts.commands.split(","):
                first = None
                for frac in (4, 2, 1):
                    n, path = files[frac]
                    target = path
                    if command == "apply":  # a fresh copy each time: --apply writes it
                        target = base / "apply" / path.name
                        target.parent.mkdir(exist_ok=True)
                        shutil.copyfile(path, target)
                    wall, cpu, peak = measure([*exe, *COMMANDS[command], str(target)], base)
                    mb = path.stat().st_size / 1e6
                    per = cpu / n
                    first = first or per
                    print(f"| {label} | 1/{frac} | {n:,} {unit} | {mb:.2f} | {command} | {wall:.1f} | {cpu:.1f} | "
                          f"{peak:.0f} | {per / first:.2f} | {peak / (mb * 1e6 / 2**20):.0f}x | "
                          f"{(peak - floor) / (mb * 1e6 / 2**20):.0f}x | {floors[frac]:.0f} | "
                          f"{peak / floors[frac]:.2f}x | {(peak - floor) / (floors[frac] - bare):.2f}x |", flush=True)
        print(f"\nload average at end: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
