"""The resolved training setup: every effective value with where it was set.

A *setup* is what one training run sees: the TrainingArguments values (from a Python call, a
launch line's flags or an args file), the world size, the target GPU and the linked
DeepSpeed/accelerate configs. Rules read a setup; they never re-read files.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainlint.diagnostics import Span
from trainlint.record import Record, _set

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.knowledge.gpus import Gpu
    from trainlint.sources.python import PythonFile, TrainingArgsCall


class _Unknown:
    """A value that could not be resolved statically. Never guessed, never compared."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN: Any = _Unknown()


# Where a value comes from. Rules use it to word messages and to choose the fix's file kind.
PYTHON = "python"  # a keyword of a TrainingArguments(...) call
FLAG = "flag"  # a --flag on a launch line
ARGSFILE = "argsfile"  # a key of an HF args JSON/YAML file
DEEPSPEED = "deepspeed"
ACCELERATE = "accelerate"
DEFAULT = "default"  # the library's default for an unset field
OPTION = "option"  # a trainlint option (--gpus, [tool.trainlint])


class Value(Record, frozen=True):  # slots: one per keyword of every call of a file
    """One effective setting and its provenance."""

    __slots__ = ("value", "origin", "span", "key_span", "note", "name", "use_span", "shared", "key_text")
    value: Any
    origin: str
    span: Span | None  # where the value is written
    key_span: Span | None  # where its name is written (keyword, flag, key)
    note: str  # e.g. "default of transformers 5.24"
    name: str  # the field name as written (keyword, flag or key)
    # Python only: when the literal lives elsewhere (a constant, a dict entry), ``use_span`` is
    # the expression at the call site, and ``shared`` says the literal also feeds other uses,
    # so a fix must edit the use site rather than the shared literal.
    use_span: Span | None
    shared: bool
    key_text: str  # the key exactly as written: fp16, "fp16", --fp16

    def __init__(self, value: Any, origin: str, span: Span | None = None, key_span: Span | None = None,
                 note: str = "", name: str = "", use_span: Span | None = None, shared: bool = False,
                 key_text: str = "") -> None:
        _set(self, "value", value)
        _set(self, "origin", origin)
        _set(self, "span", span)
        _set(self, "key_span", key_span)
        _set(self, "note", note)
        _set(self, "name", name)
        _set(self, "use_span", use_span)
        _set(self, "shared", shared)
        _set(self, "key_text", key_text)

    def rename_edit(self, new_name: str):
        """An edit that renames the key/keyword/flag in place, keeping its quoting."""
        if self.key_span is None:
            return None
        text = self.key_text or self.name
        return self.key_span.edit(text.replace(self.name, new_name, 1) if self.name in text else new_name)

    @property
    def known(self) -> bool:
        return self.value is not UNKNOWN

    def edit_span(self) -> Span | None:
        """Where a fix that changes this value should write."""
        if self.shared and self.use_span is not None:
            return self.use_span
        return self.span

    def where(self) -> str:
        if self.span is not None:
            return f"{Path(self.span.path).name}:{self.span.line}"
        return self.note or self.origin

    def describe(self) -> str:
        """``per_device_train_batch_size=8 (run.sh:9)``."""
        return f"{self.name}={self.value!r} ({self.where()})"


def default_value(name: str, value: Any, note: str) -> Value:
    return Value(value=value, origin=DEFAULT, note=note, name=name)


# Who reads a site's values (issue: "know the consumer"). Only LIBRARY consumers are judged by
# the rules about TrainingArguments values; the others are kept for messages and rules that
# say what the project's own code does with them.
LIBRARY = "library"  # a transformers / TRL arguments class at the target version
PROJECT = "project"  # the repository's own dataclass, loop or config reader
UNKNOWN_CONSUMER = "unknown"  # nothing in the repository says who reads it


class Consumer(Record, frozen=True):
    """Who consumes the values of one site.

    ``kind`` is LIBRARY, PROJECT or UNKNOWN_CONSUMER. For LIBRARY, ``class_name`` is the
    arguments class (``TrainingArguments``, ``SFTConfig``...) and ``package`` the library whose
    target version decides its fields (``transformers`` or ``trl``). ``via`` says how the values
    reach it, for messages: ``"a TrainingArguments(...) call"``, ``"HfArgumentParser in
    train.py"``, ``"TrlParser --config in sft.py"``, ``"llamafactory-cli train"``; ``where`` is
    the ``file:line`` of that reader when known. ``frameworks`` names wrappers that patch the
    class (``unsloth``) and ``extra_fields`` the names they (or the parser's other dataclasses)
    accept beyond the class's own fields; ``extra_fields_known`` is False when the parser reads
    into other dataclasses whose fields cannot be known (a library's ``ModelConfig``), so
    "unknown argument" cannot be told there. ``strict`` is False when the reader tolerates
    unknown keys (``return_remaining_strings=True``, ``parse_known_args``,
    ``allow_extra_keys=True``)."""

    __slots__ = ("kind", "class_name", "package", "via", "where", "frameworks", "extra_fields",
                 "extra_fields_known", "strict", "subclass", "requires")
    kind: str
    class_name: str
    package: str
    via: str
    where: str
    frameworks: tuple[str, ...]
    extra_fields: frozenset[str]
    extra_fields_known: bool
    strict: bool
    subclass: str  # the repository's own subclass of ``class_name`` that is instantiated
    # version guards of the code that builds the site (``require_version("trl>=0.8.6,<=0.9.6")``
    # before it): the site is judged only when the target versions satisfy them
    requires: tuple[str, ...]

    def __init__(self, kind: str, class_name: str = "", package: str = "", via: str = "", where: str = "",
                 frameworks: tuple[str, ...] = (), extra_fields: frozenset[str] = frozenset(),
                 extra_fields_known: bool = True, strict: bool = True, subclass: str = "",
                 requires: tuple[str, ...] = ()) -> None:
        _set(self, "kind", kind)
        _set(self, "class_name", class_name)
        _set(self, "package", package)
        _set(self, "via", via)
        _set(self, "where", where)
        _set(self, "frameworks", frameworks)
        _set(self, "extra_fields", extra_fields)
        _set(self, "extra_fields_known", extra_fields_known)
        _set(self, "strict", strict)
        _set(self, "subclass", subclass)
        _set(self, "requires", requires)

    @property
    def judged(self) -> bool:
        """Whether rules about TrainingArguments values look at the site."""
        return self.kind == LIBRARY

    def describe(self) -> str:
        """``SFTConfig (trl) through TrlParser --config in sft.py`` / ``the project's own
        TrainConfig (config.py:12)`` / ``no reader found``."""
        if self.kind == LIBRARY:
            who = f"{self.class_name} ({self.package or 'transformers'})"
            if self.subclass:
                who = f"the project's {self.subclass} (a subclass of {self.package or 'transformers'}'s {self.class_name})"
            if self.frameworks:
                who += " patched by " + ", ".join(self.frameworks)
            return f"{who} through {self.via}" if self.via else who
        if self.kind == PROJECT:
            who = f"the project's own {self.class_name}" if self.class_name else "the project's own code"
            if self.via:
                who += f" ({self.via})"
            return who
        return self.via or "no Hugging Face reader found in the repository"


def library_consumer(class_name: str, via: str = "", where: str = "", **kw: Any) -> Consumer:
    """A transformers/TRL arguments class as consumer (the package follows from the class)."""
    package = "transformers" if class_name in ("TrainingArguments", "Seq2SeqTrainingArguments") else "trl"
    return Consumer(kind=LIBRARY, class_name=class_name, package=kw.pop("package", package), via=via,
                    where=where, **kw)


def project_consumer(class_name: str = "", via: str = "", where: str = "") -> Consumer:
    return Consumer(kind=PROJECT, class_name=class_name, via=via, where=where)


def unknown_consumer(via: str = "") -> Consumer:
    return Consumer(kind=UNKNOWN_CONSUMER, via=via)


class ArgsSite(Record):
    """One place that builds TrainingArguments: a Python call, or flags/args file fed to an
    HfArgumentParser script. ``values`` holds what is written there; ``open_ended`` says an
    unresolved ``**kwargs`` (or unknown CLI) may set any other field."""

    __slots__ = ("path", "class_name", "values", "open_ended", "span", "call", "assumed", "assumed_certain",
                 "consumer", "__dict__")
    path: str
    class_name: str  # TrainingArguments, Seq2SeqTrainingArguments, SFTConfig, ...
    values: dict[str, Value]
    open_ended: bool
    span: Span | None
    call: TrainingArgsCall | None  # the Python call, when it is one
    # Set when the consumer is not seen but assumed: the script is not in this repository
    # ("script not in this repository: read as HfArgumentParser would"), or a framework CLI
    # parses the values ("llamafactory-cli train: read as its HfArgumentParser would").
    # Findings on the site say so; ``assumed_certain`` False caps them at warning (the
    # parser is a guess from the flags), True keeps the rule's severity (a known parser).
    assumed: str
    assumed_certain: bool
    # who reads the values; None means the library class ``class_name`` itself (a direct
    # call, or flags/a file fed to an HfArgumentParser built with it)
    consumer: Consumer | None

    def __init__(self, path: str, class_name: str, values: dict[str, Value] | None = None, open_ended: bool = False,
                 span: Span | None = None, call: TrainingArgsCall | None = None, assumed: str = "",
                 assumed_certain: bool = False, consumer: Consumer | None = None) -> None:
        self.path = path
        self.class_name = class_name
        self.values = {} if values is None else values
        self.open_ended = open_ended
        self.span = span
        self.call = call
        self.assumed = assumed
        self.assumed_certain = assumed_certain
        self.consumer = consumer

    @property
    def reader(self) -> Consumer:
        """The site's consumer (``consumer``, else the library class ``class_name``)."""
        if self.consumer is not None:
            return self.consumer
        return library_consumer(self.class_name, via=f"a {self.class_name}(...) call" if self.call is not None else "")

    @property
    def judged(self) -> bool:
        """Whether rules about TrainingArguments values judge this site (its consumer is a
        Hugging Face/TRL arguments class). The one policy every rule follows, through
        ``Setup.sites``."""
        c = self.consumer
        return c is None or c.kind == LIBRARY  # no consumer: the library class ``class_name``

    def get(self, name: str) -> Value | None:
        return self.values.get(name)

    def known(self, name: str) -> Any:
        """The value if it is written and resolved, else UNKNOWN."""
        v = self.values.get(name)
        return v.value if v is not None else UNKNOWN

    def is_generation_class(self) -> bool:
        return "Seq2Seq" in self.class_name


class Setup(Record):
    """Everything one training run is configured by.

    ``sites`` are the TrainingArguments-like sites whose consumer is a Hugging Face/TRL class
    (``ArgsSite.judged``): every rule about TrainingArguments values reads them, so the
    consumer policy holds in this one place. ``all_sites`` also holds the sites read by the
    project's own code or by nothing known (for messages that say so)."""

    __slots__ = ("root", "scripts", "all_sites", "world_size", "gpu", "files", "extra", "transformers_version",
                 "trl_version", "versions", "__dict__")
    root: Path
    scripts: list[PythonFile]
    all_sites: list[ArgsSite]
    world_size: Value | None
    gpu: Gpu | None
    files: list[str]
    extra: dict[str, Any]  # linked configs by kind
    # The target library versions (``value`` is the version string, ``note`` where it came
    # from: "installed", "--transformers-version", "requirements.txt:3", "newest known", ...).
    transformers_version: Value | None
    trl_version: Value | None
    versions: dict[str, Value | None]  # resolved targets by package (None: unknown)

    def __init__(self, root: Path, scripts: list[PythonFile] | None = None, sites: list[ArgsSite] | None = None,
                 world_size: Value | None = None, gpu: Gpu | None = None, files: list[str] | None = None,
                 extra: dict[str, Any] | None = None, transformers_version: Value | None = None,
                 trl_version: Value | None = None, versions: dict[str, Value] | None = None) -> None:
        self.root = root
        self.scripts = list(scripts) if scripts is not None else []
        self.all_sites = list(sites) if sites is not None else []
        self.world_size = world_size
        self.gpu = gpu
        self.files = files if files is not None else []
        self.extra = extra if extra is not None else {}
        self.transformers_version = transformers_version
        self.trl_version = trl_version
        self.versions = versions if versions is not None else {}

    @property
    def sites(self) -> list[ArgsSite]:
        """The sites whose values a Hugging Face/TRL class reads at the target versions (see
        the class docstring): a site built by code that requires other versions
        (``Consumer.requires``) is not judged against these targets."""
        return [s for s in self.all_sites if self.judges(s)]

    def judges(self, site: ArgsSite) -> bool:
        """Whether rules judge ``site`` (it is one of ``sites``): for rules that reach a site
        through a script's calls rather than through ``sites``."""
        c = site.consumer  # None: the library class itself, which requires nothing (``reader``)
        if not (c is None or (c.kind == LIBRARY and (not c.requires or self._satisfied(c.requires)))):
            return False
        return self._class_at_target(site.class_name)

    def _class_at_target(self, class_name: str) -> bool:
        """Whether the TRL class ``class_name`` exists in the target TRL release (a
        transformers class, or an unknown target, counts as present). A class the target no
        longer (or not yet) has reads nothing there: the import fails (``removed-import``),
        and which release the values were written for is not known, so they are not judged."""
        trl = self.target_trl
        if not trl or not class_name.endswith("Config"):
            return True
        present = _TRL_CLASSES_AT.get(trl)
        if present is None:
            from trainlint.knowledge import training_args as ta

            if not ta.is_trl_class(class_name):
                return True
            try:
                present = _TRL_CLASSES_AT[trl] = frozenset(ta.trl_classes(trl))
            except Exception:  # noqa: BLE001 - a target the data cannot place: judge as before
                return True
        if class_name in present:
            return True
        from trainlint.knowledge import training_args as ta

        return not ta.is_trl_class(class_name)

    def target_of(self, package: str) -> str | None:
        if package == "transformers":
            return self.target_transformers
        if package == "trl":
            return self.target_trl
        v = self.versions.get(package)
        if v is None and package not in self.versions:
            # another package (peft, accelerate, deepspeed): resolved on first use, as the
            # targets are: the project's declaration (the installed version when it satisfies
            # it), else the installed one; unknown (None) when neither says
            from trainlint import reads
            from trainlint.knowledge.versions import known_releases, resolve_version

            root = self.root
            rv = reads.kept(("target_of", package, str(root)), lambda: resolve_version(
                package, root, known=lambda: known_releases(package))) if root is not None else None
            v = Value(value=rv.version, origin=OPTION, name=package, note=rv.source) if rv is not None else None
            self.versions[package] = v  # type: ignore[assignment]
        return v.value if v is not None else None

    def _satisfied(self, requires: tuple[str, ...]) -> bool:
        from trainlint.knowledge.pep440 import InvalidVersion, Version
        from trainlint.knowledge.versions import parse_requirement

        for text in requires:
            req = parse_requirement(text)
            if req is None:
                continue
            try:
                target = self.target_of(req.name.lower())
                if target and not req.specifier.contains(Version(target), prereleases=True):
                    return False
            except InvalidVersion:
                continue
        return True

    @sites.setter
    def sites(self, value: list[ArgsSite]) -> None:
        self.all_sites = list(value)

    @property
    def unjudged_sites(self) -> list[ArgsSite]:
        """Sites read by the project's own code or by no known reader."""
        return [s for s in self.all_sites if not s.judged]

    def transformers_tuple(self) -> tuple[int, int]:
        """(major, minor) of the target transformers version; the newest version the data
        knows when none was resolved (rules that depend on the version then assume it)."""
        text = self.target_transformers
        if not text:
            from trainlint.knowledge.training_args import newest

            text = newest()
        return _major_minor(str(text))

    @property
    def target_transformers(self) -> str | None:
        return self.transformers_version.value if self.transformers_version is not None else None

    @property
    def target_trl(self) -> str | None:
        return self.trl_version.value if self.trl_version is not None else None

    @property
    def world_size_value(self) -> int | None:
        if self.world_size is None or not isinstance(self.world_size.value, int):
            return None
        return self.world_size.value


_MAJOR_MINOR: dict[str, tuple[int, int]] = {}
_TRL_CLASSES_AT: dict[str, frozenset[str]] = {}  # target TRL release -> the config classes it has


def _major_minor(text: str) -> tuple[int, int]:
    """``"4.46.0"`` -> (4, 46) (digits of the first two parts; once per text: rules ask per site)."""
    found = _MAJOR_MINOR.get(text)
    if found is None:
        parts = [int("".join(ch for ch in p if ch.isdigit()) or 0) for p in text.split(".")[:2]]
        found = (parts + [0, 0])[0], (parts + [0, 0])[1]
        if len(_MAJOR_MINOR) < 1024:
            _MAJOR_MINOR[text] = found
    return found
