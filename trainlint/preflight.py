"""What a run says before it starts, so that nothing passes silently.

* a target version the data does not know, and which known version is used instead;
* a ``--base`` revision that does not exist (a usage error: lr-not-scaled would otherwise be
  disabled without a word);
* an unknown ``--gpu`` name (a usage error with the nearest names, even when no setup needs it);
* ``--gpu auto`` that finds no GPU: the hardware rules are off, and why.

``preflight`` returns the notes to print; a usage error raises ``ConfigError``.
"""

from __future__ import annotations

from pathlib import Path

from trainlint.config import ConfigError, Settings


def preflight(settings: Settings, paths: list[Path], base_given: bool) -> list[str]:
    notes: list[str] = []
    if settings.transformers_version or settings.trl_version:
        from trainlint.config import version_notes

        notes.extend(version_notes(settings))
    if base_given:
        from trainlint.vcs import base_problem

        problem = base_problem([str(p) for p in paths], settings.base)
        if problem is not None:
            raise ConfigError(problem)
    if settings.gpu and settings.gpu.lower() != "auto":
        from trainlint.resolve import target_gpu

        target_gpu(settings)  # raises ConfigError with the nearest names
    elif settings.gpu:
        from trainlint.knowledge.gpus import auto_gpu_problem

        problem = auto_gpu_problem()
        if problem is not None:
            notes.append(f"--gpu auto: {problem}, so the hardware rules are off (they need a target GPU); "
                         f"pass --gpu NAME (see `trainlint gpus`)")
    return notes


def after_run_notes(settings: Settings, texts: dict[str, str]) -> list[str]:
    """Notes that need the files read: a family ``--gpu`` name whose other variant the files name."""
    if not settings.gpu or settings.gpu.lower() == "auto":
        return []
    from trainlint.knowledge.gpus import assumed_variant_note

    note = assumed_variant_note(settings.gpu, texts)
    return [note] if note is not None else []
