"""What a finding is: a code, a location, a message, an optional fix and related locations.

These are the objects every reader and rule produces and every reporter prints. The JSON
output is exactly ``Diagnostic.model_dump(mode="json")`` for each finding.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Severity(str, Enum):
    """How bad a finding is. Ordered: info < warning < error."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


Applicability = Literal["safe", "unsafe"]


class Edit(BaseModel):
    """Replace the text between two positions of one file.

    Lines are 1-based, columns 1-based and counted in characters (not bytes). ``end`` is
    exclusive. An insertion has start == end; a deletion has ``content == ""``.
    """

    model_config = ConfigDict(frozen=True)

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    content: str


class Fix(BaseModel):
    model_config = ConfigDict(frozen=True)

    applicability: Applicability
    message: str = ""
    edits: list[Edit]


class Related(BaseModel):
    """A second place that takes part in a finding (the other side of a mismatch)."""

    model_config = ConfigDict(frozen=True)

    path: str
    line: int
    column: int
    message: str


class Diagnostic(BaseModel):
    model_config = ConfigDict(frozen=True)

    code: str
    name: str
    severity: Severity
    message: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    fix: Fix | None = None
    related: list[Related] = Field(default_factory=list)

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.code, self.message)


class Span(BaseModel):
    """A region of a file: where a value, a key or a flag is written."""

    model_config = ConfigDict(frozen=True)

    path: str
    line: int
    column: int
    end_line: int
    end_column: int

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
