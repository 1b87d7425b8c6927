"""Which reader parses which file kind (all but Python, which ``trainlint.resolve`` parses).

Each reader is a function ``(path, text) -> document``. The document put on
``ParsedFile.doc`` is, by kind:

=============  ================================================================
``deepspeed``  ``trainlint.sources.deepspeed.DeepSpeedConfig``
``accelerate`` ``trainlint.sources.accelerate.AccelerateConfig``
``hf_args``    ``trainlint.sources.argsfile.ArgsFile``
``json``       ``trainlint.sources.jsondoc.JsonNode`` (the root)
``yaml``       ``trainlint.sources.yamldoc.YamlNode`` (the root)
``shell``      ``trainlint.sources.shell.ShellScript``
``markdown``   ``list[trainlint.sources.shell.LaunchCommand]`` (launch lines in shell blocks)
=============  ================================================================

Bad input never escapes as an exception: ``parse_into`` turns a reader's ``ReadError`` (and
the ``RecursionError``/``MemoryError`` of an absurdly nested file) into a TL003
``invalid-config`` finding at the reader's position, and the problems a reader noticed while
reading (duplicate keys, NaN/Infinity) into TL005/TL006 warnings. A file that could not be
read keeps ``doc = None`` and is marked unparsable, so ``fix`` never touches it. Any other
exception is a reader bug: the caller (``trainlint.resolve.read_file``) reports it as TL000.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.resolve import ParsedFile, Workspace

# Generic ``json`` and ``yaml`` files (package.json, CI files, tokenizer.json...) found by a
# folder walk are not training configs: they are not read into documents. A walked ``*.json``
# is still checked to be JSON (with the C parser: cheap even for a large tokenizer.json),
# except the files that are JSON-with-comments by convention. A walked generic YAML file is
# not checked (Helm and Jinja templates are not YAML until rendered).
GENERIC_KINDS = frozenset({"json", "yaml"})
JSONC_NAMES = ("tsconfig", "jsconfig", "devcontainer", ".eslintrc", "settings", "launch", "tasks",
               "extensions", "keybindings", "language-configuration")


def _deepspeed(path: str, text: str) -> Any:
    from trainlint.sources.deepspeed import DeepSpeedConfig

    return DeepSpeedConfig.parse(text, path)


def _accelerate(path: str, text: str) -> Any:
    from trainlint.sources.accelerate import AccelerateConfig

    return AccelerateConfig.parse(text, path)


def _hf_args(path: str, text: str) -> Any:
    from trainlint.sources.argsfile import ArgsFile

    return ArgsFile.parse(text, path)


def _json(path: str, text: str) -> Any:
    from trainlint.sources.jsondoc import parse_json

    return parse_json(text, path)


def _yaml(path: str, text: str) -> Any:
    from trainlint.sources.yamldoc import parse_yaml

    return parse_yaml(text, path)


def _shell(path: str, text: str) -> Any:
    from trainlint.sources.shell import parse_shell

    return parse_shell(text, path)


def _markdown(path: str, text: str) -> Any:
    from trainlint.sources.shell import markdown_launches

    return markdown_launches(text, path)


# kind -> function(path, text) -> document; a reader raises ``ReadError`` on bad input.
READERS: dict[str, Callable[[str, str], Any]] = {
    "deepspeed": _deepspeed,
    "accelerate": _accelerate,
    "hf_args": _hf_args,
    "json": _json,
    "yaml": _yaml,
    "shell": _shell,
    "markdown": _markdown,
}

# ReadProblem.kind -> (code, name) of the finding it becomes; kinds not listed here (e.g. the
# shell reader's ``unresolved-variable``) are for rules to use, not findings of their own.
PROBLEM_CODES: dict[str, tuple[str, str]] = {
    "duplicate-key": ("TL005", "duplicate-key"),
    "non-standard-number": ("TL006", "non-standard-json-number"),
}


def _read_error_class() -> type[Exception] | None:
    try:
        from trainlint.sources.errors import ReadError
    except ImportError:  # pragma: no cover - readers not in this build
        return None
    return ReadError


def parse_into(ws: Workspace, pf: ParsedFile) -> None:
    """Parse ``pf`` with the reader of its kind; input problems become findings in
    ``ws.problems`` (and ``pf.path`` goes into ``ws.unparsable`` when there is no document)."""
    from trainlint.diagnostics import Severity
    from trainlint.resolve import input_problem

    reader = READERS.get(pf.kind)
    if reader is None:
        return
    if pf.kind in GENERIC_KINDS and not pf.explicit:
        if pf.kind == "json":
            _check_generic_json(ws, pf)
        return
    read_error = _read_error_class()
    try:
        pf.doc = reader(pf.path, pf.text.text)
    except (RecursionError, MemoryError) as e:
        ws.unparsable.add(pf.path)
        ws.problems.append(input_problem(
            "TL003", "invalid-config", pf.path,
            f"cannot read {pf.kind} file: nesting too deep ({type(e).__name__})"))
        return
    except Exception as e:
        if read_error is None or not isinstance(e, read_error):
            raise
        ws.unparsable.add(pf.path)
        ws.problems.append(input_problem(
            "TL003", "invalid-config", pf.path, f"cannot read {pf.kind} file: {e.message}",  # type: ignore[attr-defined]
            e.line, e.column))  # type: ignore[attr-defined]
        return
    for problem in getattr(pf.doc, "problems", None) or []:
        code_name = PROBLEM_CODES.get(getattr(problem, "kind", ""))
        if code_name is None:
            continue
        span = problem.span
        d = input_problem(code_name[0], code_name[1], pf.path, problem.message, span.line, span.column,
                          severity=Severity.WARNING)
        d = d.model_copy(update={"end_line": span.end_line, "end_column": span.end_column})
        if problem.related is not None:
            from trainlint.diagnostics import Related

            d = d.model_copy(update={"related": [Related(
                path=problem.related.path or pf.path, line=problem.related.line,
                column=problem.related.column, message="first written here")]})
        ws.problems.append(d)


def _check_generic_json(ws: Workspace, pf: ParsedFile) -> None:
    import json
    import os

    from trainlint.resolve import input_problem

    name = os.path.basename(pf.path).lower()
    if name.startswith(JSONC_NAMES) or "/.vscode/" in pf.path.replace(os.sep, "/"):
        return
    text = pf.text.text
    try:
        json.loads(text[1:] if text.startswith("\ufeff") else text)
    except json.JSONDecodeError as e:
        ws.unparsable.add(pf.path)
        ws.problems.append(input_problem("TL003", "invalid-config", pf.path,
                                         f"cannot read JSON file: {e.msg}", e.lineno, e.colno))
    except (RecursionError, MemoryError) as e:
        ws.unparsable.add(pf.path)
        ws.problems.append(input_problem("TL003", "invalid-config", pf.path,
                                         f"cannot read JSON file: nesting too deep ({type(e).__name__})"))
