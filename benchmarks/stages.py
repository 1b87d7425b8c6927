"""Per-stage time of one ``check . -j 1 --no-cache`` in this process (each stage function
wrapped with a timer, not a profiler, so the figures are the run's own; nested calls of a stage
count once). Run it in the repository to measure, with this checkout on ``PYTHONPATH``:

    cd REPO && PYTHONPATH=/path/to/trainlint python /path/to/trainlint/benchmarks/stages.py

``STAGES=module:function,...`` picks other functions (``Class.method`` works too); ``compile``
(what ``ast.parse`` calls) is always timed. Prints to stderr: seconds, calls, stage."""

from __future__ import annotations

import builtins
import contextlib
import functools
import importlib
import io
import os
import sys
import time

STAGES = [
    "trainlint.partition:split", "trainlint.engine:_walk_order", "trainlint.workspace:read_entry",
    "trainlint.workspace:_parse_python", "trainlint.sources.python:PythonFile._walk",
    "trainlint.sources.registry:read_document", "trainlint.resolve:build_setups",
    "trainlint.linking:link_setups", "trainlint.modules:link_modules", "trainlint.checking:run_rules",
    "trainlint.checking:_check_setups", "trainlint.checking:run_task", "trainlint.engine:between_tasks",
]
TOTAL: dict[str, float] = {}
CALLS: dict[str, int] = {}


def _count(key: str, seconds: float) -> None:
    TOTAL[key] = TOTAL.get(key, 0.0) + seconds
    CALLS[key] = CALLS.get(key, 0) + 1


def wrap(spec: str) -> None:
    module, attr = spec.split(":")
    owner = importlib.import_module(module)
    parts = attr.split(".")
    for p in parts[:-1]:
        owner = getattr(owner, p)
    f = getattr(owner, parts[-1])
    key = f"{module}.{attr}"
    inside = [False]

    @functools.wraps(f)
    def timed(*a, **k):
        if inside[0]:
            return f(*a, **k)
        inside[0] = True
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            _count(key, time.perf_counter() - t)
            inside[0] = False

    setattr(owner, parts[-1], timed)


def main() -> None:
    real_compile = builtins.compile

    def timed_compile(*a, **k):
        t = time.perf_counter()
        try:
            return real_compile(*a, **k)
        finally:
            _count("compile", time.perf_counter() - t)

    builtins.compile = timed_compile
    chosen = os.environ.get("STAGES")
    for spec in chosen.split(",") if chosen else STAGES:
        wrap(spec)
    sys.argv = ["trainlint", "check", ".", "--no-cache", "--exit-zero", "-j", "1", "--format", "concise"]
    from trainlint import cli

    t0, c0 = time.perf_counter(), time.process_time()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            cli.main()
    except SystemExit:
        pass
    print(f"total {time.perf_counter() - t0:.3f}s cpu {time.process_time() - c0:.3f}s", file=sys.stderr)
    for key, seconds in sorted(TOTAL.items(), key=lambda kv: -kv[1]):
        print(f"{seconds:8.3f} {CALLS[key]:6d} {key}", file=sys.stderr)


if __name__ == "__main__":
    main()
