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

4. Inputs of one kind: a ~10 MB DeepSpeed JSON (``check`` against ``json.load`` of it) and
   ``--format text`` against ``concise`` on ~40,000 findings.

usage: python benchmarks/scale.py [--repo NAME=DIR ...] [--set DIR] [--rounds 3]
                                  [--skip repos,growth,patho,inputs]
       python benchmarks/scale.py --pool-only --repo NAME=DIR ... [--rounds 5]
         (only default / -j 1 / -j 2 on each repository: the 2-process speed-up, quickly)

Every section prints the load average before and after: on a shared machine the wall times
are inflated and ``-j 2`` cannot show a speed-up when no core is free; the CPU ratios hold.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import _proc  # benchmarks/ is on the path when run as a script
from _proc import env

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
TRAINLINT_ANY = [PY, "-m", "trainlint", "check", "--exit-zero"]
TRAINLINT = TRAINLINT_ANY + ["--format", "concise"]

FLOOR = r"""
import ast, json, os, sys
from pathlib import Path
from trainlint.config import load_settings
from trainlint.sources.files import walk
from trainlint.workspace import PY_PREFILTER, wanted_python
root = Path(sys.argv[1]); settings = load_settings(root)
def wanted(text):
    return WANTED
for p, explicit in walk([root], settings.exclude):
    data = open(p, "rb").read()
    s = str(p)
    if s.endswith(".py"):
        if wanted(data.decode("utf-8", "replace")):
            try:
                ast.parse(data)
            except SyntaxError:
                pass
    elif s.endswith(".ipynb"):
        # a notebook is a program: loaded when its text names a trigger, and its code cells
        # parsed as one script when their code does
        if wanted(data.decode("utf-8", "replace")):
            try:
                cells = json.loads(data).get("cells", [])
            except (ValueError, AttributeError):
                cells = []
            code = "\n".join("".join(c["source"]) if isinstance(c.get("source"), list) else str(c.get("source", ""))
                             for c in cells if isinstance(c, dict) and c.get("cell_type") == "code")
            if wanted(code):
                # magics and shell lines (``!pip``, ``%%time``) are not Python: commented out
                code = "\n".join("#" + l if l.lstrip()[:1] in ("!", "%") else l for l in code.splitlines())
                try:
                    ast.parse(code)
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
# The floor the issue names: the Python files the rules' pre-filter keeps (``wanted_python``),
# notebooks included (a notebook is a program: its JSON is loaded and, when its code cells
# mention a trigger, their code parsed as one script; until the eleventh session the floor only
# read notebooks, which left their loading and parsing out of it).
FLOOR_RULES = FLOOR.replace("WANTED", "wanted_python(text, settings)")
# The same with every Python file trainlint may report on parsed: a walked script that the
# rules' pre-filter drops but that names the training libraries (``workspace.PY_PREFILTER``) is
# still syntax-checked, since a broken training script gets TL001 (design: never silence).
FLOOR_CHECKED = FLOOR.replace("WANTED", "wanted_python(text, settings) or any(t in text for t in PY_PREFILTER)")
# The rules' floor with every tree kept until the end and the collector off, as trainlint's run
# does with the files of a group (linking follows a script's imports through the repository's
# modules, so a group's trees live together; the collector only runs between tasks): not the
# issue's floor, a reference for what holding the trees costs (fresh memory for each tree
# instead of the memory of the tree just dropped: page faults and cache misses).
FLOOR_HELD = FLOOR_RULES.replace("root = Path(", "import gc; gc.disable(); KEPT = []\nroot = Path(", 1) \
    .replace("ast.parse(data)", "KEPT.append(ast.parse(data))").replace("ast.parse(code)", "KEPT.append(ast.parse(code))")
FLOOR = FLOOR_RULES


def measure(cmd: list[str], cwd: Path) -> tuple[float, float, int]:
    """(wall s, CPU s of the process and its children, peak RSS in whole MiB of the largest)."""
    wall, cpu, peak = _proc.measure(cmd, cwd)
    return wall, cpu, int(peak)


def interleaved(cmds: dict[str, tuple[list[str], Path]], rounds: int) -> dict[str, list[tuple[float, float, int]]]:
    out: dict[str, list[tuple[float, float, int]]] = {k: [] for k in cmds}
    for _ in range(rounds):
        for name, (cmd, cwd) in cmds.items():
            out[name].append(measure(cmd, cwd))
    return out


def med(xs: list[tuple[float, float, int]], i: int = 0) -> float:
    return statistics.median(x[i] for x in xs)


def load() -> str:
    a, b, c = os.getloadavg()
    return f"load average {a:.1f} / {b:.1f} / {c:.1f} on {os.cpu_count()} cores"


# a process that starts the way ``check`` does (the CLI, the settings) and reads every walked file
WALK_STARTED = ("import sys; from pathlib import Path; import trainlint.cli, trainlint.config; "
                "from trainlint.sources.files import walk; [open(p,'rb').read() for p,_ in walk([Path('.')])]")


def count_files(root: Path) -> tuple[int, float]:
    sys.path.insert(0, str(ROOT))
    from trainlint.config import load_settings
    from trainlint.sources.files import walk

    files = [p for p, _ in walk([root], load_settings(root).exclude)]
    return len(files), sum(p.stat().st_size for p in files) / 1e6


def repos(specs: list[str], rounds: int) -> None:
    ruff = shutil.which("ruff") or (str(Path(PY).parent / "ruff") if (Path(PY).parent / "ruff").exists() else None)
    print("## Repositories (median wall s of", rounds, "interleaved rounds; CPU s in brackets;", load() + ")\n")
    print("| repository (files walked / MB) | default `check .` | `-j 1` | `-j 2` | warm cache | walk | walk, started "
          "| parse floor | ruff `--select ALL` | default / -j 1 | -j 1 / -j 2 | CPU -j 2 / -j 1 | warm / walk "
          "| warm / walk, started |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
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
            "walk_started": ([PY, "-c", WALK_STARTED], root),
        }
        if ruff:
            cmds["ruff"] = ([ruff, "check", "--isolated", "--select", "ALL", "--no-cache", "--exit-zero", "-q", "."], root)
        measure(cmds["warm"][0], root)  # fill the cache
        r = interleaved(cmds, rounds)
        cell = {k: f"{med(v):.2f} ({med(v, 1):.2f})" for k, v in r.items()}
        print(f"| {name} ({n} / {mb:.1f}) | {cell['default']} | {cell['j1']} | {cell['j2']} | {cell['warm']} | "
              f"{cell['walk']} | {cell['walk_started']} | "
              f"{cell['floor']} | {cell.get('ruff', 'n/a')} | {med(r['default']) / med(r['j1']):.2f} | "
              f"{med(r['j1']) / med(r['j2']):.2f} | {med(r['j2'], 1) / med(r['j1'], 1):.2f} | "
              f"{med(r['warm']) / med(r['walk']):.2f} ({med(r['warm'], 1) / med(r['walk'], 1):.2f} CPU) | "
              f"{med(r['warm']) / med(r['walk_started']):.2f} ({med(r['warm'], 1) / med(r['walk_started'], 1):.2f} CPU) |",
              flush=True)
        shutil.rmtree(cache, ignore_errors=True)
    print(f"\n(after: {load()})\n")


def pool_only(specs: list[str], rounds: int) -> None:
    """Only default / -j 1 / -j 2 (no cache) per repository, interleaved: the 2-process speed-up."""
    print(f"## The pool ({rounds} interleaved rounds; {load()})\n")
    print("| repository | default wall s (CPU) | `-j 1` | `-j 2` | speed-up -j 1 / -j 2 (wall) | "
          "default / -j 1 (wall) | CPU -j 2 / -j 1 | same-round speed-ups |")
    print("|---|---|---|---|---|---|---|---|")
    for spec in specs:
        name, _, folder = spec.partition("=")
        root = Path(folder).resolve()
        cmds = {k: (TRAINLINT + ["--no-cache"] + a + ["."], root)
                for k, a in (("default", []), ("j1", ["-j", "1"]), ("j2", ["-j", "2"]))}
        measure(cmds["j1"][0], root)  # warm the page cache
        r = interleaved(cmds, rounds)
        rounds_ratio = ", ".join(f"{a[0] / b[0]:.2f}" for a, b in zip(r["j1"], r["j2"]))
        print(f"| {name} | {med(r['default']):.2f} ({med(r['default'], 1):.2f}) | {med(r['j1']):.2f} "
              f"({med(r['j1'], 1):.2f}) | {med(r['j2']):.2f} ({med(r['j2'], 1):.2f}) | "
              f"{med(r['j1']) / med(r['j2']):.2f} | {med(r['default']) / med(r['j1']):.2f} | "
              f"{med(r['j2'], 1) / med(r['j1'], 1):.2f} | {rounds_ratio} |", flush=True)
    print(f"\n(after: {load()})\n")


def big_deepspeed(path: Path, target_mb: float = 10.0) -> None:
    """A DeepSpeed config (ZeRO-3, "auto" values, two findings) with a large payload: per-group compression
    tables and a curriculum difficulty list, ~``target_mb`` MB indented."""
    import json
    import random

    rng = random.Random(0)
    groups = int(7000 * target_mb / 8.9)
    cfg = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": 4,
           "fp16": {"enabled": True, "loss_scale": 0}, "bf16": {"enabled": True},  # findings: TL303, TL315
           "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": True},
                                 "overlap_comm": True, "stage3_gather_16bit_weights_on_model_save": True},
           "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": "auto"}},
           "compression_training": {"layer_reduction": {"enabled": False}, "different_groups": {
               f"g{i}": {"params": {"start_bits": 8, "target_bits": 4, "quantization_period": rng.randint(1, 5000)},
                         "modules": [f"layer.{i}.attention.{k}" for k in ("q", "k", "v", "o")],
                         "related_modules": [[f"layer.{i}.mlp.{k}", rng.random()] for k in range(3)]}
               for i in range(groups)}},
           "data_efficiency": {"enabled": True, "data_sampling": {"curriculum_learning": {
               "difficulty": [rng.random() for _ in range(int(150_000 * target_mb / 8.9))]}}}}
    path.write_text(json.dumps(cfg, indent=2))


FINDINGS_SCRIPT = ("from transformers import Trainer, TrainingArguments\nmodel = ds = None\n" + "".join(
    f"args_{i} = TrainingArguments(output_dir='o{i}', logging_steps=0, learning_rate=2e-2, warmup_steps=-1)\n"
    for i in range(2000)))


def inputs(rounds: int) -> None:
    base = Path(tempfile.mkdtemp(prefix="tl-inputs-"))
    print(f"## Inputs of one kind (median of {rounds} interleaved rounds; {load()})\n")
    ds = base / "ds_config.json"
    big_deepspeed(ds)
    folder = base / "findings"
    folder.mkdir()
    for i in range(10):  # 2,000 calls with 2 findings each per file: 40,000 findings
        (folder / f"train_{i}.py").write_text(FINDINGS_SCRIPT)
    n = subprocess.run(TRAINLINT + ["--no-cache", "--format", "json", str(folder)], capture_output=True, text=True,
                       env=env()).stdout.count('"code"')
    r = interleaved({
        "check": (TRAINLINT + ["--no-cache", str(ds)], base),
        "json.load": ([PY, "-c", f"import json; json.load(open({str(ds)!r}))"], base),
        "concise": (TRAINLINT_ANY + ["--no-cache", "--format", "concise", str(folder)], base),
        "text": (TRAINLINT_ANY + ["--no-cache", "--format", "text", str(folder)], base),
    }, rounds)
    print("| what | wall s | CPU s | peak MiB | ratio (wall, CPU) |")
    print("|---|---|---|---|---|")
    print(f"| `check` of a {ds.stat().st_size / 1e6:.1f} MB DeepSpeed JSON | {med(r['check']):.2f} | "
          f"{med(r['check'], 1):.2f} | {med(r['check'], 2):.0f} | {med(r['check']) / med(r['json.load']):.1f}x, "
          f"{med(r['check'], 1) / med(r['json.load'], 1):.1f}x of json.load |")
    print(f"| `python -c 'json.load(...)'` of it | {med(r['json.load']):.2f} | {med(r['json.load'], 1):.2f} | "
          f"{med(r['json.load'], 2):.0f} | |")
    print(f"| `--format concise`, {n} findings | {med(r['concise']):.2f} | {med(r['concise'], 1):.2f} | "
          f"{med(r['concise'], 2):.0f} | |")
    print(f"| `--format text`, same | {med(r['text']):.2f} | {med(r['text'], 1):.2f} | {med(r['text'], 2):.0f} | "
          f"{med(r['text']) / med(r['concise']):.2f}x, {med(r['text'], 1) / med(r['concise'], 1):.2f}x of concise |")
    shutil.rmtree(base, ignore_errors=True)
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


from pathological import ARGS, FILLER, PAIR  # noqa: E402 - the same pathological files as pathological.py


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
    ap.add_argument("--pool-only", action="store_true", help="only default / -j 1 / -j 2 on each --repo")
    a = ap.parse_args()
    skip = set(a.skip.split(","))
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "trainlint")], check=False)
    if a.pool_only:
        pool_only(a.repo, a.rounds)
        return
    if "inputs" not in skip:
        inputs(a.rounds)
    if a.repo and "repos" not in skip:
        repos(a.repo, a.rounds)
    if a.set and "growth" not in skip:
        growth(a.set, a.rounds)
    if "patho" not in skip:
        patho(a.rounds)


if __name__ == "__main__":
    main()
