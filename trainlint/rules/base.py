"""What a rule is.

A rule is a small class whose docstring is its documentation (ruff's sections: *What it does*,
*Why is this bad?*, *Example*, *Use instead*, *Fix safety*, *References*), whose class attributes
are its metadata, whose ``check`` yields findings on a resolved setup, and whose ``cases`` are
the embedded must-flag / must-not-flag examples the test-suite runs.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Iterator, Literal

from trainlint.diagnostics import Diagnostic, Edit, Fix, Related, Severity, Span

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.config import Settings
    from trainlint.setup import Setup

FixSafety = Literal["safe", "unsafe", "none"]


class OptionSpec:
    """One option of a rule: its default, its key in the table (``alias``), its documentation
    and its constraints (``ge``, ``gt``: checked by the schema, ``trainlint.config_schema``)."""

    __slots__ = ("default", "alias", "description", "constraints")

    def __init__(self, default: Any, alias: str | None, description: str, constraints: dict[str, Any]) -> None:
        self.default = default
        self.alias = alias
        self.description = description
        self.constraints = constraints


def option(default: Any, *, alias: str | None = None, description: str = "", **constraints: Any) -> Any:
    """Declare an option of a ``RuleOptions`` class (``threshold: int = option(1, ge=1)``)."""
    return OptionSpec(default, alias, description, constraints)


class RuleOptions:
    """Base of a rule's options (``[tool.trainlint.<rule-name>]``): class attributes declared
    with ``option(...)`` and annotated with their type. An instance holds plain values (the
    defaults unless the user set some); the table is validated by a pydantic model built from
    the declarations only when the user sets some (``Settings.options_for``)."""

    _specs: ClassVar[dict[str, OptionSpec]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        specs = dict(cls._specs)
        for name, value in list(vars(cls).items()):
            if isinstance(value, OptionSpec):
                specs[name] = value
                setattr(cls, name, value.default)
        cls._specs = specs

    @classmethod
    def specs(cls) -> dict[str, OptionSpec]:
        return cls._specs

    @classmethod
    def model_construct(cls, **values: Any) -> RuleOptions:
        """The defaults with ``values`` set, unvalidated."""
        self = cls()
        for name, value in values.items():
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self._specs) + ")"


class NoOptions(RuleOptions):
    pass


class Case:
    """An embedded example. ``files`` maps relative paths to contents (a single ``code`` is
    written as ``train.py``). ``flags`` says whether the rule must report; ``fixed`` (optional)
    is the expected content of ``train.py`` (or of ``fixed_path``) after ``fix --apply``.

    A plain class with a dataclass's ``__init__``, ``__eq__`` and ``__repr__``: every rule module
    builds its cases when imported, and a dataclass definition costs a one-file check ~1 ms."""

    _FIELDS = ("code", "flags", "files", "options", "rule_options", "fixed", "fixed_path", "unsafe", "git_base",
               "note", "severity", "fixable", "message")
    __hash__ = None  # type: ignore[assignment]  # compared by value, like a dataclass

    def __init__(self, code: str = "", flags: bool = True, files: dict[str, str] | None = None,
                 options: dict[str, Any] | None = None, rule_options: dict[str, Any] | None = None,
                 fixed: str | None = None, fixed_path: str = "train.py", unsafe: bool = False,
                 git_base: dict[str, str] | None = None, note: str = "", severity: str = "",
                 fixable: bool | None = None, message: str = "") -> None:
        self.code = code
        self.flags = flags
        self.files: dict[str, str] = {} if files is None else files
        self.options: dict[str, Any] = {} if options is None else options  # CLI-level settings: gpu, gpus, ...
        self.rule_options: dict[str, Any] = {} if rule_options is None else rule_options
        self.fixed = fixed
        self.fixed_path = fixed_path
        self.unsafe = unsafe  # apply unsafe fixes too when checking ``fixed``
        self.git_base = git_base  # files committed before the working copy
        self.note = note
        self.severity = severity  # when set: the severity every finding of the rule must have
        self.fixable = fixable  # when set: whether the findings carry a fix
        self.message = message  # when set: text every finding's message contains (the reason it gives)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._FIELDS)

    def __repr__(self) -> str:
        return "Case(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self._FIELDS) + ")"

    def all_files(self) -> dict[str, str]:
        files = dict(self.files)
        if self.code:
            files.setdefault("train.py", inspect.cleandoc(self.code) + "\n")
        return files


class Rule:
    """Base class; subclasses set the metadata and implement ``check``."""

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    fix_safety: ClassVar[FixSafety] = "none"
    summary: ClassVar[str]  # one line for ``trainlint rules``
    Options: ClassVar[type[RuleOptions]] = NoOptions
    cases: ClassVar[list[Case]] = []
    produced_by_engine: ClassVar[bool] = False  # input problems (TL0xx) come from the readers
    # The names (substrings) of which a walked Python file that nothing links must contain one
    # for this rule to report on it (``trainlint.rules._triggers``). A walked file that holds no
    # trigger of any selected rule is read, never parsed; a one-file run imports only the rules
    # it can trigger. None: not declared (every file the broad pre-filter lets through). A rule
    # may also need one of ``index_words()`` as a whole identifier (below).
    # ``needs``: settings without which the rule never reports (``gpu``).
    triggers: ClassVar[tuple[str, ...] | None] = None
    needs: ClassVar[tuple[str, ...]] = ()
    # False for a rule that reads only what a file other than a Python script gives (a DeepSpeed
    # config: linking reads one only from a file): a workspace of Python files alone never
    # imports or runs it. Its ``triggers`` still decide which walked scripts are parsed, since
    # a script may name such a file.
    python_alone: ClassVar[bool] = True
    # The words (identifiers; in the text a ``-`` between name characters reads as ``_``, as in
    # ``--logging-steps``) of which a setup of Python files only must hold one, besides a
    # trigger, for the rule to report: the fields or names whose written value the rule reports
    # on (``logging_steps``). None for a rule that may report on an absent value or a default
    # (``no eval_strategy set``). A one-file run imports only the rules whose words occur;
    # ``tests/test_rule_words.py`` checks that each rule's must-flag cases stop flagging when
    # every one of its words is renamed, and that selecting by words changes no finding.
    fires_on: ClassVar[tuple[str, ...] | None] = None
    # True for a rule that can report only on a setup with a training call: a TrainingArguments-
    # like site (``Setup.all_sites``: a Python call, a launch line's flags, an args file, a
    # framework CLI's values) or a Trainer call or TrainingArguments call in one of its scripts
    # (``trainer_calls``, ``args_calls``). Every finding of such a rule is reached through one of
    # those (``setup.sites``, ``trainer_contexts``, ``model_flows``, ``pf.trainer_calls``...), so
    # the run skips it on a setup that has none (``trainlint.checking``): a library module or a
    # test file that only imports the libraries. A rule that may report on a config, a launch
    # line, requirements, imports or model loads alone keeps False. A ``SiteRule`` that keeps
    # ``SiteRule.check`` is skipped there without declaring it (it reports on sites only).
    needs_training: ClassVar[bool] = False

    @classmethod
    def index_words(cls) -> dict[str, tuple[str, ...]] | None:
        """For a rule that needs more than a substring: {trigger: names}. The rule reports on a
        Python-only setup only if, for some trigger it contains (a substring, one of
        ``triggers``), one of that trigger's names occurs as a whole identifier: a long list a
        substring test could not afford, such as the names a migration rule knows were removed
        from a package (the trigger). Read by ``scripts/gen_rule_index.py`` (so they may come
        from data files); None: no such lists."""
        return None

    def __init__(self, settings: Settings, options: RuleOptions | None = None) -> None:
        self.settings = settings
        self.options = options if options is not None else self.Options.model_construct()

    # -- to implement -------------------------------------------------------------------

    def check(self, setup: Setup) -> Iterable[Diagnostic]:  # pragma: no cover - abstract
        return ()

    # -- helpers for subclasses ---------------------------------------------------------

    def diagnostic(
        self,
        span: Span,
        message: str,
        *,
        edits: list[Edit] | None = None,
        fix_message: str = "",
        applicability: Literal["safe", "unsafe"] | None = None,
        related: Iterable[Related] = (),
        severity: Severity | None = None,
    ) -> Diagnostic:
        fix = None
        if edits:
            fix = Fix(applicability=applicability or ("unsafe" if self.fix_safety == "unsafe" else "safe"),
                      message=fix_message, edits=edits)
        return Diagnostic(
            code=self.code,
            name=self.name,
            severity=severity or self.severity,
            message=message,
            path=span.path,
            line=span.line,
            column=span.column,
            end_line=span.end_line,
            end_column=span.end_column,
            fix=fix,
            related=list(related),
        )

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def options_doc(cls) -> list[tuple[str, str, Any]]:
        out = []
        for fname, f in cls.Options.specs().items():
            out.append((f.alias or fname.replace("_", "-"), f.description or "", f.default))
        return out


class Facts:
    """What a per-script rule (``ScriptRule``) may know of the setup besides the script: the
    answer of a function of the setup, ``ask(fn, *args)`` (``fn(setup, *args)``: the target
    version, what the project allows, whether the run is a test). The rule never holds the
    setup, so its findings on a script are a function of the script, the run's settings and
    these answers alone: a script in several setups (a module every test imports, a script
    that README commands launch) is checked once for each distinct set of answers
    (``ScriptShare``). An answer is shared only when it is a plain value (``plain``: None, bool,
    int, float, str, bytes, tuples of plain values, frozensets of the scalars), compared by
    type and value (``same``).

    One ``Facts`` per setup keeps each answer (with the notes its reads made, ``reads``);
    ``recording()`` gives a view that also logs every question asked and its answer."""

    __slots__ = ("_setup", "_answers", "_log")

    def __init__(self, setup: Setup, _answers: dict | None = None, _log: list | None = None) -> None:
        self._setup = setup
        self._answers: dict[tuple, tuple[Any, frozenset[str], tuple]] = {} if _answers is None else _answers
        self._log = _log

    def recording(self) -> Facts:
        """A view of the same answers that logs each question (``log``)."""
        return Facts(self._setup, self._answers, [])

    @property
    def log(self) -> list[tuple[Any, tuple, Any]]:
        return self._log if self._log is not None else []

    def ask(self, fn: Any, *args: Any) -> Any:
        """``fn(setup, *args)``, worked out once per setup and question."""
        from trainlint import reads

        try:
            key: tuple = (fn, args)
            hit = self._answers.get(key)
        except TypeError:  # an object of the script (a call, a site): by identity
            key = (fn, tuple(a if _hashable(a) else ("\0id", id(a)) for a in args))
            hit = self._answers.get(key)
        if hit is None:
            with reads.recording() as notes:
                answer = fn(self._setup, *args)
            # the arguments are kept with the answer: the ids of the key stay theirs
            hit = self._answers[key] = (answer, frozenset(notes), args)
        elif hit[1]:
            reads.replay(hit[1])
        if self._log is not None:
            self._log.append((fn, args, hit[0] if plain(hit[0]) else _UNSHARED))
        return hit[0]

    def agrees(self, log: list[tuple[Any, tuple, Any]]) -> bool:
        """Whether this setup answers every question of ``log`` (in its order) as logged."""
        for fn, args, answer in log:
            if answer is _UNSHARED or not same(self.ask(fn, *args), answer):
                return False
        return True


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


_UNSHARED: Any = object()  # a logged answer that is not plain: the log matches no setup
_PLAIN = (type(None), bool, int, float, str, bytes)


def plain(v: Any) -> bool:
    """A value ``Facts`` compares by type and value: None, bool, int, float, str, bytes, and
    tuples and frozensets of such values."""
    t = type(v)
    if t in _PLAIN:
        return True
    if t is tuple:
        return all(plain(x) for x in v)
    if t is frozenset:
        return all(type(x) in _PLAIN for x in v)
    return False


def same(a: Any, b: Any) -> bool:
    """``a == b`` with the same types throughout (``1`` is not ``True``, nor ``1.0``)."""
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is frozenset:  # members of equal frozensets are equal, but may differ in type
        return {(type(x), x) for x in a} == {(type(x), x) for x in b}
    return a == b


class ScriptRule(Rule):
    """A rule whose findings on a setup are, script by script, those of ``check_script``: what
    it reports on one script of the setup, knowing of the setup only what it asks ``facts``
    (``Facts.ask``). The run checks a script once per distinct set of answers and shares the
    findings with every setup that holds the script and answers the same
    (``trainlint.checking``); ``check`` (a setup on its own) runs it on each script."""

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        facts = Facts(setup)
        for pf in setup.scripts:
            yield from self.check_script(pf, facts)

    def check_script(self, pf: Any, facts: Facts) -> Iterable[Diagnostic]:  # pragma: no cover - abstract
        return ()


def iter_python_sites(setup: Setup) -> Iterator[Any]:
    """Every TrainingArguments-like site in the setup (Python calls and launch-line/args-file
    sites alike)."""
    yield from setup.sites
