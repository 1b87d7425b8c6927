"""Applying fixes: edits to text, conflicts, validation, atomic writes.

* A fix is all-or-nothing: every edit of it applies, or none does.
* Two fixes whose edits overlap never apply in the same pass; the later one waits for the next
  pass, where it is computed again on the new text (``trainlint.engine.fix_in_memory``).
* Every changed file is parsed again (Python, JSON, YAML); a fix whose result does not parse is
  dropped and reported, and the file keeps its previous text.
* Writes are atomic (a temporary file in the same folder, then ``os.replace``), keep the file's
  permissions, encoding, BOM and newline style.
"""

from __future__ import annotations

import ast
import json
import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from trainlint.diagnostics import Diagnostic, Edit


def _line_starts(text: str) -> list[int]:
    starts = [0]
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            starts.append(i + 1)
        elif c == "\r":
            if i + 1 < n and text[i + 1] == "\n":
                i += 1
            starts.append(i + 1)
        i += 1
    return starts


def offset(starts: list[int], text_len: int, line: int, column: int) -> int:
    if line - 1 >= len(starts):
        return text_len
    return min(starts[line - 1] + column - 1, text_len)


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (all for one file) to ``text``."""
    starts = _line_starts(text)
    spans = sorted(
        ((offset(starts, len(text), e.line, e.column), offset(starts, len(text), e.end_line, e.end_column), e.content)
         for e in edits),
        key=lambda t: (t[0], t[1]),
    )
    out = []
    pos = 0
    for a, b, content in spans:
        if a < pos:
            raise ValueError("overlapping edits")
        out.append(text[pos:a])
        out.append(content)
        pos = max(b, a)
    out.append(text[pos:])
    return "".join(out)


def _ranges(text: str, edits: list[Edit]) -> list[tuple[int, int]]:
    starts = _line_starts(text)
    return [(offset(starts, len(text), e.line, e.column), offset(starts, len(text), e.end_line, e.end_column))
            for e in edits]


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    # insertions at the same point conflict too (their order would be arbitrary)
    if a[0] == a[1] and b[0] == b[1]:
        return a[0] == b[0]
    return a[0] < b[1] and b[0] < a[1] or (a[0] == a[1] and b[0] < a[0] < b[1]) \
        or (b[0] == b[1] and a[0] < b[0] < a[1])


def parses(path: str, text: str) -> str | None:
    """None when ``text`` is valid for the file's kind, else the error message."""
    suffix = Path(path).suffix.lower()
    try:
        if suffix == ".py" or suffix == "":
            ast.parse(text)
        elif suffix == ".json":
            json.loads(text)
        elif suffix in (".yaml", ".yml"):
            from ruamel.yaml import YAML

            YAML(typ="rt").load(text)
    except Exception as e:  # noqa: BLE001 - any parser error means "does not parse"
        return f"{type(e).__name__}: {e}"
    return None


@dataclass
class PassResult:
    texts: dict[str, str]  # new text of each changed file
    applied: list[Diagnostic] = field(default_factory=list)
    deferred: list[Diagnostic] = field(default_factory=list)  # conflicted: try next pass
    reverted: list[tuple[Diagnostic, str]] = field(default_factory=list)  # result did not parse


def apply_fix_pass(diagnostics: list[Diagnostic], texts: dict[str, str]) -> PassResult:
    """Apply as many of the diagnostics' fixes as do not conflict, to ``texts`` (path -> text)."""
    accepted: dict[str, list[tuple[int, int]]] = {}
    chosen: list[Diagnostic] = []
    deferred: list[Diagnostic] = []
    seen_edit_sets: set[tuple] = set()
    for d in sorted(diagnostics, key=lambda d: d.sort_key()):
        if d.fix is None:
            continue
        key = tuple(sorted((e.path, e.line, e.column, e.end_line, e.end_column, e.content) for e in d.fix.edits))
        if key in seen_edit_sets:
            continue  # the same fix reported twice (e.g. through two setups)
        by_file: dict[str, list[Edit]] = {}
        for e in d.fix.edits:
            by_file.setdefault(e.path, []).append(e)
        if any(p not in texts for p in by_file):
            continue
        conflict = False
        ranges_by_file = {}
        for p, edits in by_file.items():
            rs = _ranges(texts[p], edits)
            ranges_by_file[p] = rs
            for r in rs:
                if any(_overlaps(r, o) for o in accepted.get(p, [])):
                    conflict = True
            # a fix's own edits must not overlap each other
            for i in range(len(rs)):
                for j in range(i + 1, len(rs)):
                    if _overlaps(rs[i], rs[j]):
                        conflict = True
        if conflict:
            deferred.append(d)
            continue
        for p, rs in ranges_by_file.items():
            accepted.setdefault(p, []).extend(rs)
        seen_edit_sets.add(key)
        chosen.append(d)

    result = PassResult(texts={}, deferred=deferred)
    # apply per file, validating; if a file's result does not parse, drop fixes one by one
    files = sorted({e.path for d in chosen for e in d.fix.edits})  # type: ignore[union-attr]
    dropped: set[int] = set()
    for p in files:
        fixes_here = [d for d in chosen if any(e.path == p for e in d.fix.edits)]  # type: ignore[union-attr]
        while fixes_here:
            edits = [e for d in fixes_here for e in d.fix.edits if e.path == p]  # type: ignore[union-attr]
            new_text = apply_edits(texts[p], edits)
            error = parses(p, new_text)
            if error is None:
                if new_text != texts[p]:
                    result.texts[p] = new_text
                break
            # find the culprit: the first fix that breaks the file on its own
            culprit = next((d for d in fixes_here
                            if parses(p, apply_edits(texts[p], [e for e in d.fix.edits if e.path == p])) is not None),
                           fixes_here[-1])
            dropped.add(id(culprit))
            result.reverted.append((culprit, error))
            fixes_here = [d for d in fixes_here if d is not culprit]
    # a multi-file fix counts as applied only if none of its files dropped it
    result.applied = [d for d in chosen if id(d) not in dropped]
    # undo parts of multi-file fixes that were dropped in another file
    if dropped:
        for p in list(result.texts):
            edits = [e for d in result.applied for e in d.fix.edits if e.path == p]  # type: ignore[union-attr]
            new_text = apply_edits(texts[p], edits)
            if new_text == texts[p]:
                del result.texts[p]
            else:
                result.texts[p] = new_text
    return result


def write_atomic(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, keeping its permission bits."""
    target = Path(path)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mode = None
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".trainlint.tmp", dir=str(target.parent))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
