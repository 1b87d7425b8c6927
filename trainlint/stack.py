"""Running the pipeline with a deep stack.

Deeply nested but valid code (a 900-term string concatenation, a long method chain) makes
ast's recursive structures deep; the analysis and the rules walk them recursively. The pipeline
therefore runs in a thread with a large stack and a raised recursion limit, so such files are
analysed instead of failing, and anything deeper ends in a RecursionError that is reported per
file (never a crash of the interpreter).
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, TypeVar

DEEP_STACK_BYTES = 512 * 1024 * 1024
DEEP_RECURSION_LIMIT = 20_000
_deep = threading.local()
_T = TypeVar("_T")


def with_deep_stack(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Call ``fn(*args, **kwargs)`` in a thread with a large stack and a raised recursion
    limit; exceptions propagate to the caller. Nested calls run directly."""
    if getattr(_deep, "active", False):
        return fn(*args, **kwargs)
    box: dict[str, Any] = {}

    def target() -> None:
        _deep.active = True
        try:
            box["result"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            box["error"] = exc

    old_limit = sys.getrecursionlimit()
    try:
        old_size = threading.stack_size(DEEP_STACK_BYTES)
    except (ValueError, RuntimeError):  # platform without settable thread stacks
        return fn(*args, **kwargs)
    sys.setrecursionlimit(max(old_limit, DEEP_RECURSION_LIMIT))
    try:
        try:
            thread = threading.Thread(target=target, name="trainlint", daemon=True)
            thread.start()
        finally:
            threading.stack_size(old_size)
        thread.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if "error" in box:
        raise box["error"]
    return box["result"]


