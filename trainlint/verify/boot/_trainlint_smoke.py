"""trainlint verify: the in-process half of the smoke run.

Imported by the boot `sitecustomize` only when TRAINLINT_SMOKE_DIR is set.  In a worker
process (the one running the user's script) it:

* claims ``rank{R}.started.json`` with O_EXCL, so that only one process writes a rank's
  results (the launcher processes import this module too and must never write one);
* installs a lazy ``sys.meta_path`` hook that patches ``TrainingArguments.__post_init__``,
  ``Trainer.__init__``, ``Trainer.train`` and ``Trainer.training_step`` when (and only if)
  the script imports them;
* records per rank: status, steps, step intervals, losses, peak memory, device, and writes
  ``rank{R}.progress.json`` (heartbeat) and ``rank{R}.result.json`` by atomic rename.

Environment (set by trainlint.verify.launch):
  TRAINLINT_SMOKE_DIR     results directory of this run
  TRAINLINT_SMOKE_STEPS   optimizer steps to run
  TRAINLINT_SMOKE_SCRIPT  absolute path of the script that is the worker
  TRAINLINT_SMOKE_CPU     "1" to force the CPU / gloo path
  TRAINLINT_SMOKE_FAULT   private, tests only: KIND@STEP[:RANK] with KIND in raise, oom,
                          memerr, nan, sigkill, hang; or "no_ddp" (skip the CPU DDP settings)

Stdlib only at import time; torch is touched only through ``sys.modules`` once the
script has imported it.
"""
from __future__ import annotations

import atexit
import json
import math
import os
import re
import resource
import signal
import sys
import time
import traceback

_ENV_DIR = "TRAINLINT_SMOKE_DIR"
_PEER_RE = re.compile(
    r"Connection closed by peer|Connection reset by peer|remote worker crash|"
    r"Broken pipe|NCCL communicator was aborted|ProcessGroupNCCL.*(?:timeout|Watchdog)|"
    r"Socket Timeout|terminated by the launcher",
    re.IGNORECASE,
)
_OOM_RE = re.compile(r"out of memory|CUBLAS_STATUS_ALLOC_FAILED", re.IGNORECASE)

_S: dict = {
    "installed": False,
    "written": False,
    "phase": "setup",
    "train_started": False,
    "intervals": [],
    "step_losses": [],  # tensors or floats, one per optimizer step
    "cur_loss": None,
    "logged_losses": [],
    "steps": 0,
    "overrides": {},
    "args": None,
    "t_train_begin": None,
}


# ----------------------------------------------------------------------------- helpers
def _dir() -> str:
    return os.environ[_ENV_DIR]


def _write_json(name: str, data: dict) -> None:
    path = os.path.join(_dir(), name)
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as fh:
        json.dump(data, fh, default=repr)
    os.replace(tmp, path)


def _cpu_mode() -> bool:
    return os.environ.get("TRAINLINT_SMOKE_CPU", "0") == "1"


def _steps() -> int:
    try:
        return max(1, int(os.environ.get("TRAINLINT_SMOKE_STEPS", "5")))
    except ValueError:
        return 5


def _fault():
    spec = os.environ.get("TRAINLINT_SMOKE_FAULT", "").strip()
    if not spec:
        return None
    m = re.fullmatch(r"(\w+)(?:@(\d+))?(?::(\d+))?", spec)
    if not m:
        return None
    kind, step, rank = m.group(1), int(m.group(2) or 1), m.group(3)
    if rank is not None and int(rank) != _S.get("rank", 0):
        return None
    return kind, step


def _torch():
    return sys.modules.get("torch")


def _cuda_ready(torch) -> bool:
    try:
        return (
            torch is not None
            and not _cpu_mode()
            and torch.cuda.is_available()
            and torch.cuda.is_initialized()
        )
    except Exception:
        return False


def _memory() -> dict:
    mem = {"cpu_peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    torch = _torch()
    if _cuda_ready(torch):
        try:
            mem["gpu_peak_allocated_bytes"] = int(torch.cuda.max_memory_allocated())
            mem["gpu_peak_reserved_bytes"] = int(torch.cuda.max_memory_reserved())
            idx = torch.cuda.current_device()
            mem["gpu_total_bytes"] = int(torch.cuda.get_device_properties(idx).total_memory)
        except Exception:
            pass
    return mem


def _device_info() -> dict:
    info: dict = {"python": sys.version.split()[0], "cpu_mode": _cpu_mode()}
    torch = _torch()
    if torch is None:
        return info
    info["torch"] = getattr(torch, "__version__", None)
    args = _S.get("args")
    if args is not None:
        try:
            info["device"] = str(args.device)
        except Exception:
            pass
    if _cuda_ready(torch):
        try:
            idx = torch.cuda.current_device()
            props = torch.cuda.get_device_properties(idx)
            info["gpu_name"] = props.name
            info["compute_capability"] = "%d.%d" % (props.major, props.minor)
            info["bf16_supported"] = bool(torch.cuda.is_bf16_supported())
        except Exception:
            pass
    try:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            info["dist_backend"] = str(dist.get_backend())
    except Exception:
        pass
    return info


def _losses() -> list:
    out = []
    for value in _S["step_losses"]:
        try:
            out.append(float(value))
        except Exception:
            out.append(float("nan"))
    return out


def _median(values):
    values = sorted(values)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _classify_exc(exc: BaseException) -> dict:
    text = "%s: %s" % (type(exc).__name__, exc)
    oom = isinstance(exc, MemoryError) or "OutOfMemoryError" in type(exc).__name__ or bool(
        _OOM_RE.search(str(exc))
    )
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {
        "type": type(exc).__name__,
        "message": str(exc)[:2000],
        "oom": oom,
        "peer_failure": bool(_PEER_RE.search(text)),
        "t": time.time(),
        "traceback_tail": tb[-3000:],
    }


def _write_result(status: str, error: dict | None = None) -> None:
    if _S["written"]:
        return
    _S["written"] = True
    try:
        args = _S.get("args")
        intervals = list(_S["intervals"])
        median = _median(intervals[1:] or intervals)
        losses = _losses()
        world_env = int(os.environ.get("WORLD_SIZE", "1") or 1)
        args_world = None
        parallel_mode = None
        samples = None
        if args is not None:
            try:
                args_world = int(args.world_size)
                parallel_mode = str(args.parallel_mode)
                if median:
                    samples = (
                        args.per_device_train_batch_size
                        * args.gradient_accumulation_steps
                        * args_world
                        / median
                    )
            except Exception:
                pass
        mem = _memory()
        peak = mem.get("gpu_peak_reserved_bytes", mem["cpu_peak_rss_bytes"])
        t0 = _S.get("t_train_begin")
        data = {
            "status": status,
            "phase": _S["phase"],
            "rank": _S["rank"],
            "local_rank": int(os.environ.get("LOCAL_RANK", "0") or 0),
            "pid": os.getpid(),
            "world_size": world_env,
            "args_world_size": args_world,
            "parallel_mode": parallel_mode,
            "steps": _S["steps"],
            "step_times_s": intervals,
            "median_step_s": median,
            "samples_per_s": samples,
            "losses": losses,
            "logged_losses": _S["logged_losses"],
            "first_loss": losses[0] if losses else None,
            "last_loss": losses[-1] if losses else None,
            "loss_finite": all(math.isfinite(x) for x in losses) if losses else None,
            "peak_memory_bytes": peak,
            "memory": mem,
            "device": _device_info(),
            "overrides": _S["overrides"],
            "t_import_to_train_begin_s": (t0 - _S["t_start"]) if t0 else None,
            "error": error,
        }
        _write_json("rank%d.result.json" % _S["rank"], data)
    except Exception as exc:  # pragma: no cover - last resort
        sys.stderr.write("trainlint verify: could not write result: %r\n" % (exc,))


def _write_error(exc: BaseException) -> None:
    err = _classify_exc(exc)
    _write_result("oom" if err["oom"] else "error", err)


# ----------------------------------------------------------------------------- patches
def _apply_overrides(args) -> None:
    outdir = os.path.join(_dir(), "trainer_output")
    want = {
        "max_steps": _steps(),
        "eval_strategy": "no",
        "do_eval": False,
        "eval_on_start": False,
        "save_strategy": "no",
        "load_best_model_at_end": False,
        "push_to_hub": False,
        "report_to": "none",
        "output_dir": outdir,
        "logging_dir": os.path.join(outdir, "logs"),
        "disable_tqdm": True,
        "resume_from_checkpoint": None,
    }
    fault = _fault()
    if _cpu_mode() and not (fault and fault[0] == "no_ddp"):
        want.update({"use_cpu": True, "fp16": False, "bf16": False})
        if int(os.environ.get("WORLD_SIZE", "1") or 1) > 1:
            want["ddp_backend"] = "gloo"
        if getattr(args, "tf32", None):
            want["tf32"] = None
    for name, value in want.items():
        if not hasattr(args, name):
            continue
        old = getattr(args, name)
        if old != value:
            setattr(args, name, value)
            _S["overrides"][name] = {"from": repr(old), "to": repr(value)}


def _patch_training_args(module) -> None:
    cls = getattr(module, "TrainingArguments", None)
    if cls is None or getattr(cls, "_trainlint_patched", False):
        return
    orig = cls.__post_init__

    def __post_init__(self, *a, **kw):
        try:
            _apply_overrides(self)
        except Exception as exc:
            sys.stderr.write("trainlint verify: overrides failed: %r\n" % (exc,))
        return orig(self, *a, **kw)

    cls.__post_init__ = __post_init__
    cls._trainlint_patched = True


def _make_callback(base):
    class SmokeCallback(base):
        """Records step intervals, losses and memory; heartbeat file; test faults."""

        def __init__(self):
            self._last = None
            self._gpu = False

        def _progress(self, state):
            try:
                _write_json(
                    "rank%d.progress.json" % _S["rank"],
                    {"rank": _S["rank"], "steps": _S["steps"], "max_steps": state.max_steps,
                     "t": time.time()},
                )
            except Exception:
                pass

        def on_train_begin(self, args, state, control, **kw):
            _S["args"] = args
            _S["t_train_begin"] = time.time()
            self._gpu = _cuda_ready(_torch())
            self._last = time.perf_counter()
            self._progress(state)

        def on_step_begin(self, args, state, control, **kw):
            fault = _fault()
            if fault and fault[1] == state.global_step + 1:
                _inject(fault[0])

        def on_step_end(self, args, state, control, **kw):
            if self._gpu:
                try:
                    _torch().cuda.synchronize()
                except Exception:
                    pass
            now = time.perf_counter()
            if self._last is not None:
                _S["intervals"].append(now - self._last)
            self._last = now
            _S["steps"] = state.global_step
            if _S["cur_loss"] is not None:
                _S["step_losses"].append(_S["cur_loss"])
                _S["cur_loss"] = None
            self._progress(state)

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "loss" in logs:
                try:
                    _S["logged_losses"].append([state.global_step, float(logs["loss"])])
                except Exception:
                    pass

    return SmokeCallback


def _inject(kind: str) -> None:
    torch = _torch()
    if kind == "raise":
        raise RuntimeError("trainlint injected fault")
    if kind == "oom":
        exc_type = getattr(torch, "OutOfMemoryError", MemoryError) if torch else MemoryError
        raise exc_type("CUDA out of memory. Tried to allocate 2.00 GiB (trainlint injected fault)")
    if kind == "memerr":
        raise MemoryError()
    if kind == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "hang":
        while True:
            time.sleep(3600)


def _patch_trainer(module) -> None:
    cls = getattr(module, "Trainer", None)
    if cls is None or getattr(cls, "_trainlint_patched", False):
        return
    from transformers.trainer_callback import TrainerCallback

    callback_cls = _make_callback(TrainerCallback)
    orig_init, orig_train = cls.__init__, cls.train
    orig_step, orig_loss = cls.training_step, cls.compute_loss

    def __init__(self, *a, **kw):
        orig_init(self, *a, **kw)
        try:
            self.args.max_steps = _steps()
            _S["args"] = self.args
            self.add_callback(callback_cls())
        except Exception as exc:
            sys.stderr.write("trainlint verify: callback not added: %r\n" % (exc,))

    def train(self, resume_from_checkpoint=None, *a, **kw):
        _S["phase"] = "train"
        _S["train_started"] = True
        try:
            orig_train(self, None, *a, **kw)
        except BaseException as exc:
            _write_error(exc)
            raise
        _write_result("ok")
        _finish_and_exit()

    def training_step(self, *a, **kw):
        loss = orig_step(self, *a, **kw)
        try:
            cur = _S["cur_loss"]
            _S["cur_loss"] = loss.detach() if cur is None else cur + loss.detach()
        except Exception:
            pass
        return loss

    def compute_loss(self, *a, **kw):
        out = orig_loss(self, *a, **kw)
        fault = _fault()
        if fault and fault[0] == "nan" and self.state.global_step + 1 >= fault[1]:
            if isinstance(out, tuple):
                out = (out[0] * float("nan"),) + tuple(out[1:])
            else:
                out = out * float("nan")
        return out

    cls.__init__, cls.train = __init__, train
    cls.training_step, cls.compute_loss = training_step, compute_loss
    cls._trainlint_patched = True


def _finish_and_exit() -> None:
    """Skip whatever the script does after train() (evaluate, save, push)."""
    torch = _torch()
    try:
        if torch is not None and torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
    except Exception:
        pass
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    os._exit(0)


_PATCHERS = {
    "transformers.training_args": _patch_training_args,
    "transformers.trainer": _patch_trainer,
}


class _Finder:
    """Meta-path finder that patches two transformers modules right after they execute."""

    def find_spec(self, name, path, target=None):
        patcher = _PATCHERS.get(name)
        if patcher is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        orig_exec = loader.exec_module

        def exec_module(module):
            orig_exec(module)
            try:
                patcher(module)
            except Exception as exc:
                sys.stderr.write("trainlint verify: patching %s failed: %r\n" % (name, exc))

        loader.exec_module = exec_module
        return spec


# ----------------------------------------------------------------------------- install
def _is_worker() -> bool:
    script = os.environ.get("TRAINLINT_SMOKE_SCRIPT")
    argv0 = sys.argv[0] if getattr(sys, "argv", None) else ""
    if script and argv0 and argv0 not in ("-c", "-m"):
        try:
            if os.path.realpath(argv0) == os.path.realpath(script):
                return True
        except Exception:
            pass
    return False


def _claim(rank: int) -> bool:
    path = os.path.join(_dir(), "rank%d.started.json" % rank)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as fh:
        json.dump(
            {"rank": rank, "pid": os.getpid(), "t": time.time(), "argv": sys.argv,
             "world_size": int(os.environ.get("WORLD_SIZE", "1") or 1)},
            fh,
        )
    return True


def _on_sigterm(signum, frame):
    _write_result(
        "terminated",
        {"type": "SIGTERM", "message": "terminated by the launcher", "oom": False,
         "peer_failure": True, "t": time.time(), "traceback_tail": ""},
    )
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _excepthook(prev):
    def hook(etype, value, tb):
        if not _S["written"] and value is not None:
            _write_error(value)
        prev(etype, value, tb)

    return hook


def _atexit():
    if not _S["written"]:
        _write_result("error" if _S["train_started"] else "no_train")


def install() -> None:
    if _S["installed"] or not os.environ.get(_ENV_DIR):
        return
    _S["installed"] = True
    _S["t_start"] = time.time()
    if not _is_worker():
        return
    rank = int(os.environ.get("RANK", "0") or 0)
    _S["rank"] = rank
    if not _claim(rank):
        return
    piddir = os.path.join(_dir(), "pids")
    os.makedirs(piddir, exist_ok=True)
    with open(os.path.join(piddir, str(os.getpid())), "w") as fh:
        fh.write(str(rank))
    if "LOCAL_RANK" in os.environ:
        try:  # die with the launcher (torchrun starts workers in their own session)
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except Exception:
            pass
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
    except Exception:
        pass
    sys.excepthook = _excepthook(sys.excepthook)
    atexit.register(_atexit)
    already = [n for n in _PATCHERS if n in sys.modules]
    for name in already:
        _PATCHERS[name](sys.modules[name])
    sys.meta_path.insert(0, _Finder())
