"""Partitioning a run into groups that can be checked independently, with the same result as
checking everything at once (a test compares them):

- A Python file *stands alone* when no other (non-Python) file of the run mentions its name
  (so no launch line or config links to it), nor runs it as a module (``python -m pkg.train``,
  ``-m pkg`` for ``pkg/__main__.py``), it mentions no other file of the run, and it does not
  read args files (``linking.SAME_FOLDER_NAMES``) from a folder that holds one or whose
  sub-folder holds one (linking looks for an args file's reader beside it and in the folder
  above). Its setup in the whole run is then exactly the setup of a run on that file alone, and
  every later step (suppressions, per-file ignores, de-duplication) is per file.
- Everything else (shell lines, configs, the scripts they name) is one group, in walk order.
- A stand-alone script whose setup declared a file of the run after all (``Setup.files``) is
  checked again with the rest (``engine``).

Walked Python files the broad pre-filter (``workspace.PY_PREFILTER``) rules out are dropped here,
after their read; the workspace applies the rules' triggers to the rest.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path
from typing import Any

from trainlint.lazyre import lazy
from trainlint.linking import MARKDOWN_SUFFIXES, SAME_FOLDER_NAMES
from trainlint.record import Record
from trainlint.sources.files import ReadProblem, TextFile, read_text, walk_names
from trainlint.workspace import wanted_python


class Unit(Record):
    """One stand-alone Python file, with its text."""

    __slots__ = ("path", "explicit", "text", "__dict__")
    path: str
    explicit: bool
    text: str

    def __init__(self, path: str, explicit: bool, text: str) -> None:
        self.path = path
        self.explicit = explicit
        self.text = text


class Plan(Record):
    """The groups of one run: the stand-alone units and the rest (in walk order)."""

    __slots__ = ("units", "rest", "texts", "groups", "sizes", "group_texts", "walked", "dropped", "read", "__dict__")
    units: list[Unit]
    rest: list[tuple[str, bool]]
    texts: dict[str, str]  # the units' texts
    # the rest as groups that name no file of another group (each in walk order)
    groups: list[list[tuple[str, bool]]]
    sizes: list[int]  # bytes of each group's text
    group_texts: dict[str, str]  # the texts of the groups' files read
    walked: list[tuple[str, bool]]  # every walked path, in walk order
    dropped: dict[str, str]  # walked scripts the pre-filter rules out
    read: dict[str, TextFile]  # what reading each walked file gave (read once per run)

    def __init__(self, units: list[Unit], rest: list[tuple[str, bool]], texts: dict[str, str] | None = None,
                 groups: list[list[tuple[str, bool]]] | None = None, sizes: list[int] | None = None,
                 group_texts: dict[str, str] | None = None, walked: list[tuple[str, bool]] | None = None,
                 dropped: dict[str, str] | None = None, read: dict[str, TextFile] | None = None) -> None:
        self.units = units
        self.rest = rest
        self.texts = {} if texts is None else texts
        self.groups = [] if groups is None else groups
        self.sizes = [] if sizes is None else sizes
        self.group_texts = {} if group_texts is None else group_texts
        self.walked = [] if walked is None else walked
        self.dropped = {} if dropped is None else dropped
        self.read = {} if read is None else read


# Which files of a run name each other, answered by set lookups. The stand-alone test asks two
# questions per Python file: does the run's non-Python text name it (its file name as a
# substring, or its stem as a whole word: not preceded by a word character, ``.`` or ``-``, not
# followed by a word character or ``-``), and does it name one of the run's non-Python files (a
# substring). Searching all the text once per file costs files x bytes; here each text is
# scanned once into sets, and each question is a lookup with the same answer.
_NAME_RUN = lazy(r"[\w.-]+")
_PLAIN_NAME = lazy(r"[\w.-]+\Z")


def _word(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])")


# the characters that may not stand right before and right after a word (``_word``'s)
_WORD_BEFORE = lazy(r"[\w.-]")
_WORD_AFTER = lazy(r"[\w-]")


def _has_word(text: str, name: str) -> bool:
    """``_word(name).search(text) is not None``, from each occurrence of ``name`` (a substring
    search) with the characters around it asked: no pattern compiled per name, no match tried
    at every position (a run of notebooks named ``Llama3.1_(8B)-Alpaca.ipynb``: thousands of
    such names, each asked of each text)."""
    if not name:
        return _word(name).search(text) is not None
    before, after = _WORD_BEFORE.match, _WORD_AFTER.match
    n, size = len(name), len(text)
    i = text.find(name)
    while i != -1:
        if (i == 0 or before(text, i - 1) is None) and (i + n == size or after(text, i + n) is None):
            return True
        i = text.find(name, i + 1)
    return False


class NameIndex:
    """The names a text mentions, for ``mentions_word`` and ``mentions`` lookups.

    ``suffixes`` are the file-name endings (``.json``, ``.py``, ...) whose substrings are
    asked about: every occurrence of one is recorded with the run of name characters before it
    (up to ``longest`` characters), so that a plain name (word characters, ``.``, ``-``) is a
    substring of the text exactly when it is a suffix of one recorded run. Names with other
    characters, or without a listed suffix, fall back on a search of the text."""

    def __init__(self, text: str, suffixes: set[str] = frozenset(), longest: int = 255,
                 words: bool = True, named: tuple[set[str], set[str]] | None = None) -> None:
        self.text = text
        self.suffixes = set(suffixes)
        self.words: set[str] = set()
        # consecutive dotted parts of a run (``python -m a.pkg.train``: ``a.pkg``, ``pkg.train``)
        self.modules: set[str] = set()
        if words:
            # ``named``: what ``words_of(text)`` gave (a run shares each text's, computed once)
            self.words, self.modules = named if named is not None else words_of(text)
        self.ends: set[str] = name_ends(text, self.suffixes, longest)
    def mentions(self, name: str) -> bool:
        """``name in text``."""
        if not name:
            return True
        if _PLAIN_NAME.match(name) and any(name.endswith(s) for s in self.suffixes):
            return name in self.ends
        return name in self.text

    def mentions_word(self, stem: str) -> bool:
        """``_word(stem).search(text)``."""
        if _PLAIN_NAME.match(stem):
            return stem in self.words
        return _has_word(self.text, stem)

    def runs_module(self, path: str) -> bool:
        """Whether a ``python -m`` of the text may run ``path``: ``pkg.train`` (or
        ``a.pkg.train``) for ``pkg/train.py``; ``pkg`` or ``a.pkg`` for ``pkg/__main__.py``.
        The names are looked up as parts of a dotted name, never as plain substrings (a run
        with fewer names in it still checks the same: linking finds the module the same way)."""
        kind, name = _module_name(path)
        if not name:
            return False
        return name in self.modules or (kind == "package" and self.mentions_word(name.rsplit(".", 1)[-1]))


def name_ends(text: str, suffixes: set[str], longest: int = 255) -> set[str]:
    """``NameIndex.ends``: for every occurrence of a suffix, each tail of the run of name
    characters (``[\\w.-]``) that ends with it, at most ``longest`` characters long. The
    occurrences of all suffixes are found in one pass (a suffix holds one ``.``, at its start:
    two occurrences overlap only where they start together, which the pass asks of each
    suffix), the start of each run with one backward match."""
    ends: set[str] = set()
    if not suffixes or not text:
        return ends
    pattern, ordered = _suffix_pattern(frozenset(suffixes))
    gap = _UP_TO_LAST_GAP.match
    for m in pattern.finditer(text):
        pos = m.start()
        for suffix in ordered:
            if not text.startswith(suffix, pos):
                continue
            end = pos + len(suffix)
            lowest = max(0, end - longest)
            found = gap(text, lowest, pos)
            run = text[found.end() if found is not None else lowest:end]
            for k in range(len(run) - len(suffix) + 1):
                ends.add(run[k:])
    return ends


_SUFFIX_PATTERNS: dict[frozenset[str], tuple[re.Pattern[str], tuple[str, ...]]] = {}


def _suffix_pattern(suffixes: frozenset[str]) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """One pattern for all ``suffixes`` (the longest first) and the suffixes in that order."""
    got = _SUFFIX_PATTERNS.get(suffixes)
    if got is None:
        ordered = tuple(sorted(suffixes, key=lambda x: (-len(x), x)))
        if len(_SUFFIX_PATTERNS) > 64:
            _SUFFIX_PATTERNS.clear()
        got = _SUFFIX_PATTERNS[suffixes] = (re.compile("|".join(map(re.escape, ordered))), ordered)
    return got


def words_of(text: str) -> tuple[set[str], set[str]]:
    """The words (runs of name characters and their prefixes up to each ``.``) and dotted
    modules of ``text``, as ``NameIndex`` holds them. The words of texts joined by newlines
    are the union of each text's (no run holds a newline)."""
    runs = set(_NAME_RUN.findall(text))  # each distinct run once (a data file repeats them)
    words = set(runs)
    modules: set[str] = set()
    for run in runs:
        if "." not in run:
            continue
        i = run.find(".")
        while i != -1:
            words.add(run[:i])
            i = run.find(".", i + 1)
        parts = run.split(".")
        modules.update(f"{a}.{b}" for a, b in itertools.pairwise(parts) if a and b)
    return words, modules


_NO_WORDS: tuple[set[str], set[str]] = (frozenset(), frozenset())  # type: ignore[assignment]


def _json_data(path: str, text: str, read: TextFile | None = None) -> bool:
    """Whether ``path`` is a JSON file that is no config: its kind is plain ``json`` or
    ``data`` (``kinds.detect_kind``: a dataset, results, a tool's settings; LLaMA-Factory's
    ``data/*.json`` hold 5 MB of records, peft's 239 results files 1.4 MB). It has no launch
    line and names no script to linking (only launch lines run scripts, and only configs are
    read for other files), so the words of its text (a script's stem, ``pkg.train``) are not
    asked; the file names it holds are (``NameIndex.ends``: a script or config that names it,
    or that it names, still joins it). The kind is noted on ``read``, the file's read of the run
    whose text this is, for the workspace's reader (``TextFile.kind``: told once per run)."""
    if not path.lower().endswith(".json"):
        return False
    from trainlint.sources.kinds import detect_kind

    try:
        kind = detect_kind(path, text)
    except (RecursionError, MemoryError, ValueError):  # the workspace's reader reports it
        return False
    if read is not None and read.text is text and read.path == path:
        read.kind = kind
    return kind in ("json", "data")


def _module_name(path: str) -> tuple[str, str]:
    """How ``python -m`` names ``path``, by its last two parts: (``"module"``, ``"pkg.train"``)
    for ``pkg/train.py``, (``"package"``, ``"a.pkg"`` or ``"pkg"``) for ``a/pkg/__main__.py``;
    ("", "") for a file no module name reaches."""
    folder, base = os.path.split(path)
    stem, ext = os.path.splitext(base)
    if ext.lower() != ".py" or not stem:
        return "", ""
    parent = _basename(folder)
    if stem == "__main__":
        if not parent:
            return "", ""
        grand = _basename(os.path.dirname(folder))
        return "package", f"{grand}.{parent}" if grand else parent
    return ("module", f"{parent}.{stem}") if parent else ("", "")


def _suffix(name: str) -> str:
    i = name.rfind(".")
    return name[i:] if i > 0 else ""


def split(paths: list[Path], settings: Any, overlay: dict[str, str],
          walked: list[tuple[str, bool]] | None = None) -> Plan:
    """Walk ``paths`` (or take ``walked``, what ``walk_order`` gave) and partition what is
    found (see the module's documentation)."""
    candidates: list[Unit] = []
    order: list[tuple[str, bool, Unit | None]] = []
    others: dict[str, str] = {}  # non-Python path -> text
    dropped: dict[str, str] = {}
    read: dict[str, TextFile] = {}
    if walked is None:
        walked = walk_order(paths, settings)
    for path, explicit in walked:
        if path.lower().endswith((".py", ".ipynb")):
            try:
                tf = read_text(path, overlay)
            except ReadProblem:
                order.append((path, explicit, None))
                continue
            text = tf.text
            read[path] = tf  # a dropped one too: linking may read it as a module
            if not explicit and not _prefilter(path, text):
                dropped[path] = text
                continue  # the workspace drops it too, without a finding
            # (a file only the broad pre-filter lets through is syntax-checked there)
            unit = Unit(path, explicit, text)
            candidates.append(unit)
            order.append((path, explicit, unit))
        else:
            order.append((path, explicit, None))
            try:
                tf = read[path] = read_text(path, overlay)
            except ReadProblem:
                continue
            others[path] = tf.text
    alone: set[str] = set()
    other_names = {_basename(p) for p in others}
    config_folders = {os.path.dirname(p) for p in others if p.lower().endswith((".json", ".yaml", ".yml"))}
    # linking looks for the reader of a stand-alone args file in its folder and the one above
    # (``standalone_consumer``): a script there that reads args files stays with the rest
    reader_folders = config_folders | {os.path.dirname(f) for f in config_folders}
    scanned = {p: _scan_text(p, t) for p, t in others.items()}  # a README's shell blocks
    bases = {_basename(u.path) for u in candidates}
    # the file names each text mentions (``NameIndex.ends``), found once per text for every
    # question of the run: a non-Python text's for the names of all walked files, a script's
    # for those of the non-Python ones (an index of more suffixes, or of longer names, gives
    # the same answers for the names it is asked: ``name_ends``)
    walked_bases = {_basename(path) for path, _, _ in order}
    other_bases = {b for b in walked_bases if not b.lower().endswith((".py", ".ipynb"))}
    indexes = _Indexes({_suffix(b) for b in walked_bases} - {""}, max(map(len, walked_bases), default=0),
                       {_suffix(b) for b in other_bases} - {""}, max(map(len, other_bases), default=0))
    # each non-Python text's words, found once: their union is the joined text's, and the
    # groups of the rest ask about each text's (``_components``)
    named_in: dict[str, tuple[set[str], set[str]]] = {}
    in_blob = None
    if scanned and candidates and (len(scanned) > 1 or any(scanned.values())):  # "\n".join(...) holds a character
        words: set[str] = set()
        modules: set[str] = set()
        ends: set[str] = set()
        for p, t in scanned.items():
            named_in[p] = found = _NO_WORDS if _json_data(p, t, read.get(p)) else words_of(t)
            words |= found[0]
            modules |= found[1]
            ends |= indexes.of(p, t, named_in).ends
        in_blob = _JoinedIndex(scanned, {_suffix(b) for b in bases} - {""}, (words, modules), ends)
    # a notebook's launch lines name scripts (and modules) too: the names each notebook
    # mentions, gathered once (a notebook's mention of itself does not count)
    named: dict[str, int] = {}  # name -> how many notebooks mention it
    own: dict[str, set[str]] = {}
    for u in candidates:
        if u.path.lower().endswith(".ipynb"):
            own[u.path] = names = _mentioned_names(_scan_text(u.path, u.text))
            for n in names:
                named[n] = named.get(n, 0) + 1
    # Python files that import one another (``from config import training_args``, a Trainer
    # subclass in ``trainers.py``) are linked across modules: none of them stands alone
    parts: dict[str, set[str]] = {}  # each script's imported names, for the groups too
    imports = _imports_between(candidates, parts)
    imported = set().union(*imports.values()) if imports else set()
    # ``any(index.mentions(name) for name in other_names)`` of a script's index, as one set
    # question for the plain names it records (``NameIndex.mentions``) and a search for the rest
    listed = {n for n in other_names if _PLAIN_NAME.match(n) and any(n.endswith(x) for x in indexes.py_suffixes)}
    unlisted = [n for n in other_names if n not in listed]
    reads_args: dict[str, bool] = {}  # script -> whether its scanned text names an args reader
    for unit in candidates:
        base = _basename(unit.path)
        stem = os.path.splitext(base)[0]
        mine = own.get(unit.path, ())
        if named.get(base, 0) - (base in mine) > 0 or named.get(stem, 0) - (stem in mine) > 0:
            continue
        if _module_stem(unit.path) in imported or imports[unit.path] - {_module_stem(unit.path)}:
            continue
        if in_blob is not None and (in_blob.mentions(base) or (stem and in_blob.mentions_word(stem))
                                    or in_blob.runs_module(unit.path)):  # python -m pkg.train, -m pkg
            continue
        scan = _scan_text(unit.path, unit.text)
        if other_names:
            index = indexes.of(unit.path, scan)
            if not index.ends.isdisjoint(listed) or any(name in scan for name in unlisted):
                continue
        if os.path.dirname(unit.path) in reader_folders and _reads_args(unit.path, scan, reads_args):
            continue
        alone.add(unit.path)
    units = [u for u in candidates if u.path in alone]
    rest = [(path, explicit) for path, explicit, _ in order if path not in alone]
    rest_texts = {u.path: u.text for u in candidates if u.path not in alone}
    rest_texts.update(others)
    groups, sizes = _components(rest, rest_texts, [u for u in candidates if u.path not in alone], named_in,
                                parts, scanned, indexes, reads_args)
    return Plan(units, rest, {u.path: u.text for u in units}, groups, sizes, rest_texts, walked, dropped, read)


class _Indexes:
    """Each text's ``NameIndex``, made once per run: a non-Python text's for ``suffixes`` (the
    endings of every walked file's name) and ``longest`` (the longest name), with its words; a
    script's for ``py_suffixes`` and ``py_longest`` (those of the non-Python files, all that a
    script is asked about), without words."""

    def __init__(self, suffixes: set[str], longest: int, py_suffixes: set[str], py_longest: int) -> None:
        self.suffixes, self.longest = suffixes, longest
        self.py_suffixes, self.py_longest = py_suffixes, py_longest
        self.made: dict[str, NameIndex] = {}

    def of(self, path: str, text: str, named_in: dict[str, tuple[set[str], set[str]]] | None = None,
           words: bool = True) -> NameIndex:
        """The index of ``text`` (``_scan_text`` of the file at ``path``); a non-Python one
        with the words of ``named_in`` (or its own; none without ``words``: no question asks
        them, and an index made so is not kept)."""
        index = self.made.get(path)
        if index is None:
            if path.lower().endswith((".py", ".ipynb")):
                index = NameIndex(text, self.py_suffixes, self.py_longest, words=False)
            else:
                named = (named_in or {}).get(path)
                index = NameIndex(text, self.suffixes, self.longest, words=words or named is not None, named=named)
                if not words and named is None:
                    return index
            self.made[path] = index
        return index


class _JoinedIndex(NameIndex):
    """The ``NameIndex`` of the non-Python texts joined by newlines, made of each text's words
    and names (no run of name characters holds a newline); the joined text itself, for a name
    the sets cannot answer, is made on first use."""

    def __init__(self, texts: dict[str, str], suffixes: set[str], named: tuple[set[str], set[str]],
                 ends: set[str]) -> None:
        self._texts = texts
        self._joined: str | None = None
        self.suffixes = set(suffixes)
        self.words, self.modules = named
        self.ends = ends

    @property  # type: ignore[override]
    def text(self) -> str:
        if self._joined is None:
            self._joined = "\n".join(self._texts.values())
        return self._joined


def _components(rest: list[tuple[str, bool]], texts: dict[str, str], scripts: list[Unit],
                named_in: dict[str, tuple[set[str], set[str]]] | None = None,
                parts: dict[str, set[str]] | None = None, scanned: dict[str, str] | None = None,
                indexes: _Indexes | None = None, reads_args: dict[str, bool] | None = None
                ) -> tuple[list[list[tuple[str, bool]]], list[int]]:
    """The rest in groups: files joined when one names the other the way the stand-alone test
    asks (a non-Python file naming any file, or a script's stem as a word; a script naming a
    non-Python file), or when a script that reads args files lies in a folder with one, or
    above one.
    ``named_in``: ``words_of`` of non-Python texts already scanned; ``parts``: the scripts'
    ``_imported_parts`` already found; ``scanned``: ``_scan_text`` of texts, when already made;
    ``indexes``: the run's indexes of the texts (made for all the walked files' names);
    ``reads_args``: ``_reads_args`` of scripts already asked."""
    named_in = named_in or {}
    reads_args = {} if reads_args is None else reads_args
    paths = [p for p, _ in rest]
    index = {p: i for i, p in enumerate(paths)}
    parent = list(range(len(paths)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    def join(i: int, ids: list[int]) -> None:
        """``union(i, j)`` for each ``j`` of ``ids`` (the same groups: the root of each is its
        smallest index), with ``i``'s root found once (a README names hundreds of files)."""
        ri = find(i)
        for j in ids:
            rj = find(j)
            if rj < ri:
                parent[ri] = rj
                ri = rj
            elif rj > ri:
                parent[rj] = ri

    def is_py(p: str) -> bool:
        return p.lower().endswith((".py", ".ipynb"))

    by_base: dict[str, list[int]] = {}
    by_stem: dict[str, list[int]] = {}
    for i, p in enumerate(paths):
        base = _basename(p)
        by_base.setdefault(base, []).append(i)
        if is_py(p) and base[:-3]:
            by_stem.setdefault(base[:-3], []).append(i)
    other_bases = {b for b, ids in by_base.items() if any(not is_py(paths[i]) for i in ids)}
    suffixes = {_suffix(b) for b in by_base} - {""}
    longest = max((len(b) for b in by_base), default=0)
    by_dotted: dict[str, list[int]] = {}  # python -m pkg.train -> pkg/train.py
    by_package: dict[str, list[int]] = {}  # python -m pkg -> pkg/__main__.py
    for i, p in enumerate(paths):
        kind, name = _module_name(p)
        if "." in name:
            by_dotted.setdefault(name, []).append(i)
        if kind == "package":
            by_package.setdefault(name.rsplit(".", 1)[-1], []).append(i)
    odd_packages = [n for n in by_package if not _PLAIN_NAME.match(n)]
    odd_bases = [b for b in by_base if not (_PLAIN_NAME.match(b) and _suffix(b))]
    odd_stems = [st for st in by_stem if not _PLAIN_NAME.match(st)]
    config_folders: dict[str, list[int]] = {}  # a folder: the configs in it and in its sub-folders
    for i, p in enumerate(paths):
        if p.lower().endswith((".json", ".yaml", ".yml")):
            folder = os.path.dirname(p)
            config_folders.setdefault(folder, []).append(i)
            if os.path.dirname(folder) != folder:  # linking also asks the folder above
                config_folders.setdefault(os.path.dirname(folder), []).append(i)
    # the words of a non-Python text are asked about only for the scripts' stems and modules
    words = bool(by_stem or by_dotted or by_package)
    for i, p in enumerate(paths):
        text = texts.get(p)
        if not text or len(paths) == 1:
            continue
        text = scanned[p] if scanned is not None and p in scanned else _scan_text(p, text)
        py = is_py(p)
        if indexes is not None:
            named = indexes.of(p, text, named_in, words=not py and words)
        else:
            named = NameIndex(text, suffixes, longest, words=not py and words, named=named_in.get(p))
        bases = named.ends & (other_bases if py else by_base.keys())
        bases.update(b for b in odd_bases if (not py or b in other_bases) and b in text)
        for b in bases:
            join(i, by_base[b])
        if not py:
            stems = named.words & by_stem.keys()
            stems.update(st for st in odd_stems if named.mentions_word(st))
            for st in stems:
                join(i, by_stem[st])
            for name in named.modules & by_dotted.keys():
                join(i, by_dotted[name])
            packages = named.words & by_package.keys()
            packages.update(n for n in odd_packages if named.mentions_word(n))
            for name in packages:
                join(i, by_package[name])
        elif os.path.dirname(p) in config_folders and _reads_args(p, text, reads_args):
            join(i, config_folders[os.path.dirname(p)])
    # modules that import each other, and the files a notebook names, stay together
    by_module: dict[str, list[int]] = {}
    for i, p in enumerate(paths):
        if is_py(p):
            by_module.setdefault(_module_stem(p), []).append(i)
    # (the files of one module name are joined once, then each importer with the first)
    joined: set[str] = set()
    for path, mods in _imports_between(scripts, parts).items():
        for m in mods:
            same = by_module.get(m)
            if not same:
                continue
            if m not in joined:
                joined.add(m)
                for j in same[1:]:
                    union(same[0], j)
            union(index[path], same[0])
    for u in scripts:
        if u.path.lower().endswith(".ipynb"):
            for n in _mentioned_names(_scan_text(u.path, u.text)):
                join(index[u.path], by_base.get(n, []) + by_stem.get(n, []))
    groups: dict[int, list[tuple[str, bool]]] = {}
    sizes: dict[int, int] = {}
    for i, entry in enumerate(rest):
        r = find(i)
        groups.setdefault(r, []).append(entry)
        sizes[r] = sizes.get(r, 0) + len(texts.get(entry[0]) or "")
    return list(groups.values()), [sizes[r] for r in groups]


_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+\.*([\w.]*)[ \t]+import|import[ \t]+([\w.]+))", re.M)


_FILE_NAME = lazy(r"([\w.-]+\.(?:py|ipynb|sh|json|ya?ml))\b|-m\s+(?:[\w]+\.)*(\w+)")


def _scan_text(path: str, text: str) -> str:
    """The text searched for the names a file mentions: a notebook's code cells (its outputs
    and markdown name no file a launch line or import could reach); a Markdown file's shell
    blocks (``shell.extract_shell_blocks``: its launch lines, the only thing linking reads of it,
    are in them; its prose names files and scripts that nothing runs from there)."""
    lower = path.lower()
    if lower.endswith(".ipynb"):
        from trainlint.sources.notebook import code_text

        return code_text(text)
    if lower.endswith(MARKDOWN_SUFFIXES):
        from trainlint.sources.shell import extract_shell_blocks

        return "\n".join(block for block, _ in extract_shell_blocks(text))
    return text


def _reads_args(path: str, scan: str, known: dict[str, bool]) -> bool:
    """Whether a script's scanned text names a reader of args files (``SAME_FOLDER_NAMES``):
    four searches of the text, asked once per script for the stand-alone test and the groups."""
    got = known.get(path)
    if got is None:
        got = known[path] = any(n in scan for n in SAME_FOLDER_NAMES)
    return got


def _module_stem(path: str) -> str:
    """The module name a file is imported by (its package's name for ``__init__.py``)."""
    base = os.path.splitext(_basename(path))[0]
    return _basename(os.path.dirname(path)) if base == "__init__" else base


if os.sep == "/" and not os.path.altsep:
    def _basename(path: str) -> str:
        """``os.path.basename`` (posix: after the last ``/``), without its ``fspath`` and
        separator look-ups: the split asks it of each walked path several times."""
        return path[path.rfind("/") + 1:]
else:  # pragma: no cover
    _basename = os.path.basename


def _imported_parts(text: str) -> set[str]:
    """The parts of the module names ``text`` imports (``_IMPORT.findall``'s, with the
    pattern tried only at the starts of lines that hold ``import``: a match lies within one
    line, starts at its start and holds ``import``, so these are the same matches)."""
    out: set[str] = set()
    match = _IMPORT.match
    pos = text.find("import")
    while pos != -1:
        start = text.rfind("\n", 0, pos) + 1
        m = match(text, start)
        if m is not None:
            a, b = m.groups()
            if a:
                out.update(a.split("."))
            if b:
                out.update(b.split("."))
        end = text.find("\n", pos)
        if end == -1:
            break
        pos = text.find("import", end)
    out.discard("")  # (``from . import x``, ``a..b``: no part)
    return out


def _imports_between(scripts: list[Unit], parts: dict[str, set[str]] | None = None) -> dict[str, set[str]]:
    """For each script, the module names of the other scripts that it imports. ``parts``:
    ``_imported_parts`` of each script's scanned text, when already found (added to)."""
    stems = {_module_stem(u.path) for u in scripts}
    if parts is None:
        parts = {}
    out = {}
    for u in scripts:
        found = parts.get(u.path)
        if found is None:
            found = parts[u.path] = _imported_parts(_scan_text(u.path, u.text))
        out[u.path] = found & stems
    return out


# ``_FILE_NAME.finditer`` tries its first branch at every position of a run of name
# characters, each time to the end of the run and back: quadratic in the run's length (a
# notebook's base64 image holds runs of thousands, 2.5 s for one 3.7 MB notebook). A match of
# that branch can only start where a run starts or where a match of the ``-m`` branch ended (any
# later start in the run names a prefix that the run's start names too, and the greedy match is
# the longest), and the ``-m`` branch only at a run's final ``-m``; and only a run holding one of
# the marks below holds a match. So the marks are found first (a fast scan), and each run that
# holds one is tried once from its start (a randomized test compares the results).
_MARK = lazy(r"\.(?:py|ipynb|sh|json|ya?ml)\b|-m\s")
_NAME_AT = lazy(r"[\w.-]+\.(?:py|ipynb|sh|json|ya?ml)\b")
_MODULE_AT = lazy(r"-m\s+(?:[\w]+\.)*(\w+)")
_RUN_REST = lazy(r"[\w.-]*")
_UP_TO_LAST_GAP = lazy(r".*[^\w.-]", re.S)


def _mentioned_names(text: str) -> set[str]:
    """Basenames of files (``train.py``, ``ds.json``) and last parts of modules (``-m pkg.run``)
    a notebook's text names (the names ``_FILE_NAME.finditer`` finds)."""
    out: set[str] = set()
    done = 0  # the end of the last run tried
    resume = 0  # where the last ``-m`` match ended
    for mark in _MARK.finditer(text):
        h = mark.start()
        if h < done:
            continue
        start, width = h, 256  # the start of the run holding the mark
        while start > done:
            lo = max(done, h - width)
            gap = _UP_TO_LAST_GAP.match(text, lo, h)
            if gap is not None:
                start = gap.end()
                break
            start, width = lo, width * 2
        end = _RUN_REST.match(text, h).end()
        done = end
        pos = max(start, resume)
        if pos >= end:
            continue
        m = _NAME_AT.match(text, pos, end)
        if m is not None:
            out.add(m.group().rsplit("/", 1)[-1])
            pos = m.end()
        if end - pos >= 2 and text[end - 2:end] == "-m":
            m = _MODULE_AT.match(text, end - 2)
            if m is not None:
                out.add(m.group(1))
                resume = m.end()
    return out


def _prefilter(path: str, text: str) -> bool:
    if path.lower().endswith(".ipynb"):
        from trainlint.sources.notebook import prefilter
        from trainlint.workspace import PY_PREFILTER

        return prefilter(text, PY_PREFILTER)
    return wanted_python(text)


def walk_order(paths: list[Path], settings: Any) -> list[tuple[str, bool]]:
    """The walk of ``paths`` (paths as ``workspace.norm`` writes them)."""
    return list(walk_names(paths, settings.exclude))
