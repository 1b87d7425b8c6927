"""trainlint at repository scale, as medians and ratios of whole processes measured in one run
(interleaved rounds: round i of every command before round i+1 of any).

1. Repositories (``--repo NAME=DIR``, e.g. snapshots of LLaMA-Factory, peft, trl): default
   ``check .`` (``--no-cache``), ``-j 1``, ``-j 2``, the warm cache, and ``ruff check
   --select ALL`` as the reference of a native linter (when ``ruff`` is installed), plus the
   parse floor: one process that reads every walked file, ``ast.parse``-es the Python files the
   pre-filter keeps and loads every JSON/YAML file.
2. Growth: 1x, 2x, 4x, 8x copies of a set of real training files (``--set DIR``): wall time and
   peak memory (RSS) of ``check --no-cache`` (default jobs and ``-j 1``).
3. Pathological files: 20,000 TrainingArguments calls; 3,000 TrainingArguments/Trainer pairs;
   a script of ~10 MB; each at 1/4, 1/2 and full size, wall and peak memory (linear means the
   time per unit stays flat).

usage: python benchmarks/scale.py [--repo NAME=DIR ...] [--set DIR] [--rounds 3]
                                  [--skip repos,growth,patho]
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
TRAINLINT = [PY, "-m", "trainlint", "check", "--exit-zero", "--format", "concise"]

FLOOR = r"""
import ast, json, os, sys
from pathlib import Path
from trainlint.config import load_settings
from trainlint.sources.files import walk
from trainlint.workspace import wanted_python
root = Path(sys.argv[1]); settings = load_settings(root)
for p, explicit in walk([root], settings.exclude):
    data = open(p, "rb").read()
    s = str(p)
    if s.endswith(".py"):
        text = data.decode("utf-8", "replace")
        if wanted_python(text, settings):
            try:
                ast.parse(data)
            except SyntaxError:
                pass
    elif s.endswith(".json"):
        try:
            json.loads(data)
        except ValueError:
            pass
    elif s.endswith((".yaml", ".yml")):
        from ruamel.yaml import YAML
        try:
            YAML(typ="safe", pure=True).load(data)
        except Exception:
            pass
"""


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.pop("PYTHONDONTWRITEBYTECODE", None)
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), e.get("PYTHONPATH", "")]))
    e.pop("TRAINLINT_CACHE_DIR", None)
    return e


def measure(cmd: list[str], cwd: Path) -> tuple[float, float, int]:
    """(wall s, CPU s of the process and its children, peak RSS in MiB of the largest)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def interleaved(cmds: dict[str, tuple[list[str], Path]], rounds: int) -> dict[str, list[tuple[float, float, int]]]:
    out: dict[str, list[tuple[float, float, int]]] = {k: [] for k in cmds}
    for _ in range(rounds):
        for name, (cmd, cwd) in cmds.items():
            out[name].append(measure(cmd, cwd))
    return out


def med(xs: list[tuple[float, float, int]], i: int = 0) -> float:
    return statistics.median(x[i] for x in xs)


def count_files(root: Path) -> tuple[int, float]:
    sys.path.insert(0, str(ROOT))
    from trainlint.config import load_settings
    from trainlint.sources.files import walk

    files = [p for p, _ in walk([root], load_settings(root).exclude)]
    return len(files), sum(p.stat().st_size for p in files) / 1e6


def repos(specs: list[str], rounds: int) -> None:
    ruff = shutil.which("ruff") or (str(Path(PY).parent / "ruff") if (Path(PY).parent / "ruff").exists() else None)
    print("## Repositories (median wall s of", rounds, "interleaved rounds; CPU s in brackets)\n")
    print("| repository (files walked / MB) | default `check .` | `-j 1` | `-j 2` | warm cache | parse floor "
          "| ruff `--select ALL` | default / -j 1 | -j 1 / -j 2 | CPU -j 2 / -j 1 | warm / walk |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for spec in specs:
        name, _, folder = spec.partition("=")
        root = Path(folder).resolve()
        cache = Path(tempfile.mkdtemp(prefix="tl-cache-"))
        n, mb = count_files(root)
        cmds = {
            "default": (TRAINLINT + ["--no-cache", "."], root),
            "j1": (TRAINLINT + ["--no-cache", "-j", "1", "."], root),
            "j2": (TRAINLINT + ["--no-cache", "-j", "2", "."], root),
            "warm": (["env", f"TRAINLINT_CACHE_DIR={cache}"] + TRAINLINT + ["."], root),
            "floor": ([PY, "-c", FLOOR, "."], root),
            "walk": ([PY, "-c", "import sys; from pathlib import Path; from trainlint.sources.files import walk; "
                      "[open(p,'rb').read() for p,_ in walk([Path('.')])]"], root),
        }
        if ruff:
            cmds["ruff"] = ([ruff, "check", "--isolated", "--select", "ALL", "--no-cache", "--exit-zero", "-q", "."], root)
        measure(cmds["warm"][0], root)  # fill the cache
        r = interleaved(cmds, rounds)
        cell = {k: f"{med(v):.2f} ({med(v, 1):.2f})" for k, v in r.items()}
        print(f"| {name} ({n} / {mb:.1f}) | {cell['default']} | {cell['j1']} | {cell['j2']} | {cell['warm']} | "
              f"{cell['floor']} | {cell.get('ruff', 'n/a')} | {med(r['default']) / med(r['j1']):.2f} | "
              f"{med(r['j1']) / med(r['j2']):.2f} | {med(r['j2'], 1) / med(r['j1'], 1):.2f} | "
              f"{med(r['warm']) / med(r['walk']):.2f} |", flush=True)
        shutil.rmtree(cache, ignore_errors=True)
    print()


def growth(source: Path, rounds: int) -> None:
    base = Path(tempfile.mkdtemp(prefix="tl-growth-"))
    files = sorted(p for p in source.rglob("*") if p.is_file() and p.suffix in (".py", ".sh", ".json", ".yaml", ".yml"))
    print(f"## Growth: copies of {len(files)} real files from {source} (median of {rounds})\n")
    print("| copies | files | default wall s | peak MiB | `-j 1` wall s | peak MiB | ms per file (default) |")
    print("|---|---|---|---|---|---|---|")
    first = None
    for k in (1, 2, 4, 8):
        root = base / f"x{k}"
        for i in range(k):
            for f in files:
                dst = root / f"copy{i}" / f.relative_to(source)
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dst)
        r = interleaved({"default": (TRAINLINT + ["--no-cache", "."], root),
                         "j1": (TRAINLINT + ["--no-cache", "-j", "1", "."], root)}, rounds)
        per = med(r["default"]) / (len(files) * k) * 1000
        first = first or per
        print(f"| {k}x | {len(files) * k} | {med(r['default']):.2f} | {med(r['default'], 2):.0f} | "
              f"{med(r['j1']):.2f} | {med(r['j1'], 2):.0f} | {per:.1f} ({per / first:.2f}x of 1x) |", flush=True)
    shutil.rmtree(base, ignore_errors=True)
    print()


ARGS = ("args_{i} = TrainingArguments(output_dir='o{i}', learning_rate=2e-5, per_device_train_batch_size=8, "
        "logging_steps=10, num_train_epochs=3, fp16=True)\n")
PAIR = ("args_{i} = TrainingArguments(output_dir='o{i}', learning_rate=2e-5, logging_steps=1)\n"
        "trainer_{i} = Trainer(model=model, args=args_{i}, train_dataset=ds)\n")
FILLER = ("def helper_{i}(x, y=2):\n    z = [v * y for v in range(x) if v % 3]\n"
          "    return {{'sum': sum(z), 'n': len(z), 'name': 'helper_{i}'}}\n\n")


def patho(rounds: int) -> None:
    head = "from transformers import Trainer, TrainingArguments\nmodel = ds = None\n"
    cases = {
        "TrainingArguments calls": (ARGS, 20_000),
        "TrainingArguments/Trainer pairs": (PAIR, 3_000),
        "10 MB script (helpers + one Trainer)": (FILLER, int(9.8e6 / len(FILLER.format(i=10000)))),
    }
    base = Path(tempfile.mkdtemp(prefix="tl-patho-"))
    print(f"## Pathological files (one explicit file, median of {rounds})\n")
    print("| file | size | units | MB | wall s | peak MiB | us per unit | vs 1/4 |")
    print("|---|---|---|---|---|---|---|---|")
    for label, (unit, n_full) in cases.items():
        first = None
        for frac in (4, 2, 1):
            n = n_full // frac
            path = base / f"{label[:8].replace(' ', '_').replace('/', '_')}_{frac}.py"
            body = "".join(unit.format(i=i) for i in range(n))
            if "10 MB" in label:
                body += "trainer = Trainer(model=model, args=TrainingArguments('o', logging_steps=1))\n"
            path.write_text(head + body)
            r = interleaved({"x": (TRAINLINT + ["--no-cache", str(path)], base)}, rounds)["x"]
            per = med(r) / n * 1e6
            first = first or per
            print(f"| {label} | 1/{frac} | {n} | {path.stat().st_size / 1e6:.1f} | {med(r):.2f} | {med(r, 2):.0f} | "
                  f"{per:.0f} | {per / first:.2f} |", flush=True)
    shutil.rmtree(base, ignore_errors=True)
    print()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", action="append", default=[])
    ap.add_argument("--set", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip", default="")
    a = ap.parse_args()
    skip = set(a.skip.split(","))
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "trainlint")], check=False)
    if a.repo and "repos" not in skip:
        repos(a.repo, a.rounds)
    if a.set and "growth" not in skip:
        growth(a.set, a.rounds)
    if "patho" not in skip:
        patho(a.rounds)


if __name__ == "__main__":
    main()
