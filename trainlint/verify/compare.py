"""Original vs fixed: the verdict (pure) and the side-by-side report (rich)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

from trainlint.verify.results import STATUS_SEVERITY, RunResult, VerifyReport

#: relative change below which a GPU memory / step-time difference is noise
NOISE_THRESHOLD = 0.10


# ----------------------------------------------------------------------------- summaries
def peak_memory(run: RunResult) -> Optional[int]:
    vals = [r.peak_memory_bytes for r in run.ranks if r.peak_memory_bytes]
    return max(vals) if vals else None


def memory_imbalance(run: RunResult) -> Optional[float]:
    """(max - min) / max of the per-rank peaks; 0 for one rank."""
    vals = [r.peak_memory_bytes for r in run.ranks if r.peak_memory_bytes]
    if not vals:
        return None
    return (max(vals) - min(vals)) / max(vals)


def slowest_step(run: RunResult) -> Optional[float]:
    """The slowest rank's median step time: it bounds the throughput."""
    vals = [r.median_step_s for r in run.ranks if r.median_step_s]
    return max(vals) if vals else None


def samples_per_s(run: RunResult) -> Optional[float]:
    vals = [r.samples_per_s for r in run.ranks if r.samples_per_s]
    return min(vals) if vals else None


def _rank0(run: RunResult):
    return min(run.ranks, key=lambda r: r.rank) if run.ranks else None


def trained_world_size(run: RunResult) -> Optional[int]:
    r = _rank0(run)
    return r.args_world_size if r is not None else None


def _rel(new: Optional[float], old: Optional[float]) -> Optional[float]:
    if new is None or old is None or old == 0:
        return None
    return (new - old) / old


# ----------------------------------------------------------------------------- verdict
def decide(
    original: Optional[RunResult],
    fixed: Optional[RunResult],
    *,
    device: str,
    threshold: float = NOISE_THRESHOLD,
) -> tuple[str, list[str], list[str]]:
    """Verdict ("pass"/"fail"/"original-fails"), reasons for a failure, and notes.

    Fail when the fixed run (or the only run) is not ok, or is worse than the original:
    a worse status, or on GPU a peak-memory or step-time regression beyond `threshold`.
    When the original already fails and the fixed run does not succeed either, the
    comparison says nothing about the fix: "original-fails". On CPU no performance claim is
    made either way.
    """
    reasons: list[str] = []
    notes: list[str] = []
    main = fixed if fixed is not None else original
    if main is None:
        return "fail", ["nothing was run"], notes
    if fixed is not None and original is not None and original.status != "ok" and fixed.status != "ok":
        reasons.append(f"the original run already fails ({original.status}), so the smoke run says nothing about "
                       f"the fix; make the original script run first (e.g. a local model path, or a cached model with "
                       f"HF_HUB_OFFLINE=1), then verify again")
        return "original-fails", reasons, notes
    if main.status != "ok":
        reasons.append(f"{main.label} run: {main.status}")
    if fixed is None or original is None:
        return ("fail" if reasons else "pass"), reasons, notes

    so, sf = STATUS_SEVERITY[original.status], STATUS_SEVERITY[fixed.status]
    if sf > so:
        reasons.append(f"the fix made the run worse: {original.status} -> {fixed.status}")
    elif sf < so:
        notes.append(f"the fix repaired the run: {original.status} -> {fixed.status}")

    if original.status == "ok" and fixed.status == "ok":
        if device == "gpu":
            for name, new, old in (
                ("peak memory", peak_memory(fixed), peak_memory(original)),
                ("median step time", slowest_step(fixed), slowest_step(original)),
            ):
                rel = _rel(new, old)
                if rel is None:
                    continue
                if rel > threshold:
                    reasons.append(f"{name} regressed by {rel:+.1%} (threshold {threshold:.0%})")
                elif rel < -threshold:
                    notes.append(f"{name} improved by {rel:+.1%}")
        else:
            notes.append("CPU run: memory and step time are shown but not compared "
                         "(only status, finite loss and active DDP count on CPU)")
        wo, wf = trained_world_size(original), trained_world_size(fixed)
        if wo != wf:
            notes.append(f"losses not compared: world sizes differ ({wo} vs {wf})")
        else:
            lo, lf = _rank0(original).first_loss, _rank0(fixed).first_loss
            if lo is not None and lf is not None and math.isfinite(lo) and math.isfinite(lf):
                if abs(lf - lo) > 0.05 * max(abs(lo), 1e-8):
                    notes.append(f"first loss differs ({lo:.4g} vs {lf:.4g}): the fix changes numerics")
    return ("fail" if reasons else "pass"), reasons, notes


# ----------------------------------------------------------------------------- estimate
def memory_estimate_bytes(script: Path, gpus: int, script_args: list[str] | None = None) -> Optional[int]:
    """The static per-GPU memory estimate (``trainlint estimate``) of the script's setup, to
    print beside the measured peak; None when the model is unknown to the estimator."""
    from trainlint.estimate import estimate_for_script

    try:
        est = estimate_for_script(Path(script), gpus=gpus)
    except Exception:  # noqa: BLE001 - the estimate is a side note; never fail verify for it
        return None
    return int(est.total) if est is not None else None


# ----------------------------------------------------------------------------- render
def _mb(v: Optional[int]) -> str:
    return "-" if v is None else f"{v / 2**20:,.1f} MiB"


def _num(v: Optional[float], fmt: str = "{:.4g}") -> str:
    return "-" if v is None else fmt.format(v)


def _delta(new, old, device: str) -> str:
    rel = _rel(new, old)
    if rel is None:
        return ""
    text = f"{rel:+.1%}"
    return text + (" (CPU: not compared)" if device == "cpu" else "")


def _finite(run: RunResult) -> str:
    """"True"/"False" from the recorded losses; "-" when there are none or the run failed."""
    seen = [x.loss_finite for x in run.ranks if x.loss_finite is not None]
    if run.status != "ok":  # a crashed run is never "finite: True", whatever it logged before
        return "False" if False in seen else "-"
    return str(all(seen)) if seen else "-"


def render(report: VerifyReport, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    runs = report.runs
    table = Table(title=f"trainlint verify: {Path(report.script).name}  ({report.launcher}, {report.gpus} "
                        f"process{'es' if report.gpus > 1 else ''}, {report.device.upper()})")
    table.add_column("")
    for run in runs:
        table.add_column(run.label)
    if len(runs) == 2:
        table.add_column("change")
    o = runs[0] if runs else None
    f = runs[1] if len(runs) == 2 else None

    def row(name, values, delta=""):
        cells = [name, *values]
        if len(runs) == 2:
            cells.append(delta)
        table.add_row(*cells)

    style = {"ok": "green"}
    row("status", [f"[{style.get(r.status, 'red')}]{r.status}[/]" for r in runs])
    row("wall time", [f"{r.wall_s:.1f} s" for r in runs])
    row("world size (trained)", [str(trained_world_size(r) or "-") for r in runs])
    nranks = max((len(r.ranks) for r in runs), default=0)
    for i in range(nranks):
        vals = []
        for r in runs:
            rk = next((x for x in r.ranks if x.rank == i), None)
            vals.append(_mb(rk.peak_memory_bytes) if rk else "-")
        row(f"peak memory rank {i}", vals)
    if nranks > 1:
        row("memory imbalance", [_num(memory_imbalance(r), "{:.1%}") for r in runs])
    row("memory estimate", [_mb(report.memory_estimate_bytes)] * len(runs))
    row("median step (slowest rank)", [_num(slowest_step(r), "{:.4f} s") for r in runs],
        _delta(slowest_step(f), slowest_step(o), report.device) if f else "")
    row("samples/s", [_num(samples_per_s(r), "{:.1f}") for r in runs],
        _delta(samples_per_s(f), samples_per_s(o), report.device) if f else "")
    for name in ("first_loss", "last_loss"):
        row(name.replace("_", " "), [_num(getattr(_rank0(r), name, None)) if r.ranks else "-" for r in runs])
    row("loss finite", [_finite(r) for r in runs])
    console.print(table)
    for run in runs:
        if run.status != "ok":
            console.print(f"[red]{run.label}[/]: {run.status}"
                          + (f" (root cause rank {run.root_cause_rank})" if run.root_cause_rank is not None else "")
                          + (f": {run.message}" if run.message else ""))
    for note in report.notes:
        console.print(f"[dim]note:[/] {note}")
    label = "[yellow]original fails:[/]" if report.verdict == "original-fails" else "[red]fail:[/]"
    for reason in report.reasons:
        console.print(f"{label} {reason}")
    colour = {"pass": "green", "original-fails": "yellow"}.get(report.verdict, "red")
    console.print(f"verdict: [{colour} bold]{report.verdict}[/]")
