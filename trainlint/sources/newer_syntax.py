"""Syntax the interpreter that runs trainlint is too old for.

trainlint parses scripts with the running interpreter's ``ast``. On Python 3.11 a file that
uses Python 3.12 f-strings (PEP 701: ``f"{row["question"]}"``, the same quotes inside the
braces) is a ``SyntaxError`` although the project runs it fine on 3.12 (Colab, a
``requires-python >= 3.12``). Such a file is not broken: the finding says that trainlint could
not analyse it on this interpreter, as info, instead of calling the code invalid.
"""

from __future__ import annotations

import sys

NEWER = "3.12"


def valid_on_newer_python(text: str, error: BaseException) -> str | None:
    """``"3.12"`` when the interpreter is older than 3.12, ``error`` is its f-string
    ``SyntaxError`` and ``text`` parses with libcst's Python 3.12 grammar; else None."""
    if sys.version_info >= (3, 12) or not isinstance(error, SyntaxError) \
            or not (error.msg or "").startswith("f-string"):
        return None
    try:
        import libcst

        libcst.parse_module(text, config=libcst.PartialParserConfig(python_version=NEWER))
    except Exception:  # noqa: BLE001 - any failure: invalid on 3.12 too
        return None
    return NEWER


def message(error: SyntaxError, newer: str) -> str:
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    return (f"cannot parse Python on Python {running}, which runs trainlint ({error.msg}); the code is valid "
            f"from Python {newer} (PEP 701 f-strings), so it is not checked: run trainlint on Python {newer} "
            f"or newer to check it")


DATABRICKS_HEADER = "# Databricks notebook source"


def notebook_export(text: str, error: BaseException) -> str | None:
    """The finding's message when ``text`` is a Databricks notebook exported as ``.py`` (its
    first line ``# Databricks notebook source``, cells split by ``# COMMAND ----------``) and the
    line that does not parse is an IPython shell or magic line (``!deepspeed ...``, ``%pip``),
    which the notebook runs; else None. databrickslabs/dolly's ``train_dolly.py`` is one."""
    if not isinstance(error, SyntaxError) or not text.lstrip("\ufeff").startswith(DATABRICKS_HEADER):
        return None
    lines = text.splitlines()
    n = error.lineno or 0
    # the error may be reported on a continuation line of a `!cmd \` command: walk back to its start
    while 1 < n <= len(lines) and lines[n - 2].rstrip().endswith("\\") and not lines[n - 1].lstrip().startswith(("!", "%")):
        n -= 1
    line = lines[n - 1].lstrip() if 0 < n <= len(lines) else ""
    if not line.startswith(("!", "%")):
        return None
    shown = line.split()[0][:40]
    return (f"a Databricks notebook exported as .py ({DATABRICKS_HEADER!r}) with an IPython line "
            f"({shown} ...) at line {n}, which the notebook runs but Python cannot parse: the file is not "
            f"checked; export it as .ipynb (trainlint reads IPython syntax there) to check it")
