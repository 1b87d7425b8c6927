"""What a finding is: a code, a location, a message, an optional fix and related locations.

These are the objects every reader and rule produces and every reporter prints. The JSON
output is exactly ``Diagnostic.to_json()`` for each finding (the keys the README lists), and
``Diagnostic.from_json`` reads it back (the findings cache, the process pool).

Plain frozen records (``trainlint.record``: a frozen dataclass's equality, hash, repr and
``replace`` without its generated code): a finding is made by trusted code (the rules), so
there is nothing to validate, and a one-file ``check`` should not pay for building validators.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from trainlint.record import Record, _set, replace

__all__ = ["Applicability", "Diagnostic", "Edit", "Fix", "Related", "Severity", "Span", "input_problem", "internal_error", "replace"]


# Said in a finding judged against the oldest release the data knows because the target
# version is older still (``rules._versioned.target_text``): such a finding is an assumption,
# reported as info (``checking.run_rules``).
OLDER_THAN_DATA = "older than trainlint's data"


class Severity(str, Enum):
    """How bad a finding is. Ordered: info < warning < error."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


Applicability = Literal["safe", "unsafe"]


class Edit(Record, frozen=True):
    """Replace the text between two positions of one file.

    Lines are 1-based, columns 1-based and counted in characters (not bytes). ``end`` is
    exclusive. An insertion has start == end; a deletion has ``content == ""``.
    """

    __slots__ = ("path", "line", "column", "end_line", "end_column", "content", "cell")
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    content: str
    cell: int | None  # notebooks: the cell (1-based, all cells); lines are then within it

    def __init__(self, *, path: str, line: int, column: int, end_line: int, end_column: int, content: str,
                 cell: int | None = None) -> None:
        _set(self, "path", path)
        _set(self, "line", line)
        _set(self, "column", column)
        _set(self, "end_line", end_line)
        _set(self, "end_column", end_column)
        _set(self, "content", content)
        _set(self, "cell", cell)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "cell": self.cell, "line": self.line, "column": self.column,
                "end_line": self.end_line, "end_column": self.end_column, "content": self.content}


class Fix(Record, frozen=True):
    """The edits that fix one finding, and whether they are safe to apply without review."""

    __slots__ = ("applicability", "message", "edits")
    applicability: Applicability
    message: str
    edits: list[Edit]

    def __init__(self, *, applicability: Applicability, message: str = "", edits: list[Edit]) -> None:
        _set(self, "applicability", applicability)
        _set(self, "message", message)
        _set(self, "edits", edits)

    def to_json(self) -> dict[str, Any]:
        return {"applicability": self.applicability, "message": self.message,
                "edits": [e.to_json() for e in self.edits]}


class Related(Record, frozen=True):
    """A second place that takes part in a finding (the other side of a mismatch)."""

    __slots__ = ("path", "line", "column", "message", "cell")
    path: str
    line: int
    column: int
    message: str
    cell: int | None  # notebooks: the cell (1-based, all cells)

    def __init__(self, *, path: str, line: int, column: int, message: str, cell: int | None = None) -> None:
        _set(self, "path", path)
        _set(self, "line", line)
        _set(self, "column", column)
        _set(self, "message", message)
        _set(self, "cell", cell)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "cell": self.cell, "line": self.line, "column": self.column,
                "message": self.message}


class Diagnostic(Record, frozen=True):
    """One finding: which rule, where, what and why, with an optional fix and related places."""

    __slots__ = ("code", "name", "severity", "message", "path", "line", "column", "end_line", "end_column",
                 "fix", "related", "cell")
    code: str
    name: str
    severity: Severity
    message: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    fix: Fix | None
    related: list[Related]
    # notebooks: the cell (1-based, counting every cell, markdown included); ``line`` and
    # ``end_line`` are then lines of that cell's source
    cell: int | None

    def __init__(self, *, code: str, name: str, severity: Severity, message: str, path: str, line: int,
                 column: int, end_line: int, end_column: int, fix: Fix | None = None,
                 related: list[Related] | None = None, cell: int | None = None) -> None:
        _set(self, "code", code)
        _set(self, "name", name)
        _set(self, "severity", severity)
        _set(self, "message", message)
        _set(self, "path", path)
        _set(self, "line", line)
        _set(self, "column", column)
        _set(self, "end_line", end_line)
        _set(self, "end_column", end_column)
        _set(self, "fix", fix)
        _set(self, "related", [] if related is None else related)
        _set(self, "cell", cell)

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        """The finding as the JSON output prints it."""
        return {"code": self.code, "name": self.name, "severity": self.severity.value, "message": self.message,
                "path": self.path, "cell": self.cell, "line": self.line, "column": self.column,
                "end_line": self.end_line,
                "end_column": self.end_column, "fix": None if self.fix is None else self.fix.to_json(),
                "related": [r.to_json() for r in self.related]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Diagnostic:
        """The inverse of :meth:`to_json` (raises KeyError/TypeError/ValueError on other data)."""
        fix = data.get("fix")
        return cls(
            code=str(data["code"]), name=str(data["name"]), severity=Severity(data["severity"]),
            message=str(data["message"]), path=str(data["path"]), line=int(data["line"]),
            column=int(data["column"]), end_line=int(data["end_line"]), end_column=int(data["end_column"]),
            fix=None if fix is None else Fix(
                applicability=_applicability(fix["applicability"]), message=str(fix.get("message", "")),
                edits=[Edit(**{k: e[k] for k in _EDIT_KEYS}, cell=_cell(e)) for e in fix["edits"]]),
            related=[Related(**{k: r[k] for k in _RELATED_KEYS}, cell=_cell(r)) for r in data.get("related", [])],
            cell=_cell(data),
        )


_EDIT_KEYS = ("path", "line", "column", "end_line", "end_column", "content")
_RELATED_KEYS = ("path", "line", "column", "message")


def _cell(data: dict[str, Any]) -> int | None:
    cell = data.get("cell")
    return None if cell is None else int(cell)


def _applicability(value: Any) -> Applicability:
    if value not in ("safe", "unsafe"):
        raise ValueError(f"not a fix applicability: {value!r}")
    return value


class Span(Record, frozen=True):  # slots: a large file holds hundreds of thousands
    """A region of a file: where a value, a key or a flag is written."""

    __slots__ = ("path", "line", "column", "end_line", "end_column")
    path: str
    line: int
    column: int
    end_line: int
    end_column: int

    def __init__(self, *, path: str, line: int, column: int, end_line: int, end_column: int) -> None:
        _set(self, "path", path)
        _set(self, "line", line)
        _set(self, "column", column)
        _set(self, "end_line", end_line)
        _set(self, "end_column", end_column)

    def edit(self, content: str) -> Edit:
        return Edit(
            path=self.path,
            line=self.line,
            column=self.column,
            end_line=self.end_line,
            end_column=self.end_column,
            content=content,
        )

    def related(self, message: str) -> Related:
        return Related(path=self.path, line=self.line, column=self.column, message=message)

    def label(self) -> str:
        return f"{self.path}:{self.line}"


REPORT_URL = "https://github.com/trainlint/trainlint/issues"


def internal_error(path: str, where: str, exc: BaseException) -> Diagnostic:
    """TL000: a bug in trainlint (a reader, linking, a rule), reported for ``path`` so that the
    run goes on with everything else."""
    import traceback
    from pathlib import Path

    tb = traceback.extract_tb(exc.__traceback__)
    at = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
    return Diagnostic(
        code="TL000", name="internal-error", severity=Severity.ERROR,
        message=f"internal error in {where}: {type(exc).__name__}: {exc}{at}. "
                f"This is a trainlint bug; please report it at {REPORT_URL}",
        path=path, line=1, column=1, end_line=1, end_column=1,
    )


def input_problem(code: str, name: str, path: str, message: str, line: int = 1, column: int = 1,
                  severity: Severity = Severity.ERROR) -> Diagnostic:
    return Diagnostic(code=code, name=name, severity=severity, message=message, path=path,
                      line=max(1, line), column=max(1, column), end_line=max(1, line),
                      end_column=max(1, column) + 1)
