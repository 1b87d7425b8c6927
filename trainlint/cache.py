"""The findings cache: the results of stand-alone scripts and of groups of linked files.

A cached entry is the list of (already filtered) findings of one Python file whose setup is that
file alone. Its key is a SHA-256 over everything the result can depend on:

- the file's path (findings carry it; per-file-ignores match it), whether it was named
  explicitly (walked files go through the byte pre-filter) and its full text;
- the run's *namespace*: trainlint's version, a fingerprint of trainlint's own code and data
  (size and mtime of every ``.py``/``.json`` under the package: a changed rule or knowledge
  table is a new namespace), every setting (selection, options, target GPU and world size,
  transformers version, ``base``, the project root), and the installed transformers and trl
  versions (the default target version), and the hashes of the requirements files and
  pyproject.toml at the project root (where a pinned version comes from otherwise);
- the commit that ``--base`` names in the file's git repository (``lr-not-scaled`` compares
  with the file at that revision), or "no repository";
- the files the setup declared besides the script (``Setup.files``): their paths and content
  hashes are stored with the entry and checked on every hit.

A group of files that link to each other (``partition``: launch scripts, configs, the scripts
they run) is keyed on every path of the group with its text; the files it read from outside
the run are its dependencies, hashed as above. The places where linking looked for a file and
found none (``linking.locate``) are dependencies too, stored as absent: a file that appears
there is a change. So are the files rules read from outside the workspace (``trainlint.reads``:
a local checkpoint's ``config.json``, the requirement files of the folders above a script),
a folder by its listing, and for a missing reference (TL004) the folders it was looked for in
and the repository's files of its name (the "a file of that name is at" hint). Nothing
is cached when the target GPU is ``auto`` (read from ``nvidia-smi``). A run reads one JSON file per namespace and writes it back atomically when it
learned something; concurrent runs can only lose entries, never make one stale.

A whole run is stored too, under a key of the paths given and the working directory: every
walked path with its size, modification time and text hash, the files read from outside the
run (with theirs) and the commits ``--base`` named, and the run's result. A later run over the
same files answers from it after the walk, without reading a file: a file whose size and
modification time are as stored is unchanged (as ruff decides); one whose are not is read and
hashed, and unchanged if the hash is. A file modified in the two seconds before the run
started (or during it) is stored without its time, so that it is always hashed. Any other
difference (a file more or less, a changed text or commit) and the run is checked as usual,
task by task from the entries above. It is stored only when every task of the run was
answered from the cache or stored in it.

Location: ``$TRAINLINT_CACHE_DIR`` if set, else ``.trainlint_cache/`` in the project root (the
folder of the ``pyproject.toml`` with ``[tool.trainlint]``), else in the working directory.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from time import time_ns
from typing import Any

from trainlint import __version__, reads

CACHE_DIR_NAME = ".trainlint_cache"
FORMAT = 2


def _sha(data: str | bytes) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def code_fingerprint() -> str:
    """Size and mtime of every source and data file of the installed trainlint package."""
    root = Path(__file__).resolve().parent
    items: list[str] = []
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                if e.name != "__pycache__":
                    stack.append(e.path)
            elif e.name.endswith((".py", ".json")):
                st = e.stat()
                items.append(f"{os.path.relpath(e.path, root)}:{st.st_size}:{st.st_mtime_ns}")
    items.sort()
    return _sha("\n".join(items))


def _state(path: str) -> list[int]:
    """[size, modification time in ns] of a file, [-1, -1] when it cannot be stat-ed."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return [-1, -1]
    return [st.st_size, st.st_mtime_ns]


UNREADABLE = "unreadable"
_RECENT_NS = 2_000_000_000  # a modification this close to the run's start: always hashed


def text_digest(path: str) -> str:
    """The hash of the text a run reads for ``path`` (``UNREADABLE`` when it cannot)."""
    from trainlint.sources.files import ReadProblem, read_text

    try:
        return _sha(read_text(path).text)
    except ReadProblem:
        return UNREADABLE


_LISTINGS: dict[str, list[str]] = {}


def _listing(folder: str) -> list[str]:
    found = _LISTINGS.get(folder)
    if found is None:
        found = _LISTINGS[folder] = os.listdir(folder)
    return found


def forget_listings() -> None:
    """Folder listings are kept for one run (``engine.lint`` drops them at its end)."""
    _LISTINGS.clear()


def _virtual_digest(dep: str) -> str | None:
    kind, args = reads.parse_virtual(dep) or ("", [])
    if kind == reads.GLOB and len(args) == 2:
        folder, pattern = args
        try:
            if "/" in pattern or "**" in pattern:
                names = sorted(str(p.relative_to(folder)) for p in Path(folder).glob(pattern))
            else:  # one folder's names: listed once per run however many patterns ask
                names = sorted(fnmatch.filter(_listing(folder), pattern))
            return _sha("\0".join(names))
        except (OSError, ValueError):
            return None
    if kind == reads.IS_DIR and len(args) == 1:
        return "1" if os.path.isdir(args[0]) else "0"
    if kind == reads.SAME_NAME and len(args) == 2:
        from trainlint.sources.files import same_name

        return _sha("\n".join(same_name(*args)))
    if kind == reads.PACKAGE_READS and len(args) == 2:
        from trainlint.sources.files import package_reads

        return "1" if package_reads(*args) else "0"
    return None  # no such kind: a dependency of another trainlint version, whose namespace differs


def dep_digest(path: str) -> str | None:
    """The hash of a dependency: a file's bytes, a folder's sorted listing (a file appearing
    in it is a change: ``trainlint.reads``), None when there is nothing at ``path``."""
    if path.startswith(reads.VIRTUAL):
        return _virtual_digest(path)
    try:
        with open(path, "rb") as f:
            return _sha(f.read())
    except IsADirectoryError:
        pass
    except OSError:
        if not os.path.isdir(path):
            return None
    try:
        return "dir:" + _sha("\0".join(sorted(os.listdir(path))))
    except OSError:
        return None


def _dist_version(name: str) -> str:
    from trainlint.knowledge.versions import installed_version

    return installed_version(name) or ""


def project_pins(root: Path | None) -> dict[str, str]:
    """Hashes of the files a target version can be declared in (``knowledge.versions._resolve``:
    requirements files, pyproject.toml, setup.py/cfg, a conda environment at the project root
    and the folders above it up to the repository's top, ``declaration_folders``)."""
    if root is None:
        return {}
    from trainlint.knowledge.versions import REQUIREMENT_GLOB, declaration_folders

    root = Path(root)
    out: dict[str, str] = {}
    for folder in declaration_folders(root):  # the target may be declared above the project root
        candidates = sorted(folder.glob(REQUIREMENT_GLOB)) + sorted((folder / "requirements").glob("*.txt")) \
            + [folder / name for name in ("pyproject.toml", "setup.py", "setup.cfg", "environment.yml",
                                          "environment.yaml")]
        for p in candidates:
            try:
                out[os.path.relpath(p, root)] = _sha(p.read_bytes())
            except (OSError, ValueError):
                continue
    return out


def cache_dir(settings: Any) -> Path:
    env = os.environ.get("TRAINLINT_CACHE_DIR")
    if env:
        return Path(env)
    root = settings.project_root if settings.project_root is not None else Path.cwd()
    return Path(root) / CACHE_DIR_NAME


def cacheable_settings(settings: Any) -> bool:
    return not (settings.gpu and settings.gpu.lower() == "auto")


class _GitBase:
    """The commit ``rev`` names in the repository holding a file (asked once per repository,
    of the run's one git process for it: ``trainlint.vcs``)."""

    def __init__(self, rev: str) -> None:
        self.rev = rev
        self._commit_of_root: dict[str, str] = {}

    def commit_for(self, path: str) -> str:
        from trainlint.vcs import commit_at, repository_root

        root = repository_root(os.path.dirname(os.path.abspath(path)))
        if root is None:
            return "no-repository"
        if root not in self._commit_of_root:
            commit = commit_at(root, self.rev)
            self._commit_of_root[root] = f"{root}@{commit or 'unresolved'}"
        return self._commit_of_root[root]


@dataclass
class FindingsCache:
    """The findings of earlier runs, keyed on file content, settings, versions and trainlint's own code."""

    folder: Path
    namespace: str
    git: _GitBase
    entries: dict[str, Any] = field(default_factory=dict)
    dirty: bool = False
    hits: int = 0
    misses: int = 0

    @classmethod
    def open(cls, settings: Any) -> FindingsCache | None:
        if not cacheable_settings(settings):
            return None
        payload = {
            "format": FORMAT,
            "version": __version__,
            "code": code_fingerprint(),
            "settings": {name: getattr(settings, name) for name in type(settings).model_fields},
            "transformers": _dist_version("transformers"),
            "trl": _dist_version("trl"),
            "pins": project_pins(settings.project_root),
            "target_pins": project_pins(getattr(settings, "target_root", None)),
        }
        namespace = _sha(json.dumps(payload, sort_keys=True, default=str))[:32]
        cache = cls(folder=cache_dir(settings), namespace=namespace, git=_GitBase(settings.base))
        try:
            with open(cache.file, encoding="utf-8") as f:
                data = json.load(f)
            if isinstance(data, dict) and data.get("namespace") == namespace:
                cache.entries = data.get("entries", {})
        except (OSError, ValueError):
            pass
        return cache

    @property
    def file(self) -> Path:
        return self.folder / f"v{FORMAT}" / f"{self.namespace}.json"

    def key(self, path: str, explicit: bool, text: str) -> str:
        return _sha("\0".join((path, "1" if explicit else "0", self.git.commit_for(path), text)))

    def group_key(self, group: list[tuple[str, bool]], texts: dict[str, str]) -> str:
        """The key of a group of linked files: every path, how it was given and its text."""
        parts = ["group"]
        for path, explicit in group:
            parts += [path, "1" if explicit else "0", self.git.commit_for(path), _sha(texts[path])]
        return _sha("\0".join(parts))

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self.entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        for dep, digest in entry.get("deps", {}).items():
            if dep_digest(dep) != digest:
                self.misses += 1
                return None
        self.hits += 1
        return entry

    def put(self, key: str, entry: dict[str, Any], deps: list[str]) -> None:
        """Store ``entry`` (kept, kind, unparsable, diagnostics) with the hashes of ``deps``."""
        dep_hashes: dict[str, str | None] = {}
        for dep in deps:
            dep_hashes[dep] = dep_digest(dep)
        self.entries[key] = {**entry, "deps": dep_hashes}
        self.dirty = True

    # -- whole runs ------------------------------------------------------------------------

    def run_key(self, paths: list[Any]) -> str:
        return "run:" + _sha("\0".join(["run", os.getcwd(), *(os.path.normpath(str(p)) for p in paths)]))

    def _commits(self, walked: list[tuple[str, bool]]) -> list[str]:
        """The commit ``--base`` names in each repository the walked files lie in."""
        folders = {os.path.dirname(p) for p, _ in walked}
        return sorted({self.git.commit_for(os.path.join(f, "x")) for f in folders})

    def run_get(self, key: str, walked: list[tuple[str, bool]]) -> dict[str, Any] | None:
        """The stored result of a run over ``walked`` when no file of it (nor any file it read
        from outside, nor a commit) changed."""
        entry = self.entries.get(key)
        if entry is None or entry.get("walked") != [[p, e] for p, e in walked]:
            return None
        for group, digest in (("files", text_digest), ("deps", dep_digest)):
            for path, known in entry[group].items():
                state = _state(path)
                if known[2] is not None and known[0] >= 0 and state == known[:2]:
                    continue
                if digest(path) != known[2]:
                    return None
                if state[1] >= 0 and state[1] < time_ns() - _RECENT_NS:  # touched, unchanged
                    known[:2] = state
                    self.dirty = True
        if entry["commits"] != self._commits(walked):
            return None
        self.hits += entry["tasks"]
        return entry

    def run_put(self, key: str, walked: list[tuple[str, bool]], texts: dict[str, str], deps: dict[str, str | None],
                started_ns: int, tasks: int, result: dict[str, Any]) -> None:
        """Store a run: ``texts`` are the walked files' texts as the run read them (a walked
        path missing there could not be read), ``deps`` the hashes of the files it read from
        outside the run."""
        recent = started_ns - _RECENT_NS

        def stamped(path: str, digest: str | None) -> list[Any]:
            state = _state(path)
            return state + [digest] if 0 <= state[1] < recent else [-1, -1, digest]

        self.entries[key] = {
            "walked": [[p, e] for p, e in walked],
            "files": {p: stamped(p, _sha(texts[p]) if p in texts else UNREADABLE) for p, _ in walked},
            "deps": {p: stamped(p, d) for p, d in deps.items()},
            "commits": self._commits(walked), "tasks": tasks, "result": result,
        }
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            target = self.file
            target.parent.mkdir(parents=True, exist_ok=True)
            gitignore = self.folder / ".gitignore"
            if not gitignore.exists():
                gitignore.write_text("# created by trainlint\n*\n", encoding="utf-8")
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"namespace": self.namespace, "entries": self.entries}, f, separators=(",", ":"))
            os.replace(tmp, target)
            self.dirty = False
        except OSError:  # a read-only project: run without a cache
            pass
