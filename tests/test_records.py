"""The hand-written records (``trainlint.record``) behave as the dataclasses they replace:
equality, hash, repr, ``replace``, copy and pickle, frozen ones refuse assignment."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from pathlib import Path

import pytest

from trainlint.diagnostics import Diagnostic, Edit, Fix, Related, Severity, Span
from trainlint.record import Record, replace
from trainlint.setup import ArgsSite, Consumer, Setup, Value


def _finding(**kw) -> Diagnostic:
    base = dict(code="TL201", name="logging-steps-too-low", severity=Severity.WARNING, message="m",
                path="t.py", line=3, column=5, end_line=3, end_column=9)
    return Diagnostic(**{**base, **kw})


@dataclasses.dataclass(frozen=True, kw_only=True)
class _DcSpan:  # what Span was
    path: str
    line: int
    column: int
    end_line: int
    end_column: int


def test_frozen_record_matches_a_frozen_dataclass():
    s = Span(path="a.py", line=1, column=2, end_line=3, end_column=4)
    d = _DcSpan(path="a.py", line=1, column=2, end_line=3, end_column=4)
    assert repr(s) == repr(d).replace("_DcSpan", "Span")
    assert s == Span(path="a.py", line=1, column=2, end_line=3, end_column=4)
    assert s != Span(path="a.py", line=1, column=2, end_line=3, end_column=5)
    assert hash(s) == hash(Span(path="a.py", line=1, column=2, end_line=3, end_column=4))
    assert len({s, Span(path="a.py", line=1, column=2, end_line=3, end_column=4)}) == 1
    assert (s == d) is False and s.__eq__(d) is NotImplemented
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.line = 9  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del s.line  # type: ignore[misc]
    with pytest.raises(AttributeError):
        s.other = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        Span("a.py", 1, 2, 3, 4)  # type: ignore[misc]  # keyword-only, as the dataclass was


def test_replace_copy_and_pickle_keep_every_field():
    fix = Fix(applicability="safe", edits=[Edit(path="t.py", line=3, column=5, end_line=3, end_column=9,
                                                content="x", cell=2)])
    d = _finding(fix=fix, related=[Related(path="c.json", line=1, column=1, message="here")], cell=4)
    assert d.related[0].cell is None and fix.message == "" and _finding().related == []
    r = replace(d, message="n", severity=Severity.INFO)
    assert (r.message, r.severity, r.fix, r.related, r.cell, r.code) == ("n", Severity.INFO, fix, d.related, 4, "TL201")
    assert d.message == "m"
    for twin in (copy.copy(d), copy.deepcopy(d), pickle.loads(pickle.dumps(d))):
        assert twin == d and twin is not d and twin.to_json() == d.to_json()
    with pytest.raises(TypeError):
        hash(d)  # a list field: unhashable, as the frozen dataclass was
    v = Value(3, "python", name="logging_steps")
    assert replace(v, note="n") == Value(3, "python", note="n", name="logging_steps")
    assert pickle.loads(pickle.dumps(v)) == v and hash(v) == hash(Value(3, "python", name="logging_steps"))
    c = Consumer("library", "TrainingArguments", extra_fields=frozenset({"a"}))
    assert replace(c, strict=False).strict is False and c.strict is True
    assert hash(c) == hash(Consumer("library", "TrainingArguments", extra_fields=frozenset({"a"})))
    with pytest.raises(TypeError):
        replace(v, nonsense=1)


def test_mutable_records_compare_by_fields_are_unhashable_and_keep_later_attributes():
    a = ArgsSite("t.py", "TrainingArguments")
    b = ArgsSite(path="t.py", class_name="TrainingArguments")
    assert a == b and a.values == {} and a.values is not b.values
    b.open_ended = True
    assert a != b
    with pytest.raises(TypeError):
        hash(a)
    a.later = "set after"  # type: ignore[attr-defined]  # a ``__dict__`` slot, as a dataclass instance has
    twin = pickle.loads(pickle.dumps(a))
    assert twin == a and twin.later == "set after"  # type: ignore[attr-defined]
    s = Setup(Path("."), sites=[a])
    assert s.all_sites == [a] and s == Setup(Path("."), sites=[ArgsSite("t.py", "TrainingArguments")])
    assert repr(a).startswith("ArgsSite(path='t.py', class_name='TrainingArguments', values={}, open_ended=False")


def test_replace_still_takes_dataclasses():
    d = _DcSpan(path="a.py", line=1, column=2, end_line=3, end_column=4)
    assert replace(d, line=7) == _DcSpan(path="a.py", line=7, column=2, end_line=3, end_column=4)


def test_records_on_the_one_file_path_are_not_dataclasses():
    """What start-up saves: none of these compiles generated methods at import."""
    import trainlint.engine
    import trainlint.partition
    import trainlint.resolve
    import trainlint.sources.python as py
    import trainlint.workspace

    for cls in (Diagnostic, Edit, Fix, Related, Span, Value, Consumer, ArgsSite, Setup, py.Scope,
                py.TrainingArgsCall, py.TrainerCall, py.CliOption, trainlint.engine.LintResult,
                trainlint.partition.Plan, trainlint.resolve.RunContext, trainlint.workspace.Workspace):
        assert issubclass(cls, Record) and not dataclasses.is_dataclass(cls), cls


def test_rows_are_the_named_tuples_they_replace():
    from typing import Any, NamedTuple

    from trainlint.knowledge.training_args import FieldInfo
    from trainlint.record import Row

    class Nt(NamedTuple):  # what FieldInfo was
        name: str
        type: str
        default: Any
        help: str | None
        choices: tuple | None
        deprecated: str | None
        default_is_literal: bool = True
        required: bool = False
        init: bool = True
        owner: str = "TrainingArguments"

    r = FieldInfo("fp16", "bool", False, None, None, None)
    n = Nt("fp16", "bool", False, None, None, None)
    assert r == n and hash(r) == hash(n) and tuple(r) == tuple(n) and isinstance(r, tuple)
    assert repr(r) == repr(n).replace("Nt(", "FieldInfo(")
    assert (r.name, r.owner, r.init, r[0]) == ("fp16", "TrainingArguments", True, "fp16")
    assert r._replace(deprecated="x") == n._replace(deprecated="x") and r._replace(init=False).init is False
    assert type(r._replace(owner="SFTConfig")) is FieldInfo and r._asdict() == n._asdict()
    assert FieldInfo._fields == Nt._fields
    twin = pickle.loads(pickle.dumps(r))
    assert twin == r and type(twin) is FieldInfo and copy.deepcopy(r) == r
    with pytest.raises(AttributeError):
        r.name = "bf16"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        r.other = 1  # type: ignore[attr-defined]  # no __dict__
    with pytest.raises(TypeError):
        r._replace(nonsense=1)
    assert not hasattr(r, "__dict__") and issubclass(FieldInfo, Row)


def test_the_readers_records_are_not_dataclasses_and_behave_as_they_did():
    """The shell, notebook, Markdown, args-file, reader-problem, framework-CLI and PEFT-use
    records (a repository run imports them: their 23 dataclass definitions were ~23 ms of peft's
    run): records, with the dataclasses' signatures, defaults, equality, hash and repr."""
    import inspect

    import trainlint.knowledge.frameworks as frameworks
    import trainlint.rules.script._peft_common as peft_common
    import trainlint.sources.argsfile as argsfile
    import trainlint.sources.errors as errors
    import trainlint.sources.notebook as notebook
    import trainlint.sources.registry as registry
    import trainlint.sources.shell as shell

    for module in (shell, notebook, registry, errors, argsfile, frameworks, peft_common):
        classes = [v for v in vars(module).values() if inspect.isclass(v) and v.__module__ == module.__name__]
        assert not any(dataclasses.is_dataclass(c) for c in classes), module.__name__
    sp = Span(path="r.sh", line=1, column=1, end_line=1, end_column=5)

    @dataclasses.dataclass
    class DcFlag:  # what Flag was (its fields, in order, with their defaults)
        name: str
        value: str | None
        name_span: Span
        value_span: Span | None
        raw: str
        prefix: str = "--"
        inline: bool = False
        extra_values: list = dataclasses.field(default_factory=list)
        unresolved: bool = False
        expansions: list = dataclasses.field(default_factory=list)
        from_expansion: bool = False
        start: int = 0
        end: int = 0
        name_end: int = 0
        value_start: int = -1
        value_end: int = -1
        _index: object = dataclasses.field(default=None, repr=False, compare=False)

    f = shell.Flag("lr", "1e-4", sp, sp, "--lr 1e-4", start=3, _index=object())
    d = DcFlag("lr", "1e-4", sp, sp, "--lr 1e-4", start=3)
    assert repr(f) == repr(d).replace(type(d).__qualname__, "Flag")
    assert f == shell.Flag("lr", "1e-4", sp, sp, "--lr 1e-4", start=3)  # ``_index`` is not compared
    assert f != shell.Flag("lr", "1e-4", sp, sp, "--lr 1e-4", start=4)
    assert f.extra_values == [] and f.extra_values is not shell.Flag("a", None, sp, None, "--a").extra_values
    with pytest.raises(TypeError):
        hash(f)  # mutable: unhashable, as the dataclass was
    f.later = 1  # type: ignore[attr-defined]  # a ``__dict__`` slot, as a dataclass instance has
    a = shell.Assignment("LR", "1", sp, sp, sp)
    assert (a.exported, a.partial) == (False, None) and hash(a) == hash(shell.Assignment("LR", "1", sp, sp, sp))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.value = "2"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(a)) == a and replace(a, value="2").value == "2"
    p = errors.ReadProblem("duplicate-key", "m", sp)
    assert p.related is None and p == errors.ReadProblem(kind="duplicate-key", message="m", span=sp, related=None)
    assert registry.ReadResult().problems == [] and registry.ReadResult().deferred is not registry.ReadResult().deferred
    assert argsfile.ArgsFile("a.json", None).values == {}
    cli = frameworks.FrameworkCli("trl sft", "SFTConfig", "TrlParser", "config", False, "trl")
    assert cli.redeclared == frozenset() and hash(cli) == hash(replace(cli))
    v = notebook.VLine(2, 1)
    assert (v.opaque, v.shift, v.length, v.subs, v.indent) == ([], None, 0, None, 0)
    with pytest.raises(AttributeError):
        v.other = 1  # type: ignore[attr-defined]  # it was a dataclass with slots
