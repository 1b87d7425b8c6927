"""Pure tests of run classification, verdict and report: synthetic rank JSON, no torch."""
import json

import pytest

from trainlint.verify import compare
from trainlint.verify.results import (
    RankResult,
    RunResult,
    VerifyReport,
    classify_run,
    parse_torchrun_failures,
    rank_results,
    read_rank_files,
    root_cause_rank,
)


def shim(rank, status="ok", **kw):
    """A rank result as the shim writes it."""
    data = {
        "status": status, "phase": "train", "rank": rank, "world_size": 2, "args_world_size": 2,
        "steps": 5, "step_times_s": [0.3, 0.1, 0.1, 0.1, 0.1], "median_step_s": 0.1,
        "samples_per_s": 160.0, "losses": [0.7, 0.69], "first_loss": 0.7, "last_loss": 0.69,
        "loss_finite": True, "peak_memory_bytes": 1000, "error": None,
    }
    data.update(kw)
    return data


def err(t, message="boom", type="RuntimeError", peer=False, oom=False):
    return {"type": type, "message": message, "oom": oom, "peer_failure": peer, "t": t,
            "traceback_tail": ""}


def ranks_of(*datas):
    return [RankResult.from_shim(d) for d in datas]


def test_all_ok():
    assert classify_run(ranks_of(shim(0), shim(1)), expected_world=2, returncode=0) == ("ok", None, "")


def test_missing_rank_is_not_ok():
    files = {0: {"started": {}, "result": shim(0)}, 1: {}}
    ranks = rank_results(files)
    assert ranks[1].status == "missing"
    status, _, _ = classify_run(ranks, expected_world=2, returncode=1)
    assert status == "crash"


def test_crash_root_cause_is_earliest_non_peer_error():
    ranks = ranks_of(
        shim(0, "error", args_world_size=3, error=err(5.0, "Connection closed by peer [127.0.0.1]:1234", peer=True)),
        shim(1, "error", args_world_size=3, error=err(9.0, "ValueError in collate")),
        shim(2, "error", args_world_size=3, error=err(7.0, "first real error")),
    )
    status, root, message = classify_run(ranks, expected_world=3, returncode=1)
    assert (status, root) == ("crash", 2)
    assert "first real error" in message


def test_root_cause_falls_back_to_earliest_peer_error():
    ranks = ranks_of(shim(0, "error", error=err(3.0, peer=True)), shim(1, "error", error=err(2.0, peer=True)))
    assert root_cause_rank(ranks) == 1


def test_oom_beats_crash_and_nonfinite():
    ranks = ranks_of(
        shim(0, "error", error=err(2.0, "Connection reset by peer", peer=True)),
        shim(1, "oom", error=err(1.0, "CUDA out of memory", oom=True, type="OutOfMemoryError")),
    )
    assert classify_run(ranks, expected_world=2, returncode=1)[:2] == ("oom", 1)


def test_timeout_first_and_slowest_rank_reported():
    files = {0: {"started": {}, "progress": {"steps": 3}}, 1: {"started": {}, "progress": {"steps": 1}}}
    ranks = rank_results(files, timed_out=True)
    assert [r.status for r in ranks] == ["timeout", "timeout"]
    status, root, message = classify_run(ranks, expected_world=2, timed_out=True)
    assert (status, root) == ("timeout", 1)
    assert "rank 1 at step 1" in message


def test_killed_rank_from_missing_result_and_torchrun_summary():
    log = """
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-30_10:00:00
  host      : box
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 4242)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 4242
"""
    signals = parse_torchrun_failures(log)
    assert signals == {1: -9}
    files = {0: {"started": {}, "result": shim(0, "error", error=err(2.0, "Read error", peer=True))},
             1: {"started": {}, "progress": {"steps": 1}}}
    ranks = rank_results(files, signals=signals)
    assert ranks[1].status == "killed" and "signal 9" in ranks[1].error.message
    assert classify_run(ranks, expected_world=2, returncode=1)[:2] == ("killed", 1)


def test_killed_single_process_by_returncode():
    ranks = rank_results({0: {"started": {}}})
    assert classify_run(ranks, expected_world=1, returncode=-9)[0] == "killed"


def test_ddp_not_active():
    ranks = ranks_of(shim(0, args_world_size=1), shim(1, args_world_size=1))
    status, root, message = classify_run(ranks, expected_world=2, returncode=0)
    assert status == "ddp_not_active" and "world size 1" in message
    # one process: world size 1 is right
    assert classify_run(ranks_of(shim(0, args_world_size=1)), expected_world=1, returncode=0)[0] == "ok"


def test_nonfinite_loss():
    ranks = ranks_of(shim(0), shim(1, loss_finite=False, last_loss=float("nan")))
    assert classify_run(ranks, expected_world=2, returncode=0)[:2] == ("nonfinite_loss", 1)


def test_no_trainer_and_exit_before_training():
    ranks = ranks_of(shim(0, "no_train", steps=0))
    assert classify_run(ranks, expected_world=1, returncode=0)[0] == "no_trainer"
    assert classify_run(ranks, expected_world=1, returncode=3)[0] == "crash"
    # the shim never ran (python -I / -E): nothing reported at all
    assert classify_run(rank_results({0: {}}), expected_world=1, returncode=0)[0] == "no_trainer"


def test_setup_crash():
    ranks = ranks_of(shim(0, "error", phase="setup", steps=0, error=err(1.0, "no such file", type="OSError")))
    status, root, message = classify_run(ranks, expected_world=1, returncode=1)
    assert (status, root) == ("crash", 0) and "OSError" in message


def test_read_rank_files_reads_every_kind(tmp_path):
    (tmp_path / "rank0.started.json").write_text(json.dumps({"rank": 0}))
    (tmp_path / "rank0.result.json").write_text(json.dumps(shim(0)))
    (tmp_path / "rank1.started.json").write_text(json.dumps({"rank": 1}))
    (tmp_path / "rank1.progress.json").write_text(json.dumps({"rank": 1, "steps": 2}))
    files = read_rank_files(tmp_path, 3)
    assert set(files) == {0, 1, 2}
    assert set(files[0]) == {"started", "result"} and files[1]["progress"]["steps"] == 2
    assert files[2] == {}


# ----------------------------------------------------------------------------- verdict
def run(label, status="ok", ranks=None, **kw):
    ranks = ranks if ranks is not None else ranks_of(shim(0), shim(1))
    return RunResult(label=label, status=status, wall_s=1.0, ranks=ranks, **kw)


def test_verdict_fixed_ok_passes_and_cpu_makes_no_perf_claim():
    slow = ranks_of(shim(0, median_step_s=1.0, peak_memory_bytes=10), shim(1, median_step_s=1.0))
    verdict, reasons, notes = compare.decide(run("original"), run("fixed", ranks=slow), device="cpu")
    assert verdict == "pass" and reasons == []
    assert any("not compared" in n for n in notes)


def test_verdict_fixed_crash_fails():
    verdict, reasons, _ = compare.decide(run("original"), run("fixed", "crash", message="x"), device="cpu")
    assert verdict == "fail" and "worse" in " ".join(reasons)


def test_verdict_repair_passes():
    verdict, _, notes = compare.decide(run("original", "oom"), run("fixed"), device="gpu")
    assert verdict == "pass" and any("repaired" in n for n in notes)


def test_verdict_both_failing_says_the_original_fails():
    verdict, reasons, _ = compare.decide(run("original", "crash"), run("fixed", "crash"), device="cpu")
    assert verdict == "original-fails" and "original run already fails" in reasons[0]


def test_crashed_run_never_shows_loss_finite_true():
    from io import StringIO

    from rich.console import Console

    crashed = run("original", "crash", message="OSError: offline")
    for r in crashed.ranks:
        r.first_loss = r.last_loss = None
        r.loss_finite = None
    report = VerifyReport(script="train.py", gpus=1, launcher="python", device="cpu", verdict="original-fails",
                          runs=[crashed, run("fixed", "crash", message="OSError: offline")])
    out = StringIO()
    compare.render(report, Console(file=out, width=200))
    text = out.getvalue()
    assert "loss finite" in text and "True" not in text.split("loss finite")[1].splitlines()[0]
    assert text.count("OSError: offline") == 2  # once per run, in its status line


@pytest.mark.parametrize("field,value,ok", [
    ("peak_memory_bytes", 1050, True),     # +5 %: noise
    ("peak_memory_bytes", 1200, False),    # +20 %: regression
    ("median_step_s", 0.105, True),
    ("median_step_s", 0.125, False),
])
def test_verdict_gpu_regression_threshold(field, value, ok):
    fixed = run("fixed", ranks=ranks_of(shim(0, **{field: value}), shim(1, **{field: value})))
    verdict, reasons, _ = compare.decide(run("original"), fixed, device="gpu")
    assert (verdict == "pass") is ok, reasons


def test_verdict_gpu_improvement_is_a_note():
    fixed = run("fixed", ranks=ranks_of(shim(0, peak_memory_bytes=500), shim(1, peak_memory_bytes=500)))
    verdict, _, notes = compare.decide(run("original"), fixed, device="gpu")
    assert verdict == "pass" and any("peak memory improved" in n for n in notes)


def test_losses_compared_only_at_same_world_size():
    o = run("original", ranks=ranks_of(shim(0, first_loss=0.69, args_world_size=2)))
    f_same = run("fixed", ranks=ranks_of(shim(0, first_loss=1.38, args_world_size=2)))
    f_other = run("fixed", ranks=ranks_of(shim(0, first_loss=1.38, args_world_size=1)))
    assert any("first loss differs" in n for n in compare.decide(o, f_same, device="cpu")[2])
    notes = compare.decide(o, f_other, device="cpu")[2]
    assert not any("first loss differs" in n for n in notes)
    assert any("world sizes differ" in n for n in notes)


def test_single_run_verdict():
    assert compare.decide(run("original"), None, device="cpu")[0] == "pass"
    assert compare.decide(run("original", "timeout"), None, device="cpu")[0] == "fail"


def test_summaries():
    r = run("original", ranks=ranks_of(shim(0, peak_memory_bytes=800, median_step_s=0.2),
                                       shim(1, peak_memory_bytes=1000, median_step_s=0.1)))
    assert compare.peak_memory(r) == 1000
    assert compare.memory_imbalance(r) == pytest.approx(0.2)
    assert compare.slowest_step(r) == 0.2


def test_render_and_json_roundtrip():
    from rich.console import Console

    report = VerifyReport(script="train.py", gpus=2, launcher="torchrun", device="cpu", verdict="fail",
                          reasons=["fixed run: crash"], runs=[run("original"), run("fixed", "crash", message="boom")])
    console = Console(record=True, width=140)
    compare.render(report, console)
    text = console.export_text()
    for needle in ("original", "fixed", "peak memory rank 1", "memory imbalance", "samples/s",
                   "first loss", "verdict: fail", "boom"):
        assert needle in text
    data = json.loads(report.model_dump_json())
    assert data["runs"][1]["status"] == "crash"
    assert set(data["runs"][0]["ranks"][0]) >= {"rank", "status", "steps", "peak_memory_bytes",
                                                "median_step_s", "samples_per_s", "first_loss",
                                                "last_loss", "loss_finite", "error"}


def test_memory_estimate_hook_uses_the_static_estimate():
    from pathlib import Path

    from trainlint.verify.compare import memory_estimate_bytes

    root = Path(__file__).resolve().parent.parent
    est = memory_estimate_bytes(root / "examples" / "bert_imdb" / "train.py", 1)
    assert isinstance(est, int) and 1 << 30 < est < 80 << 30  # bert-base, batch 32 x 512
    assert memory_estimate_bytes(root / "examples" / "verify_demo" / "train.py", 2) is None  # local tiny model
