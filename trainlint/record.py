"""Records: plain classes with a dataclass's equality, hash, repr and ``replace``; rows:
tuples with a ``NamedTuple``'s named fields.

A ``@dataclass`` definition compiles 4-7 generated methods with ``exec`` when its module is
imported (~1 ms each class, about 30 ms of a one-file ``check`` for the records on that path).
The records of the one-file path subclass :class:`Record` instead: each writes its own
``__slots__`` (the fields, in order) and ``__init__`` (so making one costs what a dataclass's
generated ``__init__`` costs), and gets from here what the dataclass generated:

- ``==`` field by field between two records of the same class (``NotImplemented`` otherwise);
- ``hash`` from the fields for a ``frozen`` record; a mutable one is unhashable;
- ``repr`` ``Name(field=value, ...)``;
- ``replace(record, **changes)`` (this module's, which also takes a dataclass) and ``copy``,
  ``pickle`` (a frozen record refuses ``setattr`` after ``__init__``, as a frozen dataclass).

A mutable record that may be given other attributes later names ``"__dict__"`` among its
slots. ``frozen`` records set their fields in ``__init__`` with ``object.__setattr__`` (as a frozen
dataclass's generated ``__init__`` does). Fields left out of comparison and repr are named in
``_hidden``.

A ``typing.NamedTuple`` class costs ~0.4 ms to define (``namedtuple`` builds its ``__new__``
with ``eval``). :class:`Row` subclasses name their ``_fields`` and write their ``__new__``
(``tuple.__new__(cls, (a, b))``); the named accessors, ``repr``, ``_replace``, ``_asdict``
and pickling are namedtuple's; equality and hash are the tuple's.
"""

from __future__ import annotations

from collections import _tuplegetter  # type: ignore[attr-defined]  # namedtuple's field accessor
from operator import attrgetter
from typing import Any, ClassVar

__all__ = ["Record", "Row", "replace"]

_set = object.__setattr__


class Record:
    """Base of the hand-written records (see the module docstring)."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _compared: ClassVar[tuple[str, ...]] = ()
    _hidden: ClassVar[tuple[str, ...]] = ()
    _frozen: ClassVar[bool] = False

    def __init_subclass__(cls, frozen: bool = False, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        names: list[str] = []
        for c in reversed(cls.__mro__):
            slots = c.__dict__.get("__slots__", ())
            names += [s for s in ((slots,) if isinstance(slots, str) else slots)
                      if s not in ("__dict__", "__weakref__") and s not in names]
        cls._fields = tuple(names)
        cls._compared = tuple(n for n in names if n not in cls._hidden)
        get = attrgetter(*cls._compared) if cls._compared else (lambda _obj: ())
        # the compared fields as a tuple (``attrgetter`` of one name gives the value itself)
        cls._key = staticmethod((lambda obj: (get(obj),)) if len(cls._compared) == 1 else get)  # type: ignore[attr-defined]
        cls._frozen = frozen or cls._frozen
        if cls._frozen:
            if "__hash__" not in cls.__dict__:
                cls.__hash__ = Record._hash  # type: ignore[method-assign]
            cls.__setattr__ = Record._frozen_setattr  # type: ignore[method-assign]
            cls.__delattr__ = Record._frozen_delattr  # type: ignore[method-assign]
        elif "__hash__" not in cls.__dict__:
            cls.__hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            key = self._key  # type: ignore[attr-defined]
            return key(self) == key(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def _hash(self) -> int:
        return hash(self._key(self))  # type: ignore[attr-defined]

    def _frozen_setattr(self, name: str, value: Any) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def _frozen_delattr(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        return f"{self.__class__.__qualname__}(" + ", ".join(
            f"{n}={getattr(self, n)!r}" for n in self._fields if n not in self._hidden) + ")"

    def __replace__(self, **changes: Any) -> Any:
        for n in self._fields:
            if n not in changes:
                changes[n] = getattr(self, n)
        return self.__class__(**changes)

    def __reduce__(self) -> tuple:
        values = tuple(getattr(self, n) for n in self._fields)
        extra = getattr(self, "__dict__", None)  # a record with a ``__dict__`` slot: attributes set later
        return (_rebuild, (self.__class__, values, extra)) if extra else (_rebuild, (self.__class__, values))


def _rebuild(cls: type, values: tuple, extra: dict | None = None) -> Any:
    obj = object.__new__(cls)
    for n, v in zip(cls._fields, values):  # type: ignore[attr-defined]
        _set(obj, n, v)
    if extra:
        obj.__dict__.update(extra)
    return obj


def replace(obj: Any, /, **changes: Any) -> Any:
    """A copy of ``obj`` with ``changes``: a :class:`Record` or a dataclass instance
    (``dataclasses.replace``)."""
    if isinstance(obj, Record):
        return obj.__replace__(**changes)
    import dataclasses

    return dataclasses.replace(obj, **changes)


class Row(tuple):
    """Base of the hand-written named tuples (see the module docstring)."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        for i, name in enumerate(cls._fields):
            setattr(cls, name, _tuplegetter(i, f"Alias for field number {i}"))

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(" + ", ".join(
            f"{n}={v!r}" for n, v in zip(self._fields, self)) + ")"

    def _replace(self, **changes: Any) -> Any:
        values = [changes.pop(n, v) for n, v in zip(self._fields, self)]
        if changes:
            raise TypeError(f"Got unexpected field names: {list(changes)!r}")
        return tuple.__new__(self.__class__, values)

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self))

    def __getnewargs__(self) -> tuple:
        return tuple(self)
