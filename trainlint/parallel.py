"""Fast path for many files: stand-alone scripts are linted one by one, in a process pool when
there are many, and their results come from the findings cache when nothing changed.

The split keeps the result identical to the plain pipeline (``engine.lint`` with ``jobs=1`` and
no cache; a test compares them):

- A Python file *stands alone* when no other (non-Python) file of the run mentions its name
  (so no launch line or config links to it) and it mentions no other file of the run. Its setup
  in the whole run is then exactly the setup of a run on that file alone, and every later step
  (suppressions, per-file ignores, de-duplication) is per file.
- Everything else (shell lines, configs, the scripts they name) goes through the ordinary
  workspace pipeline in this process.
- Results are merged, de-duplicated and sorted as the plain pipeline does.
- A worker's result is used only when its setup declared no file of the run besides the script
  (``Setup.files``); otherwise the script is re-done with the rest.

The pool (``fork`` where available) is used only when there are more than ``MIN_FILES``
stand-alone scripts and more than one core; workers never start pools of their own.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MIN_FILES = 50
CHUNK = 16

_SETTINGS: Any = None  # the run's settings, in each worker


@dataclass
class Unit:
    """One stand-alone file handed to a worker."""

    path: str
    explicit: bool
    text: str


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class Outcome:
    """What linting one stand-alone file gave."""

    diagnostics: list[Any]
    texts: dict[str, str]  # the files read: the script when kept, configs pulled in from outside
    kinds: dict[str, str]
    unparsable: list[str]
    deps: list[str]  # other files its setups declared


def lint_one(path: str, explicit: bool, text: str, settings: Any) -> Outcome:
    """Lint one stand-alone file as a run of its own (with a deep stack, as ``engine.lint``)."""
    from trainlint.engine import with_deep_stack

    return with_deep_stack(_lint_one, path, explicit, text, settings)


def _lint_one(path: str, explicit: bool, text: str, settings: Any) -> Outcome:
    from trainlint.engine import _filter, run_rules
    from trainlint.resolve import Workspace, read_entry

    ws = Workspace(settings=settings, overlay={path: text})
    read_entry(ws, path, explicit)
    deps: set[str] = set()
    diagnostics = _filter(run_rules(ws, settings, declared=deps), ws, settings)
    deps.discard(path)
    return Outcome(diagnostics, {p: f.text.text for p, f in ws.files.items()},
                   {p: f.kind for p, f in ws.files.items()}, sorted(ws.unparsable), sorted(deps))


def _init_worker(settings: Any) -> None:
    global _SETTINGS
    _SETTINGS = settings


def _work(unit: Unit) -> Outcome:
    return lint_one(unit.path, unit.explicit, unit.text, _SETTINGS)


def _word(name: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])")


_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+\.*([\w.]*)[ \t]+import|import[ \t]+([\w.]+))", re.M)


def _module_stem(path: str) -> str:
    """The module name a file is imported by (its package's name for ``__init__.py``)."""
    base = os.path.basename(path)[:-3]
    return os.path.basename(os.path.dirname(path)) if base == "__init__" else base


def split(paths: list[Path], settings: Any, overlay: dict[str, str]) -> tuple[list[Unit], list[tuple[str, bool]], dict[str, str]]:
    """(stand-alone Python units, the rest as (path, explicit) in walk order, texts read)."""
    from trainlint.resolve import PY_PREFILTER, norm
    from trainlint.sources.files import ReadProblem, read_text, walk

    candidates: list[Unit] = []
    order: list[tuple[str, bool, Unit | None]] = []
    others: dict[str, str] = {}  # non-Python path -> text
    texts: dict[str, str] = {}
    for p, explicit in walk(paths, settings.exclude):
        path = norm(p)
        if path.lower().endswith((".py", ".ipynb")):
            try:
                text = read_text(path, overlay).text
            except ReadProblem:
                order.append((path, explicit, None))
                continue
            if not explicit and not _prefilter(path, text, PY_PREFILTER):
                continue  # the plain pipeline drops it too, without a finding
            unit = Unit(path, explicit, text)
            candidates.append(unit)
            order.append((path, explicit, unit))
        else:
            order.append((path, explicit, None))
            try:
                others[path] = read_text(path, overlay).text
            except ReadProblem:
                pass
    alone: set[str] = set()
    other_names = {os.path.basename(p) for p in others}
    blob = "\n".join(others.values())
    # a notebook's launch lines name scripts (and modules) too: the names each notebook
    # mentions, gathered once (a notebook's mention of itself does not count)
    named: dict[str, int] = {}
    own: dict[str, set[str]] = {}
    for u in candidates:
        if u.path.lower().endswith(".ipynb"):
            own[u.path] = names = _mentioned_names(u.text)
            for n in names:
                named[n] = named.get(n, 0) + 1
    # Python files that import one another (``from config import training_args``, a Trainer
    # subclass in ``trainers.py``) are linked across modules: none of them stands alone
    stems = {_module_stem(u.path) for u in candidates}
    imports = {u.path: {part for groups in _IMPORT.findall(u.text) for m in groups for part in m.split(".") if part}
               & stems for u in candidates}
    imported = set().union(*imports.values()) if imports else set()
    for unit in candidates:
        base = os.path.basename(unit.path)
        stem = os.path.splitext(base)[0]
        mine = own.get(unit.path, ())
        if named.get(base, 0) - (base in mine) > 0 or named.get(stem, 0) - (stem in mine) > 0:
            continue
        parent = os.path.basename(os.path.dirname(unit.path))
        module = f"{parent}.{stem}" if parent and stem else ""  # python -m pkg.train
        if stem == "__main__" and parent and blob and _word(parent).search(blob):
            continue  # python -m pkg
        if blob and (base in blob or (stem and _word(stem).search(blob)) or (module and module in blob)):
            continue
        if any(name in unit.text for name in other_names):
            continue
        if _module_stem(unit.path) in imported or imports[unit.path] - {_module_stem(unit.path)}:
            continue
        alone.add(unit.path)
    units = [u for u in candidates if u.path in alone]
    rest = [(path, explicit) for path, explicit, _ in order if path not in alone]
    for u in units:
        texts[u.path] = u.text
    return units, rest, texts


_FILE_NAME = re.compile(r"([\w.-]+\.(?:py|ipynb|sh|json|ya?ml))\b|-m\s+(?:[\w]+\.)*(\w+)")


def _mentioned_names(text: str) -> set[str]:
    """Basenames of files (``train.py``, ``ds.json``) and last parts of modules (``-m pkg.run``)
    a notebook's text names."""
    out: set[str] = set()
    for m in _FILE_NAME.finditer(text):
        name = m.group(1) or m.group(2)
        out.add(name.rsplit("/", 1)[-1])
    return out


def _prefilter(path: str, text: str, markers: tuple[str, ...]) -> bool:
    if path.lower().endswith(".ipynb"):
        from trainlint.sources.notebook import prefilter

        return prefilter(text, markers)
    return any(tok in text for tok in markers)


def lint_split(paths: list[Path], settings: Any, overlay: dict[str, str], *, jobs: int | None = None,
               use_cache: bool = False, min_files: int = MIN_FILES) -> Any:
    from trainlint.engine import LintResult

    units, rest, texts = split(paths, settings, overlay)
    cache = None
    if use_cache:
        from trainlint.cache import FindingsCache

        cache = FindingsCache.open(settings)

    diagnostics: list[Any] = []
    kept: list[str] = []
    kinds: dict[str, str] = {}
    unparsable: set[str] = set()
    todo: list[tuple[Unit, str | None]] = []
    for u in units:
        key = None
        if cache is not None and not _mentions_other_files(u.text):
            key = cache.key(u.path, u.explicit, u.text)
            entry = cache.get(key)
            if entry is not None:
                from trainlint.diagnostics import Diagnostic

                diagnostics.extend(Diagnostic.from_json(d) for d in entry["diagnostics"])
                if entry["kept"]:
                    kept.append(u.path)
                    kinds[u.path] = entry["kind"]
                if entry["unparsable"]:
                    unparsable.add(u.path)
                continue
        todo.append((u, key))

    n_jobs = jobs if jobs is not None else default_jobs()
    results: list[Outcome]
    if n_jobs > 1 and len(todo) > min_files:
        results = _pool_map([u for u, _ in todo], settings, n_jobs)
    else:
        from trainlint.engine import with_deep_stack

        results = with_deep_stack(lambda: [lint_one(u.path, u.explicit, u.text, settings) for u, _ in todo])

    known = {u.path for u in units} | {p for p, _ in rest}
    redo: list[str] = []
    for (u, key), out in zip(todo, results):
        if any(d in known for d in out.deps) or any(p != u.path and p in known for p in out.texts):
            redo.append(u.path)
            continue
        diagnostics.extend(out.diagnostics)
        kept.extend(out.texts)
        texts.update(out.texts)
        kinds.update(out.kinds)
        unparsable.update(out.unparsable)
        if cache is not None and key is not None and set(out.texts) <= {u.path} \
                and set(out.unparsable) <= {u.path}:
            cache.put(key, {"kept": u.path in out.texts, "kind": out.kinds.get(u.path),
                            "unparsable": u.path in out.unparsable,
                            "diagnostics": [d.to_json() for d in out.diagnostics]}, out.deps)
    if cache is not None:
        cache.save()

    if redo:
        wanted = set(redo) | {p for p, _ in rest}
        rest = [(p, e) for p, e in _walk_order(paths, settings) if p in wanted]
    if rest:
        from trainlint.engine import with_deep_stack

        ws = with_deep_stack(_lint_rest, rest, settings, overlay, diagnostics)
        kept.extend(ws.files)
        texts.update({p: f.text.text for p, f in ws.files.items()})
        kinds.update({p: f.kind for p, f in ws.files.items()})
        unparsable.update(ws.unparsable)

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
                        unparsable=unparsable, kinds={p: kinds[p] for p in files if p in kinds})
    result.cache_stats = (cache.hits, cache.misses) if cache is not None else None  # type: ignore[attr-defined]
    return result


def _lint_rest(rest: list[tuple[str, bool]], settings: Any, overlay: dict[str, str], out: list[Any]) -> Any:
    """The plain pipeline on what does not stand alone; appends its findings to ``out``."""
    from trainlint.engine import _filter, run_rules
    from trainlint.resolve import Workspace, read_entry

    ws = Workspace(settings=settings, overlay=overlay)
    for path, explicit in rest:
        read_entry(ws, path, explicit)
    out.extend(_filter(run_rules(ws, settings), ws, settings))
    return ws


def _mentions_other_files(text: str) -> bool:
    from trainlint.cache import mentions_other_files

    return mentions_other_files(text)


def _walk_order(paths: list[Path], settings: Any) -> list[tuple[str, bool]]:
    from trainlint.resolve import norm
    from trainlint.sources.files import walk

    return [(norm(p), e) for p, e in walk(paths, settings.exclude)]


def _pool_map(units: list[Unit], settings: Any, jobs: int) -> list[Outcome]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    # Big files first would balance better, but map keeps the order we merge in.
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker,
                             initargs=(settings,)) as pool:
        return list(pool.map(_work, units, chunksize=max(1, min(CHUNK, len(units) // (jobs * 4) or 1))))
