"""Fixes never break: a result that does not parse is reverted and reported, conflicting
edits wait for a later pass, writes are atomic and keep the file's bytes conventions, and a
file that could not be parsed is never touched."""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Iterable
from pathlib import Path

import pytest
from helpers import run_cli, settings_for

import trainlint.engine as engine
from trainlint.diagnostics import Diagnostic, Edit, Fix, Severity, replace
from trainlint.fixing.apply import apply_fix_pass, newline_of, parses, write_atomic, write_fixed
from trainlint.rules.base import Rule
from trainlint.setup import Setup

SCRIPT = ("from transformers import TrainingArguments\n"
          "args = TrainingArguments(output_dir='out', eval_strategy='steps', logging_steps=1)\n")


def diag(path: str, edits: list[tuple[int, int, int, int, str]], code: str = "TL199", line: int = 1) -> Diagnostic:
    return Diagnostic(code=code, name="test-rule", severity=Severity.WARNING, message="m", path=path,
                      line=line, column=1, end_line=line, end_column=2,
                      fix=Fix(applicability="safe", edits=[Edit(path=path, line=a, column=b, end_line=c,
                                                                end_column=d, content=t)
                                                           for a, b, c, d, t in edits]))


# -- apply_fix_pass ---------------------------------------------------------------------------


def test_a_fix_that_breaks_the_file_is_reverted_and_the_others_apply():
    text = "x = 1\ny = 2\nz = 3\n"
    good1 = diag("a.py", [(1, 5, 1, 6, "10")], line=1)
    bad = diag("a.py", [(2, 5, 2, 6, "(")], line=2)
    good2 = diag("a.py", [(3, 5, 3, 6, "30")], line=3)
    pr = apply_fix_pass([good1, bad, good2], {"a.py": text})
    assert pr.texts["a.py"] == "x = 10\ny = 2\nz = 30\n"
    assert [d for d, _ in pr.reverted] == [bad]
    assert "SyntaxError" in pr.reverted[0][1]
    assert pr.applied == [good1, good2]


def test_the_breaking_fix_is_found_among_many_by_bisection():
    text = "".join(f"v{i} = {i}\n" for i in range(40))
    fixes = [diag("a.py", [(i + 1, 1, i + 1, 1, "")], line=i + 1) for i in range(39)]  # no-ops
    breaker = diag("a.py", [(40, 7, 40, 9, "(")], line=40)  # v39 = (
    pr = apply_fix_pass([*fixes, breaker], {"a.py": text})
    assert [d for d, _ in pr.reverted] == [breaker]


def test_a_multi_file_fix_is_all_or_nothing():
    texts = {"a.py": "x = 1\n", "b.json": '{"k": 1}\n'}
    both = Diagnostic(code="TL199", name="t", severity=Severity.WARNING, message="m", path="a.py", line=1,
                      column=1, end_line=1, end_column=2,
                      fix=Fix(applicability="safe", edits=[
                          Edit(path="a.py", line=1, column=5, end_line=1, end_column=6, content="2"),
                          Edit(path="b.json", line=1, column=7, end_line=1, end_column=8, content="2,"),
                      ]))
    pr = apply_fix_pass([both], texts, {"b.json": "json"})
    assert pr.texts == {} and pr.applied == [] and len(pr.reverted) == 1


def test_overlapping_fixes_are_deferred_and_self_overlapping_ones_refused():
    text = "x = 1\n"
    first = diag("a.py", [(1, 5, 1, 6, "2")])
    second = diag("a.py", [(1, 1, 1, 6, "y = 3")], code="TL198")
    insert_a = diag("a.py", [(1, 1, 1, 1, "# a\n")], code="TL197")
    insert_b = diag("a.py", [(1, 1, 1, 1, "# b\n")], code="TL196")
    selfish = diag("a.py", [(1, 1, 1, 3, "z"), (1, 2, 1, 4, "w")], code="TL195")
    pr = apply_fix_pass([first, second, insert_a, insert_b, selfish], {"a.py": text})
    applied = {d.code for d in pr.applied}
    deferred = {d.code for d in pr.deferred}
    assert len(applied) + len(deferred) == 4 and not applied & deferred
    assert {"TL197", "TL196"} & deferred, "two insertions at one point never apply together"
    assert [d.code for d, _ in pr.reverted] == ["TL195"]


def test_validation_follows_the_file_kind():
    assert parses("run", "python train.py --lr 1", "shell") is None  # not checked as Python
    assert parses("run", "x = (", "python") is not None
    assert parses("ds.txt", '{"a": 1,}', "deepspeed") is not None
    assert parses("acc.yaml", "a: [1\n", "accelerate") is not None
    assert parses("acc.json", '{"a": 1}', "accelerate") is None
    assert parses("x.py", "(" * 3000 + ")" * 3000) is not None  # too deep: does not parse


def test_inserted_text_takes_the_newline_style_of_the_file():
    text = "x = 1\r\ny = 2\r\n"
    d = diag("a.py", [(2, 1, 2, 1, "import os\nimport sys\n")])
    pr = apply_fix_pass([d], {"a.py": text})
    assert pr.texts["a.py"] == "x = 1\r\nimport os\r\nimport sys\r\ny = 2\r\n"
    assert newline_of("a\r\nb") == "\r\n" and newline_of("a\nb") == "\n" and newline_of("a\rb") == "\r"


def test_thousands_of_fixes_in_one_file_are_fast():
    import time

    n = 5000
    text = "".join(f"v{i} = 1\n" for i in range(n))
    fixes = [diag("a.py", [(i + 1, len(f"v{i} = ") + 1, i + 1, len(f"v{i} = ") + 2, "2")], line=i + 1)
             for i in range(n)]
    t = time.perf_counter()
    pr = apply_fix_pass(fixes, {"a.py": text})
    assert time.perf_counter() - t < 10
    assert pr.texts["a.py"].count("= 2\n") == n


# -- fix_outcome with rules that fight ---------------------------------------------------------


class _Conflicting(Rule):
    """Two findings on the same keyword value whose fixes overlap."""

    code = "TL199"
    name = "test-conflict"
    severity = Severity.WARNING
    summary = "test"
    fix_safety = "safe"

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site in setup.sites:
            v = site.values.get("logging_steps")
            if v is None or v.span is None or v.value != 1:
                continue
            yield self.diagnostic(v.span, "a", edits=[v.span.edit("50")])
            if v.key_span is not None:
                whole = replace(v.key_span, end_line=v.span.end_line, end_column=v.span.end_column)
                yield self.diagnostic(whole, "b", edits=[whole.edit("logging_steps=10")])


class _Breaking(Rule):
    code = "TL198"
    name = "test-breaking"
    severity = Severity.WARNING
    summary = "test"
    fix_safety = "safe"

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site in setup.sites:
            v = site.values.get("output_dir")
            if v is not None and v.span is not None:
                yield self.diagnostic(v.span, "breaks", edits=[v.span.edit("'out'))")])


def _with_rules(monkeypatch, *rules):
    import trainlint.checking as checking

    monkeypatch.setattr(checking, "make_rules", lambda settings: [cls(settings) for cls in rules])


def test_conflicting_fixes_are_applied_in_passes(tmp_path, monkeypatch):
    _with_rules(monkeypatch, _Conflicting)
    p = tmp_path / "train.py"
    p.write_text(SCRIPT)
    out = engine.fix_outcome([p], settings_for(tmp_path))
    # one of the two applied in the first pass; the other finding is gone afterwards
    assert len(out.applied) == 1 and not out.reverted
    assert out.fixed[str(p)] in (SCRIPT.replace("logging_steps=1", "logging_steps=50"),
                                 SCRIPT.replace("logging_steps=1", "logging_steps=10"))


def test_breaking_fix_is_reverted_and_reported_once(tmp_path, monkeypatch):
    _with_rules(monkeypatch, _Breaking)
    p = tmp_path / "train.py"
    p.write_text(SCRIPT)
    out = engine.fix_outcome([p], settings_for(tmp_path))
    assert out.fixed == {} and out.applied == []
    assert len(out.reverted) == 1 and out.reverted[0][0].code == "TL198"
    cli = run_cli("fix", "--apply", str(p), "--select", "TL2")
    assert cli.returncode in (0, 1) and "Traceback" not in cli.stderr


def test_a_rule_crash_during_fix_is_tl000_and_other_fixes_still_apply(tmp_path, monkeypatch):
    from trainlint.rules.args.logging_steps import LoggingStepsTooLow

    class Crashing(_Breaking):
        code = "TL197"

        def check(self, setup):
            raise ZeroDivisionError("bug")

    _with_rules(monkeypatch, LoggingStepsTooLow, Crashing)
    p = tmp_path / "train.py"
    p.write_text(SCRIPT)
    out = engine.fix_outcome([p], settings_for(tmp_path))
    assert "logging_steps=1)" not in out.fixed[str(p)]
    assert [d.code for d in out.remaining] == ["TL000"]


# -- never touch what did not parse ------------------------------------------------------------


def test_fix_never_edits_a_file_that_did_not_parse(tmp_path):
    broken = tmp_path / "broken.py"
    data = ("from transformers import TrainingArguments\n"
            "args = TrainingArguments(output_dir='o', eval_strategy='steps', logging_steps=1)\nx = (\n").encode()
    broken.write_bytes(data)
    ds = tmp_path / "ds.json"
    ds_data = b'{"zero_optimization": {"stage": 2}, "fp16": {"enabled": true},'
    ds.write_bytes(ds_data)
    (tmp_path / "train.py").write_text(SCRIPT)
    out = run_cli("fix", "--apply", "--unsafe-fixes", str(tmp_path), "--gpu", "A100", "--select", "ALL",
                  "--ignore", "TL001,TL003")
    assert out.returncode in (0, 1), out.stderr
    assert broken.read_bytes() == data and ds.read_bytes() == ds_data
    assert "logging_steps=1)" not in (tmp_path / "train.py").read_text()


# -- writes -----------------------------------------------------------------------------------


def _fix_file(tmp_path: Path, name: str, data: bytes, mode: int | None = None):
    p = tmp_path / name
    p.write_bytes(data)
    if mode is not None:
        os.chmod(p, mode)
    out = run_cli("fix", "--apply", str(p), "--select", "TL201")
    assert out.returncode in (0, 1), out.stderr
    assert "Traceback" not in out.stderr
    return p


def test_crlf_file_keeps_crlf(tmp_path):
    p = _fix_file(tmp_path, "train.py", SCRIPT.replace("\n", "\r\n").encode())
    data = p.read_bytes()
    assert b"logging_steps=1)" not in data
    assert data.count(b"\r\n") == 2 and data.count(b"\n") == 2


def test_bom_file_keeps_its_bom(tmp_path):
    p = _fix_file(tmp_path, "train.py", codecs.BOM_UTF8 + SCRIPT.encode())
    data = p.read_bytes()
    assert data.startswith(codecs.BOM_UTF8) and not data.startswith(codecs.BOM_UTF8 * 2)
    assert b"logging_steps=1)" not in data


def test_latin1_file_with_cookie_stays_latin1(tmp_path):
    text = "# -*- coding: latin-1 -*-\n# café\n" + SCRIPT
    p = _fix_file(tmp_path, "train.py", text.encode("latin-1"))
    data = p.read_bytes()
    assert "# café".encode("latin-1") in data and b"logging_steps=1)" not in data
    data.decode("latin-1")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")


def test_executable_bit_is_kept_and_no_temporary_file_left(tmp_path):
    p = _fix_file(tmp_path, "train.py", ("#!/usr/bin/env python\n" + SCRIPT).encode(), mode=0o755)
    assert stat.S_IMODE(p.stat().st_mode) == 0o755
    assert b"logging_steps=1)" not in p.read_bytes()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["train.py"]


def test_symlinked_file_is_fixed_through_the_link(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    target = real / "train.py"
    target.write_text(SCRIPT)
    link = tmp_path / "train.py"
    os.symlink(target, link)
    out = run_cli("fix", "--apply", str(link), "--select", "TL201")
    assert out.returncode in (0, 1), out.stderr
    assert link.is_symlink()
    assert "logging_steps=1)" not in target.read_text()


def test_unencodable_fix_is_not_written(tmp_path):
    p = tmp_path / "train.py"
    original = ("# -*- coding: ascii -*-\n" + SCRIPT).encode()
    p.write_bytes(original)
    assert write_fixed(str(p), original.decode(), original.decode() + "# é\n") is not None
    assert p.read_bytes() == original


def test_file_changed_while_fixing_is_not_written(tmp_path):
    p = tmp_path / "train.py"
    p.write_text(SCRIPT)
    problem = write_fixed(str(p), SCRIPT + "# older\n", SCRIPT + "# fixed\n")
    assert problem is not None and "changed" in problem
    assert p.read_text() == SCRIPT


def test_atomic_write_leaves_the_file_intact_on_error(tmp_path, monkeypatch):
    p = tmp_path / "train.py"
    p.write_text(SCRIPT)

    def fail(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        write_atomic(str(p), b"new")
    assert p.read_text() == SCRIPT
    assert [x.name for x in tmp_path.iterdir()] == ["train.py"]
    assert write_fixed(str(p), SCRIPT, SCRIPT + "#\n") == "cannot write: No space left on device"
