"""`trainlint verify`: smoke-run the script (and its fixed copy) for a few steps.

Importing this module is cheap: torch, transformers and psutil are only needed by the
child processes and inside the command body.
"""
from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Optional

import click

LAUNCHERS = ("python", "torchrun", "accelerate", "deepspeed")  # as in verify.launch


@click.command("verify", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--gpus", type=click.IntRange(min=1), default=None,
              help="Number of processes (GPUs; CPU processes without GPUs).")
@click.option("--steps", type=click.IntRange(min=1), default=5, show_default=True,
              help="Optimizer steps per run.")
@click.option("--launcher", type=click.Choice(["auto", *LAUNCHERS]), default="auto", show_default=True)
@click.option("--timeout", type=click.FloatRange(min=1), default=600.0, show_default=True,
              help="Seconds per run; the whole process tree is killed after it.")
@click.option("--unsafe-fixes", is_flag=True, help="Include unsafe fixes in the fixed copy.")
@click.option("--no-compare", is_flag=True, help="Run only the original script.")
@click.option("--cpu", is_flag=True, help="Run on CPU (gloo) even when GPUs are present.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the result as JSON to FILE ('-' for stdout).")
def verify(script: Path, script_args: tuple[str, ...], gpus: Optional[int], steps: int, launcher: str,
           timeout: float, unsafe_fixes: bool, no_compare: bool, cpu: bool,
           json_path: Optional[Path]) -> None:
    """Run SCRIPT for a few steps under its real launcher, original and fixed, and compare.

    Arguments after `--` are passed to the script.  Exit 0: pass; 1: the fixed run failed or
    is worse; 2: usage error.
    """
    from rich.console import Console

    from trainlint.verify import compare, fixed as fixed_mod, launch
    from trainlint.verify.results import VerifyReport

    try:
        import psutil  # noqa: F401
    except ImportError:
        raise click.UsageError("verify needs psutil: pip install 'trainlint[verify]'")

    if script.suffix.lower() == ".ipynb":
        raise click.UsageError(
            f"{script} is a Jupyter notebook: verify runs a script under its launcher. Export the "
            f"training cells to a script first (`jupyter nbconvert --to script {script.name}`), then "
            f"`trainlint verify {script.with_suffix('.py').name}`")
    err = Console(stderr=True)
    script = script.resolve()
    available = 0 if cpu else launch.gpu_count()
    on_cpu = available == 0
    args = list(script_args)
    if launcher == "auto":
        det = launch.detect_launcher(script, gpus)
        launcher = det.launcher
        nproc = gpus or det.nproc or 1
        if not args:
            args = det.script_args
        if det.source:
            err.print(f"[dim]launcher {launcher} from {det.source}[/]")
        if launcher == "python" and nproc > 1:
            launcher = "torchrun"
    else:
        nproc = gpus or 1
    if not on_cpu and nproc > available:
        raise click.UsageError(f"{nproc} processes requested but only {available} GPU(s) found")

    spec = launch.RunSpec(launcher=launcher, script=script, script_args=args, nproc=nproc,
                          steps=steps, timeout=timeout, cpu=on_cpu)
    try:
        launch.build_command(launcher, script, args, nproc, gpu=not on_cpu, port=0)
    except launch.LaunchError as exc:
        raise click.UsageError(str(exc))

    _signals_as_interrupt()
    root = Path(tempfile.mkdtemp(prefix="trainlint-verify-"))
    notes: list[str] = []
    runs = []

    status = None

    def tick(label: str, elapsed: float, progress: dict[int, int]) -> None:
        ranks = ", ".join(f"rank {r} step {s}/{steps}" for r, s in sorted(progress.items()))
        if status is not None:
            status.update(f"{label}: {elapsed:.0f} s" + (f"  {ranks}" if ranks else "  starting"))

    try:
        with contextlib.ExitStack() as stack:
            fc = None
            if not no_compare:
                try:
                    fc = stack.enter_context(fixed_mod.fixed_copy(script, unsafe=unsafe_fixes))
                except fixed_mod.FixUnavailable as exc:
                    err.print(f"[red]cannot build the fixed copy:[/] {exc}; use --no-compare")
                    shutil.rmtree(root, ignore_errors=True)
                    sys.exit(2)
                for other in fc.other_files:
                    notes.append(f"fixes to {other} are not applied in the smoke run")
                if fc.path is None:
                    notes.append("the fixer changes nothing in the script: no fixed run")
            status = stack.enter_context(err.status("starting"))
            runs.append(launch.run_smoke(spec, "original", root / "original", on_tick=tick))
            if fc is not None and fc.path is not None:
                fspec = launch.RunSpec(**{**spec.__dict__, "script": fc.path})
                runs.append(launch.run_smoke(fspec, "fixed", root / "fixed", on_tick=tick))
    except KeyboardInterrupt:
        why = f" by {_RECEIVED[-1]}" if _RECEIVED else ""
        err.print(f"[red]interrupted{why}[/]: all smoke processes were ended")
        shutil.rmtree(root, ignore_errors=True)
        sys.exit(1)

    orig = runs[0]
    fixed_run = runs[1] if len(runs) > 1 else None
    verdict, reasons, more = compare.decide(orig, fixed_run, device="cpu" if on_cpu else "gpu")
    report = VerifyReport(
        script=str(script), gpus=nproc, launcher=launcher, device="cpu" if on_cpu else "gpu",
        verdict=verdict, reasons=reasons, notes=notes + more,
        memory_estimate_bytes=compare.memory_estimate_bytes(script, nproc, args), runs=runs,
    )
    if json_path is not None:
        text = json.dumps(report.model_dump(mode="json"), indent=2)
        if str(json_path) == "-":
            click.echo(text)
        else:
            json_path.write_text(text + "\n")
    if str(json_path) != "-":
        compare.render(report, Console())
    if verdict == "pass":
        shutil.rmtree(root, ignore_errors=True)
    else:
        for run in runs:
            if run.status != "ok" and run.log_tail:
                err.print(f"[dim]--- {run.label}: launcher log tail ---[/]")
                err.print(run.log_tail[-1500:], markup=False, highlight=False)
        err.print(f"[dim]run files kept in {root}[/]")
    sys.exit(0 if verdict == "pass" else 1)


if __name__ == "__main__":  # pragma: no cover
    verify()


_RECEIVED: list[str] = []


def _signals_as_interrupt() -> None:
    """SIGTERM and SIGHUP (a closed terminal, ``kill``, a CI job cancelled) end ``verify`` the
    way Ctrl-C does: the smoke run's whole process tree is ended, the hidden fixed copy and
    the temporary folder are removed (the KeyboardInterrupt unwinds through the same
    clean-up)."""
    import signal

    def handler(signum: int, _frame) -> None:
        _RECEIVED.append(signal.Signals(signum).name)
        for other in ("SIGTERM", "SIGHUP"):  # a second signal must not cut the clean-up short
            if hasattr(signal, other):
                signal.signal(getattr(signal, other), signal.SIG_IGN)
        raise KeyboardInterrupt

    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            try:
                signal.signal(sig, handler)
            except (ValueError, OSError):  # not the main thread
                pass
