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


def iter_python_sites(setup: Setup) -> Iterator[Any]:
    """Every TrainingArguments-like site in the setup (Python calls and launch-line/args-file
    sites alike)."""
    yield from setup.sites
