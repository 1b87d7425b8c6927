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
prints the median CPU seconds per tree, per file, and the ratio notebooks / scripts; and,
per tree, the median system CPU seconds, peak RSS and minor page faults (what holding the
notebooks' text costs shows there).

With ``--code DIR`` (repeatable) it runs those checkouts of trainlint instead of this one,
each on the same trees in the same interleaved rounds (before and after a change): a ratio per
checkout. ``--keep DIR`` builds the trees there and keeps them; ``--reuse`` runs on trees kept
before (``--keep``) without building them again.

usage: python benchmarks/notebooks.py --source DIR [--source DIR ...] [--rounds 5] [--scale 1000]
       [--code DIR ...] [--keep DIR [--reuse]] [--only LABEL]
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


def measure(cwd: Path, root: Path | None = None) -> _proc.Usage:
    """One run of ``CHECK`` in ``cwd`` (trainlint of the checkout ``root``, this one by
    default): wall, user and system CPU s, peak RSS, minor page faults."""
    return _proc.run_usage(CHECK, cwd, root)


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


def _kept(out: Path, scale: int) -> dict[str, tuple[Path, Path, int, float, float]]:
    """The trees ``build`` left in ``out`` (``--keep``)."""
    trees = {}
    for label in ("set", f"x{scale}"):
        nbdir, pydir = out / label / "nb", out / label / "py"
        if nbdir.is_dir() and pydir.is_dir():
            mb = [sum(p.stat().st_size for p in d.iterdir()) / 1e6 for d in (nbdir, pydir)]
            trees[label] = (nbdir, pydir, sum(1 for _ in nbdir.iterdir()), mb[0], mb[1])
    return trees


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", action="append", type=Path, default=[])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scale", type=int, default=1000)
    ap.add_argument("--keep", type=Path, help="build the trees here and keep them")
    ap.add_argument("--reuse", action="store_true", help="run on the trees kept in --keep")
    ap.add_argument("--code", action="append", type=Path, default=[], help="a checkout of trainlint to run")
    ap.add_argument("--only", help="run only this tree (set, x1000)")
    args = ap.parse_args()
    codes = [c.resolve() for c in args.code] or [ROOT]
    for code in codes:
        subprocess.run([PY, "-m", "compileall", "-q", str(code / "trainlint")], check=False)
    out = args.keep or Path(tempfile.mkdtemp(prefix="trainlint-nb-bench-"))
    if args.reuse and not args.keep:
        ap.error("--reuse needs --keep")
    if not args.reuse and not args.source:
        ap.error("--source is required (or --keep DIR --reuse)")
    if args.keep and out.exists() and not args.reuse:
        shutil.rmtree(out)
    try:
        trees = _kept(out, args.scale) if args.reuse else build(args.source, out, args.scale)
        if args.only:
            trees = {k: v for k, v in trees.items() if k == args.only}
        cmds = {}
        for code in codes:
            for label, (nbdir, pydir, *_rest) in trees.items():
                cmds[(code, label, "notebooks")] = nbdir
                cmds[(code, label, "scripts")] = pydir
        for (code, *_k), cwd in cmds.items():  # warm the OS cache and the bytecode
            measure(cwd, code)
        times: dict[tuple, list[_proc.Usage]] = {k: [] for k in cmds}
        for _ in range(args.rounds):
            for key, cwd in cmds.items():
                times[key].append(measure(cwd, key[0]))
        print(f"## Notebooks vs the same programs as scripts (`check --no-cache -j 1`, median of "
              f"{args.rounds} interleaved rounds; CPU s = user + system)\n")
        print("| code | tree | files | notebooks MB / scripts MB | notebooks CPU s | scripts CPU s | "
              "per file (ms) nb / py | ratio nb/py (CPU) | same-round ratio (median) | system s nb / py | "
              "peak MiB nb / py | minor faults nb / py |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for code in codes:
            for label, (_nbdir, _pydir, count, nb_mb, py_mb) in trees.items():
                a = times[(code, label, "notebooks")]
                b = times[(code, label, "scripts")]

                def med(runs: list[_proc.Usage], field: str) -> float:
                    return statistics.median(getattr(x, field) for x in runs)

                ca, cb = med(a, "cpu"), med(b, "cpu")
                same = statistics.median(x.cpu / y.cpu for x, y in zip(a, b))
                print(f"| {code.name} | {label} | {count} | {nb_mb:.1f} / {py_mb:.1f} | {ca:.2f} | {cb:.2f} | "
                      f"{1000 * ca / count:.2f} / {1000 * cb / count:.2f} | {ca / cb:.2f} | {same:.2f} | "
                      f"{med(a, 'system'):.2f} / {med(b, 'system'):.2f} | {med(a, 'peak_mib'):.0f} / "
                      f"{med(b, 'peak_mib'):.0f} | {med(a, 'minor_faults') / 1000:.1f}k / "
                      f"{med(b, 'minor_faults') / 1000:.1f}k |")
    finally:
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
