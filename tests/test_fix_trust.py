"""Issue 14: fixes a maintainer accepts, and fix/check processes that clean up after
themselves. Repro shapes from the issue: a fix that would write outside the given paths,
0.0001e0, stale temporary files, workers of a killed parent, verify on SIGTERM, a 5,000-digit
JSON integer, a symlink loop, an unreadable file and folder, the written-files count."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import fix_folder, run_cli, settings_for, write_files

from trainlint.engine import fix_outcome, lint
from trainlint.fixing.apply import remove_stale_temps, write_atomic
from trainlint.fixing.python_edits import python_literal

TA = "from transformers import TrainingArguments, Trainer\n"


# -- fixes touching the same call ------------------------------------------------------------


def test_rename_and_use_reentrant_on_the_same_call_compose(tmp_path):
    write_files(tmp_path, {"train.py": textwrap.dedent("""\
        from transformers import AutoModelForCausalLM, Trainer
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        model.gradient_checkpointing_enable()
        Trainer(model=model, args=args)
        """)})
    out = fix_folder(tmp_path, options={"transformers_version": "5.24.0"})
    text = out.fixed[str(tmp_path / "train.py")]
    assert 'model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})' in text
    assert "gradient_checkpointing_kwargs" not in text
    again = fix_outcome([tmp_path], settings_for(tmp_path, options={"transformers_version": "5.24.0"}))
    assert again.fixed == {} or all(t == text for t in again.fixed.values())


def test_rename_is_refused_for_keywords_the_new_method_does_not_take(tmp_path):
    write_files(tmp_path, {"train.py": textwrap.dedent("""\
        from transformers import AutoModelForCausalLM
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        model.gradient_checkpointing_enable(use_cache=False)
        """)})
    res = lint([tmp_path], settings_for(tmp_path, options={"transformers_version": "5.24.0"}))
    hit = next(d for d in res.diagnostics if d.code == "TL609")
    assert hit.fix is None and "does not take keyword use_cache" in hit.message


def test_method_signature_data_matches_the_installed_library():
    """The rename's keyword check reads model_api.json (generated from the released wheels)."""
    import inspect

    from transformers import PreTrainedModel, __version__

    from trainlint.knowledge import model_api

    for name in ("activation_checkpointing_enable", "gradient_checkpointing_enable"):
        want = [p for p in inspect.signature(getattr(PreTrainedModel, name)).parameters
                if p not in ("self", "kwargs")]
        assert list(model_api.method(name, __version__).params) == want
    assert "gradient_checkpointing_kwargs" not in model_api.method("activation_checkpointing_enable", __version__).params


# -- only under the given paths ------------------------------------------------------------------


def _outside_layout(tmp_path: Path) -> tuple[Path, Path]:
    proj, other = tmp_path / "proj", tmp_path / "outside"
    write_files(tmp_path, {
        "proj/train.py": TA + 'args = TrainingArguments(output_dir="o", eval_strategy="steps", logging_steps=1, deepspeed="../outside/ds.json")\n'
                              "Trainer(model=model, args=args)\n",
        "outside/ds.json": '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}\n',
        "outside/elsewhere.py": TA + 'args = TrainingArguments(output_dir="o", eval_strategy="steps", logging_steps=1)\n',
    })
    os.symlink(other / "elsewhere.py", proj / "link.py")
    return proj, other


def test_fix_never_writes_outside_the_given_paths(tmp_path):
    proj, other = _outside_layout(tmp_path)
    before = {p: p.read_text() for p in other.iterdir()}
    r = run_cli("fix", "--apply", str(proj), cwd=tmp_path)
    assert {p: p.read_text() for p in other.iterdir()} == before
    assert "logging_steps=10" in (proj / "train.py").read_text()
    assert (proj / "link.py").is_symlink()
    assert "outside the paths given to fix" in r.stderr
    assert "resolved:" in r.stderr and "elsewhere.py" in r.stderr
    assert "Fixed 1 finding in 1 file" in r.stderr


def test_fix_counts_only_written_files(tmp_path, monkeypatch):
    write_files(tmp_path, {"a.py": TA + 'args = TrainingArguments(output_dir="o", eval_strategy="steps", logging_steps=1)\n',
                           "b.py": TA + 'args = TrainingArguments(output_dir="o", eval_strategy="steps", logging_steps=1)\n'})
    import trainlint.fixing.apply as ap

    real = ap.write_atomic

    def failing(path, data):
        if path.endswith("b.py"):
            raise PermissionError(13, "Permission denied")
        return real(path, data)

    monkeypatch.setattr(ap, "write_atomic", failing)
    from click.testing import CliRunner

    from trainlint.cli import main

    r = CliRunner().invoke(main, ["fix", "--apply", str(tmp_path)])
    out = r.output
    try:
        out += r.stderr
    except (ValueError, AttributeError):
        pass
    assert "not written" in out and "b.py" in out
    assert "Fixed 1 finding in 1 file " in out


# -- numbers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value,like,text", [
    (1e-4, None, "1e-4"), (2e-5, None, "2e-5"), (0.0001, None, "1e-4"), (3.5e-6, None, "3.5e-6"),
    (0.01, None, "0.01"), (10.0, None, "10.0"), (2.83e-5, "0.00002", "0.0000283"), (2.83e-5, "2E-5", "2.83E-5"),
])
def test_numbers_are_written_as_a_person_would(value, like, text):
    assert python_literal(value, like) == text
    assert float(text) == value


def test_lr_fix_writes_a_plain_exponent(tmp_path):
    from trainlint.rules import get_rule

    rule = get_rule("TL502")
    case = next(c for c in rule.cases if c.fixed is not None)
    assert "e0" not in case.fixed and "0.0001e" not in case.fixed


# -- temporary files -------------------------------------------------------------------------------


def test_stale_temp_files_of_a_killed_writer_are_removed(tmp_path):
    target = tmp_path / "train.py"
    target.write_text("x = 1\n")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".train.py.{dead.pid}.abc123.trainlint.tmp"
    stale.write_text("half")
    live = tmp_path / f".train.py.{os.getpid()}.def456.trainlint.tmp"
    live.write_text("mine")
    assert remove_stale_temps([str(tmp_path)]) == [str(stale)]
    assert not stale.exists() and live.exists()


def test_a_killed_fix_leaves_a_temp_file_that_the_next_run_removes(tmp_path):
    write_files(tmp_path, {"train.py": TA + 'args = TrainingArguments(output_dir="o", eval_strategy="steps", logging_steps=1)\n'})
    code = textwrap.dedent(f"""
        import os, signal, sys
        import trainlint.fixing.apply as ap
        real = os.replace
        def die(src, dst):
            os.kill(os.getpid(), signal.SIGKILL)
        ap.os.replace = die
        from trainlint.cli import main
        sys.argv = ["trainlint", "fix", "--apply", {str(tmp_path)!r}]
        main()
        """)
    subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert list(tmp_path.glob(".*.trainlint.tmp")), "the SIGKILL left its temporary file"
    run_cli("fix", "--apply", str(tmp_path), cwd=tmp_path)
    assert not list(tmp_path.glob(".*.trainlint.tmp"))
    assert "logging_steps=10" in (tmp_path / "train.py").read_text()


def test_no_temp_file_after_an_interrupted_write(tmp_path, monkeypatch):
    target = tmp_path / "a.py"
    target.write_text("x = 1\n")

    def interrupt(*a):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(str(target), b"x = 2\n")
    assert not list(tmp_path.glob(".*.trainlint.tmp")) and target.read_text() == "x = 1\n"


# -- processes -------------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    import psutil

    try:
        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def test_pool_workers_end_when_the_parent_is_killed(tmp_path):
    psutil = pytest.importorskip("psutil")
    from trainlint.engine import MIN_POOL_FILES

    for i in range(MIN_POOL_FILES + 10):
        write_files(tmp_path, {f"s{i}.py": TA + "x = 1\n"})
    # a parent that starts the pool and is killed while the workers run
    code = textwrap.dedent(f"""
        import sys, time
        import trainlint.parallel as par
        real = par._work
        def slow(unit):
            time.sleep(30)
            return real(unit)
        par._work = slow
        from trainlint.cli import main
        sys.argv = ["trainlint", "check", "-j", "2", "--no-cache", {str(tmp_path)!r}]
        main()
        """)
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.3)
        workers = _children(parent.pid)
    assert workers, "the pool never started"
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(psutil.pid_exists(w) and psutil.Process(w).status() != "zombie"
                                              for w in workers):
        time.sleep(0.2)
    alive = [w for w in workers if psutil.pid_exists(w) and psutil.Process(w).status() != "zombie"]
    for w in alive:
        os.kill(w, signal.SIGKILL)
    assert not alive, "workers outlived their parent"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_verify_on_sigterm_ends_the_tree_and_removes_what_it_created(tmp_path, sig):
    psutil = pytest.importorskip("psutil")
    script = tmp_path / "train.py"
    script.write_text(TA + textwrap.dedent("""\
        import time
        args = TrainingArguments(output_dir="out", eval_strategy="steps", logging_steps=1)
        time.sleep(120)
        """))
    import tempfile

    before_tmp = set(Path(tempfile.gettempdir()).glob("trainlint-verify-*"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent.parent),
                                                                      os.environ.get("PYTHONPATH", "")]))}
    proc = subprocess.Popen([sys.executable, "-m", "trainlint", "verify", str(script), "--timeout", "100"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    kids: list[int] = []
    while time.monotonic() < deadline:
        kids = _children(proc.pid)
        if kids and list(tmp_path.glob(".*")):
            break
        time.sleep(0.3)
    assert kids, "verify never started the smoke run"
    time.sleep(1.0)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    time.sleep(0.5)
    alive = [k for k in kids if psutil.pid_exists(k) and psutil.Process(k).status() != "zombie"]
    for k in alive:
        os.kill(k, signal.SIGKILL)
    assert not alive, "smoke processes survived"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "the hidden fixed copy was left"
    assert set(Path(tempfile.gettempdir()).glob("trainlint-verify-*")) <= before_tmp, "the run folder was left"
    assert b"interrupted by SIG" in err


# -- inputs that must be findings, never TL000 or silence -------------------------------------------


def test_huge_json_integer_is_an_invalid_config(tmp_path):
    write_files(tmp_path, {"ds.json": '{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": '
                                      + "9" * 5000 + "}\n",
                           "args.yaml": "output_dir: o\nper_device_train_batch_size: " + "9" * 5000 + "\n"})
    res = lint([tmp_path], settings_for(tmp_path))
    codes = {(Path(d.path).name, d.code) for d in res.diagnostics}
    assert ("ds.json", "TL003") in codes and ("args.yaml", "TL003") in codes
    assert not res.internal_errors
    assert any("5000 digits" in d.message for d in res.diagnostics)


def test_named_symlink_loop_and_unreadable_file_are_tl002(tmp_path, monkeypatch):
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    secret = tmp_path / "secret.py"
    secret.write_text("x = 1\n")
    real_open = os.open

    def deny(path, *a, **k):
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(os, "open", deny)
    res = lint([tmp_path / "a", secret], settings_for(tmp_path))
    by = {Path(d.path).name: d for d in res.diagnostics}
    assert by["a"].code == "TL002" and "symbolic link loop" in by["a"].message
    assert by["secret.py"].code == "TL002" and "Permission denied" in by["secret.py"].message
    assert not res.internal_errors


def test_unreadable_folder_is_a_finding(tmp_path, monkeypatch):
    write_files(tmp_path, {"locked/a.py": TA, "ok/b.py": "x = 1\n"})
    real_scandir, real_listdir = os.scandir, os.listdir

    def deny(fn):
        def inner(path="."):
            if str(path).endswith("locked"):
                raise PermissionError(13, "Permission denied", str(path))
            return fn(path)
        return inner

    monkeypatch.setattr(os, "scandir", deny(real_scandir))
    monkeypatch.setattr(os, "listdir", deny(real_listdir))
    res = lint([tmp_path], settings_for(tmp_path))
    hit = [d for d in res.diagnostics if d.path.endswith("locked")]
    assert hit and hit[0].code == "TL002" and "cannot read folder" in hit[0].message


# -- migrations in a project that supports older versions ---------------------------------------


@pytest.mark.parametrize("pin,safe", [('"transformers>=4.56.2"', False), ('"transformers>=5.23"', True)])
def test_renames_are_unsafe_when_the_project_supports_versions_without_the_new_name(tmp_path, pin, safe):
    write_files(tmp_path, {
        "pyproject.toml": f'[project]\nname = "lib"\ndependencies = [{pin}]\n',
        "lib/train.py": textwrap.dedent("""\
            from transformers import AutoModelForCausalLM
            model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype="auto")
            model.gradient_checkpointing_enable()
            """)})
    res = lint([tmp_path / "lib"], settings_for(tmp_path, options={"transformers_version": "5.24.0"}))
    for code in ("TL609",):
        d = next(d for d in res.diagnostics if d.code == code)
        assert d.fix is not None and (d.fix.applicability == "safe") is safe, d
        if not safe:
            assert "the project allows transformers 4.56.2 (pyproject.toml:3)" in d.message
    out = fix_folder(tmp_path / "lib", options={"transformers_version": "5.24.0"})
    assert bool(out.fixed) is safe or not safe and all("activation_checkpointing" not in t for t in out.fixed.values())
