"""Per-stage time of one ``check . -j 1 --no-cache`` in this process (each stage function
wrapped with a timer, not a profiler, so the figures are the run's own; nested calls of a stage
count once). Run it in the repository to measure, with this checkout on ``PYTHONPATH``:

    cd REPO && PYTHONPATH=/path/to/trainlint python /path/to/trainlint/benchmarks/stages.py

``STAGES=module:function,...`` picks other functions; ``compile`` (``ast.parse``) is always timed."""
import sys, time, gc, importlib, functools, os
sys.argv = ["trainlint", "check", ".", "--no-cache", "--exit-zero", "-j", "1", "--format", "concise"]
T = {}
N = {}
depth = {}
def wrap(modname, attr):
    m = importlib.import_module(modname)
    obj = m
    parts = attr.split(".")
    for p in parts[:-1]:
        obj = getattr(obj, p)
    f = getattr(obj, parts[-1])
    key = f"{modname}.{attr}"
    @functools.wraps(f)
    def w(*a, **k):
        if depth.get(key):
            return f(*a, **k)
        depth[key] = 1
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            T[key] = T.get(key, 0) + time.perf_counter() - t
            N[key] = N.get(key, 0) + 1
            depth[key] = 0
    setattr(obj, parts[-1], w)
import builtins
_compile = builtins.compile
def comp(*a, **k):
    t = time.perf_counter()
    try:
        return _compile(*a, **k)
    finally:
        T["compile"] = T.get("compile", 0) + time.perf_counter() - t; N["compile"] = N.get("compile", 0) + 1
builtins.compile = comp
import ast
for spec in os.environ.get("STAGES", "").split(",") if os.environ.get("STAGES") else [
    "trainlint.partition:split", "trainlint.engine:_walk_order", "trainlint.workspace:read_entry",
    "trainlint.workspace:_parse_python", "trainlint.sources.python:PythonFile._walk",
    "trainlint.sources.registry:read_document", "trainlint.resolve:build_setups",
    "trainlint.linking:link_setups", "trainlint.modules:link_modules", "trainlint.checking:run_rules",
    "trainlint.checking:_check_setups", "trainlint.sources.python:parses_by_table",
    "trainlint.checking:run_task", "trainlint.engine:between_tasks", "trainlint.checking:make_rules"]:
    mod, attr = spec.split(":")
    try:
        wrap(mod, attr)
    except Exception as e:
        print("skip", spec, e, file=sys.stderr)
t0 = time.perf_counter(); c0 = time.process_time()
import trainlint.cli as c
import io, contextlib
out = io.StringIO()
try:
    with contextlib.redirect_stdout(out):
        c.main()
except SystemExit:
    pass
tot = time.perf_counter() - t0
print(f"total {tot:.3f}s cpu {time.process_time()-c0:.3f}", file=sys.stderr)
for k, v in sorted(T.items(), key=lambda kv: -kv[1]):
    print(f"{v:8.3f} {N[k]:6d} {k}", file=sys.stderr)
