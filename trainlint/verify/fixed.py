"""The fixed copy of the script: the core fixer's output in a hidden file next to it."""
from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional


class FixUnavailable(Exception):
    """The core fixer (trainlint.engine.fix_in_memory) cannot be used."""


@dataclass
class FixedCopy:
    path: Optional[Path]  # None when the fixer changes nothing in the script
    other_files: list[Path] = field(default_factory=list)  # fixed, but not applied to the run


def compute_fixes(script: Path, *, unsafe: bool) -> dict[Path, str]:
    try:
        from trainlint.engine import fix_in_memory
    except ImportError as exc:
        raise FixUnavailable(f"the fixer is not available ({exc})") from exc
    return fix_in_memory([Path(script)], unsafe=unsafe)


@contextlib.contextmanager
def fixed_copy(script: Path, *, unsafe: bool) -> Iterator[FixedCopy]:
    """Write the fixed script as a hidden temp file in the script's directory (so relative
    paths and sys.path[0] behave the same) and delete it afterwards."""
    script = Path(script).resolve()
    fixes = {Path(p).resolve(): text for p, text in compute_fixes(script, unsafe=unsafe).items()}
    others = sorted(p for p in fixes if p != script)
    if script not in fixes:
        yield FixedCopy(None, others)
        return
    fd, name = tempfile.mkstemp(prefix=f".{script.stem}.trainlint-fixed-", suffix=".py",
                                dir=script.parent)
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(fixes[script])
        yield FixedCopy(path, others)
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
