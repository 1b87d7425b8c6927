"""Start-up of a one-file ``trainlint check --no-cache`` against the import floor (issue 18).

    python benchmarks/startup.py                       # examples/bert_imdb/train.py, 21 rounds
    python benchmarks/startup.py --runs 31 FILE ...    # other files
    python benchmarks/startup.py --against DIR         # also the check with another tree (before/after)

Floors (whole processes, like the check):

* ``import click``: click alone (it brings part of the standard library with it);
* ``click + stdlib``: click and every standard-library module the check of that file leaves in
  ``sys.modules``, in the same order (what a click program that does the same work with the
  standard library would import at least).

With ``--against DIR`` the other tree's check runs in the same loop, and when it imports
another set of standard-library modules, the floor of that set too (``click + stdlib (DIR)``):
a change that imports fewer stdlib modules lowers its own floor, so a ratio to the own floor
alone would hide the saving.

Every command runs in an interleaved loop (round i of every command before round i+1 of any,
3 warm-up rounds), so a change of load on a shared machine hits the floors and the check
alike. It prints the median wall and CPU time of each and the ratios of the medians, plus the
modules the check imports that are neither stdlib nor click (the goal: none but trainlint's
own; pydantic only when a pyproject table or an option needs validating).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench import PY, env  # noqa: E402


def check_modules(target: Path, cwd: Path, tree: Path | None = None) -> list[str]:
    """Every module a real one-file check leaves in sys.modules, in load order (of the check
    of ``tree``, another trainlint tree, when given)."""
    probe = textwrap.dedent(f"""
        import sys, json, io, contextlib
        sys.argv = ["trainlint", "check", {str(target)!r}, "--no-cache"]
        from trainlint.cli import main  # the console script's entry() ends in os._exit
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                main()
        except SystemExit:
            pass
        sys.stderr.write("MODS=" + json.dumps(list(sys.modules)) + "\\n")
    """)
    e = env() if tree is None else {**env(), "PYTHONPATH": str(tree)}
    out = subprocess.run([PY, "-c", probe], cwd=cwd if tree is None else tree, env=e, capture_output=True, text=True)
    line = [x for x in out.stderr.splitlines() if x.startswith("MODS=")]
    if not line:
        raise SystemExit(f"could not list modules:\n{out.stderr}")
    return json.loads(line[0][5:])


def time_commands(named: dict[str, list[str]], runs: int, cwd: Path) -> dict[str, dict]:
    """Median wall and CPU seconds (the child's user + system) per command, interleaved."""
    import resource
    import statistics
    import time

    times: dict[str, list[float]] = {n: [] for n in named}
    cpu: dict[str, list[float]] = {n: [] for n in named}
    for i in range(runs + 3):
        for name, argv in named.items():
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(argv, cwd=cwd, env=env(), capture_output=True)
            dt = time.perf_counter() - t
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if i >= 3:
                times[name].append(dt)
                cpu[name].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return {n: {"median": statistics.median(v), "cpu": statistics.median(cpu[n]), "times": v, "cpus": cpu[n]}
            for n, v in times.items()}


def paired_ratio(res: dict[str, dict], a: str, b: str, key: str = "times") -> float:
    import statistics

    return statistics.median(x / y for x, y in zip(res[a][key], res[b][key]))


def stdlib(name: str) -> bool:
    return name.split(".")[0] in sys.stdlib_module_names


def floor_statement(mods: list[str]) -> str:
    return ("import importlib\nfor m in " + repr(mods) + ":\n    try: importlib.import_module(m)\n"
            "    except Exception: pass")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", type=Path, default=[ROOT / "examples" / "bert_imdb" / "train.py"])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--against", type=Path, help="another trainlint tree (a copy of the repository at "
                    "another commit: `git archive REV | tar -x -C DIR`), checked in the same loop")
    args = ap.parse_args()
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "trainlint")], env=env(), check=False)
    print(f"python {sys.version.split()[0]}  cores {os.cpu_count()}  load {os.getloadavg()[0]:.2f}")
    for f in args.files:
        f = f.resolve()
        mods = check_modules(f, ROOT)
        own = [m for m in mods if m.split(".")[0] in ("trainlint", "__main__") or m.startswith("__editable__")]
        std = [m for m in mods if stdlib(m) and m not in sys.builtin_module_names]
        other = sorted({m.split(".")[0] for m in mods if not stdlib(m) and m not in own} - {"click"})
        floor_file = Path(os.environ.get("TMPDIR", "/tmp")) / f"trainlint-startup-floor-{os.getpid()}.py"
        floor_file.write_text("import click\n" + floor_statement(std))
        named = {
            "import click": [PY, "-c", "import click"],
            "click + stdlib": [PY, str(floor_file)],
            "check --no-cache": [PY, "-m", "trainlint", "check", "--no-cache", str(f)],
        }
        against_floor = None
        if args.against is not None:
            # run from that tree (``-m`` puts the working directory first on sys.path), the same file
            tree = args.against.resolve()
            subprocess.run([PY, "-m", "compileall", "-q", str(tree / "trainlint")], env=env(), check=False)
            named[f"check ({tree.name})"] = ["env", "--chdir", str(tree), f"PYTHONPATH={tree}",
                                              PY, "-m", "trainlint", "check", "--no-cache", str(f)]
            # the floor of that tree's standard-library set: a change that imports fewer stdlib
            # modules lowers its own floor too, so both checks are also compared with this one
            their_std = [m for m in check_modules(f, ROOT, tree) if stdlib(m) and m not in sys.builtin_module_names]
            if their_std != std:
                against_floor = f"click + stdlib ({tree.name})"
                their_file = floor_file.with_name(floor_file.stem + "-against.py")
                their_file.write_text("import click\n" + floor_statement(their_std))
                named[against_floor] = [PY, str(their_file)]
                print(f"  {tree.name}'s check imports {len(their_std)} stdlib modules; this tree's {len(std)} "
                      f"(only there: {', '.join(sorted(set(their_std) - set(std))) or 'none'}; "
                      f"only here: {', '.join(sorted(set(std) - set(their_std))) or 'none'})")
        res = time_commands(named, args.runs, ROOT)
        floor_file.unlink()
        if against_floor is not None:
            floor_file.with_name(floor_file.stem + "-against.py").unlink()
        rule_mods = [m for m in own if m.startswith("trainlint.rules.") and m.count(".") >= 3]
        print(f"\n{f.relative_to(ROOT) if f.is_relative_to(ROOT) else f}: {len(mods)} modules, "
              f"{len(own)} trainlint ({len(rule_mods)} rule modules), {len(std)} stdlib; "
              f"third-party besides click: {', '.join(other) or 'none'}")
        base, base_cpu = res["click + stdlib"]["median"], res["click + stdlib"]["cpu"]
        for name, r in res.items():
            print(f"  {name:18s} wall {r['median'] * 1000:6.1f} ms  CPU {r['cpu'] * 1000:6.1f} ms   "
                  f"= {r['median'] / res['import click']['median']:4.2f}x / {r['median'] / base:4.2f}x wall, "
                  f"{r['cpu'] / res['import click']['cpu']:4.2f}x / {r['cpu'] / base_cpu:4.2f}x CPU "
                  "(import click / click + stdlib)")
        if against_floor is not None:
            theirs = res[against_floor]["cpu"]
            for name in [n for n in res if n.startswith("check")]:
                print(f"  {name:18s} / {against_floor}: {res[name]['cpu'] / theirs:4.2f}x CPU "
                      f"(same-round {paired_ratio(res, name, against_floor, 'cpus'):.2f}x)")
        print(f"  same-round ratio check / click + stdlib: "
              f"{paired_ratio(res, 'check --no-cache', 'click + stdlib'):.2f}x wall, "
              f"{paired_ratio(res, 'check --no-cache', 'click + stdlib', 'cpus'):.2f}x CPU; "
              f"check / import click: {paired_ratio(res, 'check --no-cache', 'import click'):.2f}x wall "
              f"(median of {args.runs}; load {os.getloadavg()[0]:.2f})")
        for name in [n for n in res if n.startswith("check (")]:
            print(f"  same-round ratio {name} / click + stdlib: "
                  f"{paired_ratio(res, name, 'click + stdlib', 'cpus'):.2f}x CPU; check / {name}: "
                  f"{paired_ratio(res, 'check --no-cache', name, 'cpus'):.2f}x CPU")


if __name__ == "__main__":
    main()
