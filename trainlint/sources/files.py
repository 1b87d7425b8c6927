"""Reading files as text, and finding the files to check.

Text is kept exactly as written (newline style included) so that positions and fixes refer to
the real bytes; the encoding and BOM are remembered so a fixed file is written back the same way.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import stat
import tokenize
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from trainlint.record import Record

MAX_FILE_BYTES = 10 * 1024 * 1024  # larger files are reported, not read
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024  # notebooks carry their outputs (images, logs)

# What a folder walk picks up. Anything passed explicitly is read whatever its suffix.
# Markdown: README commands are launch lines that feed scripts and args files to their readers.
WALK_SUFFIXES = {".py", ".sh", ".bash", ".json", ".yaml", ".yml", ".md", ".ipynb"}
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".env", "env", "node_modules",
             ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis",
             "build", "dist", "site-packages", ".trainlint_cache", ".eggs"}


class ReadProblem(Exception):
    """A file that cannot be read as text: binary, undecodable, too large, unreadable."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


class TextFile(Record):
    """A file's decoded text with the encoding and BOM to write it back the same way.
    ``kind``: the file's kind (``kinds.detect_kind`` of its path and text) when something
    that read it told it already (the run's split), else None; no part of its equality."""

    __slots__ = ("path", "text", "encoding", "bom", "__dict__")
    _hidden = ("kind",)
    path: str
    text: str
    encoding: str
    bom: bool
    kind: str | None = None  # (the default of a read no one told; set in the instance's __dict__)

    def __init__(self, path: str, text: str, encoding: str = "utf-8", bom: bool = False) -> None:
        self.path = path
        self.text = text
        self.encoding = encoding
        self.bom = bom

    def encode(self, text: str | None = None) -> bytes:
        data = (self.text if text is None else text).encode(self.encoding)
        if self.bom and not data.startswith(codecs.BOM_UTF8):
            data = codecs.BOM_UTF8 + data
        return data


class ParsedFile(Record):
    """A file read for the run, with its kind and parsed document."""

    __slots__ = ("path", "kind", "text", "doc", "explicit", "__dict__")
    path: str
    kind: str  # python, shell, markdown, deepspeed, accelerate, hf_args, json, yaml, unknown
    text: TextFile
    doc: Any  # PythonFile, or the reader's document for other kinds
    explicit: bool

    def __init__(self, path: str, kind: str, text: TextFile, doc: Any = None, explicit: bool = False) -> None:
        self.path = path
        self.kind = kind
        self.text = text
        self.doc = doc
        self.explicit = explicit



def decode(path: str, data: bytes, python: bool) -> TextFile:
    nul = data.find(b"\x00")
    if nul != -1:
        line = data[:nul].count(b"\n") + 1
        raise ReadProblem("binary file (contains NUL bytes)", line=line,
                          column=nul - (data.rfind(b"\n", 0, nul) + 1) + 1)
    bom = data.startswith(codecs.BOM_UTF8)
    encoding = "utf-8"
    if python:
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as e:
            raise ReadProblem(f"bad encoding declaration: {e.msg if hasattr(e, 'msg') else e}") from None
        if encoding == "utf-8-sig":
            encoding = "utf-8"
    body = data[3:] if bom else data
    try:
        text = body.decode(encoding)
    except LookupError as e:  # a PEP 263 cookie naming a codec that is not a text encoding
        raise ReadProblem(f"bad encoding declaration: {e}") from None
    except UnicodeDecodeError as e:
        at = e.start
        line = body[:at].count(b"\n") + 1
        column = len(body[body.rfind(b"\n", 0, at) + 1:at].decode(encoding, errors="replace")) + 1
        raise ReadProblem(f"cannot decode as {encoding}: {e.reason} (byte offset {at}); "
                          "declare the encoding (PEP 263) or save the file as UTF-8",
                          line=line, column=column) from None
    return TextFile(path=path, text=text, encoding=encoding, bom=bom)


def _describe_os_error(path: str, e: OSError) -> str:
    import errno

    if e.errno == errno.ELOOP:
        return "cannot read file: symbolic link loop"
    if e.errno == errno.ENOENT and os.path.islink(path):
        return "cannot read file: dangling symbolic link (its target does not exist)"
    if e.errno == errno.EISDIR:
        return "cannot read file: it is a directory"
    return f"cannot read file: {e.strerror or e}"


def read_text(path: str, overlay: dict[str, str] | None = None) -> TextFile:
    """The file's text (from ``overlay`` when it holds the path: fixes in memory, stdin).

    Raises ``ReadProblem`` (never ``OSError``) for anything that is not a readable regular
    text file: a directory, a FIFO or device (never opened: that could block), a dangling
    symbolic link, a link loop, a file without read permission, a binary or undecodable file,
    a file over ``MAX_FILE_BYTES``.
    """
    if overlay is not None and path in overlay:
        return TextFile(path=path, text=overlay[path])
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            try:
                os.listdir(path)
            except OSError as e:  # a folder the walk could not list
                raise ReadProblem(f"cannot read folder: {e.strerror or e}; the files in it are not checked") from None
            raise ReadProblem("cannot read file: it is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise ReadProblem("cannot read file: not a regular file (a FIFO, socket or device)")
        limit = MAX_NOTEBOOK_BYTES if path.lower().endswith(".ipynb") else MAX_FILE_BYTES
        if st.st_size > limit:
            raise ReadProblem(f"file too large to check ({st.st_size} bytes > {limit})")
        # O_NONBLOCK: if the path was swapped for a FIFO since the stat, open must not hang
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ReadProblem("cannot read file: not a regular file (a FIFO, socket or device)")
            # asked for its size (and one byte more), not for the limit: a buffer of the limit
            # (64 MB for a notebook) is fresh memory at every read, its pages faulted in anew
            want = min(st.st_size, limit) + 1
            data = f.read(want)
            if len(data) == want <= limit:  # it grew since: on to the limit
                data += f.read(limit + 1 - want)
        if len(data) > limit:
            raise ReadProblem(f"file too large to check (> {limit} bytes)")
    except ReadProblem:
        raise
    except OSError as e:
        raise ReadProblem(_describe_os_error(path, e)) from None
    except (ValueError, OverflowError) as e:  # e.g. an embedded NUL in the path
        raise ReadProblem(f"cannot read file: {e}") from None
    return decode(path, data, python=path.endswith((".py", ".pyw", ".pyi")))


def _gitignore_spec(root: Path):
    try:
        import pathspec
    except ImportError:  # pragma: no cover
        return None
    patterns: list[str] = []
    gi = root / ".gitignore"
    if gi.is_file():
        try:
            patterns = gi.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            patterns = []
    if not patterns:
        return None
    return _IgnoreSpec.from_lines(patterns)


class _IgnoreSpec:
    """A ``.gitignore``'s ``PathSpec`` whose ``match_file`` first asks one regular expression,
    the alternation of every pattern's: a path that none of them matches is not ignored (most
    walked paths), one that some match gets the spec's own answer (the last matching pattern
    decides, a negation included). The same answers, one search per path instead of one per
    pattern (peft's 145 lines: 79 searches for each of 1,249 paths).

    ``from_lines``: the patterns' expressions are translated, not compiled (the pattern
    class's own ``pattern_to_regex``, what its constructor compiles), and the ``PathSpec``
    (one compiled expression per pattern: 0.03 s for peft's) is made on the first path the
    alternation matches: 11 of the 17 real repositories walk none.

    The alternation is exact, not only a sieve: it matches where one pattern's expression
    does (the pattern's own ``regex.search``; a ``^`` pattern's ``match``). So when no pattern
    is a negation (``!keep.py``: ``negations`` False, as in 14 of the 17 real repositories'),
    every matching pattern says "ignored" and the alternation's match is the answer; the
    ``PathSpec`` (and its 80 compiled expressions) is made only where a negation may decide."""

    __slots__ = ("_spec", "_lines", "_any", "_anchored", "_unanchored", "_negations")

    def __init__(self, spec, lines: list[str] | None = None,
                 regexes: list[tuple[str, int]] | None = None, negations: bool = True) -> None:
        self._spec = spec
        self._lines = lines
        self._any = False
        self._anchored = self._unanchored = None
        self._negations = negations
        if regexes is None:
            self._negations = any(p.include is False for p in spec.patterns)
            compiled = [getattr(p, "regex", None) for p in spec.patterns if p.include is not None]
            if compiled and all(isinstance(r, re.Pattern) for r in compiled):
                regexes = [(r.pattern, r.flags) for r in compiled]
        if regexes and all(isinstance(r, str) and flags == re.UNICODE for r, flags in regexes):
            # the patterns' named groups (``ps_d``) repeat: plain groups answer the same; a
            # pattern that starts with ``^`` (no ``re.M``) can match only at the start, so
            # those are asked with one ``match``, the others with one ``search``
            anchored = [r[1:] for r, _ in regexes if _anchored(r)]
            others = [r for r, _ in regexes if not _anchored(r)]
            try:
                self._anchored = _alternation(anchored, _ANY_FOLDERS)
                self._unanchored = _alternation(others)
                self._any = True
            except (re.error, RecursionError, OverflowError):
                self._any = False
        if not self._any and self._spec is None:
            self._spec = self._make_spec()

    @classmethod
    def from_lines(cls, lines: list[str]) -> "_IgnoreSpec":
        """The spec of a ``.gitignore``'s lines (``PathSpec.from_lines("gitwildmatch", lines)``),
        made when first needed."""
        import pathspec

        factory = pathspec.util.lookup_pattern("gitwildmatch")
        regexes: list[tuple[str, int]] | None = None
        negations = False
        if isinstance(factory, type) and issubclass(factory, pathspec.pattern.RegexPattern):
            regexes = []
            for line in lines:
                if not line:  # (``from_lines`` skips empty lines)
                    continue
                try:
                    raw, include = factory.pattern_to_regex(line)
                except Exception:  # the spec raises it as it did: made now
                    return cls(pathspec.PathSpec.from_lines("gitwildmatch", lines))
                if include is not None:
                    if not isinstance(raw, str):
                        regexes = None
                        break
                    # ``RegexPattern`` compiles it without flags: a str pattern's are UNICODE
                    # (one that sets its own, ``(?i)`` at its start, fails to compile inside the
                    # alternation: the spec is then made at once, as for a compiled one)
                    regexes.append((raw, re.UNICODE))
                    negations = negations or include is False
        if not regexes:
            return cls(pathspec.PathSpec.from_lines("gitwildmatch", lines))
        return cls(None, lines, regexes, negations)

    def _make_spec(self):
        import pathspec

        return pathspec.PathSpec.from_lines("gitwildmatch", self._lines)

    @property
    def spec(self):
        if self._spec is None:
            self._spec = self._make_spec()
        return self._spec

    def match_file(self, file: str) -> bool:
        if self._any:
            path = _normal(file)
            if (self._anchored is None or self._anchored.match(path) is None) and \
                    (self._unanchored is None or self._unanchored.search(path) is None):
                return False
            if not self._negations:  # a pattern matches, and each says "ignored"
                return True
        return self.spec.match_file(file)


def _anchored(pattern: str) -> bool:
    """Whether ``pattern`` starts with ``^`` that holds for all of it (no ``|`` outside its
    groups and classes: ``^a|b`` matches ``b`` anywhere)."""
    if not pattern.startswith("^"):
        return False
    if "|" not in pattern:  # (most: only a ``|`` outside the groups could make it false)
        return True
    depth = 0
    i, n = 1, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":  # a class: to its closing ``]`` (one right after ``[`` or ``[^`` is literal)
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":
                i += 1
            while i < n and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            return False
        i += 1
    return True


def _alternation(patterns: list[str], common: str = "") -> re.Pattern[str] | None:
    """One expression that matches where one of ``patterns`` does. Those that start with
    ``common`` (a whole group, ``_ANY_FOLDERS``) are asked under one copy of it,
    ``common(?:a|b|...)``: a match of ``common a`` or ``common b`` is a match of that and back
    (the patterns are concatenations: ``_anchored`` found no ``|`` outside their groups), and
    ``(?:.+/)?`` before each of a ``.gitignore``'s 80 patterns is 80 backtracking scans of the
    path where one does (16 us a path, 2 us so)."""
    if not patterns:
        return None
    shared = [p[len(common):] for p in patterns if common and p.startswith(common)]
    rest = [p for p in patterns if not (common and p.startswith(common))]
    parts = ["(?:%s)" % _NAMED_GROUP.sub("(?:", p) for p in rest]
    if shared:
        parts.insert(0, "%s(?:%s)" % (common, "|".join("(?:%s)" % _NAMED_GROUP.sub("(?:", p) for p in shared)))
    return re.compile("|".join(parts))


# how gitwildmatch begins a pattern without a ``/`` but at its end: in any folder
_ANY_FOLDERS = "(?:.+/)?"


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


def _normal(file: str) -> str:
    """``pathspec.util.normalize_file``'s path, on this system's separators."""
    if os.sep != "/":  # pragma: no cover - posix here
        file = file.replace(os.sep, "/")
    if os.altsep and os.altsep != "/":  # pragma: no cover
        file = file.replace(os.altsep, "/")
    if file.startswith("/"):
        return file[1:]
    if file.startswith("./"):
        return file[2:]
    return file


def _walk_reporting(root: Path, errors: list[OSError]) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk`` that records the folders it cannot list in ``errors`` (and still yields a
    last empty step, so errors found after the last listed folder are reported too)."""
    yield from os.walk(root, onerror=errors.append, followlinks=False)
    if errors:
        yield str(root), [], []


def walk(paths: list[Path], exclude: list[str] | None = None) -> Iterator[tuple[Path, bool]]:
    """Files to check: (path, explicitly given). Folders are walked recursively, skipping VCS
    folders, virtualenvs, caches and what the folder's ``.gitignore`` ignores. Symlinked
    folders are not followed (no loops)."""
    for found, explicit in _walk_found(paths, exclude):
        yield (Path(found) if isinstance(found, str) else found), explicit


def walk_names(paths: list[Path], exclude: list[str] | None = None) -> Iterator[tuple[str, bool]]:
    """``walk``'s files as ``os.path.normpath(str(path))`` writes them (``workspace.norm``),
    without making a ``Path`` of each: a walked file's name is its folder's (normalised once
    per root) and its path below the root, already normal."""
    for found, explicit in _walk_found(paths, exclude, normal=True):
        yield (found if isinstance(found, str) else os.path.normpath(str(found))), explicit


def _walk_found(paths: list[Path], exclude: list[str] | None, normal: bool = False
                ) -> Iterator[tuple[str | Path, bool]]:
    """``walk``'s files: a path given or a folder that could not be listed as it is (a
    ``Path``); a walked file as ``os.path.join(dirpath, name)`` (``str(Path(dirpath) / name)``
    up to normalisation), or with ``normal`` normalised.

    Each folder's path below the root (what ``.gitignore`` and ``exclude`` are asked about) is
    its parent's and its name, noted when the parent keeps it (``os.walk`` lists it at
    ``os.path.join(dirpath, name)``), not found anew with ``os.path.relpath``; the working
    folder for the duplicate check (``os.path.abspath``) is asked once per root, and a run of
    one folder needs no check of its files (each is walked once)."""
    import fnmatch

    seen: set[str] = set()
    dedupe = len(paths) > 1
    for p in paths:
        if not p.is_dir():
            key = os.path.abspath(p)
            if key not in seen:
                seen.add(key)
                yield p, True
            continue
        spec = _gitignore_spec(p)
        ignored = spec.match_file if spec is not None else None
        cwd = os.getcwd()
        top = os.fspath(p)
        ntop = os.path.normpath(top)
        rels: dict[str, str] = {top: "."}  # a folder os.walk will list -> its path below ``p``
        unlistable: list[OSError] = []
        for dirpath, dirnames, filenames in _walk_reporting(p, unlistable):
            while unlistable:  # a folder that cannot be listed is a finding, not silence
                e = unlistable.pop(0)
                where = Path(e.filename) if e.filename else p
                key = os.path.abspath(where)
                if key not in seen:
                    seen.add(key)
                    yield where, True
            rel_dir = rels.get(dirpath)
            if rel_dir is None:  # pragma: no cover - every listed folder was noted
                rel_dir = os.path.relpath(dirpath, p)
            prefix = "" if rel_dir == "." else rel_dir + "/"  # ``os.path.normpath(os.path.join(rel_dir, x))``
            keep = []
            for d in sorted(dirnames):
                rel = prefix + d
                if d in SKIP_DIRS or d.endswith(".egg-info") or (os.path.exists(os.path.join(dirpath, d, "pyvenv.cfg"))):
                    continue
                if ignored is not None and ignored(rel + "/"):
                    continue
                if exclude and any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(d, pat) for pat in exclude):
                    continue
                keep.append(d)
                rels[os.path.join(dirpath, d)] = rel
            dirnames[:] = keep
            for name in sorted(filenames):
                if os.path.splitext(name)[1].lower() not in WALK_SUFFIXES:  # ``Path.suffix``'s
                    continue
                rel = prefix + name
                if ignored is not None and ignored(rel):
                    continue
                if exclude and any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(name, pat) for pat in exclude):
                    continue
                # ``normpath(join(top, rel))``: ``rel`` holds no ``.``, ``..`` or empty part
                full = (rel if ntop == "." else os.path.join(ntop, rel)) if normal else os.path.join(dirpath, name)
                if dedupe:
                    key = os.path.normpath(os.path.join(cwd, full))  # ``os.path.abspath``
                    if key in seen:
                        continue
                    seen.add(key)
                yield full, False


# -- reads of a field in a package (TL613: a removed field the project's own code still reads) --

PACKAGE_FILES_LIMIT = 2000  # how many Python files of a package are searched at most


def package_root(path: str) -> str | None:
    """The top folder of the package ``path`` is a module of (the highest folder above it in an
    unbroken chain of folders with an ``__init__.py``); None for a file outside a package."""
    folder = os.path.dirname(os.path.abspath(path))
    top = None
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        top = folder
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return top


def package_reads(declared_in: str, name: str) -> bool:
    """Whether another module of the package of ``declared_in`` reads the field ``name``:
    ``<x>.name`` or a ``["name"]`` key (``vars(args)["name"]``), neither as an assignment's
    target, ``.get("name"`` (``args.to_dict().get("name")``) or ``getattr(x, "name"...)``.
    The project's own trainer or callback then uses the field (ms-swift's ``DPOTrainer`` reads ``args.ref_adapter_name``, which its
    ``DPOConfig`` keeps after TRL removed it). A text search: a mention in a comment or a string
    counts too (a miss costs less than a false warning). At most ``PACKAGE_FILES_LIMIT`` files,
    in a sorted walk; False outside a package."""
    root = package_root(declared_in)
    if root is None:
        return False
    own = os.path.abspath(declared_in)
    word = re.escape(name)
    quoted = rf"['\"]{word}['\"]"
    pattern = re.compile(rf"\.{word}\b(?!\s*=(?!=))|getattr\(\s*[\w.\[\]]+\s*,\s*{quoted}"
                         rf"|\[\s*{quoted}\s*\](?!\s*=(?!=))|\.get\(\s*{quoted}")
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for fn in sorted(filenames):
            path = os.path.join(dirpath, fn)
            if not fn.endswith(".py") or path == own:
                continue
            count += 1
            if count > PACKAGE_FILES_LIMIT:
                return False
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            if name in text and pattern.search(text):
                return True
    return False


# -- the repository's file names (linking's "a file of that name is at" hint) -----------------

SAME_NAME_LIMIT = 20_000


@lru_cache(maxsize=8)
def repository_names(root: str) -> dict[str, list[str]]:
    """basename -> paths (relative to ``root``) of the repository's files (and ``name/`` -> its
    folders of that name), for linking's "a file of that name is at" hint and the cache's ``same-name`` dependency (here, not in linking, so
    that a warm run checks it without importing linking); at most ``SAME_NAME_LIMIT`` files.
    Kept for one run (``engine.lint`` clears it at its end)."""
    out: dict[str, list[str]] = {}
    count = 0
    # the walk's folders are ``root`` joined with their path below it: that path, cut off, is
    # what ``relpath`` gives for a normalized absolute ``root`` (linking's; else ``relpath``)
    exact = root == os.path.abspath(root)
    cut = len(root.rstrip(os.sep)) + 1
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        below = (dirpath[cut:] + os.sep if dirpath != root else "") if exact else None
        for d in dirnames:  # folders under their name and a slash: ``same_name(root, "src/")``
            out.setdefault(d + "/", []).append(
                below + d if below is not None else os.path.relpath(os.path.join(dirpath, d), root))
        for name in filenames:
            out.setdefault(name, []).append(
                below + name if below is not None else os.path.relpath(os.path.join(dirpath, name), root))
        count += len(filenames)
        if count > SAME_NAME_LIMIT:
            break
    return out


def same_name(root: str, name: str) -> list[str]:
    return sorted(repository_names(root).get(name, []))
