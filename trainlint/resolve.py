"""Resolved setups: the stage after linking.

``build_setups`` groups what belongs to one training run (``linking``) and attaches what the
whole run shares: the target hardware and the targeted library versions. ``run_context``
resolves those once per run (the project root, the versions, the GPU), and every part of the
run (in this process or in a worker) gets the same context, so that ``-j 1`` and ``-j N`` agree.

(The workspace names are re-exported for callers that read a workspace and build its setups.)
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from trainlint.lazyre import lazy
from trainlint.config import ConfigError, Settings
from trainlint.record import Record, _set
from trainlint.setup import OPTION, Setup, Value
from trainlint.sources.python import PythonFile
from trainlint.workspace import (  # noqa: F401 - re-exported
    PY_PREFILTER,
    ParsedFile,
    Workspace,
    input_problem,
    norm,
    read_entry,
    read_file,
    read_workspace,
)


class RunContext(Record, frozen=True):
    """What every setup of one run shares, resolved once (``run_context``)."""

    # root: the run's project folder; sub_targets: the targets of its sub-projects that declare
    # their own transformers (``subproject_targets``), found once per folder with what was read
    # (a cache: not compared, not shown)
    __slots__ = ("gpu", "transformers_version", "trl_version", "world_size", "root", "sub_targets")
    _hidden = ("sub_targets",)
    gpu: Any
    transformers_version: Value
    trl_version: Value
    world_size: Value | None
    root: Path | None
    sub_targets: dict

    def __init__(self, gpu: Any, transformers_version: Value, trl_version: Value,
                 world_size: Value | None, root: Path | None = None, sub_targets: dict | None = None) -> None:
        _set(self, "gpu", gpu)
        _set(self, "transformers_version", transformers_version)
        _set(self, "trl_version", trl_version)
        _set(self, "world_size", world_size)
        _set(self, "root", root)
        _set(self, "sub_targets", {} if sub_targets is None else sub_targets)


def run_context(settings: Settings, root: Path | None) -> RunContext:
    """The run's target GPU, library versions and world size. ``root`` is the project whose
    declared versions are the targets when the settings do not say (``Settings.target_root``,
    else the pyproject.toml's folder)."""
    if settings.target_root is not None:
        root = settings.target_root
    elif settings.project_root is not None:
        root = settings.project_root
    tf_version, trl_version = _target_versions(settings, root)
    world = Value(value=settings.gpus, origin=OPTION, name="--gpus", note="--gpus") if settings.gpus else None
    return RunContext(gpu=target_gpu(settings), transformers_version=tf_version, trl_version=trl_version,
                      world_size=world, root=Path(root) if root is not None else None)


def subproject_targets(ctx: RunContext, settings: Settings, folder: str | Path) -> tuple[Value, Value] | None:
    """The transformers and TRL targets of the sub-project ``folder`` belongs to, when it is not
    the run's: the nearest folder between ``folder`` and the run's project (that one excluded)
    whose own requirements/pyproject/setup files declare a transformers version
    (DeepSpeedExamples' ``applications/DeepSpeed-VisualChat/requirements.txt``:
    ``transformers==4.33.3``: its scripts run on that, not on what the repository's top says).
    None when no such folder is there, or the versions are given (``--transformers-version``)."""
    if ctx.root is None or settings.transformers_version:
        return None
    from trainlint import reads

    start = os.path.abspath(folder)
    root = os.path.abspath(ctx.root)
    if start == root or not start.startswith(root.rstrip(os.sep) + os.sep):
        return None
    hit = ctx.sub_targets.get(start)
    if hit is not None:
        reads.replay(hit[1])
        return hit[0]
    from trainlint.knowledge.versions import declared_requirement

    found = None
    with reads.recording() as seen:
        d = start
        while d != root and d.startswith(root.rstrip(os.sep) + os.sep):
            key = ("declares", d)  # a folder above several scripts is looked at once
            declares = ctx.sub_targets.get(key)
            if declares is None:
                with reads.recording() as own:
                    value = _may_declare(d) and declared_requirement("transformers", Path(d)) is not None
                declares = ctx.sub_targets[key] = (value, frozenset(own))
            else:
                reads.replay(declares[1])
            if declares[0]:
                tf, trl = _target_versions(settings, Path(d))
                prefix = os.path.relpath(d, root).replace(os.sep, "/")
                found = (_rebased(tf, prefix), _rebased(trl, prefix))
                break
            d = os.path.dirname(d)
    ctx.sub_targets[start] = (found, frozenset(seen))
    return found


_DECLARATION_NAMES = ("pyproject.toml", "setup.py", "setup.cfg", "environment.yml", "environment.yaml", "requirement")


def _may_declare(folder: str) -> bool:
    """Whether ``folder`` holds a file a declaration is read from (one listing, noted for the
    cache, instead of looking for each kind of file)."""
    from trainlint import reads

    reads.note(folder)  # its listing
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return any(n.startswith(_DECLARATION_NAMES) or n.startswith("Dockerfile") for n in names)


_WHERE = lazy(r"^(?P<lead>installed, within )?(?P<path>[^\s:;,]+):(?P<line>\d+)$")


def _rebased(v: Value, prefix: str) -> Value:
    """``v`` with the declaration it names made relative to the run's project."""
    import posixpath

    m = _WHERE.match(v.note or "")
    if m is None:
        return v
    where = posixpath.normpath(f"{prefix}/{m.group('path')}")
    return Value(value=v.value, origin=v.origin, name=v.name, note=f"{m.group('lead') or ''}{where}:{m.group('line')}")


def workspace_context(ws: Workspace, settings: Settings) -> RunContext:
    """The context of a workspace read on its own (not through ``engine.lint``): pins are
    looked for in the folder of its first file."""
    return run_context(settings, _project_root(ws, settings))


def run_root(paths: list[Path]) -> Path | None:
    """The folder a run is about when no pyproject.toml says: the first path given (its
    folder when it is a file)."""
    for p in paths:
        p = Path(p)
        return p if p.is_dir() else p.parent
    return None


def target_gpu(settings: Settings):
    """The GPU the setup will run on, from ``--gpu`` / ``[tool.trainlint] gpu``; None when not
    said (rules that need it stay silent)."""
    if not settings.gpu:
        return None
    from trainlint.knowledge.gpus import gpu_from_nvidia_smi, lookup_gpu

    if settings.gpu.lower() == "auto":
        found = gpu_from_nvidia_smi()
        return found[0] if found else None
    gpu = lookup_gpu(settings.gpu)
    if gpu is None:
        from trainlint.knowledge.gpus import nearest_gpus

        near = nearest_gpus(settings.gpu)
        hint = f"did you mean {', '.join(repr(n) for n in near)}? " if near else ""
        raise ConfigError(f"unknown GPU {settings.gpu!r} ({hint}`trainlint gpus` lists the known GPUs)")
    return gpu


def _project_root(ws: Workspace, settings: Settings) -> Path | None:
    """The run's project (``Settings.target_root``, resolved once per run from the command
    line's paths); else the pyproject.toml's folder; else the project of the first file."""
    if settings.target_root is not None:
        return settings.target_root
    if settings.project_root is not None:
        return settings.project_root
    from trainlint.knowledge.versions import find_project_root

    for path in ws.files:
        return find_project_root([path])
    return None


def target_versions(ws: Workspace, settings: Settings) -> tuple[Value, Value]:
    """The transformers and TRL versions the check targets, as Values whose ``note`` says where
    each came from (see ``knowledge.versions``); nothing is imported. A run resolves them once
    (``run_context``); this is for a workspace on its own."""
    return _target_versions(settings, _project_root(ws, settings))


def _target_versions(settings: Settings, root: Path | None) -> tuple[Value, Value]:
    from trainlint.knowledge.versions import resolve_transformers_version, resolve_trl_version

    out = []
    for explicit, flag, key, resolver in (
        (settings.transformers_version, "--transformers-version", "transformers-version",
         resolve_transformers_version),
        (settings.trl_version, "--trl-version", "trl-version", resolve_trl_version),
    ):
        source = flag
        if explicit and settings.config_path is not None and _configured(settings.config_path, key) == str(explicit):
            source = "pyproject.toml [tool.trainlint]"
        rv = _cached_target(settings, resolver, explicit, root, source)
        out.append(Value(value=rv.version, origin=OPTION, name=flag, note=rv.source))
    tf, trl = out
    undeclared = ("installed", "newest known")
    if trl.note in undeclared and tf.note not in undeclared and not tf.note.startswith("installed, within"):
        # transformers pinned, trl not declared: the trl that installs beside that transformers
        from trainlint.knowledge.versions import trl_for_transformers

        fit = trl_for_transformers(str(tf.value), str(trl.value))
        if fit is not None:
            trl = Value(value=fit.version, origin=OPTION, name="--trl-version", note=fit.source)
    return tf, trl


_TARGETS: dict[tuple, tuple[Any, Any]] = {}


def _cached_target(settings, resolver, explicit, root, source):
    """One resolution per run (per ``Settings`` object, which ``engine.lint`` makes per run)
    and package: every setup, and every ``run_rules`` of the run (the parallel path calls it
    per file), gets the same target without reading the project's declarations again."""
    key = (id(settings), resolver.__name__, explicit, str(root), source)
    found = _TARGETS.get(key)
    if found is None or found[0] is not settings:
        found = _TARGETS[key] = (settings, resolver(explicit, root, explicit_source=source))
        while len(_TARGETS) > 16:
            _TARGETS.pop(next(iter(_TARGETS)))
    return found[1]


def _configured(path: Path, key: str) -> str | None:
    from trainlint.config import tomllib
    from trainlint.knowledge import tomlfile

    try:
        data = tomlfile.load(path)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    value = data.get("tool", {}).get("trainlint", {}).get(key)
    return str(value) if value is not None else None


def build_setups(ws: Workspace, settings: Settings, ctx: RunContext | None = None) -> list[Setup]:
    """The setups of ``ws``: the linked ones, then each script nothing links on its own."""
    if ctx is None:
        ctx = workspace_context(ws, settings)
    from trainlint import linking

    setups: list[Setup] = []
    linked: set[str] = set()
    for s in linking.link_setups(ws, settings):
        s.gpu = ctx.gpu
        anchor = os.path.dirname(s.scripts[0].path) if s.scripts else str(s.root)
        s.transformers_version, s.trl_version = subproject_targets(ctx, settings, anchor) \
            or (ctx.transformers_version, ctx.trl_version)
        if s.world_size is None:
            s.world_size = ctx.world_size
        setups.append(s)
        linked.update(sc.path for sc in s.scripts)
    for f in ws.files.values():
        if f.kind != "python" or f.doc is None or f.path in linked:
            continue
        setups.append(single_file_setup(f.path, f.doc, ctx, settings))
    return setups


def single_file_setup(path: str, pf: PythonFile, ctx: RunContext, settings: Settings | None = None) -> Setup:
    """The setup of a script nothing links: the script alone."""
    tf, trl = (subproject_targets(ctx, settings, os.path.dirname(path)) if settings is not None else None) \
        or (ctx.transformers_version, ctx.trl_version)
    return Setup(root=Path(path).parent, scripts=[pf], sites=pf.sites, world_size=ctx.world_size, gpu=ctx.gpu,
                 files=[path], transformers_version=tf, trl_version=trl)
