"""Notebooks against the same programs as scripts (issue 16: "a repository with a thousand
notebooks must not be slower per file than the same code as scripts").

From a set of real notebooks (every ``.ipynb`` under the ``--source`` folders, e.g. extracted
snapshots of huggingface/notebooks, NielsRogge/Transformers-Tutorials, huggingface/smol-course)
it builds two trees with one file per notebook:

* ``nb/``: the notebooks as they are (outputs, metadata and all);
* ``py/``: for each notebook, its code cells as the reader sees them (one program, IPython
  syntax translated: ``python_program``) written as ``<name>.py``, and its shell text (``!``
  lines, ``%%bash`` cells, ``%env``) as ``<name>.sh`` when it has a launch line, so that both
  trees do the same linting work.

Both run as whole processes, ``trainlint check --no-cache -j 1`` (CPU seconds of the process,
user + system), in interleaved rounds (round i of every command before round i+1 of any), at
the set's own size and at ``--scale`` files (the set cycled, each copy under a new name). It
prints the median CPU seconds per tree, per file, and the ratio notebooks / scripts.

usage: python benchmarks/notebooks.py --source DIR [--source DIR ...] [--rounds 5] [--scale 1000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import _proc  # benchmarks/ is on the path when run as a script

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
CHECK = [PY, "-m", "trainlint", "check", ".", "--no-cache", "-j", "1", "--exit-zero", "--format", "concise"]


def measure(cwd: Path) -> tuple[float, float]:
    """(wall s, CPU s of the process and its children) of ``CHECK`` in ``cwd``."""
    return _proc.measure(CHECK, cwd)[:2]


def build(sources: list[Path], out: Path, scale: int) -> dict[str, tuple[Path, Path, int, float, float]]:
    """The trees: {label: (notebook dir, script dir, files, notebook MB, script MB)}."""
    sys.path.insert(0, str(ROOT))
    from trainlint.sources.errors import ReadError
    from trainlint.sources.notebook import load_cells, layout

    pairs: list[tuple[bytes, str, str]] = []  # notebook bytes, program, shell text with launches
    for src in sources:
        for p in sorted(src.rglob("*.ipynb")):
            if ".ipynb_checkpoints" in p.parts:
                continue
            data = p.read_bytes()
            try:
                text = data.decode("utf-8")
                nb = layout(str(p), load_cells(str(p), text)[1])
            except (UnicodeDecodeError, ReadError, RecursionError):
                continue
            shell = nb.shell_text if any(w in nb.shell_text for w in ("python", "torchrun", "accelerate",
                                                                       "deepspeed")) else ""
            pairs.append((data, nb.python_text, shell))
    trees = {}
    for label, count in (("set", len(pairs)), (f"x{scale}", scale)):
        nbdir, pydir = out / label / "nb", out / label / "py"
        nbdir.mkdir(parents=True)
        pydir.mkdir(parents=True)
        nb_bytes = py_bytes = 0
        for i in range(count):
            data, program, shell = pairs[i % len(pairs)]
            name = f"n{i:05d}"
            (nbdir / f"{name}.ipynb").write_bytes(data)
            (pydir / f"{name}.py").write_text(program, encoding="utf-8")
            nb_bytes += len(data)
            py_bytes += len(program.encode())
            if shell:
                (pydir / f"{name}.sh").write_text(shell, encoding="utf-8")
                py_bytes += len(shell.encode())
        trees[label] = (nbdir, pydir, count, nb_bytes / 1e6, py_bytes / 1e6)
    return trees


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", action="append", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scale", type=int, default=1000)
    ap.add_argument("--keep", type=Path, help="build the trees here and keep them")
    args = ap.parse_args()
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "trainlint")], check=False)
    out = args.keep or Path(tempfile.mkdtemp(prefix="trainlint-nb-bench-"))
    if args.keep and out.exists():
        shutil.rmtree(out)
    try:
        trees = build(args.source, out, args.scale)
        cmds = {}
        for label, (nbdir, pydir, *_rest) in trees.items():
            cmds[(label, "notebooks")] = nbdir
            cmds[(label, "scripts")] = pydir
        for cwd in cmds.values():  # warm the OS cache and the bytecode
            measure(cwd)
        times: dict[tuple[str, str], list[tuple[float, float]]] = {k: [] for k in cmds}
        for _ in range(args.rounds):
            for key, cwd in cmds.items():
                times[key].append(measure(cwd))
        print(f"## Notebooks vs the same programs as scripts (`check --no-cache -j 1`, median of "
              f"{args.rounds} interleaved rounds; CPU s = user + system)\n")
        print("| tree | files | notebooks MB / scripts MB | notebooks CPU s | scripts CPU s | "
              "per file (ms) nb / py | ratio nb/py (CPU) | same-round ratio (median) |")
        print("|---|---|---|---|---|---|---|---|")
        for label, (_nbdir, _pydir, count, nb_mb, py_mb) in trees.items():
            a = times[(label, "notebooks")]
            b = times[(label, "scripts")]
            ca = statistics.median(x[1] for x in a)
            cb = statistics.median(x[1] for x in b)
            same = statistics.median(x[1] / y[1] for x, y in zip(a, b))
            print(f"| {label} | {count} | {nb_mb:.1f} / {py_mb:.1f} | {ca:.2f} | {cb:.2f} | "
                  f"{1000 * ca / count:.2f} / {1000 * cb / count:.2f} | {ca / cb:.2f} | {same:.2f} |")
    finally:
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
