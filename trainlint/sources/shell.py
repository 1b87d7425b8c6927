"""Launch lines in shell scripts (and in Markdown code blocks), with exact positions.

The reader is a small POSIX-shell lexer, not a shell: it joins backslash continuations while
every word keeps its place in the file, understands quotes, comments, ``;``/``&&``/``||``/
``|``/``&``, redirections and here-documents, keeps ``VAR=value`` and ``export VAR=value``
definitions and substitutes ``$VAR``/``${VAR}``/``${VAR:-default}`` in later words (the
position stays at the use site, the definition is noted), and recognises the launchers
``python[3] script.py`` (and ``-m module``), ``python -m torch.distributed.run|launch``,
``torchrun``, ``accelerate launch``, ``deepspeed`` and the framework CLIs ``trl <command>``
and ``llamafactory-cli <command>``.

Shell as people write it: documentation placeholders (``--master_port=<PORT>``,
``<path-to-model>``, ``run_{task}.py``) are unresolved values, not redirections; ``cd DIR``
/ ``pushd`` / ``popd`` (also inside ``( ... )``) set the folder later paths start from
(``LaunchCommand.cwd``; ``cd "$(dirname "$0")"`` is the script's own folder,
``SCRIPT_DIR``); files the script writes (``cat > ds.json <<EOF``, ``> out``, ``tee``,
``cp``, ``wget -O``) and folders it clones (``git clone``) are noted
(``ShellScript.generated``/``cloned``). What the shell would read differently from how it
is written is a problem: an unterminated quote, ``$(``, ``${`` or here-document
(``shell-syntax``), and flags that start a command right after a launch line because its
continuation was broken by a space or a comment after the backslash
(``broken-continuation``).

Edits on flags keep the continuation layout: removing a flag never removes a trailing
backslash that other lines need, and a flag alone on its continuation line goes with its line.
"""

from __future__ import annotations

import os
import re
from typing import Any, Sequence

from trainlint.diagnostics import Edit, Span
from trainlint.record import Record, _set
from trainlint.sources.errors import LineIndex, ReadProblem

__all__ = [
    "Assignment",
    "Expansion",
    "Flag",
    "Command",
    "LaunchCommand",
    "ShellScript",
    "parse_shell",
    "find_launches",
    "extract_shell_blocks",
    "markdown_launches",
    "replace_flag_value_edit",
    "rename_flag_edit",
    "remove_flag_edit",
    "shell_quote",
]

# -- lexing ---------------------------------------------------------------------------------

_META = set(" \t\n;&|<>()")
# what ``_Lexer._word`` takes as plain literal characters (none of ``_META``, no quote, escape,
# expansion), and ``_double`` inside double quotes
_PLAIN_RUN = re.compile(r"[^ \t\n;&|<>()\\'\"$`]*")
_PLAIN_IN_DOUBLE = re.compile(r'[^"\\$`]*')
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?=)")
_OPS = ("&&", "||", ";;", ";", "&", "|", "(", ")")
_OP_STARTS = frozenset(op[0] for op in _OPS)
_BLANKS = re.compile(r"[ \t\r]+")
_REDIR = re.compile(r"[0-9]*(?:<<<|<<-|<<|>>|>&|<&|&>>|&>|>\||<>|<|>)")
_DIGIT_REDIR = re.compile(r"[0-9]+[<>]")
_BLANK_TO_EOL = re.compile(r"[ \t]+(?:#[^\n]*)?(?:\r?\n|$)")
# ``cd "$(dirname "$0")"`` and friends: the folder of the script itself
SCRIPT_DIR = "@SCRIPT_DIR@"
_SUBST_TAIL = re.compile(r'^(.*\))"?((?:/[\w.@+-]*)*)/?"?$', re.DOTALL)


def script_dir_expr(raw: str) -> str | None:
    """``SCRIPT_DIR`` (plus a literal tail such as ``/..``) for the usual spellings of the
    script's own folder: ``$(dirname "$0")``, ``$(cd "$(dirname "${BASH_SOURCE[0]}")" &&
    pwd)``, ``$(dirname $(realpath $0))/..``; None for anything else."""
    text = raw.strip().removeprefix('"')
    if not text.startswith("$(") or "dirname" not in text or not (
            "$0" in text or "${0}" in text or "BASH_SOURCE" in text):
        return None
    m = _SUBST_TAIL.match(text)
    if m is None:
        return None
    return norm_path(SCRIPT_DIR + m.group(2))


def norm_path(path: str) -> str:
    """``os.path.normpath`` that keeps a leading ``SCRIPT_DIR`` (``SCRIPT_DIR/..`` stays)."""
    if path.startswith(SCRIPT_DIR):
        rest = path[len(SCRIPT_DIR):].lstrip("/")
        return SCRIPT_DIR + ("/" + os.path.normpath(rest) if rest and os.path.normpath(rest) != "." else "")
    return os.path.normpath(path)


class _Part(Record):
    __slots__ = ("kind", "text", "quoted", "op", "arg", "start", "end", "__dict__")
    kind: str  # "lit", "var", "unres"
    text: str  # literal text, variable name, or raw text of an unresolvable expansion
    quoted: bool
    op: str  # ${name<op>arg}
    arg: str
    start: int
    end: int

    def __init__(
        self,
        kind: str,
        text: str,
        quoted: bool = False,
        op: str = "",
        arg: str = "",
        start: int = 0,
        end: int = 0,
    ) -> None:
        self.kind = kind
        self.text = text
        self.quoted = quoted
        self.op = op
        self.arg = arg
        self.start = start
        self.end = end


class _Word(Record):
    __slots__ = ("parts", "start", "end", "quoted", "__dict__")
    parts: list[_Part]
    start: int
    end: int
    quoted: bool  # any quoting in the word

    def __init__(self, parts: list[_Part], start: int, end: int, quoted: bool) -> None:
        self.parts = parts
        self.start = start
        self.end = end
        self.quoted = quoted


class _Op(Record):
    __slots__ = ("op", "start", "end", "__dict__")
    op: str
    start: int
    end: int

    def __init__(self, op: str, start: int, end: int) -> None:
        self.op = op
        self.start = start
        self.end = end


class Assignment(Record, frozen=True):
    """``NAME=value`` (a shell variable, an ``export``, or an env prefix of one command)."""

    __slots__ = ("name", "value", "name_span", "value_span", "span", "exported", "partial")
    name: str
    value: str | None  # None when it could not be resolved statically
    name_span: Span
    value_span: Span
    span: Span
    exported: bool
    # when ``value`` is None: the words an unquoted use splits into, each with whether it is
    # known (``ARGS="--nproc_per_node $GPUS --nnodes 1"``: ``--nproc_per_node`` and
    # ``--nnodes 1`` known, the GPU count not), so that ``torchrun $ARGS train.py`` keeps its
    # script and flags; None when even the word boundaries are not known
    partial: tuple[tuple[str, bool], ...] | None

    def __init__(
        self,
        name: str,
        value: str | None,
        name_span: Span,
        value_span: Span,
        span: Span,
        exported: bool = False,
        partial: tuple[tuple[str, bool], ...] | None = None,
    ) -> None:
        _set(self, "name", name)
        _set(self, "value", value)
        _set(self, "name_span", name_span)
        _set(self, "value_span", value_span)
        _set(self, "span", span)
        _set(self, "exported", exported)
        _set(self, "partial", partial)


class Expansion(Record, frozen=True):
    """A ``$VAR`` use inside a word: where it is used and where the variable was defined."""

    __slots__ = ("name", "span", "definition")
    name: str
    span: Span
    definition: Assignment | None

    def __init__(self, name: str, span: Span, definition: Assignment | None) -> None:
        _set(self, "name", name)
        _set(self, "span", span)
        _set(self, "definition", definition)


class _XWord(Record):
    """A word after substitution."""

    __slots__ = ("text", "start", "end", "raw", "unresolved", "expansions", "from_split", "__dict__")
    text: str
    start: int
    end: int
    raw: str
    unresolved: bool
    expansions: list[Expansion]
    from_split: bool  # one of several words a single unquoted expansion split into

    def __init__(
        self,
        text: str,
        start: int,
        end: int,
        raw: str,
        unresolved: bool,
        expansions: list[Expansion],
        from_split: bool = False,
    ) -> None:
        self.text = text
        self.start = start
        self.end = end
        self.raw = raw
        self.unresolved = unresolved
        self.expansions = expansions
        self.from_split = from_split


# A documentation placeholder: ``<PORT>``, ``<path-to-model>``, ``<your model path>`` (what a
# shell would read as a redirection). It must close on the same line and be followed by a
# word boundary, so ``cmd <in >out`` and ``<<EOF`` stay redirections.
_PLACEHOLDER = re.compile(r"<[A-Za-z_][\w.:/ -]{0,60}?>(?=[\s;&|\"'/)]|$)")
# ... also ``run_{task}.py`` in the docs (a literal brace word, not a brace expansion)
_PLACEHOLDER_IN_TEXT = re.compile(r"<[A-Za-z_][\w.:/ -]{0,60}?>|(?<![$\w])\{[A-Za-z_][\w-]{0,40}\}|"
                                  r"(?<=[\w/.])\{[A-Za-z_][\w-]{0,40}\}")


def has_placeholder(text: str) -> bool:
    """A documentation placeholder in a word: ``<path-to-model>``, ``run_{task}.py``."""
    return ("<" in text or "{" in text) and _PLACEHOLDER_IN_TEXT.search(text) is not None


# A template's filler, written in before a run: smollm's accelerate config template names
# ``./experiments/pretraining/vloom/xxxx/ds_config.json``; READMEs and scripts write
# ``YOUR_DATA_DIR/train.json``, ``your-output/ds.json``, ``path_to_config/ds.json``, ``path/to/ds.json``;
# BELLE's run_dpo.sh writes ``deepspeed_config=...`` and ``/.../${model_name}`` (an ellipsis, never ``..``)
_FILLER = re.compile(r"x{3,}|X{3,}|(?i:your)(?:[_-]\w*)?|(?i:path[_-]to)(?:[_-]\w*)?|\.{3,}|\u2026+")


def filler_folder(path: str) -> str | None:
    """The first part of ``path`` that is a template's filler (``xxxx``, ``YOUR_DIR``,
    ``path_to_data``, ``path/to``), or None."""
    parts = path.replace(os.sep, "/").split("/")
    for i, s in enumerate(parts):
        if _FILLER.fullmatch(s):
            return s
        if s.lower() == "path" and i + 1 < len(parts) - 1 and parts[i + 1].lower() == "to":
            return "path/to"
    return None


class HereDoc(Record, frozen=True):
    """The body of a here-document: offsets in the file, and whether ``$`` is expanded."""

    __slots__ = ("delimiter", "start", "end", "quoted")
    delimiter: str
    start: int
    end: int
    quoted: bool

    def __init__(self, delimiter: str, start: int, end: int, quoted: bool) -> None:
        _set(self, "delimiter", delimiter)
        _set(self, "start", start)
        _set(self, "end", end)
        _set(self, "quoted", quoted)


class _Lexer:
    def __init__(self, text: str, index: LineIndex) -> None:
        self.text = text
        self.index = index
        self.n = len(text)
        self.problems: list[ReadProblem] = []
        self.heredocs: list[HereDoc] = []

    def _problem(self, start: int, message: str) -> None:
        end = self.text.find("\n", start)
        end = self.n if end == -1 else end
        self.problems.append(ReadProblem("shell-syntax", message,
                                         self.index.span(start, max(end, start + 1))))

    def tokens(self) -> list[_Word | _Op]:
        text, n = self.text, self.n
        out: list[_Word | _Op] = []
        heredocs: list[tuple[str, bool]] = []
        pos = 0
        while pos < n:
            c = text[pos]
            if c == "\\" and text.startswith("\n", pos + 1):
                pos += 2
                continue
            if c == "\\" and text.startswith("\r\n", pos + 1):
                pos += 3
                continue
            if c == "\\" and _BLANK_TO_EOL.match(text, pos + 1):
                pos += 1  # "\ " at the end of a line: a continuation that is not one
                continue
            if c in " \t\r":
                pos = _BLANKS.match(text, pos).end()  # the run at once
                continue
            if c == "#":
                end = text.find("\n", pos)
                pos = n if end == -1 else end
                continue
            if c == "\n":
                out.append(_Op("\n", pos, pos + 1))
                pos += 1
                if heredocs:
                    pos = self._skip_heredocs(pos, heredocs)
                    heredocs = []
                continue
            if c == "<" and _PLACEHOLDER.match(text, pos):
                word = self._word(pos)
                out.append(word)
                pos = word.end
                continue
            if c in "<>" or (c == "&" and text.startswith(">", pos + 1)) or (
                c.isdigit() and _DIGIT_REDIR.match(text, pos)
            ):
                m = _REDIR.match(text, pos)
                assert m is not None
                op = m.group()
                out.append(_Op("redir", pos, m.end()))
                pos = m.end()
                if op.lstrip("0123456789") in ("<<", "<<-"):  # not the here-string <<<
                    # a here-document: its delimiter word follows, its body after the newline
                    while pos < n and text[pos] in " \t":
                        pos += 1
                    word = self._word(pos)
                    out.append(word)
                    pos = word.end
                    heredocs.append(("".join(p.text for p in word.parts), op.endswith("-"),
                                     word.quoted, word.start))
                continue
            for op in (_OPS if c in _OP_STARTS else ()):  # (a word starts with no other)
                if text.startswith(op, pos):
                    out.append(_Op(op, pos, pos + len(op)))
                    pos += len(op)
                    break
            else:
                word = self._word(pos)
                out.append(word)
                pos = word.end
        return out

    def _skip_heredocs(self, pos: int, heredocs: list[tuple[str, bool, bool, int]]) -> int:
        text = self.text
        for delim, strip_tabs, quoted, at in heredocs:
            body = pos
            while pos < self.n:
                end = text.find("\n", pos)
                line = text[pos:] if end == -1 else text[pos:end]
                if (line.lstrip("\t") if strip_tabs else line).rstrip("\r") == delim:
                    self.heredocs.append(HereDoc(delim, body, pos, quoted))
                    pos = self.n if end == -1 else end + 1
                    break
                pos = self.n if end == -1 else end + 1
            else:
                self.heredocs.append(HereDoc(delim, body, self.n, quoted))
                self._problem(at, f"here-document without its closing {delim!r} line: the shell "
                                  f"reads to the end of the file")
        return pos

    def _word(self, pos: int) -> _Word:
        text, n = self.text, self.n
        start = pos
        parts: list[_Part] = []
        quoted = False
        lit: list[str] = []
        lit_start = pos

        def flush(at: int) -> None:
            nonlocal lit, lit_start
            if lit:
                parts.append(_Part("lit", "".join(lit), start=lit_start, end=at))
                lit = []
            lit_start = at

        while pos < n:
            c = text[pos]
            if c == "<":
                m = _PLACEHOLDER.match(text, pos)
                if m is not None:
                    flush(pos)
                    parts.append(_Part("unres", m.group(), False, start=pos, end=m.end()))
                    pos = m.end()
                    lit_start = pos
                    continue
            if c in _META:
                break
            if c == "\\":
                if text.startswith("\n", pos + 1):
                    pos += 2
                    continue
                if pos + 1 < n:
                    lit.append(text[pos + 1])
                    quoted = True
                pos += 2
                continue
            if c == "'":
                quoted = True
                end = text.find("'", pos + 1)
                if end == -1:
                    self._problem(pos, "unterminated single quote: the shell reads to the end of "
                                       "the file and fails")
                    end = n
                lit.append(text[pos + 1:end])
                pos = end + 1
                continue
            if c == '"':
                quoted = True
                pos = self._double(pos + 1, parts, lit, flush)
                continue

            if c == "$" and text.startswith("$'", pos):
                quoted = True
                end = pos + 2
                while end < n and text[end] != "'":
                    end += 2 if text[end] == "\\" else 1
                lit.append(text[pos + 2:end].encode("latin-1", "backslashreplace")
                           .decode("unicode_escape", "replace"))
                pos = end + 1
                continue
            if c == "$" or c == "`":
                flush(pos)
                part, pos = self._dollar(pos, quoted=False)
                parts.append(part)
                lit_start = pos
                continue
            # a run of characters none of the cases above takes, at once (each would be taken
            # here one by one)
            end = max(_PLAIN_RUN.match(text, pos).end(), pos + 1)
            lit.append(text[pos:end])
            pos = end
        flush(pos)
        return _Word(parts, start, min(pos, n), quoted)

    def _double(self, pos: int, parts: list[_Part], lit: list[str], flush) -> int:
        text, n = self.text, self.n
        opened = pos - 1
        while pos < n:
            c = text[pos]
            if c == '"':
                return pos + 1
            if c == "\\" and pos + 1 < n and text[pos + 1] in '$`"\\\n':
                if text[pos + 1] != "\n":
                    lit.append(text[pos + 1])
                pos += 2
                continue
            if c == "$" or c == "`":
                nxt = text[pos + 1] if pos + 1 < n else ""
                if c == "$" and not (nxt == "{" or nxt == "(" or _NAME.match(nxt or " ")
                                     or nxt in "@*#?$!0123456789-"):
                    lit.append(c)
                    pos += 1
                    continue
                flush(pos)
                part, pos = self._dollar(pos, quoted=True)
                parts.append(part)
                continue
            # (as in ``_word``; a backslash before another character is one)
            end = max(_PLAIN_IN_DOUBLE.match(text, pos).end(), pos + 1)
            lit.append(text[pos:end])
            pos = end
        self._problem(opened, "unterminated double quote: the shell reads to the end of the file "
                              "and fails")
        return n

    def _matching(self, pos: int, open_: str, close: str) -> int:
        """Offset after the ``close`` that balances the ``open_`` just before ``pos``."""
        text, n = self.text, self.n
        depth = 1
        while pos < n:
            c = text[pos]
            if c == "\\":
                pos += 2
                continue
            if c == "'" and open_ == "(":
                end = text.find("'", pos + 1)
                pos = n if end == -1 else end + 1
                continue
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    return pos + 1
            pos += 1
        return n

    def _dollar(self, pos: int, quoted: bool) -> tuple[_Part, int]:
        text, n = self.text, self.n
        start = pos
        if text[pos] == "`":
            end = pos + 1
            while end < n and text[end] != "`":
                end += 2 if text[end] == "\\" else 1
            if end >= n:
                self._problem(pos, "unterminated backquote: the shell reads to the end of the file "
                                   "and fails")
            end = min(end + 1, n)
            return _Part("unres", text[start:end], quoted, start=start, end=end), end
        nxt = text[pos + 1] if pos + 1 < n else ""
        if nxt == "(":
            end = self._matching(pos + 2, "(", ")")
            if end >= n and not text.endswith(")"):
                self._problem(pos, "unterminated $( ... ): the shell reads to the end of the file "
                                   "and fails")
            return _Part("unres", text[start:end], quoted, start=start, end=end), end
        if nxt == "{":
            end = self._matching(pos + 2, "{", "}")
            if end >= n and not text.endswith("}"):
                self._problem(pos, "unterminated ${ ... }: the shell reads to the end of the file "
                                   "and fails")
            inner = text[pos + 2:end - 1]
            m = _NAME.match(inner)
            if m is not None:
                rest = inner[m.end():]
                for op in (":-", ":=", "-", "="):
                    if rest.startswith(op):
                        return _Part("var", m.group(), quoted, op=op, arg=rest[len(op):],
                                     start=start, end=end), end
                if rest == "":
                    return _Part("var", m.group(), quoted, start=start, end=end), end
            return _Part("unres", text[start:end], quoted, start=start, end=end), end
        m = _NAME.match(text, pos + 1)
        if m is not None:
            return _Part("var", m.group(), quoted, start=start, end=m.end()), m.end()
        if nxt and nxt in "@*#?$!0123456789-":
            return _Part("unres", text[start:pos + 2], quoted, start=start, end=pos + 2), pos + 2
        return _Part("lit", "$", quoted, start=start, end=pos + 1), pos + 1


# -- commands -------------------------------------------------------------------------------


class Flag(Record):
    """One option: ``--k v``, ``--k=v``, a bare ``--k`` (value None), ``--k v1 v2``.

    ``name`` is written without its dashes (``per_device_train_batch_size``); ``key`` also
    turns ``-`` into ``_`` as HfArgumentParser and torchrun accept both spellings.
    ``value`` is the value after quote removal and ``$VAR`` substitution; ``value_span`` covers
    the value as written (with quotes). ``raw`` is the text from the name to the last value.
    """

    __slots__ = ("name", "value", "name_span", "value_span", "raw", "prefix", "inline", "extra_values",
                 "unresolved", "expansions", "from_expansion", "start", "end", "name_end", "value_start",
                 "value_end", "_index", "__dict__")
    _hidden = ("_index",)
    name: str
    value: str | None
    name_span: Span
    value_span: Span | None
    raw: str
    prefix: str
    inline: bool  # --k=v
    extra_values: list[tuple[str, Span]]
    unresolved: bool
    expansions: list[Expansion]
    from_expansion: bool  # produced by splitting one unquoted $VAR: cannot be edited
    start: int
    end: int
    name_end: int
    value_start: int
    value_end: int
    _index: LineIndex | None

    def __init__(
        self,
        name: str,
        value: str | None,
        name_span: Span,
        value_span: Span | None,
        raw: str,
        prefix: str = "--",
        inline: bool = False,
        extra_values: list[tuple[str, Span]] | None = None,
        unresolved: bool = False,
        expansions: list[Expansion] | None = None,
        from_expansion: bool = False,
        start: int = 0,
        end: int = 0,
        name_end: int = 0,
        value_start: int = -1,
        value_end: int = -1,
        _index: LineIndex | None = None,
    ) -> None:
        self.name = name
        self.value = value
        self.name_span = name_span
        self.value_span = value_span
        self.raw = raw
        self.prefix = prefix
        self.inline = inline
        self.extra_values = [] if extra_values is None else extra_values
        self.unresolved = unresolved
        self.expansions = [] if expansions is None else expansions
        self.from_expansion = from_expansion
        self.start = start
        self.end = end
        self.name_end = name_end
        self.value_start = value_start
        self.value_end = value_end
        self._index = _index

    @property
    def key(self) -> str:
        return self.name.replace("-", "_")

    @property
    def span(self) -> Span:
        assert self._index is not None
        return self._index.span(self.start, self.end)

    @property
    def values(self) -> list[str]:
        return ([self.value] if self.value is not None else []) + [v for v, _ in self.extra_values]

    @property
    def definitions(self) -> list[Assignment]:
        """Where the variables used in this flag were defined."""
        return [e.definition for e in self.expansions if e.definition is not None]

    def literal(self) -> Any:
        """The value as the simplest Python literal: a bare flag is True; "8" -> 8,
        "2e-5" -> 2e-05, "true"/"false" -> bool; anything else stays a string."""
        if self.value is None:
            return True
        v = self.value
        low = v.lower()
        if low in ("true", "false"):
            return low == "true"
        try:
            return int(v)
        except ValueError:
            pass
        try:
            return float(v)
        except ValueError:
            return v


class Command(Record):
    """One simple command: its words (after substitution) and env prefix."""

    __slots__ = ("words", "env", "start", "end", "span", "__dict__")
    words: list[_XWord]
    env: dict[str, Assignment]
    start: int
    end: int
    span: Span

    def __init__(
        self,
        words: list[_XWord],
        env: dict[str, Assignment],
        start: int,
        end: int,
        span: Span,
    ) -> None:
        self.words = words
        self.env = env
        self.start = start
        self.end = end
        self.span = span


class LaunchCommand(Record):
    """A recognised launch: the launcher, its own options, the script and the script's
    flags. ``launcher`` is ``"python"``, ``"torchrun"`` (also ``python -m
    torch.distributed.run``), ``"torch.distributed.launch"``, ``"accelerate"``,
    ``"deepspeed"``, or a framework CLI (``"trl"``, ``"llamafactory-cli"``) with its
    subcommand in ``cli``. ``env`` holds the exported variables and the command's env prefix."""

    __slots__ = ("launcher", "launcher_args", "script", "module", "script_args", "env", "span", "path",
                 "launcher_span", "positionals", "launcher_flags", "cwd", "cwd_known", "cli", "__dict__")
    launcher: str
    launcher_args: dict[str, Flag]
    script: tuple[str, Span] | None
    module: str | None
    script_args: list[Flag]
    env: dict[str, Assignment]
    span: Span
    path: str
    launcher_span: Span
    positionals: list[tuple[str, Span]]
    launcher_flags: list[Flag]  # every launcher option, in order
    # the folder relative paths start from, after ``cd``/``pushd`` earlier in the script:
    # None when it did not change (where the script was started), a relative path (from
    # there), an absolute one, or one under ``SCRIPT_DIR`` (``cd "$(dirname "$0")"``);
    # ``cwd_known`` False after a ``cd`` to a folder that cannot be resolved
    cwd: str | None
    cwd_known: bool
    cli: str | None  # a framework CLI (``llamafactory-cli train``, ``trl sft``)

    def __init__(
        self,
        launcher: str,
        launcher_args: dict[str, Flag],
        script: tuple[str, Span] | None,
        module: str | None,
        script_args: list[Flag],
        env: dict[str, Assignment],
        span: Span,
        path: str,
        launcher_span: Span,
        positionals: list[tuple[str, Span]] | None = None,
        launcher_flags: list[Flag] | None = None,
        cwd: str | None = None,
        cwd_known: bool = True,
        cli: str | None = None,
    ) -> None:
        self.launcher = launcher
        self.launcher_args = launcher_args
        self.script = script
        self.module = module
        self.script_args = script_args
        self.env = env
        self.span = span
        self.path = path
        self.launcher_span = launcher_span
        self.positionals = [] if positionals is None else positionals
        self.launcher_flags = [] if launcher_flags is None else launcher_flags
        self.cwd = cwd
        self.cwd_known = cwd_known
        self.cli = cli

    def flags(self, name: str) -> list[Flag]:
        """Every script flag with this name (``-``/``_`` spellings alike), in order."""
        key = name.lstrip("-").replace("-", "_")
        return [f for f in self.script_args if f.key == key]

    def flag(self, name: str) -> Flag | None:
        """The script flag that wins (argparse keeps the last one)."""
        found = self.flags(name)
        return found[-1] if found else None

    def repeated_flags(self) -> dict[str, list[Flag]]:
        seen: dict[str, list[Flag]] = {}
        for f in self.script_args:
            seen.setdefault(f.key, []).append(f)
        return {k: v for k, v in seen.items() if len(v) > 1}

    def launcher_arg(self, name: str) -> Flag | None:
        return self.launcher_args.get(name.lstrip("-").replace("-", "_"))

    @property
    def config_file(self) -> Flag | None:
        """``accelerate launch --config_file`` (also ``--config-file``)."""
        return self.launcher_arg("config_file") if self.launcher == "accelerate" else None

    def world_size(self) -> int | None:
        v = self.world_size_value()
        return v.value if v is not None else None

    def world_size_value(self):
        """The number of processes with where it is written (a ``trainlint.setup.Value``,
        origin FLAG), or None when the line does not say (e.g. accelerate reading its
        config file, ``--nproc_per_node gpu`` without ``CUDA_VISIBLE_DEVICES``)."""
        from trainlint.setup import FLAG, Value

        def val(n: int, flag: Flag | None, note: str = "") -> Value:
            if flag is None:
                return Value(value=n, origin=FLAG, span=self.launcher_span, note=note,
                             name=self.launcher)
            return Value(value=n, origin=FLAG, span=flag.value_span or flag.name_span,
                         key_span=flag.name_span, note=note, name=flag.name)

        visible = _count_visible(self.env)
        cvd = self.env.get("CUDA_VISIBLE_DEVICES")
        if self.launcher == "python":
            return val(1, None, "a plain python run is one process")
        if self.launcher in ("torchrun", "torch.distributed.launch"):
            nproc_flag = self.launcher_arg("nproc_per_node")
            nproc: int | None
            raw = nproc_flag.value if nproc_flag is not None else "1"
            if raw is not None and raw.isdigit():
                nproc = int(raw)
            elif raw in ("gpu", "auto", "cuda") and visible is not None:
                nproc = visible
            else:
                return None
            nnodes = _nnodes(self.launcher_arg("nnodes"))
            if nnodes is None:
                return None
            if nnodes == 1:
                if nproc_flag is None:
                    return val(1, None, "torchrun starts one process per node by default")
                if raw is not None and not raw.isdigit() and cvd is not None:
                    return Value(value=nproc, origin=FLAG, span=cvd.value_span,
                                 key_span=cvd.name_span, name="CUDA_VISIBLE_DEVICES",
                                 note=f"--{nproc_flag.name} {raw}")
                return val(nproc, nproc_flag)
            return val(nproc * nnodes, nproc_flag, f"x {nnodes} nodes")
        if self.launcher == "accelerate":
            f = self.launcher_arg("num_processes")
            if f is not None and f.value is not None and f.value.isdigit():
                return val(int(f.value), f)
            return None
        if self.launcher == "deepspeed":
            inc = self.launcher_arg("include")
            if inc is not None and inc.value:
                total = 0
                for host in inc.value.split("@"):
                    if ":" not in host:
                        return None
                    total += len([s for s in host.split(":", 1)[1].split(",") if s])
                return val(total, inc)
            g = self.launcher_arg("num_gpus")
            nodes_flag = self.launcher_arg("num_nodes")
            nodes = 1
            if nodes_flag is not None:
                if not (nodes_flag.value or "").lstrip("-").isdigit():
                    return None
                nodes = int(nodes_flag.value)  # type: ignore[arg-type]
                nodes = 1 if nodes == -1 and self.launcher_arg("hostfile") is None else nodes
                if nodes < 1:
                    return None
            elif self.launcher_arg("hostfile") is not None:
                return None
            if g is not None and g.value is not None and g.value.isdigit():
                return val(int(g.value) * nodes, g, f"x {nodes} nodes" if nodes > 1 else "")
            if visible is not None and nodes == 1 and cvd is not None:
                return Value(value=visible, origin=FLAG, span=cvd.value_span,
                             key_span=cvd.name_span, name="CUDA_VISIBLE_DEVICES")
            return None
        return None


def _count_visible(env: dict[str, Assignment]) -> int | None:
    a = env.get("CUDA_VISIBLE_DEVICES")
    if a is None or a.value is None:
        return None
    return len([x for x in a.value.split(",") if x.strip()])


def _nnodes(flag: Flag | None) -> int | None:
    if flag is None:
        return 1
    raw = flag.value or ""
    if raw.isdigit():
        return int(raw)
    if ":" in raw:
        lo, _, hi = raw.partition(":")
        if lo.isdigit() and lo == hi:
            return int(lo)
    return None


class GeneratedFile(Record, frozen=True):
    """A file the script writes before it is used: where its name is written, the
    here-document that holds its content (when it is one), and the folder it is written in."""

    __slots__ = ("name", "span", "heredoc", "cwd")
    name: str
    span: Span
    heredoc: HereDoc | None
    cwd: str | None

    def __init__(self, name: str, span: Span, heredoc: HereDoc | None, cwd: str | None) -> None:
        _set(self, "name", name)
        _set(self, "span", span)
        _set(self, "heredoc", heredoc)
        _set(self, "cwd", cwd)


class ShellScript(Record):
    """A parsed shell file: every simple command, the launches among them, the variables
    defined at the end, and problems (unresolved variables in launch lines)."""

    __slots__ = ("path", "commands", "launches", "variables", "problems", "index", "generated", "cloned",
                 "heredocs", "__dict__")
    path: str
    commands: list[Command]
    launches: list[LaunchCommand]
    variables: dict[str, Assignment]
    problems: list[ReadProblem]
    index: LineIndex
    # files the script itself writes (``cat > ds.json <<EOF``, ``> out.json``, ``tee``, ``cp``,
    # ``wget -O``), keyed by the path relative to the folder the script starts in (or
    # absolute, or under ``SCRIPT_DIR``)
    generated: dict[str, GeneratedFile]
    cloned: set[str | None]  # folders from ``git clone``
    heredocs: list[HereDoc]

    def __init__(
        self,
        path: str,
        commands: list[Command],
        launches: list[LaunchCommand],
        variables: dict[str, Assignment],
        problems: list[ReadProblem],
        index: LineIndex,
        generated: dict[str, GeneratedFile] | None = None,
        cloned: set[str | None] | None = None,
        heredocs: list[HereDoc] | None = None,
    ) -> None:
        self.path = path
        self.commands = commands
        self.launches = launches
        self.variables = variables
        self.problems = problems
        self.index = index
        self.generated = {} if generated is None else generated
        self.cloned = set() if cloned is None else cloned
        self.heredocs = [] if heredocs is None else heredocs


# Launcher options that take no value (from the launchers' argparse definitions:
# torch.distributed.run / launch, accelerate.commands.launch, deepspeed.launcher.runner).
_BOOL_OPTS = {
    "torchrun": {"standalone", "m", "module", "no_python", "run_path", "virtual_local_rank",
                 "h", "help"},
    "torch.distributed.launch": {"standalone", "m", "module", "no_python", "run_path",
                                 "virtual_local_rank", "use_env", "h", "help"},
    "accelerate": {"quiet", "q", "cpu", "multi_gpu", "tpu", "enable_cpu_affinity",
                   "dynamo_use_fullgraph", "dynamo_use_dynamic",
                   "dynamo_use_regional_compilation", "use_deepspeed", "use_fsdp",
                   "use_parallelism_config", "use_megatron_lm", "same_network", "m", "module",
                   "no_python", "tpu_cluster", "no_tpu_cluster", "tpu_use_sudo",
                   "downcast_bf16", "fp8_use_autocast_during_eval", "debug", "h", "help"},
    "deepspeed": {"no_ssh_check", "force_multi", "no_python", "module", "no_local_rank",
                  "no_ssh", "save_pid", "enable_each_rank_log", "bind_cores_to_rank",
                  "elastic_training", "h", "help"},
}
_SHORT = {
    "accelerate": {"m": "module", "q": "quiet"},
    "torchrun": {"m": "module"},
    "torch.distributed.launch": {"m": "module"},
    "deepspeed": {"H": "hostfile", "i": "include", "e": "exclude"},
}
_PY = re.compile(r"(?:.*/)?python(?:[0-9]+(?:\.[0-9]+)*)?$")
_WRAPPERS = {"nohup", "exec", "time", "env", "sudo", "srun", "mpirun", "numactl", "taskset",
             "stdbuf", "nice", "ionice", "timeout", "uv", "poetry", "conda", "pipenv", "run",
             "xvfb-run", "command", "builtin"}
_RESERVED_LEAD = {"then", "do", "else", "elif", "if", "while", "until", "!", "{", "time"}
_PY_OPTS_WITH_ARG = {"-W", "-X", "--check-hash-based-pycs"}
# Package managers that run a command only through ``run`` (``uv run python train.py``,
# ``conda run -n env python train.py``); any other subcommand (``uv pip install trl``, ``conda
# install deepspeed``) names packages, never a launch
_RUN_MANAGERS = {"uv", "poetry", "conda", "pipenv"}
# Commands that install or manage packages: a launcher word after one of them in a wrapped
# command (``sudo pip install deepspeed``, ``timeout 600 pip3 install accelerate``) is a
# package's name; ``python -m`` of one of these modules installs, it launches no training
_PACKAGE_TOOLS = {"pip", "pip3", "conda", "mamba", "micromamba", "apt", "apt-get", "brew", "npm"}
_PACKAGE_MODULES = {"pip", "uv", "ensurepip", "venv", "virtualenv", "conda"}
_TORCH_MODULES = {"torch.distributed.run": "torchrun",
                  "torch.distributed.launch": "torch.distributed.launch",
                  "accelerate.commands.launch": "accelerate",
                  "deepspeed.launcher.runner": "deepspeed"}


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


# Framework command lines that run a training of their own: ``trl sft``, ``llamafactory-cli
# train`` (which class they fill is in trainlint.knowledge.frameworks)
_CLIS = {"trl", "llamafactory-cli", "lmf"}
# What the command word of every launch line holds (``_is_launcher``): ``python`` (``python3.10``,
# a path to one), ``torchrun``, ``deepspeed``, ``accelerate`` (``accelerate launch``), a framework
# command line (``_CLIS``); a text without any of them holds no launch line
LAUNCHER_PARTS = ("python", "torchrun", "deepspeed", "accelerate", *sorted(_CLIS))

# Where one command ends and the next begins, for ``may_launch``: a newline, ``;``, ``&``, ``|``
# (``&&``, ``||``, ``;;`` are two of them), a command substitution or subshell (``$(``, a
# backquote, ``(``, ``)``). Splitting at one of them inside quotes or a comment only makes more
# commands to look at, each of which may launch.
_COMMAND_BREAK = re.compile(r"[\n;&|`()]")
_BREAKS = "\n;&|`()"
_LAUNCHER_PART = re.compile("|".join(LAUNCHER_PARTS))
_QUOTING = re.compile(r"""["'\\]""")


_WORD_COMMENT = re.compile(r"(?:^|\s)#")


def _continued(text: str) -> str:
    """``text`` with its line continuations joined: a line ending in an odd number of
    backslashes, unless a word of it starts a comment (``# python t.py \\`` continues nothing
    in bash; a ``#`` inside quotes only leaves a line unjoined, which makes more commands)."""
    lines = text.split("\n")
    out: list[str] = []
    carry = ""
    for line in lines:
        line = carry + line
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1 and not _WORD_COMMENT.search(line):
            carry = line[:-1]
            continue
        carry = ""
        out.append(line)
    if carry:
        out.append(carry)
    return "\n".join(out)


# the lexer's tokens, for ``_quoted_commands``: outside double quotes, and inside them
_ROUGH_TOKEN = re.compile(r"""'[^']*'?|"|\$\(|`|\\.?|[ \t]+|[\n;&|(][\n;&|( \t]*|\)|#|[^\s'"\\`;&|()#$]+|\$|\s""")
_ROUGH_TOKEN_DQ = re.compile(r"""\\.?|"|\$\(|`|[^"\\$`]+|\$""", re.S)


def _quoted_commands(text: str) -> list[list[str]]:
    """The commands of ``text`` as the lexer cuts them: breaks (``; & | ( )`` and newlines)
    only outside quotes, a quoted space inside its word, ``#`` at a word's start a comment, the
    commands inside ``$(...)`` and backquotes (in double quotes too) commands of their own, the
    word holding one marked with ``$`` (an expansion)."""
    commands: list[list[str]] = []
    stack: list[tuple[list[str], list[str], bool, str]] = []  # the outer words, word, quoting, close
    words: list[str] = []
    word: list[str] = []
    dq = False  # inside double quotes
    close = ""  # what ends the current substitution: ")" or "`" ("" at the top)
    i, n = 0, len(text)
    top, inside = _ROUGH_TOKEN.match, _ROUGH_TOKEN_DQ.match
    while i < n:
        m = (inside if dq else top)(text, i)
        t = m.group()  # type: ignore[union-attr]  # every character starts a token
        i = m.end()  # type: ignore[union-attr]
        c = t[0]
        if t == "$(" or c == "`" and (dq or close != "`"):
            word.append("$")
            stack.append((words, word, dq, close))
            words, word, dq, close = [], [], False, ")" if c == "$" else "`"
        elif dq:
            if c == '"':
                dq = False
            else:
                word.append(t[1:] if c == "\\" else t)
        elif c == close:
            if word:
                words.append("".join(word))
            commands.append(words)
            words, word, dq, close = stack.pop()
        elif c == "'":
            word.append(t[1:-1] if len(t) > 1 and t[-1] == "'" else t[1:])
        elif c == '"':
            dq = True
        elif c == "\\":
            word.append(t[1:])
        elif c == "#" and not word:
            j = text.find("\n", i)
            i = n if j == -1 else j
        elif c in " \t":
            if word:
                words.append("".join(word))
                word = []
        elif c in "\n;&|()":  # (a run of breaks and blanks is one token)
            if word:
                words.append("".join(word))
                word = []
            commands.append(words)
            words = []
        else:
            word.append(t)
    if word:
        words.append("".join(word))
    commands.append(words)
    while stack:  # an unterminated substitution: what held it is a command too
        commands.append(stack.pop()[0])
    return commands


def _command_may_launch(words: list[str], expansions: bool = True) -> bool:
    """``may_launch`` of one command's words; ``expansions``: whether a word holding ``$`` may
    become a launcher (asked of the commands as the lexer cuts them only)."""
    i = 0
    while i < len(words) and (words[i] in _RESERVED_LEAD or _ASSIGN.match(words[i])):
        i += 1
    if i == len(words):
        return False
    head, rest = words[i], words[i + 1:]
    if "$" in head:
        return expansions
    if _PY.match(head):
        return not (rest and (rest[0] == "-c" or (rest[0] == "-m" and len(rest) > 1 and rest[1] in _PACKAGE_MODULES)))
    base = _basename(head)
    if base in ("torchrun", "deepspeed"):
        return True
    if base == "accelerate":
        return bool(rest) and (rest[0] == "launch" or (expansions and "$" in rest[0]))
    if base in _CLIS:
        return bool(rest) and not rest[0].startswith("-")
    if base in _WRAPPERS:
        if base in _RUN_MANAGERS:
            sub = next((w for w in rest if not w.startswith("-")), None)
            if sub is None or (sub != "run" and not (expansions and "$" in sub)):
                return False
        return any((expansions and "$" in w) or any(p in w for p in LAUNCHER_PARTS) for w in rest)
    return False


def may_launch(text: str) -> bool:
    """Whether shell ``text`` may hold a launch line (``parse_shell(text).launches`` not
    empty): False only when no command of it can start with a launcher (``_is_launcher``).

    A cheaper question than parsing, asked of the texts that are parsed only for their launch
    lines (a notebook's shell lines, Markdown's shell blocks). A command may launch when, after
    its leading reserved words (``then``, ``do``, ``time``, ...) and variable assignments, its
    first word holds an expansion (``$PY train.py``) or is a launcher: ``python`` (unless it is
    ``python -c ...`` or ``python -m pip``, which the parser never takes for a launch),
    ``torchrun``, ``deepspeed``, ``accelerate launch`` (or ``accelerate $X``), ``trl sft`` and
    the other framework command lines; or a wrapper (``nohup``, ``srun``, ``env``, ...; a package
    manager only with ``run``: ``uv run``, not ``uv pip install``) followed by a launcher's name
    or an expansion anywhere. The commands are asked twice: as the lexer cuts them
    (``_quoted_commands``), and, for a launcher's name only, cut at every ``; & | ( )``,
    backquote and newline, quotes or not (``_COMMAND_BREAK``, the line continuations joined by
    ``_continued``; an awk program's ``$2`` is no command there): a text both say no to
    launches nothing however a quote or substitution is read. ``pip install accelerate
    trl``, ``python -m pip install``, ``git clone`` and ``apt install`` lines launch nothing:
    most notebooks' shell lines (716 of the 724 notebooks of two public collections whose shell
    text names a launcher's word hold no launch). ``tests/test_sources_shell.py`` compares it
    with the parser on random texts."""
    if "\r" in text:  # the lexer's business (a carriage return inside a word)
        return any(w in text for w in LAUNCHER_PARTS)
    joined = _continued(text) if "\\\n" in text else text
    plain = _QUOTING.sub("", joined)
    starts: set[int] = set()
    for m in _LAUNCHER_PART.finditer(plain):  # the commands (cut anywhere) holding a launcher's name
        at = m.start()
        start = max(plain.rfind(c, 0, at) for c in _BREAKS) + 1
        if start in starts:
            continue
        starts.add(start)
        end = _COMMAND_BREAK.search(plain, at)
        if _command_may_launch(plain[start:end.start() if end else len(plain)].split(), expansions=False):
            return True
    if not starts:
        return False
    if not any(c in joined for c in "'\"\\$`#"):  # no quoting, expansion or comment: cut the same
        return False
    return any(_command_may_launch(words) for words in _quoted_commands(joined))


def _is_launcher(words: list[_XWord], i: int) -> bool:
    w = _basename(words[i].text)
    if _PY.match(words[i].text) or w in ("torchrun", "deepspeed"):
        return True
    if w in _CLIS:
        return i + 1 < len(words) and not words[i + 1].text.startswith("-")
    return w == "accelerate" and i + 1 < len(words) and words[i + 1].text == "launch"


def _is_flag_word(text: str) -> bool:
    if not text.startswith("-") or text == "-":
        return False
    if text == "--":
        return True
    body = text.lstrip("-")
    if not body:
        return False
    try:
        float(text)
        return False  # a negative number is a value
    except ValueError:
        return True


class _Builder:
    def __init__(self, text: str, path: str, line_offset: int, scopes: Sequence[tuple[int, int]] = ()) -> None:
        self.text = text
        self.path = path
        self.index = LineIndex(text, path, line_offset)
        self.scopes = sorted(scopes)
        self.vars: dict[str, Assignment] = {}
        self.exported: dict[str, Assignment] = {}
        self.unresolved_vars: set[str] = set()
        self.problems: list[ReadProblem] = []
        self.cwd: str | None = None  # None: the folder the script was started from
        self.cwd_known = True
        self.generated: dict[str, GeneratedFile] = {}
        self.cloned: set[str | None] = set()

    # -- substitution -----------------------------------------------------------------------
    def expand(self, word: _Word) -> list[_XWord]:
        # bash expands $VAR before a command's own VAR=value prefix takes effect
        out: list[str] = []
        unresolved = False
        expansions: list[Expansion] = []
        split_value: str | None = None
        for part in word.parts:
            if part.kind == "lit":
                out.append(part.text)
                continue
            if part.kind == "unres":
                out.append(part.text)
                unresolved = True
                continue
            name = part.text
            span = self.index.span(part.start, part.end)
            definition = self.vars.get(name)
            expansions.append(Expansion(name, span, definition))
            if definition is not None and definition.value is None and definition.partial is not None \
                    and not part.quoted and len(word.parts) == 1 and not part.op:
                raw = self.text[word.start:word.end]
                return [_XWord(piece, word.start, word.end, raw, not known, expansions, from_split=True)
                        for piece, known in definition.partial]
            if definition is not None and definition.value is not None:
                value = definition.value
                if part.op in (":-", ":=") and value == "":
                    value = part.arg
            elif definition is None and part.op in (":-", ":=", "-", "="):
                value = part.arg
                if "$" in value or "`" in value:
                    unresolved = True
            else:
                out.append(self.text[part.start:part.end])
                unresolved = True
                continue
            out.append(value)
            if not part.quoted and len(word.parts) == 1 and len(value.split()) > 1:
                split_value = value
        raw = self.text[word.start:word.end]
        if not unresolved and has_placeholder("".join(out)):
            unresolved = True  # "--model <path-to-model>": a placeholder of the docs
        if split_value is not None and not unresolved:
            return [
                _XWord(piece, word.start, word.end, raw, False, expansions, from_split=True)
                for piece in split_value.split()
            ]
        return [_XWord("".join(out), word.start, word.end, raw, unresolved, expansions)]

    def assignment(self, word: _Word, exported: bool) -> Assignment | None:
        first = word.parts[0] if word.parts else None
        if first is None or first.kind != "lit" or first.quoted:
            return None
        raw_first = self.text[first.start:first.end]
        m = _ASSIGN.match(raw_first)
        if m is None or m.start() != 0 or first.start != word.start:
            return None
        name = m.group(1)
        eq_end = first.start + m.end()
        value_word = _Word(
            [_Part("lit", first.text[len(m.group(0)):], False, start=eq_end, end=first.end)]
            + word.parts[1:] if len(first.text) > len(m.group(0)) else word.parts[1:],
            eq_end, word.end, word.quoted,
        )
        xs = self.expand(value_word)
        value = None if any(x.unresolved for x in xs) else " ".join(x.text for x in xs)
        partial = None
        if value is None:
            value = script_dir_expr(self.text[eq_end:word.end])
        if value is None and len(xs) == 1 and not any(p.kind == "unres" for p in value_word.parts):
            # only $NAMEs are unknown: the words are known where they do not touch one
            pieces = [w for w in xs[0].text.replace("\\\n", " ").split() if w != "\\"]
            partial = tuple((w, "$" not in w and "`" not in w) for w in pieces) or None
        if m.group(2) == "+=" and value is not None:
            prev = self.vars.get(name)
            value = (prev.value or "") + value if prev is not None else value
        return Assignment(
            name=name, value=value,
            name_span=self.index.span(word.start, word.start + len(name)),
            value_span=self.index.span(eq_end, word.end),
            span=self.index.span(word.start, word.end),
            exported=exported, partial=partial,
        )

    # -- commands ---------------------------------------------------------------------------
    def run(self) -> ShellScript:
        lexer = _Lexer(self.text, self.index)
        tokens = lexer.tokens()
        self.problems.extend(lexer.problems)
        commands: list[Command] = []
        launches: list[LaunchCommand] = []
        current: list[_Word] = []
        redirect: str | None = None  # the redirection operator whose target word comes next
        outputs: list[_Word] = []  # output redirection targets of the current command
        heredoc_of_cmd: HereDoc | None = None
        heredoc_count = 0
        dir_stack: list[tuple[str | None, bool]] = []
        pending: LaunchCommand | None = None  # a launch that a newline just ended
        # scopes as character ranges: from the first line's start to the last line's newline
        starts = self.index.starts
        ranges = [(starts[a - 1], starts[b] - 1 if b < len(starts) else len(self.text))
                  for a, b in self.scopes if 1 <= a <= b <= len(starts)]
        k = 0
        saved: tuple | None = None  # the state before the scope being read
        for tok in tokens + [_Op("\n", len(self.text), len(self.text))]:
            if saved is not None and tok.start > ranges[k][1]:
                self.cwd, self.cwd_known, self.vars, self.exported, dir_stack[:] = saved
                saved = None
                k += 1
            while saved is None and k < len(ranges) and tok.start > ranges[k][1]:
                k += 1  # a scope without commands
            if saved is None and k < len(ranges) and tok.start >= ranges[k][0]:
                saved = (self.cwd, self.cwd_known, dict(self.vars), dict(self.exported), list(dir_stack))
            if isinstance(tok, _Op):
                if tok.op == "redir":
                    redirect = self.text[tok.start:tok.end]
                    if redirect.lstrip("0123456789") in ("<<", "<<-"):
                        if heredoc_count < len(lexer.heredocs):
                            heredoc_of_cmd = lexer.heredocs[heredoc_count]
                        heredoc_count += 1
                    continue
                if current:
                    cmd = self.command(current)
                    if cmd is not None:
                        commands.append(cmd)
                        self._orphan_flags(cmd, pending)
                        self._effects(cmd, outputs, heredoc_of_cmd, dir_stack)
                        launch = self.launch(cmd)
                        if launch is not None:
                            launch.cwd, launch.cwd_known = self.cwd, self.cwd_known
                            launches.append(launch)
                        pending = launch if launch is not None and tok.op == "\n" else None
                    elif outputs:
                        self._effects(None, outputs, heredoc_of_cmd, dir_stack)
                elif tok.op == "\n" and pending is not None and not self._blank_or_comment_line(tok.start):
                    pending = None
                if tok.op == "(":
                    dir_stack.append((self.cwd, self.cwd_known))
                elif tok.op == ")" and dir_stack:
                    self.cwd, self.cwd_known = dir_stack.pop()
                current, outputs, heredoc_of_cmd = [], [], None
                if tok.op != "\n":
                    pending = None
                continue
            if redirect is not None:
                if redirect.endswith((">", ">>", ">|")) and not redirect.startswith(("2", "&")):
                    outputs.append(tok)
                redirect = None
                continue
            current.append(tok)
        return ShellScript(self.path, commands, launches, dict(self.vars), self.problems,
                           self.index, generated=dict(self.generated), cloned=set(self.cloned),
                           heredocs=list(lexer.heredocs))

    def _blank_or_comment_line(self, newline: int) -> bool:
        start = self.text.rfind("\n", 0, newline) + 1
        line = self.text[start:newline].strip()
        return not line or line.startswith("#")

    def _orphan_flags(self, cmd: Command, pending: LaunchCommand | None) -> None:
        """``--bf16`` starting a command right after a launch line: the continuation of the
        launch line was broken (a space or a comment after the backslash, a comment line in
        the middle), so the shell runs these flags as a command of their own."""
        if pending is None or not cmd.words or not _is_flag_word(cmd.words[0].text) \
                or cmd.words[0].text == "--":
            return
        end = pending.span
        last_line = self.text[self.index.line_start(self.index.offset(end.end_line, 1)):
                              self.index.line_end(self.index.offset(end.end_line, 1))] \
            if end.end_line - self.index.line_offset >= 1 else ""
        if re.search(r"\\[ \t]+(#.*)?$", last_line):
            why = "a space after the backslash"
        elif "#" in last_line and last_line.rstrip().endswith("\\"):
            why = "a comment before the backslash"
        elif cmd.span.line == end.end_line + 1 and not last_line.rstrip().endswith("\\"):
            why = f"the missing backslash at the end of line {end.end_line}"
        else:
            why = "a comment or blank line inside the command"
        flags = " ".join(w.text for w in cmd.words[:3]) + (" ..." if len(cmd.words) > 3 else "")
        self.problems.append(ReadProblem(
            "broken-continuation",
            f"{flags} is not passed to the {pending.launcher} command that ends on line "
            f"{end.end_line}: {why} ends the command there, and the shell runs this line as a "
            f"command of its own",
            cmd.span,
        ))

    def _effects(self, cmd: Command | None, outputs: list[_Word], heredoc: HereDoc | None,
                 dir_stack: list[tuple[str | None, bool]]) -> None:
        """What a command does to later ones: ``cd``/``pushd``/``popd`` change the folder
        paths resolve from; redirections, ``tee``, ``cp``/``mv``, ``wget -O`` create files;
        ``git clone`` brings another repository."""
        made: list[tuple[_XWord, HereDoc | None]] = []
        for w in outputs:
            for x in self.expand(w):
                made.append((x, heredoc))
        words = cmd.words if cmd is not None else []
        head = _basename(words[0].text) if words else ""
        args = [w for w in words[1:] if not w.text.startswith("-")]
        if head in ("cd", "pushd"):
            if head == "pushd":
                dir_stack.append((self.cwd, self.cwd_known))
            self._cd(args[0] if args else None)
        elif head == "popd":
            if dir_stack:
                self.cwd, self.cwd_known = dir_stack.pop()
            else:
                self.cwd_known = False
        elif head == "tee":
            made.extend((w, heredoc) for w in args)
        elif head in ("cp", "mv", "ln", "install", "rsync") and len(args) >= 2:
            made.append((args[-1], None))
        elif head in ("wget", "curl"):
            for i, w in enumerate(words[:-1]):
                if w.text in ("-O", "-o", "--output", "--output-document"):
                    made.append((words[i + 1], None))
        elif head == "git" and len(args) >= 2 and args[0].text == "clone":
            target = args[2].text if len(args) >= 3 else \
                args[1].text.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
            if target and not args[-1].unresolved:
                self.cloned.add(self._join(target))
        elif head in ("huggingface-cli", "hf") and len(args) >= 1 and args[0].text == "download":
            for i, w in enumerate(words[:-1]):
                if w.text == "--local-dir":
                    self.cloned.add(self._join(words[i + 1].text))
        for w, body in made:
            if w.unresolved or not w.text or w.text.startswith("/dev/"):
                continue
            key = self._join(w.text)
            if key is not None:
                self.generated[key] = GeneratedFile(w.text, self.index.span(w.start, w.end), body,
                                                    self.cwd if self.cwd_known else None)

    def _join(self, path: str) -> str | None:
        """``path`` relative to the folder the script started in (None when unknown)."""
        if os.path.isabs(path) or path.startswith(("~", SCRIPT_DIR)):
            return norm_path(path)
        if not self.cwd_known:
            return None
        return norm_path(os.path.join(self.cwd or "", path))

    def _cd(self, word: _XWord | None) -> None:
        if word is None or word.text in ("~", "-") or word.text.startswith("~"):
            self.cwd_known = False
            return
        here = script_dir_expr(word.raw)
        if word.unresolved and here is not None:
            self.cwd, self.cwd_known = here, True
            return
        if word.unresolved:
            self.cwd_known = False
            return
        joined = self._join(word.text) if self.cwd_known or os.path.isabs(word.text) \
            or word.text.startswith(SCRIPT_DIR) else None
        if joined is None:
            self.cwd_known = False
            return
        self.cwd, self.cwd_known = joined, True

    def command(self, words: list[_Word]) -> Command | None:
        # leading reserved words: `do torchrun ...`, `then python ...`
        while words and not words[0].quoted and self._lit(words[0]) in _RESERVED_LEAD:
            words = words[1:]
        if not words:
            return None
        head = self._lit(words[0])
        if head in ("for", "select", "case"):
            if len(words) > 1:
                name = self._lit(words[1])
                if name:
                    self.vars.pop(name, None)  # a loop variable: unknown value
            return None
        if head in ("export", "declare", "typeset", "local", "readonly"):
            exported = head == "export" or any(self._lit(w).startswith("-") and "x" in
                                               self._lit(w) for w in words[1:])
            for w in words[1:]:
                a = self.assignment(w, exported)
                if a is not None:
                    self.vars[a.name] = a
                    if exported:
                        self.exported[a.name] = a
                elif exported and _NAME.fullmatch(self._lit(w) or "") and \
                        self._lit(w) in self.vars:
                    prev = self.vars[self._lit(w)]
                    self.exported[prev.name] = prev
            return None
        env: dict[str, Assignment] = {}
        i = 0
        while i < len(words):
            a = self.assignment(words[i], exported=True)
            if a is None:
                break
            env[a.name] = a
            i += 1
        if i == len(words):  # only assignments: shell variables
            for a in env.values():
                self.vars[a.name] = Assignment(a.name, a.value, a.name_span, a.value_span, a.span,
                                               exported=a.name in self.exported, partial=a.partial)
                if a.name in self.exported:
                    self.exported[a.name] = self.vars[a.name]
            return None
        xwords: list[_XWord] = []
        for w in words[i:]:
            xwords.extend(self.expand(w))
        start, end = words[0].start, words[-1].end
        full_env = dict(self.exported)
        full_env.update(env)
        return Command(xwords, full_env, start, end, self.index.span(start, end))

    def _lit(self, word: _Word) -> str:
        if len(word.parts) == 1 and word.parts[0].kind == "lit":
            return word.parts[0].text
        return ""

    # -- launches ---------------------------------------------------------------------------
    def launch(self, cmd: Command) -> LaunchCommand | None:
        words = cmd.words
        env = dict(cmd.env)
        i = 0
        if not _is_launcher(words, 0):
            lead = _basename(words[0].text)
            if lead not in _WRAPPERS:
                return None
            if lead in _RUN_MANAGERS and next((w.text for w in words[1:] if not w.text.startswith("-")), None) != "run":
                return None  # ``uv pip install trl``, ``conda install deepspeed``
            for j in range(1, len(words)):
                if _basename(words[j].text) in _PACKAGE_TOOLS:
                    return None  # ``sudo pip install deepspeed``
                if _is_launcher(words, j):
                    i = j
                    break
                if _basename(words[0].text) == "env":
                    m = _ASSIGN.match(words[j].text)
                    if m is not None:
                        env[m.group(1)] = Assignment(
                            m.group(1), words[j].text[m.end():],
                            self.index.span(words[j].start, words[j].start + len(m.group(1))),
                            self.index.span(words[j].start + m.end(), words[j].end),
                            self.index.span(words[j].start, words[j].end), True)
            else:
                return None
        head = words[i]
        base = _basename(head.text)
        module: str | None = None
        launcher_flags: list[Flag] = []
        j = i + 1
        if _PY.match(head.text):
            launcher = "python"
            while j < len(words):
                t = words[j].text
                if t == "-m" and j + 1 < len(words):
                    module = words[j + 1].text
                    j += 2
                    break
                if t.startswith("-m") and len(t) > 2 and not t.startswith("--"):
                    module = t[2:]
                    j += 1
                    break
                if t == "-c":
                    return None
                if t in _PY_OPTS_WITH_ARG:
                    j += 2
                    continue
                if t.startswith("-") and t != "-":
                    j += 1
                    continue
                break
            if module in _PACKAGE_MODULES:
                return None  # ``python -m pip install accelerate``
            if module in _TORCH_MODULES:
                launcher = _TORCH_MODULES[module]
                module = None
        elif base == "accelerate":
            launcher = "accelerate"
            j = i + 2
        elif base in _CLIS:
            script_args, positionals = self.script_flags(words[i + 2:])
            return LaunchCommand(
                launcher=base, launcher_args={}, script=None, module=None,
                script_args=script_args, env=env, span=cmd.span, path=self.path,
                launcher_span=self.index.span(head.start, words[i + 1].end),
                positionals=positionals, cli=words[i + 1].text,
            )
        else:
            launcher = base
        launcher_span = self.index.span(head.start, words[j - 1].end if j > i else head.end)
        if launcher != "python":
            launcher_flags, j = self.launcher_options(words, j, launcher)
        script: tuple[str, Span] | None = None
        launcher_args = {}
        for f in launcher_flags:
            key = _SHORT.get(launcher, {}).get(f.key, f.key)
            launcher_args[key] = f
        if module is None and j < len(words):
            target = words[j]
            if "module" in launcher_args:
                module = target.text
            else:
                script = (target.text, self.index.span(target.start, target.end))
            j += 1
        script_args, positionals = self.script_flags(words[j:])
        for f in script_args:
            if f.unresolved:
                self.problems.append(ReadProblem(
                    "unresolved-variable",
                    f"--{f.name} uses a value that cannot be resolved statically",
                    f.value_span or f.name_span,
                ))
        return LaunchCommand(
            launcher=launcher, launcher_args=launcher_args, script=script, module=module,
            script_args=script_args, env=env, span=cmd.span, path=self.path,
            launcher_span=launcher_span, positionals=positionals,
            launcher_flags=launcher_flags,
        )

    def _flag(self, word: _XWord) -> Flag:
        text = word.text
        prefix = "--" if text.startswith("--") else "-"
        body = text[len(prefix):]
        flag = Flag(name=body, value=None, name_span=self.index.span(word.start, word.end),
                    value_span=None, raw=self.text[word.start:word.end], prefix=prefix,
                    unresolved=word.unresolved, expansions=list(word.expansions),
                    from_expansion=word.from_split, start=word.start, end=word.end,
                    name_end=word.end, _index=self.index)
        if "=" in body:
            name, _, value = body.partition("=")
            flag.name = name
            flag.value = value
            flag.inline = True
            raw = self.text[word.start:word.end]
            eq = raw.find("=")
            if eq != -1 and not word.from_split:
                flag.name_end = word.start + eq
                flag.value_start, flag.value_end = word.start + eq + 1, word.end
                flag.name_span = self.index.span(word.start, flag.name_end)
                flag.value_span = self.index.span(flag.value_start, word.end)
            else:
                flag.value_start, flag.value_end = word.start, word.end
                flag.value_span = flag.name_span
        return flag

    def _add_value(self, flag: Flag, word: _XWord) -> None:
        span = self.index.span(word.start, word.end)
        if flag.value is None:
            flag.value = word.text
            flag.value_span = span
            flag.value_start, flag.value_end = word.start, word.end
        else:
            flag.extra_values.append((word.text, span))
        flag.unresolved = flag.unresolved or word.unresolved
        flag.expansions.extend(word.expansions)
        flag.from_expansion = flag.from_expansion or word.from_split
        flag.end = word.end
        flag.raw = self.text[flag.start:flag.end]

    def launcher_options(self, words: list[_XWord], j: int, launcher: str) -> tuple[list[Flag], int]:
        flags: list[Flag] = []
        bools = _BOOL_OPTS.get(launcher, set())
        while j < len(words):
            t = words[j].text
            if t == "--":
                j += 1
                break
            if not _is_flag_word(t):
                break
            f = self._flag(words[j])
            flags.append(f)
            j += 1
            if f.inline or f.key in bools:
                continue
            if j < len(words) and not _is_flag_word(words[j].text) \
                    and not words[j].text.endswith(".py"):
                self._add_value(f, words[j])
                j += 1
        return flags, j

    def script_flags(self, words: list[_XWord]) -> tuple[list[Flag], list[tuple[str, Span]]]:
        flags: list[Flag] = []
        positionals: list[tuple[str, Span]] = []
        current: Flag | None = None
        only_positionals = False
        for w in words:
            if not only_positionals and w.text == "--":
                only_positionals = True
                current = None
                continue
            if not only_positionals and _is_flag_word(w.text):
                current = self._flag(w)
                flags.append(current)
                if current.inline:
                    current = None
                continue
            if current is not None:
                self._add_value(current, w)
            else:
                positionals.append((w.text, self.index.span(w.start, w.end)))
        return flags, positionals


def parse_shell(text: str, path: str = "<shell>", *, line_offset: int = 0,
                scopes: Sequence[tuple[int, int]] = ()) -> ShellScript:
    """Read a shell file: commands, variables and launch lines. ``scopes``: (first, last)
    lines (1-based, of ``text``) that each run in a process of their own (a notebook's ``!``
    line, its ``%%bash`` cell): what they set (``cd``, variables, exports) ends with them."""
    return _Builder(text, path, line_offset, scopes).run()


def find_launches(text: str, path: str = "<shell>") -> list[LaunchCommand]:
    return parse_shell(text, path).launches


# -- Markdown -------------------------------------------------------------------------------

_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*$")
_SHELL_LANGS = {"bash", "sh", "shell", "console", "zsh", "shell-session", "shellsession",
                "sh-session", "terminal"}
# an unlabelled block is read as shell when one of its lines starts a launch
_LAUNCH_LINE = re.compile(
    r"^\s*(?:\$\s+)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:nohup\s+|srun\s+)?"
    r"(?:python[0-9.]*|torchrun|deepspeed|accelerate\s+launch|llamafactory-cli|trl\s+\w+)\s", re.MULTILINE)
_PROMPT = re.compile(r"^(\s*)(\$|>)( |$)")


# text -> its blocks, by the text's identity (the partition and the Markdown reader both ask,
# for the one text a run reads of the file); bounded by the characters of the texts held
_BLOCKS: dict[int, tuple[str, tuple[tuple[str, int], ...]]] = {}
_BLOCKS_CHARS = [0]
_BLOCKS_MAX_CHARS = 64 * 1024 * 1024


def extract_shell_blocks(md_text: str) -> list[tuple[str, int]]:
    """The fenced ```bash/sh/shell/console blocks of a Markdown text (and unlabelled ones
    with a launch line; fences may be indented, as in lists), as ``(text, line_offset)``: line ``k`` of ``text`` is line ``k + line_offset`` of the file, and
    columns are unchanged (``$ `` prompts are blanked with spaces, output lines of console
    blocks are emptied). Found once per text object (a new list each time)."""
    kept = _BLOCKS.get(id(md_text))
    if kept is not None and kept[0] is md_text:
        return list(kept[1])
    out = _extract_shell_blocks(md_text)
    if _BLOCKS_CHARS[0] + len(md_text) > _BLOCKS_MAX_CHARS:
        _BLOCKS.clear()
        _BLOCKS_CHARS[0] = 0
    _BLOCKS[id(md_text)] = (md_text, tuple(out))  # the text is held: its id is not reused
    _BLOCKS_CHARS[0] += len(md_text)
    return out


def _extract_shell_blocks(md_text: str) -> list[tuple[str, int]]:
    lines = md_text.split("\n")
    out: list[tuple[str, int]] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        fence, lang = m.group(2), m.group(3).lower().strip("{}.")
        start = i + 1
        j = start
        while j < len(lines):
            close = lines[j].strip()
            if close.startswith(fence[0] * len(fence)) and not close.strip(fence[0]):
                break
            j += 1
        body = lines[start:j]
        if lang in _SHELL_LANGS or (lang == "" and _LAUNCH_LINE.search("\n".join(body))):
            out.append(("\n".join(_strip_prompts(body, lang == "console")), start))
        i = j + 1
    return out


def _strip_prompts(body: list[str], console: bool) -> list[str]:
    prompted = console or any(re.match(r"^\s*\$ ", line) for line in body)
    if not prompted:
        return body
    out: list[str] = []
    continuing = False
    for line in body:
        m = _PROMPT.match(line)
        if m is not None and (m.group(2) == "$" or continuing):
            line = line[: m.start(2)] + " " * (m.end(3) - m.start(2)) + line[m.end(3):]
            out.append(line)
        elif continuing:
            out.append(line)
        else:
            out.append("")
            continuing = False
            continue
        continuing = line.rstrip().endswith("\\")
    return out


def markdown_launches(md_text: str, path: str) -> list[LaunchCommand]:
    """Launch lines in a Markdown file's shell blocks, with positions in the Markdown file."""
    launches: list[LaunchCommand] = []
    for text, offset in extract_shell_blocks(md_text):
        launches.extend(parse_shell(text, path, line_offset=offset).launches)
    return launches


# -- edits ----------------------------------------------------------------------------------

_SAFE_WORD = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


def shell_quote(value: str) -> str:
    """``value`` as one shell word (quoted only when needed)."""
    if value and _SAFE_WORD.match(value):
        return value
    return "'" + value.replace("'", "'\"'\"'") + "'"


def _editable(flag: Flag) -> LineIndex:
    if flag.from_expansion or flag._index is None:
        raise ValueError(f"--{flag.name} comes from a variable expansion; edit the definition")
    return flag._index


def replace_flag_value_edit(flag: Flag, new: str) -> Edit:
    """Replace the flag's value (``--k v`` or ``--k=v``) by ``new`` (quoted when needed); a
    bare flag gets `` new`` after its name. Extra values (``--k a b``) are replaced too."""
    idx = _editable(flag)
    word = shell_quote(new)
    if flag.value_start < 0:
        return idx.edit(flag.name_end, flag.name_end, " " + word)
    return idx.edit(flag.value_start, flag.end if flag.extra_values else flag.value_end, word)


def rename_flag_edit(flag: Flag, new_name: str) -> Edit:
    """``--old`` -> ``--new`` (``new_name`` with or without dashes); the value stays."""
    idx = _editable(flag)
    if not new_name.startswith("-"):
        new_name = flag.prefix + new_name
    return idx.edit(flag.start, flag.name_end, new_name)


def remove_flag_edit(flag: Flag) -> Edit:
    """Remove the flag, its value(s) and the blanks before them, keeping continuations.

    * alone on a continuation line (``  --k v \\``): the whole line goes;
    * the last thing of a command, after a line ending in ``\\``: the previous line's
      `` \\`` goes with it, so the command still ends where it did;
    * first on its line with more words after it: removed up to the next word, so the
      indentation stays;
    * otherwise: removed with the blanks before it.
    """
    idx = _editable(flag)
    text = idx.text
    start, end = flag.start, flag.end
    ls = idx.line_start(start)
    before = text[ls:start]
    le = idx.line_end(end)
    after = text[end:le]
    after_s = after.strip()
    if not before.strip():
        if after_s == "\\":  # alone on a continuation line
            return idx.edit(ls, min(le + 1, len(text)), "")
        if after_s == "" or after_s.startswith("#") or after_s[0] in ";|&)":
            # the command's last word on this line: does the previous line continue into it?
            if ls >= 2 and text[ls - 1] == "\n":
                prev_end = ls - 1
                if text[prev_end - 1:prev_end] == "\r":
                    prev_end -= 1
                if text[prev_end - 1:prev_end] == "\\":
                    cut = prev_end - 1
                    while cut > 0 and text[cut - 1] in " \t":
                        cut -= 1
                    prev_ls = idx.line_start(cut)
                    if text[prev_ls:cut].strip():
                        if after_s == "":
                            return idx.edit(cut, le, "")
                        return idx.edit(cut, end, "")
            if after_s == "":
                return idx.edit(ls, min(le + 1, len(text)), "")
            return idx.edit(start, end + len(after) - len(after.lstrip()), "")
        nxt = end + len(after) - len(after.lstrip())
        return idx.edit(start, nxt, "")
    cut = start
    while cut > ls and text[cut - 1] in " \t":
        cut -= 1
    return idx.edit(cut, end, "")
