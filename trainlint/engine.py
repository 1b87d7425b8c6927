"""The pipeline, on top of the stages: walk and partition the files (``partition``), resolve
what the run shares once (``resolve.run_context``), check each group (``checking``: workspace,
linking, setups, rules, filter), merge.

One pipeline, two schedulers: the plan's tasks (stand-alone scripts, groups of linked files) are
checked in this process or by a pool of worker processes (``parallel``), each by
``checking.run_task``; the findings cache (``cache``) answers for unchanged scripts in both. The result is the same
whichever runs (a test compares default, ``-j 1``, ``-j 2`` and the warm cache).

``lint`` is what ``trainlint check`` runs; ``fix_in_memory`` is what ``fix`` and ``verify``
run. Neither imports torch, transformers, accelerate or deepspeed, nor executes user code.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from trainlint.diagnostics import Diagnostic, internal_error  # noqa: F401 - internal_error re-exported
from trainlint.record import Record
from trainlint.stack import with_deep_stack

if TYPE_CHECKING:
    from trainlint.checking import Outcome
    from trainlint.config import Settings

# The stages below are imported when a run needs them: a run the cache answers whole needs
# only the walk (``_walk_order``).

MAX_FIX_PASSES = 8
MIN_POOL_FILES = 50  # the pool starts above this many files to check
# With the default jobs, the pool starts only when it can pay for its start (forking, each
# worker's first rules and tables): this many bytes of text to check, and no task so large
# that the others cannot finish beside it (the run's expected speed-up below MIN_POOL_GAIN).
MIN_POOL_BYTES = 2_000_000
MIN_POOL_GAIN = 1.4


class LintResult(Record):
    """What ``lint`` found, with the texts it read (reporters show source lines from them)."""

    __slots__ = ("diagnostics", "files", "texts", "unparsable", "kinds", "cache_stats", "whole_run_cached",
                 "__dict__")
    diagnostics: list[Diagnostic]
    files: list[str]
    texts: dict[str, str]
    unparsable: set[str]  # never edited by fix
    kinds: dict[str, str]  # path -> reader kind
    cache_stats: tuple[int, int] | None  # (hits, misses) when the cache was used
    whole_run_cached: bool  # answered by the cache's entry for the whole run

    def __init__(self, diagnostics: list[Diagnostic], files: list[str], texts: dict[str, str] | None = None,
                 unparsable: set[str] | None = None, kinds: dict[str, str] | None = None,
                 cache_stats: tuple[int, int] | None = None, whole_run_cached: bool = False) -> None:
        self.diagnostics = diagnostics
        self.files = files
        self.texts = {} if texts is None else texts
        self.unparsable = set() if unparsable is None else unparsable
        self.kinds = {} if kinds is None else kinds
        self.cache_stats = cache_stats
        self.whole_run_cached = whole_run_cached

    @property
    def internal_errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.code == "TL000"]


_gc_lock = threading.Lock()
_gc_runs = [0, (700, 10, 10)]  # runs in progress (the language server runs several), thresholds before


# During a run the collector never starts on its own: each scheduler collects the middle
# generation (and with it the youngest) between tasks (``between_tasks`` here, the same in
# ``parallel``'s workers), when what the task held has been freed. Inside a task a collection
# frees nothing (the task's trees and the scopes, sites and calls that hold them in cycles are
# all alive) and walks every object made since the last one: the youngest generation's
# collections every 20,000 allocations were 0.12-0.19 s of trl's and peft's 2-3 s, the middle
# one's inside a group 0.9 s. What the run leaves behind is handed to the oldest generation
# unwalked when it ends (``_collector_paused``).
RUN_GC_THRESHOLDS = (0, 1_000_000, 1000)


# Set by the command-line entry for ``check`` (``cli.entry``), which leaves with ``os._exit``
# right after its one run: the last task's workspace and setups need not be freed. They are kept
# in ``_LEFT`` (a run lets go of what the one before left); ``fix`` (it goes on after each run),
# tests, the language server and any other caller free everything.
ENDS_AFTER_RUN = False
_LEFT: list[Any] = []


def between_tasks() -> None:
    """Free what the task just checked left in cycles (its trees are mostly freed by then)."""
    gc.collect(1)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic collector walks every tracked object on each full collection; while
    thousands of parsed trees come and go, that was a third of a repository run. What exists
    before the run (modules, knowledge tables) is frozen out of its sight, and during the run
    it collects only between tasks (``RUN_GC_THRESHOLDS``); afterwards it is as before."""
    with _gc_lock:
        if _gc_runs[0] == 0:
            _gc_runs[1] = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(*RUN_GC_THRESHOLDS)
        _gc_runs[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_runs[0] -= 1
            if _gc_runs[0] == 0:
                # what the run made and still holds goes to the oldest generation without a
                # collection: with the thresholds restored, the next allocation would walk it all
                # (0.37 s on trl; the command's process ends without it, the language server's
                # full collections see it later)
                gc.freeze()
                gc.set_threshold(*_gc_runs[1])
                gc.unfreeze()


def with_target_root(settings: Settings, paths: list[Path]) -> Settings:
    """The settings with the run's project root (whose declared versions are the targets)
    resolved once from the command line's paths, so that every worker and the serial path
    target the same versions."""
    if settings.target_root is not None:
        return settings
    from trainlint.knowledge.versions import find_project_root

    root = settings.project_root or find_project_root([p for p in paths if str(p) != "-"] or [Path(".")])
    return settings.model_copy(update={"target_root": root})


def lint(paths: list[Path], settings: Settings, overlay: dict[str, str] | None = None,
         only: set[str] | None = None, *, jobs: int | None = 1, cache: bool = False,
         min_files: int = MIN_POOL_FILES, memo: dict | None = None, reuse: Any = None,
         walked: list[tuple[str, bool]] | None = None) -> LintResult:
    """Check ``paths``. ``overlay`` replaces file contents (fixes in memory, stdin).

    ``jobs``: processes (None: one per core); the pool is used above ``min_files`` files to
    check. ``cache``: unchanged stand-alone scripts come from the findings cache. The result
    does not depend on either. ``memo`` (a dict kept across calls, as ``fix`` does between
    passes) remembers each task's outcome by its texts, so an unchanged task is not redone;
    ``reuse`` (a ``checking.Reuse``, kept across them too) each file's parse by its text, so a
    changed group parses only its changed files; ``walked``: the walk of ``paths`` when the
    caller has it (``fix`` creates no file, so its passes walk once)."""
    settings = with_target_root(settings, paths)
    try:
        with _collector_paused():
            return _lint(paths, settings, overlay or {}, jobs, cache, min_files, memo, reuse, walked)
    finally:
        from trainlint.vcs import close_all

        close_all()
        # listings are kept for one run: a later one (the server, fix's passes) lists again
        files = sys.modules.get("trainlint.sources.files")
        if files is not None:
            files.repository_names.cache_clear()
        cache_module = sys.modules.get("trainlint.cache")
        if cache_module is not None:
            cache_module.forget_listings()
        # the JSON verdicts the run's split kept for its tasks' parses: none outlives the run
        jsondoc = sys.modules.get("trainlint.sources.jsondoc")
        if jsondoc is not None:
            jsondoc.forget_verdicts()


def _walk_order(paths: list[Path], settings: Settings) -> list[tuple[str, bool]]:
    """``partition.walk_order`` (paths as ``workspace.norm`` writes them), without importing
    the stages."""
    from trainlint.sources.files import walk_names

    return list(walk_names(paths, settings.exclude))


def _lint(paths: list[Path], settings: Settings, overlay: dict[str, str], jobs: int | None,
          use_cache: bool, min_files: int, memo: dict | None, reuse: Any = None,
          walked: list[tuple[str, bool]] | None = None) -> LintResult:
    started_ns = time.time_ns()
    store = None
    if walked is None:
        walked = _walk_order(paths, settings)
    run_key = None
    if use_cache:
        from trainlint.cache import FindingsCache

        store = FindingsCache.open(settings)
        if store is not None and not overlay:
            # an unchanged run answers from the cache without reading a file
            run_key = store.run_key(paths)
            entry = store.run_get(run_key, walked)
            if entry is not None:
                store.save()
                return _run_from_cache(entry["result"], (store.hits, store.misses))
    from trainlint import checking
    from trainlint.checking import check_group, run_task
    from trainlint.partition import split
    from trainlint.resolve import run_context, run_root
    from trainlint.reads import files_already_read

    plan = split(paths, settings, overlay, walked)
    ctx = run_context(settings, run_root(paths))

    diagnostics: list[Diagnostic] = []
    texts: dict[str, str] = dict(plan.texts)
    kept: list[str] = []
    kinds: dict[str, str] = {}
    unparsable: set[str] = set()
    todo: list[tuple[Any, str | None]] = []
    outcomes_cached: list[Outcome] = []
    dep_hashes: dict[str, str | None] = {}  # what the tasks read from outside the run
    for u in plan.units:
        key = None
        if store is not None:
            key = store.key(u.path, u.explicit, u.text)
            entry = store.get(key)
            if entry is not None and entry.get("group"):  # it read files from outside the run
                cached = _from_cache_entry(entry, plan.texts)
                if cached is not None:
                    dep_hashes.update(entry.get("deps", {}))
                    outcomes_cached.append(cached)
                    continue
            elif entry is not None:
                dep_hashes.update(entry.get("deps", {}))
                diagnostics.extend(Diagnostic.from_json(d) for d in entry["diagnostics"])
                if entry["kept"]:
                    kept.append(u.path)
                    kinds[u.path] = entry["kind"]
                if entry["unparsable"]:
                    unparsable.add(u.path)
                continue
        todo.append((u, key))

    # groups of linked files come from the cache too, keyed on all their texts
    group_todo: list[tuple[list[tuple[str, bool]], int, str | None]] = []
    for group, size in zip(plan.groups, plan.sizes):
        key = None
        if store is not None and all(p in plan.group_texts for p, _ in group):
            key = store.group_key(group, plan.group_texts)
            entry = store.get(key)
            if entry is not None:
                cached = _from_cache_entry(entry, plan.group_texts)
                if cached is not None:
                    dep_hashes.update(entry.get("deps", {}))
                    outcomes_cached.append(cached)
                    continue
        group_todo.append((group, size, key))

    tasks: list[Any] = [u for u, _ in todo] + [g for g, _, _ in group_todo]
    sizes = [len(u.text) for u, _ in todo] + [n for _, n, _ in group_todo]
    # within one ``fix``, a task whose files did not change since the last pass is not redone
    keys = [_memo_key(t, plan) for t in tasks] if memo is not None else []
    remembered = {i: memo[k] for i, k in enumerate(keys) if k is not None and k in memo} if memo is not None else {}
    pending = [i for i in range(len(tasks)) if i not in remembered]
    run_tasks = [tasks[i] for i in pending]
    n_files = sum(1 if not isinstance(t, list) else len(t) for t in run_tasks)
    # one task (a one-file check) never asks how many processes there could be
    n_jobs = (jobs if jobs is not None else _default_jobs()) if len(run_tasks) > 1 else 1
    if n_jobs > 1 and n_files > min_files and len(run_tasks) > 1 and \
            (jobs is not None or _pool_pays([sizes[i] for i in pending], n_jobs)):
        from trainlint.parallel import PoolRun

        fresh = PoolRun(run_tasks, [sizes[i] for i in pending], settings, ctx, overlay, n_jobs).results()
    else:
        def here() -> list[Outcome]:
            with files_already_read(plan.read, overlay):
                return in_order()

        def in_order() -> list[Outcome]:
            rules = checking.make_rules(settings)
            # the largest task last: what it leaves in cycles is never walked by the collector
            # (the tasks are independent: the order changes no result, as the pool's shows)
            order = sorted(range(len(run_tasks)), key=lambda i: sizes[pending[i]])
            out: list[Any] = [None] * len(run_tasks)
            _LEFT.clear()
            for n, i in enumerate(order):
                if n:
                    between_tasks()
                leave = _LEFT if ENDS_AFTER_RUN and n == len(order) - 1 else None
                out[i] = run_task(run_tasks[i], settings, overlay, ctx, rules, reuse, leave=leave)
            return out

        fresh = with_deep_stack(here)
    results: list[Outcome] = [remembered.get(i) for i in range(len(tasks))]  # type: ignore[misc]
    for i, out in zip(pending, fresh):
        results[i] = out
        if memo is not None and keys[i] is not None:
            memo[keys[i]] = out

    known = {u.path for u in plan.units} | {p for p, _ in plan.rest}
    outcomes: list[Outcome] = []
    redo = False
    for task, out in zip(tasks, results):
        own = {task.path} if not isinstance(task, list) else {p for p, _ in task}
        if any(d in known and d not in own for d in out.deps) or \
                any(p in known and p not in own for p in out.texts):
            redo = True  # a group reads a file of another after all: check everything at once
        outcomes.append(out)
    complete = store is not None and not redo and not overlay
    for (u, key), out in zip(todo, outcomes):
        if store is not None and key is not None and not redo:
            if set(out.texts) <= {u.path} and set(out.unparsable) <= {u.path}:
                store.put(key, {"kept": u.path in out.texts, "kind": out.kinds.get(u.path),
                                "unparsable": u.path in out.unparsable,
                                "diagnostics": [d.to_json() for d in out.diagnostics]}, out.deps)
            else:  # with the configs it read from outside the run, stored like a group
                store.put(key, {"group": True, "files": sorted(out.texts), "kinds": out.kinds,
                                "unparsable": out.unparsable,
                                "diagnostics": [d.to_json() for d in out.diagnostics]},
                          sorted(p for p in out.texts if p != u.path) + out.deps)
            dep_hashes.update(store.entries[key]["deps"])
        else:
            complete = False
    for (group, _, key), out in zip(group_todo, outcomes[len(todo):]):
        # a missing reference depends on where linking looked, what is in those folders and the
        # repository's files of that name: all of them are dependencies (``ws.absent``, ``trainlint.reads``)
        if store is not None and key is not None and not redo:
            store.put(key, {"group": True, "files": sorted(out.texts), "kinds": out.kinds,
                            "unparsable": out.unparsable,
                            "diagnostics": [d.to_json() for d in out.diagnostics]},
                      sorted(p for p in out.texts if p not in plan.group_texts) + out.deps)
            dep_hashes.update(store.entries[key]["deps"])
        else:
            complete = False
    outcomes.extend(outcomes_cached)
    if redo:
        diagnostics, kept, kinds, unparsable = [], [], {}, set()
        outcomes = [with_deep_stack(check_group, walked, settings, overlay, ctx)]
    for out in outcomes:
        diagnostics.extend(out.diagnostics)
        kept.extend(out.texts)
        texts.update(out.texts)
        kinds.update(out.kinds)
        unparsable.update(out.unparsable)

    seen: set[tuple] = set()
    merged = []
    for d in diagnostics:
        k = (d.path, d.cell, d.line, d.column, d.code, d.message)
        if k not in seen:
            seen.add(k)
            merged.append(d)
    merged.sort(key=lambda d: d.sort_key())
    files = sorted(set(kept))
    result = LintResult(diagnostics=merged, files=files, texts={p: texts[p] for p in files if p in texts},
                        unparsable=unparsable, kinds={p: kinds[p] for p in files if p in kinds},
                        cache_stats=(store.hits, store.misses) if store is not None else None)
    if store is not None:
        if complete and run_key is not None:
            walked_texts = {**plan.dropped, **plan.group_texts, **plan.texts}
            store.run_put(run_key, walked, walked_texts, dep_hashes, started_ns, len(tasks) + len(outcomes_cached), {
                "diagnostics": [d.to_json() for d in merged], "files": files,
                "unparsable": sorted(unparsable), "kinds": result.kinds})
        store.save()
    return result


class _LazyTexts(Mapping):
    """The texts of a run answered from the cache: each file is read when a reporter asks."""

    def __init__(self, files: list[str]) -> None:
        self._files = set(files)
        self._order = files
        self._read: dict[str, str] = {}

    def __getitem__(self, path: str) -> str:
        if path not in self._files:
            raise KeyError(path)
        if path not in self._read:
            from trainlint.sources.files import ReadProblem, read_text

            try:
                self._read[path] = read_text(path).text
            except ReadProblem:  # gone since the cache checked it: nothing to show
                self._read[path] = ""
        return self._read[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, path: object) -> bool:
        return path in self._files


def _run_from_cache(result: dict[str, Any], stats: tuple[int, int]) -> LintResult:
    return LintResult(diagnostics=[Diagnostic.from_json(d) for d in result["diagnostics"]], files=result["files"],
                      texts=_LazyTexts(result["files"]), unparsable=set(result["unparsable"]),  # type: ignore[arg-type]
                      kinds=dict(result["kinds"]), cache_stats=stats, whole_run_cached=True)


def _from_cache_entry(entry: dict[str, Any], texts: dict[str, str]) -> Outcome | None:
    """A cached group's outcome; the texts of files it pulled in from outside the run are read
    again (the cache checked their hashes)."""
    from trainlint.checking import Outcome
    from trainlint.sources.files import ReadProblem, read_text

    got: dict[str, str] = {}
    for p in entry["files"]:
        if p in texts:
            got[p] = texts[p]
            continue
        try:
            got[p] = read_text(p).text
        except ReadProblem:
            return None
    return Outcome([Diagnostic.from_json(d) for d in entry["diagnostics"]], got, dict(entry["kinds"]),
                   list(entry["unparsable"]), [])


def _memo_key(task: Any, plan: Any) -> tuple | None:
    if not isinstance(task, list):
        return ("unit", task.path, task.explicit, task.text)
    if not all(p in plan.group_texts for p, _ in task):
        return None
    return ("group", tuple((p, e, plan.group_texts[p]) for p, e in task))


def _pool_pays(sizes: list[int], jobs: int) -> bool:
    """Whether the default jobs should use the pool for tasks of these sizes: enough to check,
    and spread enough that ``jobs`` processes finish well before one would (a repository
    whose modules import each other is mostly one group of linked files: one process)."""
    total = sum(sizes)
    if total < MIN_POOL_BYTES:
        return False
    return total / max(max(sizes), total / jobs) >= MIN_POOL_GAIN


def _default_jobs() -> int:
    from trainlint.parallel import default_jobs

    return default_jobs()


class FixOutcome(Record):
    """What ``fix`` would write: texts before and after, the fixes applied, reverted and left."""

    __slots__ = ("original", "fixed", "applied", "reverted", "remaining", "outside", "first", "__dict__")
    original: dict[str, str]  # path -> text before
    fixed: dict[str, str]  # path -> text after, only files that change
    applied: list[Diagnostic]
    reverted: list[tuple[Diagnostic, str]]
    remaining: list[Diagnostic]  # what is still reported after fixing
    # fixes left alone because they edit a file outside the given paths: (finding, that file)
    outside: list[tuple[Diagnostic, str]]
    first: LintResult | None  # the check before any fix (what `nothing_checked` reads)

    def __init__(self, original: dict[str, str], fixed: dict[str, str], applied: list[Diagnostic],
                 reverted: list[tuple[Diagnostic, str]], remaining: list[Diagnostic],
                 outside: list[tuple[Diagnostic, str]] | None = None,
                 first: LintResult | None = None) -> None:
        self.original = original
        self.fixed = fixed
        self.applied = applied
        self.reverted = reverted
        self.remaining = remaining
        self.outside = [] if outside is None else outside
        self.first = first


def fix_outcome(paths: list[Path], settings: Settings, *, unsafe: bool = False,
                overlay: dict[str, str] | None = None) -> FixOutcome:
    """Compute all fixes in memory, in passes, until nothing more applies.

    * A file that could not be read or parsed is never edited.
    * Fixes whose edits overlap wait for a later pass (the rules run again on the new text, so
      the waiting fix is computed afresh); at most ``MAX_FIX_PASSES`` passes.
    * A fix whose result does not parse is dropped and listed in ``reverted``; it is not tried
      again in later passes.
    """
    return with_deep_stack(_fix_outcome, paths, settings, unsafe, overlay)


def _fix_key(d: Diagnostic) -> tuple:
    assert d.fix is not None
    return (d.code, tuple(sorted((e.path, e.cell or 0, e.line, e.column, e.end_line, e.end_column, e.content)
                                 for e in d.fix.edits)))


def inside_paths(paths: list[Path]) -> Callable[[str], bool]:
    """Whether a file is under one of ``paths`` once both are resolved (symbolic links
    followed, ``..`` removed): ``fix`` edits only such files. A launch line's
    ``--deepspeed ../shared/ds.json`` or a link to a file elsewhere is outside."""
    import os

    roots = [os.path.realpath(p) for p in paths] or [os.path.realpath(".")]
    cache: dict[str, bool] = {}

    def inside(path: str) -> bool:
        if path not in cache:
            real = os.path.realpath(path)
            cache[path] = any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)
        return cache[path]

    return inside


def _fix_outcome(paths: list[Path], settings: Settings, unsafe: bool,
                 overlay: dict[str, str] | None) -> FixOutcome:
    inside = inside_paths(paths)
    outside: dict[tuple, tuple[Diagnostic, str]] = {}
    current: dict[str, str] = dict(overlay or {})
    applied: list[Diagnostic] = []
    reverted: list[tuple[Diagnostic, str]] = []
    refused: set[tuple] = set()  # fixes that broke a file: never tried again
    memo: dict = {}  # tasks a pass leaves unchanged are not checked again
    from trainlint.checking import Reuse

    reuse = Reuse()  # nor files whose text a pass leaves unchanged parsed again
    walked = _walk_order(paths, with_target_root(settings, paths))  # fix creates no file: one walk
    result = lint(paths, settings, current, memo=memo, reuse=reuse, walked=walked)
    first = result
    original = dict(result.texts)
    # never edit a file that did not parse, even when its finding is ignored or suppressed
    unparsable = set(result.unparsable) | {d.path for d in result.diagnostics
                                           if d.code in ("TL001", "TL002", "TL003")}
    seen_states: set[int] = set()
    for _ in range(MAX_FIX_PASSES):
        texts = {**result.texts, **current}
        fixable = []
        for d in result.diagnostics:
            if d.fix is None or not (d.fix.applicability == "safe" or unsafe) \
                    or any(e.path in unparsable for e in d.fix.edits) or _fix_key(d) in refused:
                continue
            away = next((e.path for e in d.fix.edits if not inside(e.path)), None)
            if away is not None:
                outside.setdefault((d.code, d.path, d.line, d.column), (d, away))
                continue
            fixable.append(d)
        if not fixable:
            break
        from trainlint.fixing.apply import apply_fix_pass

        pr = apply_fix_pass(fixable, texts, result.kinds)
        for d, error in pr.reverted:
            refused.add(_fix_key(d))
            reverted.append((d, error))
        if not pr.texts:
            if pr.reverted:
                continue  # what was deferred behind a refused fix may apply now
            break
        state = hash(tuple(sorted({**current, **pr.texts}.items())))
        if state in seen_states:  # fixes that undo each other: stop
            break
        seen_states.add(state)
        applied.extend(pr.applied)
        current.update(pr.texts)
        result = lint(paths, settings, current, memo=memo, reuse=reuse, walked=walked)
    fixed = {p: t for p, t in current.items() if original.get(p) is not None and t != original[p]
             and p not in unparsable}
    return FixOutcome(original=original, fixed=fixed, applied=applied, reverted=reverted,
                      remaining=result.diagnostics, outside=list(outside.values()), first=first)


def fix_in_memory(paths: list[Path], *, unsafe: bool = False, settings: Settings | None = None
                  ) -> dict[Path, str]:
    """New full text of every file the fixes change (nothing is written)."""
    from trainlint.config import load_settings

    settings = settings or load_settings(paths[0] if paths else None)
    outcome = fix_outcome(paths, settings, unsafe=unsafe)
    return {Path(p): t for p, t in outcome.fixed.items()}


def all_rule_codes() -> list[str]:
    from trainlint.rules import all_rules

    return [r.code for r in all_rules()]


def nothing_checked(paths: list[Path], result: LintResult, settings: Settings) -> str | None:
    """When a run read no file it could check: how many files it looked at and why none was
    checked (so an empty run never passes as "All checks passed"); None otherwise."""
    if result.diagnostics or any(result.kinds.get(p, "unknown") != "unknown" for p in result.files):
        return None
    import os

    from trainlint.sources.files import WALK_SUFFIXES, walk

    readable = WALK_SUFFIXES | {".md", ".pyw", ".pyi"}
    candidates = [p for p, _ in walk(paths, settings.exclude) if p.suffix.lower() in readable]
    kinds = "Python, shell, JSON or YAML"
    if candidates:
        n = len(candidates)
        return (f"0 files checked: {n} file{'s' if n != 1 else ''} read, none holds TrainingArguments, a Trainer, "
                f"a launch line or a training config")
    others: dict[str, int] = {}
    ignored = 0  # readable kinds the walk skips: .gitignore'd, excluded, virtualenvs, build folders
    seen = 0
    for p in paths:
        if p.is_dir():
            for _dirpath, dirnames, filenames in os.walk(p):
                dirnames[:] = [d for d in dirnames if d not in (".git", ".hg", ".svn")]
                for name in filenames:
                    seen += 1
                    suffix = Path(name).suffix.lower() or name
                    if suffix in readable:
                        ignored += 1
                    else:
                        others[suffix] = others.get(suffix, 0) + 1
                if seen > 50_000:  # enough to say why
                    break
        elif p.exists() and p.suffix.lower() not in readable:
            suffix = p.suffix.lower() or p.name
            others[suffix] = others.get(suffix, 0) + 1
    if ignored and not others:
        return (f"0 files checked: {ignored} file{'s' if ignored != 1 else ''} skipped by .gitignore, `exclude` or "
                f"a virtualenv/build/cache folder")
    if not others:
        return f"0 files checked: no {kinds} files under {', '.join(str(p) for p in paths)}"
    skipped = sum(others.values())
    which = ", ".join(f"{k} ({v})" for k, v in sorted(others.items(), key=lambda kv: -kv[1])[:5])
    also = f"; {ignored} more skipped by .gitignore, `exclude` or a virtualenv/build folder" if ignored else ""
    return (f"0 files checked: {skipped} file{'s' if skipped != 1 else ''} skipped, not a kind trainlint reads "
            f"({which}; it reads {kinds} files){also}")
