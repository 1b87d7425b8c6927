"""Launching a smoke run: command line, environment, process control.

The user's script runs unmodified under the real launcher; the shim in ``verify/boot`` is
put on the child's ``PYTHONPATH``.  The launcher is started in its own session and, on a
timeout or Ctrl-C, the whole tree is ended: SIGTERM to the group and to every known process,
a grace period, then SIGKILL to the group, every descendant psutil finds and every worker
that left a pid file (torchrun puts each worker into its own session).

No torch import here: GPUs are counted with ``nvidia-smi``.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from trainlint.verify.results import (
    RunResult,
    classify_run,
    parse_torchrun_failures,
    rank_results,
    read_rank_files,
)

LAUNCHERS = ("python", "torchrun", "accelerate", "deepspeed")
ENV_DIR = "TRAINLINT_SMOKE_DIR"
GRACE_S = 5.0
_DIST_VARS = (
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
    "MASTER_PORT", "TORCHELASTIC_RUN_ID", "ACCELERATE_USE_CPU", "ACCELERATE_MIXED_PRECISION",
)


class LaunchError(Exception):
    """A launch that cannot be done (usage problem): the command exits 2."""


def boot_dir() -> Path:
    return Path(__file__).resolve().parent / "boot"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gpu_count() -> int:
    """GPUs visible through nvidia-smi; 0 when it is missing or fails."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return 0
    try:
        out = subprocess.run(
            [exe, "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return 0
    if out.returncode != 0:
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.strip())


# ----------------------------------------------------------------------------- detection
@dataclass
class Detected:
    launcher: str
    nproc: Optional[int] = None
    script_args: list[str] = field(default_factory=list)
    source: Optional[str] = None  # "path:line" of the launch line


_LAUNCH_RE = [
    ("torchrun", re.compile(r"(?:^|[\s/])(?:torchrun|-m\s+torch\.distributed\.(?:run|launch))\b")),
    ("accelerate", re.compile(r"(?:^|[\s/])accelerate(?:-launch|\s+launch)\b|accelerate\.commands\.launch")),
    ("deepspeed", re.compile(r"(?:^|[\s/])deepspeed\s")),
]
_NPROC_RE = re.compile(r"--(?:nproc_per_node|nproc-per-node|num_processes|num-processes|num_gpus|num-gpus)[=\s]+(\d+)")


def _shell_lines(text: str):
    """Logical lines of a shell file (backslash continuations joined) with line numbers."""
    buf, start = "", None
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if start is None:
            start = no
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        yield start, buf + line
        buf, start = "", None
    if buf:
        yield start, buf


_READER_LAUNCHERS = {"torchrun": "torchrun", "torch.distributed.launch": "torchrun",
                     "torch.distributed.run": "torchrun", "accelerate": "accelerate",
                     "deepspeed": "deepspeed", "python": "python"}


def _detect_with_reader(script: Path, sh: Path, text: str) -> Optional[Detected]:
    """Use the project's shell reader (trainlint.sources.shell)."""
    from trainlint.sources.shell import parse_shell

    for launch in parse_shell(text, str(sh)).launches:
        if launch.script is None or Path(launch.script[0]).name != script.name:
            continue
        name = _READER_LAUNCHERS.get(launch.launcher)
        if name is None:
            continue
        args: list[str] = []
        if not launch.positionals and not any(f.unresolved or f.from_expansion for f in launch.script_args):
            for f in launch.script_args:
                if f.inline:
                    args.append(f"{f.prefix}{f.name}={f.value}")
                    continue
                args.append(f"{f.prefix}{f.name}")
                if f.value is not None:
                    args.append(f.value)
                args += [v for v, _ in f.extra_values]
        try:
            nproc = launch.world_size()
        except Exception:
            nproc = None
        if name == "python":
            nproc = 1
        return Detected(name, nproc, args, f"{sh}:{launch.span.line}")
    return None


def detect_launcher(script: Path, gpus: Optional[int] = None, *, use_reader: bool = True) -> Detected:
    """`auto`: an adjacent *.sh that launches this script decides; else torchrun for
    more than one process, else plain python."""
    script = Path(script)
    for sh in sorted(script.parent.glob("*.sh")):
        try:
            text = sh.read_text(errors="replace")
        except OSError:
            continue
        if use_reader:
            try:
                found = _detect_with_reader(script, sh, text)
            except ImportError:
                pass
            else:
                if found is not None:
                    return found
                continue
        for no, line in _shell_lines(text):
            if line.lstrip().startswith("#"):
                continue
            try:
                tokens = shlex.split(line, comments=True)
            except ValueError:
                tokens = line.split()
            idx = next(
                (i for i, t in enumerate(tokens) if Path(t).name == script.name and t.endswith(".py")),
                None,
            )
            if idx is None:
                continue
            head = " ".join(tokens[:idx])
            for name, rx in _LAUNCH_RE:
                if rx.search(" " + head):
                    m = _NPROC_RE.search(head)
                    rest = tokens[idx + 1 :]
                    args = [] if any("$" in t or "`" in t for t in rest) else rest
                    return Detected(name, int(m.group(1)) if m else None, args, f"{sh}:{no}")
    n = gpus or 1
    return Detected("torchrun" if n > 1 else "python", n)


# ----------------------------------------------------------------------------- command
def build_command(
    launcher: str,
    script: Path,
    script_args: list[str],
    nproc: int,
    *,
    python: str = sys.executable,
    port: Optional[int] = None,
    gpu: bool = False,
) -> list[str]:
    script_s = str(script)
    if launcher == "python":
        if nproc != 1:
            raise LaunchError("the python launcher runs one process; use torchrun or accelerate for --gpus > 1")
        return [python, script_s, *script_args]
    if launcher == "torchrun":
        return [python, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc),
                script_s, *script_args]
    if launcher == "accelerate":
        cmd = [python, "-m", "accelerate.commands.launch", "--num_processes", str(nproc),
               "--num_machines", "1"]
        if nproc > 1:
            # also on CPU: `--cpu` would start a single process; --multi_gpu goes through
            # torch.distributed.run and the shim's use_cpu makes it gloo DDP
            cmd.append("--multi_gpu")
        cmd += ["--mixed_precision", "no", "--dynamo_backend", "no",
                "--main_process_port", str(port or free_port())]
        return [*cmd, script_s, *script_args]
    if launcher == "deepspeed":
        if not gpu:
            raise LaunchError("the deepspeed launcher needs a GPU; it is not supported on CPU "
                              "(use --launcher torchrun to smoke-test the script on CPU)")
        return [python, "-m", "deepspeed.launcher.runner", "--num_gpus", str(nproc),
                "--master_port", str(port or free_port()), script_s, *script_args]
    raise LaunchError(f"unknown launcher {launcher!r}")


def build_env(
    base: dict[str, str],
    *,
    results_dir: Path,
    script: Path,
    steps: int,
    cpu: bool,
    fault: Optional[str] = None,
) -> dict[str, str]:
    env = {k: v for k, v in base.items() if k not in _DIST_VARS}
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(boot_dir()) + (os.pathsep + old if old else "")
    env.update({
        ENV_DIR: str(results_dir),
        "TRAINLINT_SMOKE_STEPS": str(steps),
        "TRAINLINT_SMOKE_SCRIPT": str(Path(script).resolve()),
        "TRAINLINT_SMOKE_CPU": "1" if cpu else "0",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONUNBUFFERED": "1",
    })
    if cpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["OMP_NUM_THREADS"] = "1"
    if fault is not None:
        env["TRAINLINT_SMOKE_FAULT"] = fault
    return env


# ----------------------------------------------------------------------------- processes
def _smoke_processes(results_dir: Path) -> list:
    """Workers that left a pid file, checked against their environment (pid reuse)."""
    import psutil

    out = []
    piddir = Path(results_dir) / "pids"
    if not piddir.is_dir():
        return out
    for f in piddir.iterdir():
        try:
            p = psutil.Process(int(f.name))
            if p.environ().get(ENV_DIR) == str(results_dir):
                out.append(p)
        except (ValueError, psutil.Error):
            continue
    return out


def tree_processes(pid: int, results_dir: Optional[Path]) -> list:
    """The launcher, all its descendants, and every worker with a pid file (and theirs)."""
    try:
        import psutil
    except ImportError:  # pragma: no cover
        return []
    found: dict[int, object] = {}
    roots = []
    try:
        roots.append(psutil.Process(pid))
    except psutil.Error:
        pass
    if results_dir is not None:
        roots += _smoke_processes(results_dir)
    for root in roots:
        found[root.pid] = root
        try:
            for child in root.children(recursive=True):
                found[child.pid] = child
        except psutil.Error:
            pass
    return list(found.values())


def kill_tree(proc: subprocess.Popen, results_dir: Optional[Path], grace: float = GRACE_S) -> None:
    """SIGTERM to the group and every known process, `grace` seconds, then SIGKILL to all."""
    try:
        import psutil
    except ImportError:  # pragma: no cover
        psutil = None
    others = [p for p in tree_processes(proc.pid, results_dir) if p.pid != proc.pid]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        if psutil is not None:
            others = {p.pid: p for p in others + [
                p for p in tree_processes(proc.pid, results_dir) if p.pid != proc.pid]}.values()
            others = list(others)
            for p in others:
                try:
                    p.send_signal(sig)
                except psutil.Error:
                    pass
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 10.0)
        while time.monotonic() < deadline:
            launcher_done = proc.poll() is not None
            alive = [p for p in others if psutil is not None and _alive(p)]
            if launcher_done and not alive:
                return
            time.sleep(0.05)
    proc.wait(timeout=10)


def _alive(p) -> bool:
    import psutil

    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def reap_leftovers(results_dir: Path) -> int:
    """Kill workers of a finished run that are still alive; returns how many there were."""
    try:
        import psutil
    except ImportError:  # pragma: no cover
        return 0
    procs = [p for p in _smoke_processes(results_dir) if _alive(p)]
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=5)
    return len(procs)


@dataclass
class RunSpec:
    launcher: str
    script: Path
    script_args: list[str]
    nproc: int
    steps: int
    timeout: float
    cpu: bool
    fault: Optional[str] = None
    python: str = sys.executable


def expected_world(spec: RunSpec) -> int:
    return 1 if spec.launcher == "python" else spec.nproc


def read_progress(results_dir: Path) -> dict[int, int]:
    import json

    out = {}
    for p in Path(results_dir).glob("rank*.progress.json"):
        try:
            d = json.loads(p.read_text())
            out[int(d["rank"])] = int(d["steps"])
        except (OSError, ValueError, KeyError):
            continue
    return out


def run_smoke(
    spec: RunSpec,
    label: str,
    results_dir: Path,
    *,
    on_tick: Optional[Callable[[str, float, dict[int, int]], None]] = None,
    base_env: Optional[dict[str, str]] = None,
) -> RunResult:
    """Run the script once under the shim and classify the outcome."""
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    cmd = build_command(spec.launcher, spec.script, spec.script_args, spec.nproc,
                        python=spec.python, gpu=not spec.cpu)
    env = build_env(base_env if base_env is not None else dict(os.environ), results_dir=results_dir,
                    script=spec.script, steps=spec.steps, cpu=spec.cpu, fault=spec.fault)
    log_path = results_dir / "launcher.log"
    t0 = time.monotonic()
    timed_out = False
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=str(Path(spec.script).parent), env=env, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            while proc.poll() is None:
                elapsed = time.monotonic() - t0
                if elapsed > spec.timeout:
                    timed_out = True
                    kill_tree(proc, results_dir)
                    break
                if on_tick is not None:
                    on_tick(label, elapsed, read_progress(results_dir))
                time.sleep(0.2)
        except BaseException:  # Ctrl-C: end the whole tree, then let it propagate
            kill_tree(proc, results_dir)
            raise
    wall = time.monotonic() - t0
    reap_leftovers(results_dir)
    log_text = log_path.read_text(errors="replace")
    signals = parse_torchrun_failures(log_text)
    ranks = rank_results(read_rank_files(results_dir, expected_world(spec)),
                         timed_out=timed_out, signals=signals)
    status, root, message = classify_run(
        ranks, expected_world=expected_world(spec), timed_out=timed_out,
        returncode=None if timed_out else proc.returncode,
    )
    return RunResult(
        label=label, status=status, wall_s=round(wall, 3), ranks=ranks, root_cause_rank=root,
        message=message, returncode=proc.returncode, log_tail=log_text[-4000:],
        results_dir=str(results_dir),
    )


def describe_command(spec: RunSpec) -> str:
    try:
        return shlex.join(build_command(spec.launcher, spec.script, spec.script_args, spec.nproc,
                                        python=spec.python, port=0, gpu=not spec.cpu))
    except LaunchError as exc:
        return str(exc)
