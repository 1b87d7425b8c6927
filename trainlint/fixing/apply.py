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
import bisect
import json
import os
import re
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from trainlint.diagnostics import Diagnostic, Edit
from trainlint.fixing.text_edits import _line_starts, apply_edits, offset  # noqa: F401 - used here and re-exported
from trainlint.record import replace


def _ranges(text: str, edits: list[Edit], starts: list[int] | None = None) -> list[tuple[int, int]]:
    starts = starts if starts is not None else _line_starts(text)
    return [(offset(starts, len(text), e.line, e.column), offset(starts, len(text), e.end_line, e.end_column))
            for e in edits]


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    # insertions at the same point conflict too (their order would be arbitrary)
    if a[0] == a[1] and b[0] == b[1]:
        return a[0] == b[0]
    return a[0] < b[1] and b[0] < a[1] or (a[0] == a[1] and b[0] < a[0] < b[1]) \
        or (b[0] == b[1] and a[0] < b[0] < a[1])


JSON_KINDS = frozenset({"deepspeed", "hf_args", "json"})
YAML_KINDS = frozenset({"yaml"})


def _kind_from_suffix(path: str) -> str | None:
    suffix = Path(path).suffix.lower()
    if suffix in (".py", ".pyw", ".pyi"):
        return "python"
    if suffix == ".json":
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix == ".ipynb":
        return "notebook"
    return None


def _conflicts(accepted: list[tuple[int, int]], r: tuple[int, int]) -> bool:
    """Whether ``r`` overlaps one of ``accepted`` (sorted, pairwise compatible ranges): only
    the few ranges that start just before ``r`` and those that start inside it can."""
    i = bisect.bisect_left(accepted, (r[0], -1))
    for k in range(max(0, i - 3), i):
        if _overlaps(r, accepted[k]):
            return True
    k = i
    while k < len(accepted) and accepted[k][0] <= r[1]:
        if _overlaps(r, accepted[k]):
            return True
        k += 1
    return False


LIBCST_CHUNK_CHARS = 8 * 1024


def _top_level_chunks(text: str, firsts: list[int]) -> list[str]:
    """``text`` cut between top-level statements (``firsts``: the first line of each) into
    pieces of about ``LIBCST_CHUNK_CHARS`` (each a valid module on its own; their
    concatenation is ``text``)."""
    if len(text) <= LIBCST_CHUNK_CHARS or not firsts:
        return [text]
    starts = _line_starts(text)
    cuts = [0]
    for first in firsts[1:]:
        at = starts[first - 1] if first - 1 < len(starts) else len(text)
        if at - cuts[-1] >= LIBCST_CHUNK_CHARS:
            cuts.append(at)
    cuts.append(len(text))
    return [text[a:b] for a, b in zip(cuts, cuts[1:])]


def _statement_lines(text: str) -> list[int]:
    """The first line of each top-level statement; raises SyntaxError when ``text`` does not
    parse. A very large module is parsed piece by piece (``trainlint.sources.pruning``): its
    whole syntax tree would be about 120 bytes per byte of source."""
    return _statements(text)[0]


def _statements(text: str) -> tuple[list[int], ast.Module | None]:
    """``_statement_lines`` and the syntax tree (None for a module parsed in pieces)."""
    from trainlint.sources import pruning

    if len(text) >= pruning.LARGE_MODULE_CHARS:
        return pruning.statement_lines(text), None
    tree = ast.parse(text)
    return [min([s.lineno] + [d.lineno for d in getattr(s, "decorator_list", [])]) for s in tree.body], tree


def _libcst_roundtrip(text: str, chunks: list[str] | None = None, before: str | None = None,
                      tree: ast.Module | None = None) -> None:
    """A fixed Python file must also be accepted by libcst, the formatting-preserving parser
    that codemod tools (and users' own refactorings) read it with. Only fixes pay for the
    import, never ``check``. libcst needs about 1 GB and several seconds per MB of source, so
    the file is read in pieces cut between top-level statements (each a module of its own),
    and only the pieces a fix changed (not found as they are in ``before``, the text the
    fixes were applied to): memory is bounded by a piece and time grows with what changed.
    When the change is one that cannot change libcst's verdict on the user's own statements
    (names, numbers or plain strings substituted, one literal keyword argument added to a
    call: ``trainlint.fixing.cst_neutral``), libcst is not imported at all (``tree``: the
    syntax tree of ``text``, when the caller has it)."""
    changed = []
    slack = abs(len(text) - len(before)) + 1024 if before is not None else 0
    at = 0  # where in ``before`` the previous piece ended (pieces come in file order)
    for chunk in chunks if chunks is not None else [text]:
        if before is not None:
            found = before.find(chunk, max(0, at - slack), at + len(chunk) + slack)
            if found != -1:
                at = found + len(chunk)
                continue  # the user's own text, unchanged by any fix
            at += len(chunk)
        changed.append(chunk)
    if not changed:
        return
    if before is not None:
        from trainlint.fixing.cst_neutral import keeps_libcst_verdict

        if keeps_libcst_verdict(before, text, tree):
            return
    _libcst_parse(changed)


def _libcst_parse(chunks: list[str]) -> None:
    """libcst's parse of each of ``chunks`` (raises what it raises)."""
    import libcst

    for chunk in chunks:
        libcst.parse_module(chunk)


def parses(path: str, text: str, kind: str | None = None, before: str | None = None) -> str | None:
    """None when ``text`` is valid for the file's kind (from the reader's detection, else the
    suffix), else the error message. Kinds without a strict grammar (shell, markdown) are
    not checked. ``before``: the text the fixes were applied to (Python: libcst reads only
    the changed statements)."""
    if kind is None or kind == "unknown":
        kind = _kind_from_suffix(path)
    if kind in ("accelerate", "hf_args"):
        kind = "json" if path.lower().endswith(".json") or text.lstrip("\ufeff \t\r\n").startswith("{") \
            else "yaml"
    try:
        if kind == "python":
            firsts, tree = _statements(text)
            _libcst_roundtrip(text, _top_level_chunks(text, firsts), before, tree)
        elif kind in JSON_KINDS:
            try:
                from trainlint.sources.jsondoc import parse_json
            except ImportError:  # pragma: no cover - readers not in this build
                json.loads(text)
            else:
                parse_json(text, path)
        elif kind == "notebook":
            from trainlint.fixing.notebook import check_notebook

            check_notebook(text, path, before)
        elif kind in YAML_KINDS:
            try:
                from trainlint.sources.yamldoc import parse_yaml
            except ImportError:  # pragma: no cover
                from ruamel.yaml import YAML

                YAML(typ="rt").load(text)
            else:
                parse_yaml(text, path)
    except Exception as e:  # noqa: BLE001 - any parser error means "does not parse"
        return f"{type(e).__name__}: {e}"
    return None


def newline_of(text: str) -> str:
    """The file's newline style: the first line ending written in it (``\\n`` when none)."""
    i = text.find("\n")
    if i > 0 and text[i - 1] == "\r":
        return "\r\n"
    if i == -1 and "\r" in text:
        return "\r"
    return "\n"


def _restyle(edits: list[Edit], newline: str) -> list[Edit]:
    """Edits whose inserted text uses the file's newline style (rules write ``\\n``)."""
    if newline == "\n":
        return edits
    out = []
    for e in edits:
        if "\n" in e.content or "\r" in e.content:
            content = e.content.replace("\r\n", "\n").replace("\r", "\n").replace("\n", newline)
            e = replace(e, content=content)
        out.append(e)
    return out


@dataclass
class PassResult:
    texts: dict[str, str]  # new text of each changed file
    applied: list[Diagnostic] = field(default_factory=list)
    deferred: list[Diagnostic] = field(default_factory=list)  # conflicted: try next pass
    reverted: list[tuple[Diagnostic, str]] = field(default_factory=list)  # result did not parse


def apply_fix_pass(diagnostics: list[Diagnostic], texts: dict[str, str],
                   kinds: dict[str, str] | None = None) -> PassResult:
    """Apply as many of the diagnostics' fixes as do not conflict, to ``texts`` (path -> text).

    ``kinds`` (path -> reader kind) says how each changed file is validated (see ``parses``).
    Inserted text takes the newline style of the file it goes into.
    """
    kinds = kinds or {}
    originals: dict[int, Diagnostic] = {}
    if "notebook" in kinds.values():  # cell edits become edits of the notebook's JSON text
        from trainlint.fixing.notebook import json_fixes

        diagnostics, originals = json_fixes(diagnostics, texts, kinds)

    newlines: dict[str, str] = {}
    line_starts: dict[str, list[int]] = {}

    def edits_in(d: Diagnostic, p: str) -> list[Edit]:
        if p not in newlines:
            newlines[p] = newline_of(texts[p])
        return _restyle([e for e in d.fix.edits if e.path == p], newlines[p])  # type: ignore[union-attr]

    def starts_of(p: str) -> list[int]:
        if p not in line_starts:
            line_starts[p] = _line_starts(texts[p])
        return line_starts[p]

    accepted: dict[str, list[tuple[int, int]]] = {}
    chosen: list[Diagnostic] = []
    deferred: list[Diagnostic] = []
    broken: list[tuple[Diagnostic, str]] = []
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
        conflict = self_conflict = False
        ranges_by_file = {}
        for p, edits in by_file.items():
            rs = _ranges(texts[p], edits, starts_of(p))
            ranges_by_file[p] = rs
            for r in rs:
                if _conflicts(accepted.get(p, []), r):
                    conflict = True
            # a fix's own edits must not overlap each other
            for i in range(len(rs)):
                for j in range(i + 1, len(rs)):
                    if _overlaps(rs[i], rs[j]):
                        self_conflict = True
        if self_conflict:
            broken.append((d, "its own edits overlap"))
            continue
        if conflict:
            deferred.append(d)
            continue
        for p, rs in ranges_by_file.items():
            for r in rs:
                bisect.insort(accepted.setdefault(p, []), r)
        seen_edit_sets.add(key)
        chosen.append(d)

    result = PassResult(texts={}, deferred=deferred, reverted=broken)
    # Apply per file and validate. When a file's result does not parse, the fix that breaks it
    # is dropped (in every file it edits) and the files are computed again, until every
    # changed file parses.
    active = list(chosen)
    files = sorted({e.path for d in chosen for e in d.fix.edits})  # type: ignore[union-attr]
    while True:
        new_texts: dict[str, str] = {}
        culprit: Diagnostic | None = None
        for p in files:
            fixes_here = [d for d in active if any(e.path == p for e in d.fix.edits)]  # type: ignore[union-attr]
            if not fixes_here:
                continue
            error, new_text = _try(p, texts[p], fixes_here, edits_in, kinds.get(p), starts_of(p))
            if error is None:
                if new_text != texts[p]:
                    new_texts[p] = new_text
                continue
            culprit = _culprit(p, texts[p], fixes_here, edits_in, kinds.get(p), starts_of(p))
            result.reverted.append((culprit, error))
            break
        if culprit is None:
            result.texts = new_texts
            break
        active = [d for d in active if d is not culprit]
    result.applied = active
    if originals:
        def orig(d: Diagnostic) -> Diagnostic:
            return originals.get(id(d), d)

        result.applied = [orig(d) for d in result.applied]
        result.deferred = [orig(d) for d in result.deferred]
        result.reverted = [(orig(d), e) for d, e in result.reverted]
    return result


def _try(path: str, text: str, fixes: list[Diagnostic], edits_in: Callable[[Diagnostic, str], list[Edit]],
         kind: str | None, starts: list[int]) -> tuple[str | None, str]:
    """(None, new text) when applying ``fixes`` to ``text`` gives a file that parses, else
    (the error, text)."""
    try:
        new_text = apply_edits(text, [e for d in fixes for e in edits_in(d, path)], starts)
    except ValueError as exc:  # overlapping edits
        return str(exc), text
    return parses(path, new_text, kind, before=text), new_text


def _culprit(path: str, text: str, fixes: list[Diagnostic], edits_in: Callable[[Diagnostic, str], list[Edit]],
             kind: str | None, starts: list[int]) -> Diagnostic:
    """The fix to drop: the first one that breaks the file on its own, else the last of the
    shortest prefix of ``fixes`` that breaks it (bisection: a file with thousands of fixes
    is parsed a few dozen times, not thousands)."""
    for d in fixes[:16]:
        if _try(path, text, [d], edits_in, kind, starts)[0] is not None:
            return d
    lo, hi = 1, len(fixes)  # the prefix of length hi breaks the file
    while lo < hi:
        mid = (lo + hi) // 2
        if _try(path, text, fixes[:mid], edits_in, kind, starts)[0] is not None:
            hi = mid
        else:
            lo = mid + 1
    return fixes[hi - 1]


def write_fixed(path: str, original: str, new_text: str) -> str | None:
    """Write the fixed text of ``path`` the way the file was written (encoding, BOM; the newline
    style is in the text itself), atomically. Returns None, or why it was not written: the
    file changed since it was read, cannot be read any more, the fixed text cannot be encoded
    in the file's encoding, or the folder is not writable. The file is then left as it was."""
    from trainlint.sources.files import ReadProblem, read_text

    try:
        tf = read_text(path)
    except ReadProblem as e:
        return e.message
    if tf.text != original:
        return "the file changed while fixing"
    try:
        data = tf.encode(new_text)
    except UnicodeEncodeError as e:
        return (f"the fixed text cannot be encoded as {tf.encoding} (declared encoding): "
                f"{new_text[e.start:e.end]!r}")
    try:
        write_atomic(path, data)
    except OSError as e:
        return f"cannot write: {e.strerror or e}"
    return None


TEMP_SUFFIX = ".trainlint.tmp"
# ``.<file name>.<pid of the writer>.<random>.trainlint.tmp``
_TEMP_NAME = re.compile(r"^\..+\.(\d+)\.[A-Za-z0-9_]+" + re.escape(TEMP_SUFFIX) + r"$")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's), or cannot tell: keep its file
    return True


def remove_stale_temps(folders: list[str]) -> list[str]:
    """Remove the temporary files a killed ``fix --apply`` left in ``folders`` (its pid is in
    the name and no longer runs); returns what was removed. A file of a writer that still runs
    is kept."""
    removed = []
    for folder in dict.fromkeys(folders):
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            if not name.endswith(TEMP_SUFFIX):
                continue
            m = _TEMP_NAME.match(name)
            if m is None or _alive(int(m.group(1))):
                continue
            path = os.path.join(folder, name)
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
    return removed


def write_atomic(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically: a temporary file in the same folder, flushed
    to disk, then ``os.replace``. The permission bits (and, when allowed, the owner) are kept;
    a symbolic link is kept and its target replaced. On any error the file is untouched and the
    temporary file removed."""
    target = Path(os.path.realpath(path))
    try:
        st: os.stat_result | None = os.stat(target)
    except OSError:
        st = None
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=TEMP_SUFFIX, dir=str(target.parent))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            if hasattr(os, "chown") and (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
                try:
                    os.chown(tmp, st.st_uid, st.st_gid)
                except OSError:
                    pass
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
