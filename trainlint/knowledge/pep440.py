"""PEP 440 versions and specifier sets for the plain case, without importing ``packaging``.

Importing ``packaging.specifiers`` and ``packaging.version`` costs ~10 ms of a one-file
``check`` (their regular expressions are compiled at import), and every pin trainlint reads
is a plain one: release numbers (``4.46.0``) under ``==``, ``!=``, ``<=``, ``>=``, ``<``, ``>``
and ``~=``, against the plain releases of the data files. :func:`Version` and
:func:`SpecifierSet` answer that case here, exactly as ``packaging`` does (a test compares
every known release against specifier sets built from them, in both ways); anything else (a
pre-, post- or dev-release, a local version, an epoch, a wildcard, ``===``, ``v1.0``) is
handed to ``packaging``, imported then. Objects of both kinds compare and mix: a plain set
takes a ``packaging`` version and the other way round (:func:`SpecifierSet` wraps a
``packaging`` set so that it takes a :class:`Release`).

What the version code reads of them is what it read of ``packaging``'s: a set's clauses
(``operator``, ``version``, in the order written until ``str()`` sorts them, as
``packaging`` does), ``len``, ``str``, ``contains(version, prereleases=...)``; a version's
order, ``str`` and ``release``.
"""

from __future__ import annotations

import operator as _op
import sys
from typing import Any, Iterator

__all__ = ["InvalidSpecifier", "InvalidVersion", "Release", "SpecifierSet", "Version"]


class InvalidVersion(ValueError):
    """Not a PEP 440 version (``packaging.version.InvalidVersion``'s message)."""


class InvalidSpecifier(ValueError):
    """Not a PEP 440 specifier set (``packaging.specifiers.InvalidSpecifier``'s message)."""


def _plain(text: str) -> tuple[int, ...] | None:
    """The release numbers of ``text`` when it is only ASCII digits and dots (``4.46.0``)."""
    parts = text.split(".")
    for p in parts:
        if not p or not p.isascii() or not p.isdigit():
            return None
    return tuple(int(p) for p in parts)


def _stripped(release: tuple[int, ...]) -> tuple[int, ...]:
    end = len(release)
    while end > 1 and release[end - 1] == 0:
        end -= 1
    return release[:end]


def _packaging_version(text: str) -> Any:
    from packaging.version import InvalidVersion as _Invalid
    from packaging.version import Version as _Version

    try:
        return _Version(text)
    except _Invalid as e:
        raise InvalidVersion(str(e)) from None


def _is_packaging_version(obj: Any) -> bool:
    mod = sys.modules.get("packaging.version")
    return mod is not None and isinstance(obj, mod.Version)


class Release:
    """A plain release version (``4.46.0``): ordered and equal as ``packaging.version.Version``
    (``4.40 == 4.40.0``), printed as it prints (``04.40`` -> ``4.40``)."""

    __slots__ = ("release", "_key")
    epoch = 0
    pre = post = dev = local = None
    is_prerelease = is_postrelease = is_devrelease = False

    def __init__(self, release: tuple[int, ...]) -> None:
        self.release = release
        self._key = _stripped(release)

    def __str__(self) -> str:
        return ".".join(map(str, self.release))

    def __repr__(self) -> str:
        return f"<Version({str(self)!r})>"

    @property
    def public(self) -> str:
        return str(self)

    base_version = public

    @property
    def major(self) -> int:
        return self.release[0]

    @property
    def minor(self) -> int:
        return self.release[1] if len(self.release) > 1 else 0

    @property
    def micro(self) -> int:
        return self.release[2] if len(self.release) > 2 else 0

    def __hash__(self) -> int:
        return hash(self._key)

    def _compare(self, other: Any, op: Any) -> Any:
        if other.__class__ is Release:
            return op(self._key, other._key)
        if _is_packaging_version(other):
            return op(_packaging_version(str(self)), other)
        return NotImplemented

    def __eq__(self, other: object) -> Any:
        return self._compare(other, _op.eq)

    def __ne__(self, other: object) -> Any:
        return self._compare(other, _op.ne)

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, _op.lt)

    def __le__(self, other: Any) -> Any:
        return self._compare(other, _op.le)

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, _op.gt)

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, _op.ge)


def Version(text: str) -> Any:  # noqa: N802 - stands for packaging.version.Version
    """A :class:`Release` for a plain version, else ``packaging.version.Version(text)``;
    raises :class:`InvalidVersion` for what is not a version."""
    release = _plain(text) if isinstance(text, str) else None
    if release is not None:
        return Release(release)
    return _packaging_version(text)


_OPERATORS = ("~=", "==", "!=", "<=", ">=", "<", ">")


class _Clause:
    """One plain clause (``>=4.40``): ``operator`` and ``version`` as ``packaging``'s
    ``Specifier`` gives them."""

    __slots__ = ("operator", "version", "_release", "_key")

    def __init__(self, operator: str, version: str, release: tuple[int, ...]) -> None:
        self.operator = operator
        self.version = version
        self._release = release
        self._key = _stripped(release)

    def __str__(self) -> str:
        return f"{self.operator}{self.version}"

    def __repr__(self) -> str:
        return f"<Specifier({str(self)!r})>"

    def __hash__(self) -> int:
        return hash((self.operator, self._key))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Clause):
            return (self.operator, self._key) == (other.operator, other._key)
        return NotImplemented

    def admits(self, v: Release) -> bool:
        key, op = v._key, self.operator
        if op == ">=":
            return key >= self._key
        if op == "<":
            return key < self._key
        if op == "<=":
            return key <= self._key
        if op == ">":
            return key > self._key
        if op == "==":
            return key == self._key
        if op == "!=":
            return key != self._key
        # ~=X.Y.Z: >=X.Y.Z and ==X.Y.* (the candidate's release padded with zeros to the prefix)
        prefix = self._release[:-1]
        head = v.release[:len(prefix)]
        head = head + (0,) * (len(prefix) - len(head))
        return key >= self._key and head == prefix


def _clause(text: str) -> _Clause | None:
    for op in _OPERATORS:
        if text.startswith(op):
            if op == "==" and text.startswith("==="):
                return None
            version = text[len(op):].strip()
            release = _plain(version)
            if release is None or (op == "~=" and len(release) < 2):
                return None
            return _Clause(op, version, release)
    return None


class _PlainSet:
    """A specifier set of plain clauses (see the module docstring)."""

    __slots__ = ("_specs", "_canonical")

    def __init__(self, specs: list[_Clause]) -> None:
        self._specs = tuple(specs)
        self._canonical = len(specs) <= 1

    def _canonical_specs(self) -> tuple[_Clause, ...]:
        if not self._canonical:  # as packaging: sorted by text, duplicates dropped, from now on
            self._specs = tuple(dict.fromkeys(sorted(self._specs, key=str)))
            self._canonical = True
        return self._specs

    def __str__(self) -> str:
        return ",".join(str(s) for s in self._canonical_specs())

    def __repr__(self) -> str:
        return f"<SpecifierSet({str(self)!r})>"

    def __len__(self) -> int:
        return len(self._specs)

    def __iter__(self) -> Iterator[_Clause]:
        return iter(self._specs)

    def __hash__(self) -> int:
        return hash(self._canonical_specs())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _PlainSet):
            return self._canonical_specs() == other._canonical_specs()
        if isinstance(other, _Packaged):
            return self._packaging() == other._set
        mod = sys.modules.get("packaging.specifiers")
        if mod is not None and isinstance(other, mod.SpecifierSet):
            return self._packaging() == other
        return NotImplemented

    @property
    def prereleases(self) -> bool | None:
        return None  # no clause names a pre-release

    def _packaging(self) -> Any:
        from packaging.specifiers import SpecifierSet as _Set

        return _Set(",".join(str(s) for s in self._specs))

    def contains(self, item: Any, prereleases: bool | None = None, installed: bool | None = None) -> bool:
        if item.__class__ is str:
            release = _plain(item)
            item = Release(release) if release is not None else item
        if item.__class__ is Release:
            return all(s.admits(item) for s in self._specs)
        return self._packaging().contains(item, prereleases=prereleases, installed=installed)

    def __contains__(self, item: Any) -> bool:
        return self.contains(item)


class _Packaged:
    """A ``packaging`` specifier set that also takes a :class:`Release`."""

    __slots__ = ("_set",)

    def __init__(self, pset: Any) -> None:
        self._set = pset

    def contains(self, item: Any, prereleases: bool | None = None, installed: bool | None = None) -> bool:
        if item.__class__ is Release:
            item = _packaging_version(str(item))
        return self._set.contains(item, prereleases=prereleases, installed=installed)

    def __contains__(self, item: Any) -> bool:
        return self.contains(item)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._set)

    def __len__(self) -> int:
        return len(self._set)

    def __str__(self) -> str:
        return str(self._set)

    def __repr__(self) -> str:
        return repr(self._set)

    def __hash__(self) -> int:
        return hash(self._set)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Packaged):
            return self._set == other._set
        if isinstance(other, _PlainSet):
            return other == self
        return self._set == other

    @property
    def prereleases(self) -> bool | None:
        return self._set.prereleases


def SpecifierSet(text: str = "") -> Any:  # noqa: N802 - stands for packaging.specifiers.SpecifierSet
    """A specifier set read as ``packaging.specifiers.SpecifierSet(text)`` reads it: plain
    clauses here, anything else by ``packaging``; raises :class:`InvalidSpecifier`."""
    pieces = [s.strip() for s in text.split(",") if s.strip()]
    clauses = [_clause(p) for p in pieces]
    if all(c is not None for c in clauses):
        return _PlainSet(clauses)  # type: ignore[arg-type]
    return wrap(text)


def wrap(spec: Any) -> Any:
    """``packaging``'s set for ``spec`` (a text or a ``packaging`` set), taking :class:`Release`
    versions too."""
    if isinstance(spec, (_PlainSet, _Packaged)):
        return spec
    if isinstance(spec, str):
        from packaging.specifiers import InvalidSpecifier as _Invalid
        from packaging.specifiers import SpecifierSet as _Set

        try:
            spec = _Set(spec)
        except _Invalid as e:
            raise InvalidSpecifier(str(e)) from None
    return _Packaged(spec)
