"""Result models of `trainlint verify` and the pure classification of a run.

Nothing here imports torch: everything works on the rank JSON files that the shim
(`verify/boot/_trainlint_smoke.py`) writes, so it is tested on synthetic JSON.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, Field

RunStatus = Literal[
    "ok", "crash", "oom", "timeout", "nonfinite_loss", "killed", "ddp_not_active", "no_trainer"
]
#: rank statuses: written by the shim (ok, error, oom, no_train, terminated) or set by the
#: harness (killed: a signal ended it without a result; missing: it never started; timeout).
RankStatus = str

#: How bad a run status is; the verdict compares fixed against original with it.
STATUS_SEVERITY: dict[str, int] = {
    "ok": 0,
    "nonfinite_loss": 1,
    "ddp_not_active": 1,
    "no_trainer": 2,
    "timeout": 3,
    "crash": 3,
    "oom": 3,
    "killed": 3,
}


class RankError(BaseModel):
    type: str = ""
    message: str = ""
    oom: bool = False
    peer_failure: bool = False
    t: Optional[float] = None
    traceback_tail: str = ""


class RankResult(BaseModel):
    rank: int
    status: RankStatus
    steps: int = 0
    peak_memory_bytes: Optional[int] = None
    median_step_s: Optional[float] = None
    samples_per_s: Optional[float] = None
    first_loss: Optional[float] = None
    last_loss: Optional[float] = None
    loss_finite: Optional[bool] = None
    error: Optional[RankError] = None
    # extra detail
    phase: Optional[str] = None
    world_size: Optional[int] = None
    args_world_size: Optional[int] = None
    parallel_mode: Optional[str] = None
    step_times_s: list[float] = Field(default_factory=list)
    losses: list[float] = Field(default_factory=list)
    memory: dict[str, int] = Field(default_factory=dict)
    device: dict = Field(default_factory=dict)
    overrides: dict = Field(default_factory=dict)

    @classmethod
    def from_shim(cls, data: dict) -> "RankResult":
        """Build from a ``rank{R}.result.json`` written by the shim."""
        fields = set(cls.model_fields)
        clean = {k: v for k, v in data.items() if k in fields}
        # JSON turns NaN into NaN (Python's json allows it); keep losses as floats
        return cls.model_validate(clean)


class RunResult(BaseModel):
    label: Literal["original", "fixed"]
    status: RunStatus
    wall_s: float
    ranks: list[RankResult] = Field(default_factory=list)
    root_cause_rank: Optional[int] = None
    message: str = ""
    returncode: Optional[int] = None
    log_tail: str = ""
    results_dir: Optional[str] = None


class VerifyReport(BaseModel):
    script: str
    gpus: int
    launcher: str
    device: Literal["cpu", "gpu"]
    # "original-fails": the unmodified script already fails, so the run says nothing about the fix
    verdict: Literal["pass", "fail", "original-fails"]
    reasons: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    memory_estimate_bytes: Optional[int] = None
    runs: list[RunResult] = Field(default_factory=list)


# ----------------------------------------------------------------------------- reading
_TORCHRUN_FAILURE = re.compile(
    r"rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)\s*\n\s*exitcode\s*:\s*(-?\d+)"
)


def parse_torchrun_failures(log: str) -> dict[int, int]:
    """Ranks and exit codes from torchrun's ``ChildFailedError`` summary."""
    return {int(m.group(1)): int(m.group(3)) for m in _TORCHRUN_FAILURE.finditer(log)}


def read_rank_files(results_dir: Path, expected_ranks: int) -> dict[int, dict]:
    """Per rank: the result JSON if written, else what is known (started / progress)."""
    out: dict[int, dict] = {}
    results_dir = Path(results_dir)
    ranks = set(range(expected_ranks))
    for p in results_dir.glob("rank*.started.json"):
        m = re.match(r"rank(\d+)\.", p.name)
        if m:
            ranks.add(int(m.group(1)))
    for r in sorted(ranks):
        entry: dict = {}
        for kind in ("started", "progress", "result"):
            p = results_dir / f"rank{r}.{kind}.json"
            if p.exists():
                try:
                    entry[kind] = json.loads(p.read_text())
                except (OSError, ValueError):
                    pass
        out[r] = entry
    return out


def rank_results(
    files: dict[int, dict], *, timed_out: bool = False, signals: dict[int, int] | None = None
) -> list[RankResult]:
    """Turn :func:`read_rank_files` output into RankResults (harness-side statuses added)."""
    signals = signals or {}
    ranks = []
    for r, entry in sorted(files.items()):
        if "result" in entry:
            res = RankResult.from_shim(entry["result"])
            if timed_out and res.status == "terminated":
                res.status = "timeout"
        else:
            steps = int(entry.get("progress", {}).get("steps", 0))
            if timed_out and "started" in entry:
                status, err = "timeout", RankError(type="Timeout", message="still running at the timeout")
            elif "started" in entry:
                code = signals.get(r)
                sig = f"signal {-code}" if code is not None and code < 0 else "a signal"
                status = "killed"
                err = RankError(type="Killed", message=f"ended by {sig} without a result (host OOM killer?)")
            else:
                status, err = "missing", None
            res = RankResult(rank=r, status=status, steps=steps, error=err)
        ranks.append(res)
    return ranks


# ----------------------------------------------------------------------------- classify
def _error_time(r: RankResult) -> float:
    return r.error.t if r.error and r.error.t is not None else float("inf")


def root_cause_rank(ranks: list[RankResult]) -> Optional[int]:
    """The earliest error that is not a peer error (a rank failing because another did)."""
    failed = [r for r in ranks if r.status not in ("ok", "no_train", "missing")]
    if not failed:
        return None
    own = [r for r in failed if not (r.error and r.error.peer_failure) and r.status != "terminated"]
    pool = own or failed
    return min(pool, key=lambda r: (_error_time(r), r.rank)).rank


def classify_run(
    ranks: list[RankResult],
    *,
    expected_world: int,
    timed_out: bool = False,
    returncode: Optional[int] = None,
) -> tuple[RunStatus, Optional[int], str]:
    """Run status, root-cause rank and a one-line message, in the documented order:
    timeout, oom, killed, ddp_not_active, ok / nonfinite_loss, no_trainer, crash."""
    root = root_cause_rank(ranks)
    by_rank = {r.rank: r for r in ranks}

    def msg(r: Optional[int]) -> str:
        if r is None or r not in by_rank or by_rank[r].error is None:
            return ""
        e = by_rank[r].error
        return f"rank {r}: {e.type}: {e.message}".strip().rstrip(":")

    if timed_out:
        slow = min(ranks, key=lambda r: r.steps).rank if ranks else None
        steps = ", ".join(f"rank {r.rank} at step {r.steps}" for r in ranks)
        return "timeout", slow, f"timed out ({steps})" if steps else "timed out"
    ooms = [r for r in ranks if r.status == "oom"]
    if ooms:
        first = min(ooms, key=lambda r: (_error_time(r), r.rank)).rank
        return "oom", first, msg(first)
    killed = [r for r in ranks if r.status == "killed"]
    if killed or (returncode is not None and returncode < 0 and not any(r.status == "error" for r in ranks)):
        rk = killed[0].rank if killed else None
        by_signal = f"launcher ended by signal {-returncode}" if returncode and returncode < 0 else ""
        return "killed", rk, msg(rk) or by_signal or "killed by a signal"
    if expected_world > 1:
        wrong = [r for r in ranks if r.args_world_size is not None and r.args_world_size != expected_world]
        if wrong:
            r = wrong[0]
            return (
                "ddp_not_active",
                r.rank,
                f"rank {r.rank} trained with world size {r.args_world_size}, expected {expected_world}"
                " (each process ran its own training)",
            )
    ok = [r for r in ranks if r.status == "ok"]
    if ranks and len(ok) == len(ranks) and len(ok) >= expected_world and not returncode:
        bad = [r for r in ok if r.loss_finite is False]
        if bad:
            return "nonfinite_loss", bad[0].rank, f"rank {bad[0].rank}: loss is not finite"
        return "ok", None, ""
    present = [r for r in ranks if r.status != "missing"]
    if not returncode and (not present or all(r.status == "no_train" for r in present)):
        if not present:
            return "no_trainer", None, "no worker reported (no Trainer, or the shim was not loaded: python -I/-E/-S?)"
        return "no_trainer", None, "the script ended without calling Trainer.train()"
    if returncode and present and all(r.status == "no_train" for r in present):
        return "crash", present[0].rank, f"the script exited with code {returncode} before training"
    if root is None and returncode:
        return "crash", None, f"launcher exited with code {returncode}"
    return "crash", root, msg(root) or "crashed"
