"""trainlint speed, as medians and ratios measured in one run on this machine.

1. Start-up: one-file ``trainlint check`` (``--no-cache`` and with a warm cache) against
   - the import floor of its own stack: ``python -c "import <every module check imports>"``
     (the non-trainlint modules found in ``sys.modules`` after a real check, imported in the
     same order), and
   - the libcst stack floor: ``import libcst, libcst.metadata, click, rich.console; from
     pydantic import BaseModel`` (what a libcst-based linter pays before reading a file).
   An interleaved subprocess loop (``--hyperfine``: hyperfine ``-N``, warm-up 3).
2. Throughput on a generated corpus of training scripts (benchmarks/corpus.py, 2,000 by
   default): ``trainlint check --no-cache`` (whole process, default jobs) and the same with a
   warm cache, against
   (a) ``libcst.parse_module`` per file, one process, and
   (b) the Fixit-style cost: libcst parse + ``MetadataWrapper`` + ``ScopeProvider`` +
       ``QualifiedNameProvider`` per file,
   both timed in-process on a sample and extrapolated per file (the output says so).

usage: python benchmarks/bench.py [--files 2000] [--runs 15] [--corpus DIR] [--cst-sample 200]
                                  [--meta-sample 40] [--throughput-runs 3] [--hyperfine]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402

PY = sys.executable
LIBCST_STACK = "import libcst, libcst.metadata, click, rich.console; from pydantic import BaseModel"


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.pop("PYTHONDONTWRITEBYTECODE", None)  # users run with cached bytecode
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), e.get("PYTHONPATH", "")]))
    return e


def run(cmd: list[str], cwd: Path | None = None, check: bool = False) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, cwd=cwd, env=env(), capture_output=True, text=True)
    if check and out.returncode not in (0, 1):
        raise SystemExit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    return out


def stack_modules(target: Path, cwd: Path) -> list[str]:
    """Every non-trainlint module a real one-file check leaves in sys.modules, in load order."""
    probe = textwrap.dedent(f"""
        import sys, json, io, contextlib
        sys.argv = ["trainlint", "check", {str(target)!r}, "--no-cache"]
        from trainlint.cli import main  # the console script's entry() ends in os._exit
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                main()
        except SystemExit:
            pass
        skip = ("trainlint", "__main__", "__mp_main__")
        mods = [m for m in list(sys.modules) if m.split(".")[0] not in skip and not m.startswith("__editable__")]
        sys.stderr.write("MODS=" + json.dumps(mods) + "\\n")
    """)
    out = run([PY, "-c", probe], cwd=cwd)
    line = [x for x in out.stderr.splitlines() if x.startswith("MODS=")]
    if not line:
        raise SystemExit(f"could not list modules:\n{out.stderr}")
    return json.loads(line[0][5:])


def floor_statement(mods: list[str]) -> str:
    """Import them all (a few private ones may refuse a direct import: skipped)."""
    return ("import importlib\nfor m in " + repr(mods) + ":\n    try: importlib.import_module(m)\n"
            "    except Exception: pass")


def time_commands(named: dict[str, list[str]], runs: int, cwd: Path, use_hyperfine: bool) -> dict[str, dict]:
    """Median/min/max seconds per command, mean CPU seconds, and the per-run times.

    By default an interleaved loop: run i of every command comes before run i+1 of any, so a
    change of load on the machine (a shared VM) hits every command alike and the ratios stay
    fair. ``--hyperfine`` uses hyperfine (``-N``, 3 warm-up runs), which runs each command's
    series in one block."""
    if use_hyperfine and shutil.which("hyperfine"):
        with tempfile.TemporaryDirectory() as d:
            export = Path(d) / "h.json"
            cmd = ["hyperfine", "-N", "-i", "--warmup", "3", "--runs", str(runs), "--export-json", str(export),
                   "--style", "none"]
            for name, argv in named.items():
                cmd += ["-n", name, " ".join(_quote(a) for a in argv)]
            subprocess.run(cmd, cwd=cwd, env=env(), check=True, capture_output=True)
            data = json.loads(export.read_text())
        return {r["command"]: {"median": r["median"], "min": r["min"], "max": r["max"],
                               "cpu": r["user"] + r["system"], "times": r["times"], "tool": "hyperfine"}
                for r in data["results"]}
    import resource

    times: dict[str, list[float]] = {n: [] for n in named}
    cpu: dict[str, list[float]] = {n: [] for n in named}
    for i in range(runs + 3):  # interleaved: load changes hit every command alike
        for name, argv in named.items():
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(argv, cwd=cwd, env=env(), capture_output=True)
            dt = time.perf_counter() - t
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if i >= 3:
                times[name].append(dt)
                cpu[name].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return {n: {"median": statistics.median(v), "min": min(v), "max": max(v), "cpu": statistics.mean(cpu[n]),
                "times": v, "tool": "interleaved subprocess loop"} for n, v in times.items()}


def paired_ratio(res: dict[str, dict], a: str, b: str) -> float:
    """Median over runs of time(a) / time(b) in the same round (interleaved loop only)."""
    return statistics.median(x / y for x, y in zip(res[a]["times"], res[b]["times"]))


def _quote(a: str) -> str:
    import shlex

    return shlex.quote(a)


def cst_rate(files: list[Path], mode: str) -> dict:
    """In-process files/s of libcst parsing (mode cst) or parse + scope/qualified-name metadata
    (mode meta), in a fresh interpreter; the import of libcst is not counted."""
    script = textwrap.dedent(f"""
        import json, sys, time
        import libcst as cst
        from libcst.metadata import MetadataWrapper, QualifiedNameProvider, ScopeProvider
        paths = json.loads(sys.argv[1])
        sources = [open(p, "rb").read() for p in paths]
        t = time.perf_counter()
        for s in sources:
            mod = cst.parse_module(s)
            if {mode!r} == "meta":
                MetadataWrapper(mod).resolve_many([ScopeProvider, QualifiedNameProvider])
        dt = time.perf_counter() - t
        print(json.dumps({{"seconds": dt, "files": len(sources), "bytes": sum(map(len, sources))}}))
    """)
    out = run([PY, "-c", script, json.dumps([str(p) for p in files])])
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    data = json.loads(out.stdout)
    data["files_per_s"] = data["files"] / data["seconds"]
    return data


def wall(cmd: list[str], cwd: Path, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        r = run(cmd, cwd=cwd)
        out.append(time.perf_counter() - t)
        if r.returncode not in (0, 1):
            raise SystemExit(f"trainlint failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--corpus", type=Path, help="where to generate the corpus (default: a temporary folder)")
    ap.add_argument("--cst-sample", type=int, default=200)
    ap.add_argument("--meta-sample", type=int, default=40)
    ap.add_argument("--throughput-runs", type=int, default=3)
    ap.add_argument("--hyperfine", action="store_true",
                    help="time start-up with hyperfine (each command's runs in one block) instead of the "
                         "default interleaved loop")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="trainlint-bench-"))
    corpus_dir = args.corpus or work / "corpus"
    try:
        print(f"trainlint benchmark  python {sys.version.split()[0]}  cores {os.cpu_count()}  "
              f"load {os.getloadavg()[0]:.2f}")
        # compile trainlint's bytecode once, as an installed package has it
        subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "trainlint")], env=env(), check=False)

        # -- 1. start-up ------------------------------------------------------------------
        one = work / "one"
        one.mkdir()
        src = ROOT / "examples" / "bert_imdb" / "train.py"
        (one / "train.py").write_text(src.read_text())
        mods = stack_modules(one / "train.py", one)
        heavy = [m for m in mods if m.split(".")[0] in ("libcst", "torch", "transformers", "accelerate", "deepspeed")]
        tops = sorted({m.split(".")[0] for m in mods if not m.startswith("_")} - set(sys.builtin_module_names))
        print(f"\n[1] one-file check: {len(mods)} non-trainlint modules imported "
              f"({len(heavy)} of libcst/torch/transformers/accelerate/deepspeed)")
        print("    third-party packages: " + ", ".join(t for t in tops if t in
                                                      ("click", "pydantic", "pydantic_core", "rich", "libcst", "ruamel",
                                                       "pathspec", "packaging", "typing_extensions",
                                                       "annotated_types", "typing_inspection")))
        floor_file = work / "floor.py"
        floor_file.write_text(floor_statement(mods))
        commands = {
            "check --no-cache": [PY, "-m", "trainlint", "check", "train.py", "--no-cache", "--exit-zero"],
            "check (warm cache)": [PY, "-m", "trainlint", "check", "train.py", "--exit-zero"],
            "own stack floor": [PY, str(floor_file)],
            "libcst stack floor": [PY, "-c", LIBCST_STACK],
            "python -c pass": [PY, "-c", "pass"],
        }
        res = time_commands(commands, args.runs, one, args.hyperfine)
        floor = res["own stack floor"]["median"]
        cpu_floor = res["own stack floor"]["cpu"]
        for name, r in res.items():
            print(f"    {name:<20} median {r['median'] * 1000:7.1f} ms  (min {r['min'] * 1000:6.1f}, "
                  f"max {r['max'] * 1000:6.1f})  = {r['median'] / floor:5.2f}x own floor, "
                  f"{r['median'] / res['libcst stack floor']['median']:5.2f}x libcst floor;  "
                  f"CPU {r['cpu'] * 1000:6.1f} ms = {r['cpu'] / cpu_floor:5.2f}x, "
                  f"{r['cpu'] / res['libcst stack floor']['cpu']:5.2f}x")
        print(f"    timing: {next(iter(res.values()))['tool']}, {args.runs} runs each after 3 warm-up runs; "
              f"CPU = mean user+system time (robust to other load on the machine)")
        pair = paired_ratio(res, "check --no-cache", "own stack floor")
        print(f"    check --no-cache / own floor, median of the {args.runs} same-round ratios: {pair:.2f}x")

        # -- 2. throughput ----------------------------------------------------------------
        if not corpus_dir.exists() or not any(corpus_dir.rglob("*.py")):
            t = time.perf_counter()
            corpus.generate(corpus_dir, args.files, seed=0)
            print(f"\n[2] corpus: generated {args.files} scripts in {time.perf_counter() - t:.1f} s")
        files = sorted(corpus_dir.rglob("*.py"))
        nbytes = sum(p.stat().st_size for p in files)
        nlines = sum(p.read_text().count("\n") for p in files)
        print(f"[2] corpus {corpus_dir}: {len(files)} files, {nbytes / 1e6:.1f} MB, {nlines} lines "
              f"(median {statistics.median(p.read_text().count(chr(10)) for p in files):.0f} lines)")
        cache_dir = work / "cache"
        base = [PY, "-m", "trainlint", "check", str(corpus_dir), "--format", "concise", "--exit-zero"]
        os.environ["TRAINLINT_CACHE_DIR"] = str(cache_dir)
        cold = wall(base + ["--no-cache"], work, args.throughput_runs)
        serial = wall(base + ["--no-cache", "-j", "1"], work, 1)
        wall(base, work, 1)  # fill the cache
        warm = wall(base, work, args.throughput_runs)
        findings = run(base + ["--statistics"], cwd=work).stdout.strip().splitlines()
        step = max(1, len(files) // args.cst_sample)
        cst_sample = files[::step][: args.cst_sample]
        mstep = max(1, len(files) // args.meta_sample)
        meta_sample = files[::mstep][: args.meta_sample]
        cst = cst_rate(cst_sample, "cst")
        meta = cst_rate(meta_sample, "meta")
        t_cold, t_warm, t_serial = statistics.median(cold), statistics.median(warm), serial[0]
        rate = len(files) / t_cold
        print(f"    findings: " + "; ".join(" ".join(x.split()) for x in findings))
        print(f"    trainlint check --no-cache (jobs {os.cpu_count()}):  median {t_cold:6.2f} s of "
              f"{args.throughput_runs} = {rate:7.1f} files/s (whole process)")
        print(f"    trainlint check --no-cache -j 1:        {t_serial:6.2f} s     = {len(files) / t_serial:7.1f} files/s")
        print(f"    trainlint check, warm cache:            median {t_warm:6.2f} s of "
              f"{args.throughput_runs} = {len(files) / t_warm:7.1f} files/s")
        print(f"    (a) libcst.parse_module, 1 process:     {cst['files_per_s']:7.1f} files/s "
              f"(in-process, sample of {cst['files']} files, extrapolated: "
              f"{len(files) / cst['files_per_s']:.0f} s for the corpus)")
        print(f"    (b) Fixit-style parse+Scope+QualifiedName: {meta['files_per_s']:5.1f} files/s "
              f"(in-process, sample of {meta['files']} files, extrapolated: "
              f"{len(files) / meta['files_per_s']:.0f} s for the corpus)")
        print(f"    ratios: trainlint / libcst parse = {rate / cst['files_per_s']:.2f}x;  "
              f"trainlint / Fixit-style = {rate / meta['files_per_s']:.1f}x;  "
              f"warm cache / cold = {t_cold / t_warm:.1f}x faster")

        # judged on the larger of the ratio of medians and the median same-round ratio
        one_ratio = max(res["check --no-cache"]["median"] / floor, pair)
        cpu_ratio = res["check --no-cache"]["cpu"] / cpu_floor
        print("\nGoals: one-file check <= 1.3x own floor: "
              f"{'met' if one_ratio <= 1.3 else 'NOT met'} (wall {one_ratio:.2f}x, the larger of the ratio of "
              f"medians and the median same-round ratio; CPU {cpu_ratio:.2f}x; warm cache "
              f"wall {res['check (warm cache)']['median'] / floor:.2f}x);  "
              f"throughput >= 5x Fixit-style: {'met' if rate >= 5 * meta['files_per_s'] else 'NOT met'} "
              f"({rate / meta['files_per_s']:.1f}x);  >= libcst parse: "
              f"{'met' if rate >= cst['files_per_s'] else 'NOT met'} ({rate / cst['files_per_s']:.2f}x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
