"""Which reader parses which file kind (all but Python, which ``trainlint.resolve`` parses)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.resolve import ParsedFile, Workspace

# kind -> function(path, text) -> document; a reader raises ``ReadError`` on bad input.
READERS: dict[str, Callable[[str, str], Any]] = {}


def parse_into(ws: Workspace, pf: ParsedFile) -> None:
    reader = READERS.get(pf.kind)
    if reader is None:
        return
    pf.doc = reader(pf.path, pf.text.text)
