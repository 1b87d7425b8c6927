"""Reading files as text, and finding the files to check.

Text is kept exactly as written (newline style included) so that positions and fixes refer to
the real bytes; the encoding and BOM are remembered so a fixed file is written back the same way.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

MAX_FILE_BYTES = 10 * 1024 * 1024  # larger files are reported, not read

# What a folder walk picks up. Anything passed explicitly is read whatever its suffix.
WALK_SUFFIXES = {".py", ".sh", ".bash", ".json", ".yaml", ".yml"}
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


@dataclass
class TextFile:
    path: str
    text: str
    encoding: str = "utf-8"
    bom: bool = False

    def encode(self, text: str | None = None) -> bytes:
        data = (self.text if text is None else text).encode(self.encoding)
        if self.bom and not data.startswith(codecs.BOM_UTF8):
            data = codecs.BOM_UTF8 + data
        return data


_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def decode(path: str, data: bytes, python: bool) -> TextFile:
    if b"\x00" in data[:8192]:
        raise ReadProblem("binary file (contains NUL bytes)")
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
    except (UnicodeDecodeError, LookupError) as e:
        line = body[: getattr(e, "start", 0)].count(b"\n") + 1
        raise ReadProblem(f"cannot decode as {encoding}: {e}", line=line) from None
    return TextFile(path=path, text=text, encoding=encoding, bom=bom)


def read_text(path: str, overlay: dict[str, str] | None = None) -> TextFile:
    """The file's text (from ``overlay`` when it holds the path: fixes in memory, stdin)."""
    if overlay is not None and path in overlay:
        return TextFile(path=path, text=overlay[path])
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise ReadProblem(f"file too large to check ({size} bytes > {MAX_FILE_BYTES})")
        with open(path, "rb") as f:
            data = f.read()
    except ReadProblem:
        raise
    except OSError as e:
        raise ReadProblem(f"cannot read file: {e.strerror or e}") from None
    return decode(path, data, python=path.endswith(".py"))


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
    return pathspec.PathSpec.from_lines("gitwildmatch", patterns)


def walk(paths: list[Path], exclude: list[str] | None = None) -> Iterator[tuple[Path, bool]]:
    """Files to check: (path, explicitly given). Folders are walked recursively, skipping VCS
    folders, virtualenvs, caches and what the folder's ``.gitignore`` ignores. Symlinked
    folders are not followed (no loops)."""
    import fnmatch

    seen: set[str] = set()
    for p in paths:
        if not p.is_dir():
            key = os.path.abspath(p)
            if key not in seen:
                seen.add(key)
                yield p, True
            continue
        spec = _gitignore_spec(p)
        for dirpath, dirnames, filenames in os.walk(p, followlinks=False):
            rel_dir = os.path.relpath(dirpath, p)
            keep = []
            for d in sorted(dirnames):
                rel = os.path.normpath(os.path.join(rel_dir, d))
                if d in SKIP_DIRS or d.endswith(".egg-info") or (os.path.exists(os.path.join(dirpath, d, "pyvenv.cfg"))):
                    continue
                if spec is not None and spec.match_file(rel + "/"):
                    continue
                if exclude and any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(d, pat) for pat in exclude):
                    continue
                keep.append(d)
            dirnames[:] = keep
            for name in sorted(filenames):
                if Path(name).suffix.lower() not in WALK_SUFFIXES:
                    continue
                full = Path(dirpath) / name
                rel = os.path.normpath(os.path.join(rel_dir, name))
                if spec is not None and spec.match_file(rel):
                    continue
                if exclude and any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(name, pat) for pat in exclude):
                    continue
                key = os.path.abspath(full)
                if key in seen:
                    continue
                seen.add(key)
                yield full, False
