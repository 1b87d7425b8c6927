"""Which reader parses which file kind (all but Python, which ``trainlint.workspace`` parses).

``READERS`` maps a kind (``trainlint.sources.kinds``) to ``function(path, text) -> document``;
the document is stored in ``ParsedFile.doc``. A reader raises ``ReadError`` on input it cannot
read: that becomes a TL003 ``invalid-config`` finding at the error's position and the file is
kept without a document. What a reader notices but can read past (``ReadProblem``: duplicate
keys, NaN/Infinity in JSON) becomes a finding too.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.record import Record


class MarkdownDoc(Record):
    """The launch lines found in a Markdown file's shell code blocks."""

    __slots__ = ("path", "launches", "problems", "__dict__")
    path: str
    launches: list
    problems: list

    def __init__(self, path: str, launches: list, problems: list) -> None:
        self.path = path
        self.launches = launches
        self.problems = problems


def _shell(path: str, text: str):
    from trainlint.sources.shell import parse_shell

    return parse_shell(text, path)


def _may_launch(block: str) -> bool:
    """Whether a shell block can hold a launch line (``shell.may_launch``). A block without a
    launch adds nothing to the document (its problems count only beside a launch), so it is
    not parsed (ms-swift's README blocks of ``pip install``, ``git clone``, ``swift sft``)."""
    from trainlint.sources.shell import may_launch

    return may_launch(block)


def _markdown(path: str, text: str) -> MarkdownDoc:
    from trainlint.sources.shell import extract_shell_blocks, parse_shell

    launches, problems = [], []
    for block, offset in extract_shell_blocks(text):
        if not _may_launch(block):
            continue
        script = parse_shell(block, path, line_offset=offset)
        launches.extend(script.launches)
        if script.launches:  # a block of output or prose marked bash is not judged as shell
            problems.extend(script.problems)
    return MarkdownDoc(path, launches, problems)


def _notebook(path: str, text: str):
    from trainlint.sources.notebook import read_notebook

    return read_notebook(path, text)


def _deepspeed(path: str, text: str):
    from trainlint.sources.deepspeed import DeepSpeedConfig

    return DeepSpeedConfig.parse(text, path)


def _accelerate(path: str, text: str):
    from trainlint.sources.accelerate import AccelerateConfig

    return AccelerateConfig.parse(text, path)


def _hf_args(path: str, text: str):
    from trainlint.sources.argsfile import ArgsFile

    return ArgsFile.parse(text, path)


def _json(path: str, text: str):
    from trainlint.sources.jsondoc import parse_json

    # a JSON that is no config (a dataset, results, a tool's settings) is rarely asked anything
    # (only when a launch line or script names it): its tree is built on demand whatever its
    # size (``LazyJsonNode``: the same nodes, values, positions and problems; peft's 239 such
    # files: 0.31 -> 0.07 s)
    return parse_json(text, path, lazy=True)


def _yaml(path: str, text: str):
    from trainlint.sources.yamldoc import parse_yaml

    return parse_yaml(text, path)


# kind -> function(path, text) -> document; a reader raises ``ReadError`` on bad input.
READERS: dict[str, Callable[[str, str], Any]] = {
    "shell": _shell,
    "markdown": _markdown,
    "notebook": _notebook,
    "deepspeed": _deepspeed,
    "accelerate": _accelerate,
    "hf_args": _hf_args,
    "json": _json,
    "yaml": _yaml,
}

# Reader problems that become findings: kind -> severity. ``unresolved-variable`` is not a
# problem of the file (the value is simply unknown to rules).
PROBLEM_SEVERITY = {
    "duplicate-key": Severity.ERROR,  # DeepSpeed raises on duplicates; json/yaml keep the last silently
    "duplicate-key-same": Severity.WARNING,  # YAML, both copies equal: nothing changes until one is edited
    "non-standard-number": Severity.ERROR,  # NaN/Infinity: not JSON; strict parsers reject it
    "shell-syntax": Severity.ERROR,  # an unterminated quote, $( or here-document: bash fails
    # a launch line whose backslash continuation is broken: its last flags never reach it
    "broken-continuation": Severity.ERROR,
}
# In Markdown a command is documentation: what would break a script is a warning there.
_DOCS_CAP = {"shell-syntax", "broken-continuation"}


def invalid_config(path: str, message: str, span=None, line: int = 1, column: int = 1,
                   severity: Severity = Severity.ERROR, related=()) -> Diagnostic:
    if span is not None:
        line, column, end_line, end_column = span.line, span.column, span.end_line, span.end_column
    else:
        end_line, end_column = line, column + 1
    if (end_line, end_column) <= (line, column):
        end_line, end_column = line, column + 1
    return Diagnostic(code="TL003", name="invalid-config", severity=severity, message=message, path=path,
                      line=max(1, line), column=max(1, column), end_line=max(1, end_line),
                      end_column=max(1, end_column), related=list(related))


def problem_findings(doc: Any, path: str) -> list[Diagnostic]:
    out: list[Diagnostic] = list(getattr(doc, "findings", None) or ())  # a notebook's TL001s
    for p in getattr(doc, "problems", None) or []:
        severity = PROBLEM_SEVERITY.get(p.kind)
        if severity is None:
            continue
        if p.kind in _DOCS_CAP and path.lower().endswith((".md", ".markdown", ".mdx")):
            severity = Severity.WARNING
        related = [p.related.related("first written here")] if p.related is not None else []
        out.append(invalid_config(path, p.message, span=p.span, severity=severity, related=related))
    return out


# A generic ``*.json`` found by a folder walk and larger than this (a tokenizer.json, a
# dataset) is not a training config: it is only checked to be JSON, with the C parser.
MAX_WALKED_GENERIC_JSON = 1024 * 1024


def _what(kind: str) -> str:
    return {"hf_args": "args file", "deepspeed": "DeepSpeed config", "accelerate": "accelerate config",
            "shell": "shell script", "markdown": "Markdown file", "notebook": "notebook"}.get(kind, kind.upper())


class ReadResult(Record):
    """What reading one file gave: its document (None when unreadable), the findings about it,
    and whether it is unparsable (``fix`` never edits it). A read may give findings to two
    destinations: ``problems`` are reported, ``deferred`` ones are held back and reported only
    if a launch line or script references the file as a config (``linking.load_referenced``)."""

    __slots__ = ("doc", "problems", "unparsable", "deferred", "__dict__")
    doc: Any
    problems: list[Diagnostic]
    unparsable: bool
    deferred: list[Diagnostic]

    def __init__(
        self,
        doc: Any = None,
        problems: list[Diagnostic] | None = None,
        unparsable: bool = False,
        deferred: list[Diagnostic] | None = None,
    ) -> None:
        self.doc = doc
        self.problems = [] if problems is None else problems
        self.unparsable = unparsable
        self.deferred = [] if deferred is None else deferred


def read_document(kind: str, path: str, text: str, explicit: bool) -> ReadResult:
    """Parse ``text`` with ``kind``'s reader. Bad input never raises: a ``ReadError``, or the
    ``RecursionError``/``MemoryError`` of absurd nesting, is a TL003 finding, and the file is
    unparsable. Any other exception is a reader bug, which ``workspace.read_file`` reports
    as TL000 for this file."""
    from trainlint.sources.errors import ReadError

    reader = READERS.get(kind)
    if reader is None:
        return ReadResult()
    out = ReadResult()
    # A walked ``*.json``/``*.yaml`` that is not recognisably a training config (a dataset, a
    # metrics dump with NaN or duplicate keys, a dataset card, a schema, another tool's
    # settings in JSON with comments, a Helm/Jinja template) is not ours to judge: its problems
    # are kept aside and reported only if a launch line or script references it
    # (``linking.load_referenced``). Files named on the command line, and broken files in no
    # known dialect, are always reported.
    generic = kind in ("json", "yaml") and not explicit
    sink = out.deferred if generic else out.problems

    def broken_sink() -> list[Diagnostic]:
        # Where a file that does not read is reported, worked out only for such a file (the
        # dialect searches run over the whole text: 34 ms of a 1.5 MB dataset JSON, more than
        # its ``json.loads``). A walked template (a DeepSpeed JSON with a sed placeholder) is
        # not broken until used; a file broken in no known dialect (not JSON with comments,
        # not a template) is reported even when walked: it is not data that merely looks odd
        # to a config reader.
        if not explicit and kind in _TEMPLATED_KINDS and _template(text):
            return out.deferred
        return sink if not generic or _other_dialect(text) else out.problems

    if kind == "json" and not explicit and len(text) > MAX_WALKED_GENERIC_JSON:
        _check_json_quickly(out, broken_sink, path, text)
        return out
    try:
        out.doc = reader(path, text)
    except ReadError as e:
        broken_sink().append(invalid_config(path, f"cannot read this {_what(kind)}: {e.message}",
                                            line=e.line, column=e.column))
        out.unparsable = True
        out.doc = None
        return out
    except (RecursionError, MemoryError) as e:
        broken_sink().append(invalid_config(
            path, f"cannot read this {_what(kind)}: nesting too deep ({type(e).__name__})"))
        out.unparsable = True
        out.doc = None
        return out
    sink.extend(problem_findings(out.doc, path))
    if getattr(out.doc, "broken", False):  # a notebook cell that does not parse: never fixed
        out.unparsable = True
    return out


_JSONC = re.compile(r"^\s*(//|/\*)", re.MULTILINE)
# a bare upper-case word as a value: the placeholder of a template that a script fills with
# sed (DeepSpeedExamples' ds_config_TEMPLATE.json: "train_micro_batch_size_per_gpu": BATCH_SIZE);
# JSON's own words (true, false, null) are lower-case
_SED_PLACEHOLDER = re.compile(r"[:\[,]\s*[A-Z][A-Z0-9_]{2,}\s*[,}\]\n]")


_TEMPLATED_KINDS = frozenset({"json", "yaml", "deepspeed", "accelerate", "hf_args"})


def _template(text: str) -> bool:
    """A template (``{{ ... }}``, ``{% ... %}``, or JSON with a bare ``PLACEHOLDER`` value:
    in YAML a bare upper-case word is a plain string, ``distributed_type: MULTI_GPU``)."""
    return "{{" in text or "{%" in text or (text.lstrip().startswith(("{", "["))
                                            and bool(_SED_PLACEHOLDER.search(text)))


def _other_dialect(text: str) -> bool:
    """JSON with comments (JSONC) or a template."""
    return bool(_JSONC.search(text)) or _template(text)


def _check_json_quickly(out: ReadResult, sink: Callable[[], list[Diagnostic]], path: str, text: str) -> None:
    import json

    from trainlint.sources.jsondoc import loaded_just_now

    body = text[1:] if text.startswith("\ufeff") else text
    if loaded_just_now(body):  # the file's kind was told by loading this very text
        return
    try:
        json.loads(body)
    except json.JSONDecodeError as e:
        sink().append(invalid_config(path, f"cannot read this JSON: {e.msg}", line=e.lineno, column=e.colno))
        out.unparsable = True
    except (RecursionError, MemoryError) as e:
        sink().append(invalid_config(path, f"cannot read this JSON: nesting too deep ({type(e).__name__})"))
        out.unparsable = True
