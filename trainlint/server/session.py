"""What the language server knows, without the protocol: open documents, settings, which files
take part in the same setup, and the lint and fix runs on the in-memory texts.

Nothing here imports pygls, torch or transformers, and no user code is executed: a run is the
same ``engine.lint`` / ``engine.fix_outcome`` that ``trainlint check`` and ``fix`` use, with the
unsaved buffers as an overlay.

A document is checked together with the files that make one setup with it, so a finding of
``train.py`` that depends on ``ds_config.json`` (or on the launch line in ``run.sh``) is the
same as ``trainlint check .`` reports. Those files are found by their references: a launch
script, a Markdown command or a script that names the document (or a file that names such a
file, up to ``REFERENCE_DEPTH`` steps), and the configs the document itself names. The index of
the workspace's text files is read once and kept in step with the editor's changes and saves.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from trainlint.diagnostics import Diagnostic

# What can reference a script or a config (launch lines, commands, args and config files).
REFERRER_SUFFIXES = (".sh", ".bash", ".zsh", ".md", ".markdown", ".json", ".yaml", ".yml", ".py", ".ipynb", ".cfg",
                     ".txt", ".toml")
CHECKED_SUFFIXES = (".py", ".pyw", ".sh", ".bash", ".zsh", ".md", ".markdown", ".json", ".yaml", ".yml", ".ipynb")
MAX_INDEXED_BYTES = 2_000_000  # bigger files are data, not setups
MAX_INDEXED_FILES = 20_000
REFERENCE_DEPTH = 3
MAX_GROUP = 64
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
             ".pytest_cache", ".trainlint_cache", "site-packages", "build", "dist", ".ipynb_checkpoints"}


def norm(path: str | Path) -> str:
    return os.path.normpath(os.path.abspath(str(path)))


@dataclass
class Document:
    path: str
    text: str
    version: int | None = None


@dataclass
class RunResult:
    """One lint run: the findings per file of the group (an empty list clears a file)."""

    group: list[str]
    by_path: dict[str, list[Diagnostic]]
    texts: dict[str, str]


@dataclass
class Session:
    root: Path | None = None
    documents: dict[str, Document] = field(default_factory=dict)
    _settings: object | None = None
    _settings_error: str | None = None
    _index: NameIndex | None = None
    _lock: threading.RLock = field(default_factory=threading.RLock)

    # -- documents ---------------------------------------------------------------------

    def open(self, path: str, text: str, version: int | None = None) -> Document:
        doc = Document(norm(path), text, version)
        with self._lock:
            self.documents[doc.path] = doc
            if self._index is not None and doc.path.endswith(REFERRER_SUFFIXES):
                self._index.put(doc.path, text)
        return doc

    def change(self, path: str, text: str, version: int | None = None) -> Document:
        return self.open(path, text, version)

    def close(self, path: str) -> None:
        p = norm(path)
        with self._lock:
            self.documents.pop(p, None)
            if self._index is not None:
                disk = _read(p)
                if disk is None:
                    self._index.drop(p)
                else:
                    self._index.put(p, disk)

    def saved(self, path: str, text: str | None = None) -> None:
        p = norm(path)
        if Path(p).name == "pyproject.toml":
            self.reload_settings()
        with self._lock:
            if self._index is not None and p.endswith(REFERRER_SUFFIXES):
                t = text if text is not None else _read(p)
                if t is not None:
                    self._index.put(p, t)

    def overlay(self) -> dict[str, str]:
        with self._lock:
            return {p: d.text for p, d in self.documents.items()}

    # -- settings ----------------------------------------------------------------------

    def reload_settings(self) -> None:
        with self._lock:
            self._settings = None
            self._settings_error = None

    def settings(self):
        """``[tool.trainlint]`` of the workspace (the nearest pyproject.toml above the root)."""
        from trainlint.config import ConfigError, load_settings

        with self._lock:
            if self._settings is None:
                try:
                    self._settings = load_settings(self.root)
                    self._settings_error = None
                except ConfigError as exc:
                    self._settings = load_settings(None if self.root is None else Path("/"))
                    self._settings_error = str(exc)
            return self._settings

    @property
    def settings_error(self) -> str | None:
        self.settings()
        return self._settings_error

    # -- which files make one setup ----------------------------------------------------

    def index(self) -> "NameIndex":
        """The workspace's text files and the file names each one mentions (read once)."""
        with self._lock:
            if self._index is None:
                index = NameIndex()
                if self.root is not None and self.root.is_dir():
                    for path in _walk(self.root):
                        t = _read(path)
                        if t is not None:
                            index.put(path, t)
                for p, d in self.documents.items():
                    if p.endswith(REFERRER_SUFFIXES):
                        index.put(p, d.text)
                self._index = index
            return self._index

    def group(self, path: str) -> list[str]:
        """The document and the files that take part in a setup with it."""
        p = norm(path)
        with self._lock:
            index = self.index()
            found: dict[str, None] = {p: None}
            frontier = [p]
            for _ in range(REFERENCE_DEPTH):
                nxt: list[str] = []
                for target in frontier:
                    for other in index.related(target):
                        if other not in found and len(found) < MAX_GROUP:
                            found[other] = None
                            nxt.append(other)
                frontier = nxt
                if not frontier:
                    break
        return [f for f in found if f in self.documents or os.path.exists(f)]

    def affected_documents(self, path: str) -> list[str]:
        """Open documents whose findings can change when ``path`` changes (itself first)."""
        p = norm(path)
        with self._lock:
            others = [d for d in self.documents if d != p]
        return [p] + [o for o in others if p in self.group(o)]

    # -- runs ----------------------------------------------------------------------------

    def lint(self, path: str) -> RunResult:
        from trainlint.engine import lint

        group = self.group(path)
        settings = self.settings()
        overlay = self.overlay()
        result = lint([Path(f) for f in group], settings, overlay)
        by_path: dict[str, list[Diagnostic]] = {norm(f): [] for f in group}
        for d in result.diagnostics:
            by_path.setdefault(norm(d.path), []).append(d)
        texts = {norm(p): t for p, t in result.texts.items()}
        texts.update({p: t for p, t in overlay.items()})
        return RunResult(group=group, by_path=by_path, texts=texts)

    def fix_all(self, path: str) -> str | None:
        """The document's text with every safe fix applied, or None when nothing changes."""
        from trainlint.engine import fix_outcome

        p = norm(path)
        group = self.group(p)
        outcome = fix_outcome([Path(f) for f in group], self.settings(), unsafe=False, overlay=self.overlay())
        for fp, text in outcome.fixed.items():
            if norm(fp) == p:
                return text
        return None

    def text_of(self, path: str) -> str | None:
        p = norm(path)
        with self._lock:
            d = self.documents.get(p)
        if d is not None:
            return d.text
        return _read(p)


def _walk(root: Path) -> Iterable[str]:
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")]
        for name in filenames:
            if name.endswith(REFERRER_SUFFIXES):
                count += 1
                if count > MAX_INDEXED_FILES:
                    return
                yield norm(os.path.join(dirpath, name))


def _read(path: str) -> str | None:
    try:
        if os.path.getsize(path) > MAX_INDEXED_BYTES:
            return None
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    if b"\0" in data[:4096]:
        return None
    return data.decode("utf-8", errors="replace")


_NAME = re.compile(r"[\w.\-/]*?([\w.\-]+\.(?:py|pyw|sh|bash|json|ya?ml|md|ipynb|toml|cfg))\b")


class NameIndex:
    """Per indexed file: the file names (``train.py``, ``ds_z3.json``) its text mentions; and
    the reverse, which files mention a name. A launch line or a ``deepspeed=`` value names a
    file by a path whose last part is its name, so these two maps find referrers in O(1)."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.names: dict[str, set[str]] = {}  # path -> names it mentions
        self.mentioned_by: dict[str, set[str]] = {}  # name -> paths that mention it
        self.by_name: dict[str, set[str]] = {}  # name -> indexed paths with that name

    def put(self, path: str, text: str) -> None:
        self.drop(path)
        self.texts[path] = text
        names = {m.group(1) for m in _NAME.finditer(text)}
        self.names[path] = names
        for n in names:
            self.mentioned_by.setdefault(n, set()).add(path)
        self.by_name.setdefault(os.path.basename(path), set()).add(path)

    def drop(self, path: str) -> None:
        for n in self.names.pop(path, ()):
            self.mentioned_by.get(n, set()).discard(path)
        self.by_name.get(os.path.basename(path), set()).discard(path)
        self.texts.pop(path, None)

    def related(self, target: str) -> Iterable[str]:
        """Files that name ``target``, and the files that ``target`` names."""
        name = os.path.basename(target)
        for other in sorted(self.mentioned_by.get(name, ())):
            if other != target and _mentions(self.texts.get(other, ""), target, other):
                yield other
        own = self.texts.get(target)
        if own is None:
            return
        for n in sorted(self.names.get(target, ())):
            for other in sorted(self.by_name.get(n, ())):
                if other != target and other.endswith(CHECKED_SUFFIXES) and _mentions(own, other, target):
                    yield other


def _mentions(text: str, target: str, referrer: str) -> bool:
    """Whether ``text`` (of the file ``referrer``) names ``target`` by a path that can resolve
    to it: relative to the referrer's folder or any folder above it (how launch lines and
    configs are resolved)."""
    ref_dir = os.path.dirname(referrer)
    tdir = os.path.dirname(target)
    if tdir == ref_dir:
        return True
    d = ref_dir
    while True:
        if tdir.startswith(d + os.sep):
            rel = os.path.relpath(target, d)
            if rel in text or rel.replace(os.sep, "/") in text:
                return True
        parent = os.path.dirname(d)
        if parent == d:
            return False
        d = parent
