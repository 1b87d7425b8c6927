"""Jupyter notebooks (nbformat 4): code cells read as one program, IPython syntax included.

A notebook is laid out on *virtual lines*: every line of every code cell, in cell order
(markdown and raw cells take no lines). Three texts share those lines and their columns:

* the **Python program**: code cells with IPython syntax replaced by inert Python of the same
  place (``!cmd`` and line magics become ``...``; ``x = !cmd`` becomes ``x =
  get_ipython().getoutput()``; ``%time stmt`` becomes ``if 1: stmt`` with ``stmt`` where it
  was; ``obj?`` help becomes ``...``); ``%%bash``/``%%writefile``/other non-Python cell bodies
  are blank. A variable bound in cell 3 reaches the Trainer in cell 7;
* the **shell text**: ``!cmd``/``!!cmd``/``x = !cmd`` lines (``!`` blanked, IPython's
  ``{expr}`` turned into an unresolvable ``$___`` of the same width), ``%%bash``/``%%sh``
  bodies, ``%env X=1`` (an exported variable for later lines) and ``%run script.py args``
  (a ``python script.py args`` launch); the launch lines of the setup;
* the **files a cell writes** (``%%writefile train.py``): each on its own text where only its
  body lines are filled, read with the reader of its kind (a script a later ``!python
  train.py`` runs, a DeepSpeed JSON ``--deepspeed ds.json`` names).

Every reader therefore gives spans in virtual lines with the notebook's path; ``to_cells``
turns a finding's lines into *cell* (1-based, counting every cell of the notebook, markdown
included: ``cells[N-1]`` of the JSON) and *line within the cell*.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
from typing import TYPE_CHECKING, Any, Iterable

from trainlint.diagnostics import Diagnostic, Edit, Related
from trainlint.record import Record, replace
from trainlint.sources.errors import ReadError

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.sources.files import ParsedFile
    from trainlint.sources.python import PythonFile
    from trainlint.sources.shell import ShellScript

__all__ = ["Notebook", "read_notebook", "prefilter", "code_text", "to_cells", "cell_sources", "PSEUDO_SEP",
           "python_program", "NOTEBOOK_MARKERS"]

PSEUDO_SEP = "::"  # "dir/nb.ipynb::train.py": the ParsedFile of a file a cell writes

# A walked notebook is read only when its text mentions one of these (besides the Python
# markers of ``resolve.PY_PREFILTER``): launch lines (with the framework command lines ``shell``
# reads, its ``_CLIS``: ``!trl sft``, ``!llamafactory-cli train``) and written files.
NOTEBOOK_MARKERS = ("!python", "!torchrun", "%run", "%%writefile", "%%bash", "%%sh", "!accelerate",
                    "!deepspeed", "!trl", "!llamafactory-cli", "!lmf")

# cell magics whose body is Python (IPython runs it as code)
_PY_CELL_MAGICS = {"time", "timeit", "capture", "prun", "memit", "debug", "mprun"}
_SHELL_CELL_MAGICS = {"bash", "sh", "!", "sx", "system"}
_SCRIPT_SHELLS = {"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/usr/bin/env bash"}
_WRITE_CELL_MAGICS = {"writefile", "file"}
# (``%cd``, ``os.chdir`` and ``cd`` are followed: the launch lines resolve from where they lead)
_FETCH = re.compile(r"\b(?:wget|curl|git\s+clone|gdown|unzip|tar|cp|mv|rsync|hf_hub_download|"
                    r"snapshot_download|urlretrieve|files\.upload|drive\.mount|kaggle|gsutil|"
                    r"aws\s+s3|huggingface-cli|hf\s+download)\b", re.M)
_ASSIGN_SPECIAL = re.compile(
    r"([A-Za-z_][\w.]*(?:\[[^\]\n]*\])?(?:\s*,\s*[A-Za-z_][\w.]*)*)(\s*=\s*)(!|%(?!%))")
_HELP_END = re.compile(r"%{0,2}[A-Za-z_*][\w*]*(?:\.[A-Za-z_*][\w*]*|\[[^\]\n]*\])*\s*\?\??$")
_MAGIC = re.compile(r"%{0,2}([\w!]+)")
# IPython's automagic: these magics work without their %, on a line that is not Python
_AUTOMAGIC = re.compile(r"(?:pip3?|conda|mamba|cd|pwd|ls|mkdir|cat|cp|mv|rm|rmdir|load_ext|matplotlib|env|run|"
                        r"time|timeit|pushd|popd|wget)\s+\S")
_AUTOMAGIC_WORDS = (r"(?:pip3?|conda|mamba|cd|pwd|ls|mkdir|cat|cp|mv|rm|rmdir|load_ext|matplotlib|env|run|time|"
                    r"timeit|pushd|popd|wget)[ \t]")
# A text without any of these is plain Python (no line can be IPython syntax): a line starting
# with ``! % ? / , ;`` or an automagic word, a line ending in ``?``, ``= !``/``= %``. Three
# searches that each start with a literal (the regex engine skips to it) instead of one
# alternation tried at every character: 3x faster on real cells.
_LINE_START_FIRST = re.compile(r"[ \t]*(?:[!%?/,;]|" + _AUTOMAGIC_WORDS + ")")
_LINE_START = re.compile(r"\n[ \t]*(?:[!%?/,;]|" + _AUTOMAGIC_WORDS + ")")
_HELP_AT_END = re.compile(r"\?[ \t]*(?:\n|\Z)")
_ASSIGN_MAGIC = re.compile(r"=[ \t]*[!%]")


def _maybe_ipython(text: str) -> bool:
    return bool(_LINE_START_FIRST.match(text) or _LINE_START.search(text)
                or ("?" in text and _HELP_AT_END.search(text))
                or ("=" in text and ("!" in text or "%" in text) and _ASSIGN_MAGIC.search(text)))


_PROMPT = re.compile(r"(?:>>>|\.\.\.)(?: |$)")
_BRACE = re.compile(r"\{[^{}\n]*\}")
_TIMEIT_OPT = re.compile(r"(?:-[nrp]\s*\d+\s+|-[tcqo]\s+)*")
_SIMPLE_WORD = re.compile(r"[\w./:,@%+=-]*")


def prefilter(text: str, markers: Iterable[str]) -> bool:
    """Whether a walked notebook is worth reading: a marker in one of its code cells.

    First a search of the raw JSON text (no decoding): a notebook that names no marker anywhere
    is dropped here. This cannot miss a marker: the markers are ASCII names and magics without
    ``"``, ``\\``, ``/`` or control characters (the only characters JSON writes as two-character
    escapes), and an escape before a name (``\\ntrl``) leaves the name's own characters in the
    text; a ``\\uXXXX`` escape may stand for any character (``\\u0054rainer`` is ``Trainer``),
    so a text that holds one is decoded and its code searched. Then the same
    search over the code cells' sources only (``code_text``): outputs and markdown that mention
    ``Trainer`` make no training setup."""
    markers = tuple(markers)
    entry = _entry(text)
    got = entry.wanted.get(markers)
    if got is None:
        # the raw search only before the JSON is decoded (once decoded, the code is searched)
        got = entry.wanted[markers] = (entry.decoded or _any_marker(text, markers) or "\\u" in text) and (
            any(tok in entry.code() for tok in NOTEBOOK_MARKERS) or _any_marker(entry.program(), markers))
    return got


def raw_may_name(text: str, words: Iterable[str]) -> bool:
    """Whether a notebook's raw JSON text may hold one of ``words`` (ASCII names without ``"``,
    ``\\``, ``/`` or control characters) once decoded: one of them is in the text, or a ``\\u``
    escape is (it may write any character of a name). False is exact: no string of the
    decoded notebook holds any of them. Once the notebook is decoded (the partition's
    pre-filter decoded it), True: the caller's search of its program is exact and cheaper
    than two searches of the whole text, outputs and all."""
    return _entry(text).decoded or any(w in text for w in words) or "\\u" in text


# Searched first when they are markers: the names most notebooks that name any marker name
# (the search stops at the first found; 835, 751 and 536 of 1,000 real notebooks, against 119
# for ``Trainer``), so the whole text is rarely searched more than once
_LIKELY_FIRST = ("transformers", "from_pretrained", "tokenizer")
_ORDERED: dict[tuple[str, ...], tuple[str, ...]] = {}


def _any_marker(text: str, markers: tuple[str, ...]) -> bool:
    ordered = _ORDERED.get(markers)
    if ordered is None:
        likely = tuple(m for m in _LIKELY_FIRST if m in markers)
        ordered = _ORDERED[markers] = likely + tuple(m for m in dict.fromkeys((*markers, *NOTEBOOK_MARKERS))
                                                       if m not in likely)
    return any(tok in text for tok in ordered)


# lines of a code cell that are no Python and no launch: ``!pip install transformers``,
# ``%pip install trl`` (a launch line is found by ``NOTEBOOK_MARKERS`` in the whole code)
# (matched with the newline before it, on the text after a newline: a pattern that starts with
# a literal is searched fast, one that starts with ``^`` is tried at every character)
_INSTALL_OR_SHELL = re.compile(r"\n[ \t]*(?:!|%{0,2}(?:pip3?|conda|mamba|uv)[ \t])[^\n]*")


class _Decoded:
    """What a notebook's JSON text gives, decoded once per process (the pre-filter, the
    partition and the reader all ask): only the cells' sources are kept, never the outputs."""

    __slots__ = ("text", "_got", "_code", "_program", "wanted")

    def __init__(self, text: str) -> None:
        self.text = text
        self._got: tuple[str, tuple[tuple[str, str], ...]] | ReadError | None = None
        self._code: str | None = None
        self._program: str | None = None
        self.wanted: dict[tuple[str, ...], bool] = {}

    @property
    def decoded(self) -> bool:
        return self._got is not None

    def got(self) -> tuple[str, tuple[tuple[str, str], ...]] | ReadError:
        if self._got is None:
            try:
                self._got = _decode("", self.text)
            except ReadError as e:
                self._got = e
        return self._got

    def code(self) -> str:
        if self._code is None:
            got = self.got()
            self._code = self.text if isinstance(got, ReadError) else \
                "\n".join(src for kind, src in got[1] if kind == "code")
        return self._code

    def program(self) -> str:
        """The code without its shell and install lines (what trigger names are searched in)."""
        if self._program is None:
            code = self.code()
            self._program = _INSTALL_OR_SHELL.sub("\n", "\n" + code)[1:] if ("!" in code or "pip" in code or "conda" in code
                                                                or "uv" in code) else code
        return self._program


# text -> its _Decoded, bounded by the characters held. Found by the text's content, not by its
# object: a notebook read again (a group's workspace, the install lines of ``knowledge.versions``)
# finds its decoded cells. Not keyed by the text itself: hashing a whole notebook (outputs and
# all, four bytes a character once an output holds an emoji) cost more than its raw search; the
# key is its length and ends, and the text is compared (an identity test for the same object,
# else a memory comparison that stops at the first difference)
_DECODED: dict[tuple[int, str, str], list[_Decoded]] = {}
_DECODED_CHARS = [0]
_DECODED_MAX_CHARS = 512 * 1024 * 1024
_KEY_ENDS = 256


def _entry(text: str) -> _Decoded:
    key = (len(text), text[:_KEY_ENDS], text[-_KEY_ENDS:])
    same = _DECODED.get(key)
    if same is not None:
        for entry in same:
            if entry.text is text or entry.text == text:
                return entry
    if _DECODED_CHARS[0] + len(text) > _DECODED_MAX_CHARS:
        _DECODED.clear()
        _DECODED_CHARS[0] = 0
        same = None
    entry = _Decoded(text)
    if same is None:
        _DECODED[key] = [entry]
    else:
        same.append(entry)
    _DECODED_CHARS[0] += len(text)
    return entry


def decoded_cells(text: str) -> tuple[tuple[str, str], ...] | None:
    """(cell type, source) of each cell of a notebook's text, decoded once per process; None
    when it is no nbformat 4 notebook. (``knowledge.versions`` asks it for the notebooks it
    reads, when this reader is loaded.)"""
    got = _entry(text).got()
    return None if isinstance(got, ReadError) else got[1]


def program_text(text: str) -> str:
    """The code cells' Python without shell and install lines (where a script's pre-filter
    would look for trigger names and words)."""
    return _entry(text).program()


def code_text(text: str) -> str:
    """The code cells' sources, one after the other (what links a notebook to other files and
    what its pre-filter reads); the text itself when it is not a notebook (its reader reports
    why)."""
    return _entry(text).code()


def _decoded(path: str, text: str) -> tuple[str, tuple[tuple[str, str], ...]] | ReadError:
    got = _entry(text).got()
    if isinstance(got, ReadError) and got.path != path:
        got = ReadError(got.message, got.line, got.column, path)
    return got


class VLine(Record):
    """One virtual line: where it is in the notebook and how the derived texts differ from it."""

    __slots__ = ("cell", "line", "opaque", "shift", "length", "subs", "indent")
    cell: int  # 1-based among all cells
    line: int  # 1-based within the cell
    # column ranges (1-based, end exclusive) where a derived text is not the cell's text:
    # an edit touching them cannot be written back
    opaque: list[tuple[int, int]]
    # (from_col, delta): columns >= from_col of the shell text are ``delta`` to the right of
    # the cell's (``%run x`` read as ``python x``)
    shift: tuple[int, int] | None
    length: int  # characters of the cell line, without its newline
    # IPython's expansions in a shell line (``{lr}`` -> ``3e-05``): (shell start, shell end,
    # cell start, cell end) of each, 1-based, end exclusive (``notebook_flow``)
    subs: list[tuple[int, int, int, int]] | None
    # characters of the cell line's start IPython removed before reading it (the cell's first
    # line is indented: ``leading_indent``): every derived column is that far to the left
    indent: int

    def __init__(
        self,
        cell: int,
        line: int,
        opaque: list[tuple[int, int]] | None = None,
        shift: tuple[int, int] | None = None,
        length: int = 0,
        subs: list[tuple[int, int, int, int]] | None = None,
        indent: int = 0,
    ) -> None:
        self.cell = cell
        self.line = line
        self.opaque = [] if opaque is None else opaque
        self.shift = shift
        self.length = length
        self.subs = subs
        self.indent = indent


class Cell(Record):
    __slots__ = ("number", "cell_type", "source", "first", "lines", "__dict__")
    number: int  # 1-based among all cells
    cell_type: str
    source: str
    first: int  # first virtual line (code cells with lines), else 0
    lines: int

    def __init__(self, number: int, cell_type: str, source: str, first: int = 0, lines: int = 0) -> None:
        self.number = number
        self.cell_type = cell_type
        self.source = source
        self.first = first
        self.lines = lines


class Written(Record):
    """A file a ``%%writefile`` cell writes (one version: a later cell may write it again)."""

    __slots__ = ("name", "line", "pf", "__dict__")
    name: str  # normalised, relative to the notebook's folder
    line: int  # virtual line of the magic
    pf: Any  # ParsedFile (path: "<notebook>::<name>[#k]", kind, doc with spans in the notebook)

    def __init__(self, name: str, line: int, pf: Any) -> None:
        self.name = name
        self.line = line
        self.pf = pf


class Notebook(Record):
    """A read notebook: its cells, virtual lines and what the readers made of them."""

    __slots__ = ("path", "cells", "vlines", "display", "python_text", "shell_text", "language", "python",
                 "shell", "written", "findings", "problems", "broken", "_fetches", "__dict__")
    path: str
    cells: list[Cell]
    vlines: list[VLine]
    display: str  # the cells' own lines on virtual lines (suppression comments are read here)
    python_text: str
    shell_text: str
    language: str
    python: PythonFile | None
    shell: ShellScript | None
    written: list[Written]
    findings: list[Diagnostic]  # TL001 per cell, TL003 of written files
    problems: list  # reader problems (shell, written configs)
    broken: bool  # a cell does not parse: never fixed
    _fetches: bool | None

    def __init__(
        self,
        path: str,
        cells: list[Cell],
        vlines: list[VLine],
        display: str,
        python_text: str,
        shell_text: str,
        language: str = "python",
        python: PythonFile | None = None,
        shell: ShellScript | None = None,
        written: list[Written] | None = None,
        findings: list[Diagnostic] | None = None,
        problems: list | None = None,
        broken: bool = False,
        _fetches: bool | None = None,
    ) -> None:
        self.path = path
        self.cells = cells
        self.vlines = vlines
        self.display = display
        self.python_text = python_text
        self.shell_text = shell_text
        self.language = language
        self.python = python
        self.shell = shell
        self.written = [] if written is None else written
        self.findings = [] if findings is None else findings
        self.problems = [] if problems is None else problems
        self.broken = broken
        self._fetches = _fetches

    @property
    def fetches(self) -> bool:
        """Whether it downloads, clones or changes folder: a missing file may come from there."""
        if self._fetches is None:
            self._fetches = bool(_FETCH.search(self.display))
        return self._fetches

    def vline(self, i: int) -> VLine:
        """The virtual line at index ``i`` (0-based)."""
        v = self.vlines[i]
        if v is None:
            import bisect

            b = self._builder  # type: ignore[attr-defined]
            k = bisect.bisect_right(b.plain, (i, 1 << 62)) - 1
            start, cell, line = b.plain[k]
            v = self.vlines[i] = VLine(cell, line + i - start, [], None, len(b.disp[i]))
        return v

    @property
    def launches(self) -> list:
        out = list(self.shell.launches) if self.shell is not None else []
        return out

    def written_file(self, ref: str, line: int) -> Any:
        """The ParsedFile of ``ref`` as last written by a cell before virtual ``line``."""
        if not ref or "$" in ref or "{" in ref:
            return None
        name = os.path.normpath(ref)
        best = None
        for w in self.written:
            if w.name == name and w.line < line:
                best = w
        return best.pf if best is not None else None

    def parsed_files(self) -> list:
        """What linking sees: the notebook (its launch lines), its program, the files it writes."""
        from trainlint.sources.files import ParsedFile
        from trainlint.sources.files import TextFile

        out = []
        if self.python is not None:
            out.append(ParsedFile(path=self.path, kind="python", text=TextFile(self.path, self.python_text),
                                  doc=self.python, explicit=True))
        out.extend(w.pf for w in self.written)
        return out

    def locate(self, line: int, column: int) -> tuple[int, int, int] | None:
        """(cell, line in cell, column in cell) of a virtual position; None outside."""
        if not self.vlines:
            return None
        if line < 1:
            line, column = 1, 1
        if line > len(self.vlines):
            v = self.vline(len(self.vlines) - 1)
            return v.cell, v.line, v.length + 1
        v = self.vline(line - 1)
        if v.subs is not None:
            delta = 0
            for ds, de, cs, ce in v.subs:
                if column < ds:
                    break
                if column < de:
                    return v.cell, v.line, cs + min(column - ds, ce - cs) + v.indent
                delta = ce - de
            return v.cell, v.line, max(1, column + delta) + v.indent
        if v.shift is not None and column >= v.shift[0]:
            column -= v.shift[1]
        elif v.shift is not None:
            column = min(column, v.shift[0] - v.shift[1])
        return v.cell, v.line, max(1, column) + v.indent

    def locate_end(self, start_cell: int, line: int, column: int) -> tuple[int, int, int] | None:
        """Like ``locate`` for an end position: the first column of the next cell's first line
        is the end of ``start_cell``."""
        loc = self.locate(line, column)
        if loc is None:
            return None
        if loc[0] != start_cell and column == 1:
            cell = self.cells[start_cell - 1]
            return start_cell, cell.lines + 1, 1
        return loc

    def editable(self, line: int, column: int, end_line: int, end_column: int) -> bool:
        """Whether an edit of the derived texts over this range is an edit of the cell text."""
        for ln in range(line, end_line + 1):
            if not 1 <= ln <= len(self.vlines):
                return ln == end_line == len(self.vlines) + 1 and end_column == 1
            v = self.vline(ln - 1)
            a = column if ln == line else 1
            b = end_column if ln == end_line else 10 ** 9
            if v.shift is not None and a < v.shift[0] and b > 1:
                return False
            for oa, ob in v.opaque:
                if a < ob and oa < b or (a == b and oa <= a < ob):
                    return False
        return True


# -- reading ------------------------------------------------------------------------------------


def _source_text(src: Any) -> str | None:
    if isinstance(src, str):
        return src
    if isinstance(src, list):
        try:
            return "".join(src)
        except TypeError:  # an item that is not a string
            return None
    return None


def load_cells(path: str, text: str) -> tuple[str, list[Cell]]:
    """The notebook's language and its cells; ``ReadError`` when it is not an nbformat 4
    notebook."""
    got = _decoded(path, text)
    if isinstance(got, ReadError):
        raise got
    return got[0], [Cell(number=i, cell_type=kind, source=src) for i, (kind, src) in enumerate(got[1], start=1)]


def _decode(path: str, text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    body = text[1:] if text.startswith("\ufeff") else text
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        raise ReadError(f"not valid JSON: {e.msg}", e.lineno, e.colno, path) from None
    except (RecursionError, MemoryError) as e:
        raise ReadError(f"nesting too deep ({type(e).__name__})", 1, 1, path) from None
    if not isinstance(data, dict) or not isinstance(data.get("cells", data.get("worksheets")), list):
        raise ReadError("not a Jupyter notebook (no top-level `cells` list)", 1, 1, path)
    major = data.get("nbformat")
    if "cells" not in data or (major is not None and major != 4):
        raise ReadError(f"nbformat {major if major is not None else '3'} is not supported (only nbformat 4); "
                        "upgrade it with `jupyter nbconvert --to notebook --nbformat 4`", 1, 1, path)
    cells: list[tuple[str, str]] = []
    for i, c in enumerate(data["cells"], start=1):
        if not isinstance(c, dict):
            raise ReadError(f"cell {i} is not an object", 1, 1, path)
        src = _source_text(c.get("source", ""))
        if src is None:
            raise ReadError(f"cell {i}: `source` is neither a string nor a list of strings", 1, 1, path)
        cells.append((str(c.get("cell_type", "")), src))
    return _language(data), tuple(cells)


def _language(data: dict) -> str:
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    for key, sub in (("kernelspec", "language"), ("language_info", "name")):
        d = meta.get(key)
        if isinstance(d, dict) and isinstance(d.get(sub), str) and d.get(sub):
            return d[sub].lower()
    return "python"


def _lines(src: str) -> list[str]:
    """The cell's lines, each without its ``\\n``."""
    if not src:
        return []
    parts = src.split("\n")
    if parts[-1] == "":
        parts.pop()
    return parts


_TOK = re.compile(r"\\.?|'''|\"\"\"|['\"#()\[\]{}]")


def _advance(line: str, quote: str | None, depth: int) -> tuple[str | None, int, bool]:
    """Python lexical state after ``line`` (no newline): open string quote, bracket depth,
    whether it ends in a backslash continuation."""
    cont = False
    for m in _TOK.finditer(line):
        tok = m.group()
        c = tok[0]
        if quote is not None:
            if c == "\\":
                continue
            if tok == quote or (len(quote) == 1 and tok == quote * 3):
                quote = None  # a one-quote string closed by three quotes: closed, then an empty one
            continue
        if c == "\\":
            cont = m.end() == len(line) and len(tok) == 1
            continue
        if c == "#":
            return None, depth, False
        if c == '"' or c == "'":
            quote = tok
        elif c in "([{":
            depth += 1
        else:
            depth = max(0, depth - 1)
    if quote is not None:
        if len(quote) == 1 and not line.endswith("\\"):
            quote = None  # an unterminated one-line string: Python reports it; go on
        return quote, depth, False
    return None, depth, cont


class _Builder:
    def __init__(self, path: str) -> None:
        self.path = path
        self.py: list[str] = []
        self.sh: list[str] = []
        self.disp: list[str] = []
        self.vlines: list[VLine | None] = []
        # (first index, cell, its line in the cell) of each run of plain Python lines, whose
        # virtual lines are made when asked (``Notebook.vline``)
        self.plain: list[tuple[int, int, int]] = []
        self.writes: list[tuple[str, bool, int, list[str], int]] = []  # name, append, magic line, body, cell
        self.cell_ranges: list[tuple[int, int, int]] = []  # (cell, first vline, count) of Python cells
        # shell lines IPython expands ``{expr}``/``$name`` in: (index, first column of the
        # command, the line's opaque ranges that are not about fields)
        self.sites: list[tuple[int, int, list[tuple[int, int]]]] = []
        # (first, last) virtual line indexes of shell text that runs in a process of its own
        # (a ``!`` line, a ``%%bash`` cell): its ``cd`` and exports end with it
        self.scopes: list[tuple[int, int]] = []
        # ``!`` lines continued IPython's way (joined with a space): their backslash is one
        # column to the right in the shell text, after a space
        self.joined: set[int] = set()
        # ``%env`` lines: (index, column where its parameters start) (``notebook_flow``
        # expands their ``$name``/``{expr}``)
        self.env_sites: list[tuple[int, int]] = []
        self.shell_any = False

    def add(self, cell: int, k: int, raw: str, py: str, sh: str, opaque=None, shift=None) -> None:
        self.disp.append(raw)
        self.py.append(py)
        self.sh.append(sh)
        if sh and not self.shell_any and sh.strip():
            self.shell_any = True
        self.vlines.append(VLine(cell, k, opaque or [], shift, len(raw)))

    # -- one code cell
    def cell(self, cell: Cell) -> None:
        lines = _lines(cell.source)
        cell.first = len(self.vlines) + 1 if lines else 0
        cell.lines = len(lines)
        first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
        if first is not None and lines[first][:1] in (" ", "\t"):
            self.indented(cell, lines, first)
            return
        self.code(cell, lines, first, cell.source)

    def indented(self, cell: Cell, lines: list[str], first: int) -> None:
        """A cell whose first line that is not blank is indented (pasted from inside a
        function): IPython removes that line's leading spaces and tabs from every line that
        starts with them before reading the cell (``leading_indent``, after dropping the blank
        lines above), so the cell runs. Read the same way; its positions are the cell's own."""
        head = lines[first]
        space = head[:len(head) - len(head.lstrip(" \t"))]
        n = len(space)
        stripped = [ln[n:] if i >= first and ln.startswith(space) else ln for i, ln in enumerate(lines)]
        start = len(self.vlines)
        self.code(cell, stripped, first, _join(stripped))
        for j, ln in enumerate(lines):
            if len(stripped[j]) == len(ln):
                continue
            i = start + j
            v = self.vlines[i]
            if v is None:  # a plain line made now: it carries its indent
                v = self.vlines[i] = VLine(cell.number, j + 1, [], None, len(ln))
            v.indent = n
            v.length = len(ln)
            self.disp[i] = ln

    def code(self, cell: Cell, lines: list[str], first: int | None, source: str) -> None:
        if first is not None and lines[first].startswith("%%"):
            for i in range(first):
                self.add(cell.number, i + 1, lines[i], "", "")
            self.cell_magic(cell, lines, first)
            return
        if first is not None and lines[first].startswith(">>>"):
            self.doctest_lines(cell.number, lines)
            return
        if not _maybe_ipython(source):  # plain Python: every line as it is
            n = cell.number
            start = len(self.vlines) + 1
            self.disp.extend(lines)
            self.py.extend(lines)
            self.sh.extend([""] * len(lines))
            # made when asked (``Notebook.vline``): most lines of most notebooks are never located
            self.vlines.extend([None] * len(lines))  # type: ignore[list-item]
            self.plain.append((start - 1, n, 1))
            self.cell_ranges.append((n, start, len(lines)))
            return
        self.python_lines(cell.number, lines, 0, lazy_tail=True)

    def doctest_lines(self, n: int, lines: list[str]) -> None:
        """A cell pasted from a doctest: IPython strips the ``>>> ``/``... `` prompts."""
        stripped = []
        for ln in lines:
            m = _PROMPT.match(ln)
            stripped.append(ln[m.end():] if m else ln)
        start = len(self.vlines)
        self.python_lines(n, stripped, 0)
        for j, ln in enumerate(lines):
            m = _PROMPT.match(ln)
            v = self.vlines[start + j]
            v.length = len(ln)
            self.disp[start + j] = ln
            if m:
                v.shift = (1, -m.end())

    def cell_magic(self, cell: Cell, lines: list[str], at: int) -> None:
        head = lines[at]
        m = _MAGIC.match(head)
        name = m.group(1) if m else ""
        args = head[m.end():].strip() if m else ""
        n = cell.number
        self.add(n, at + 1, head, "", "", opaque=[(1, len(head) + 2)])
        body = lines[at + 1:]
        if name in _PY_CELL_MAGICS:
            self.python_lines(n, body, at + 1)
        elif name in _SHELL_CELL_MAGICS or (name == "script" and args.split(" ", 1)[0] in _SCRIPT_SHELLS):
            # a shell process of its own (a subprocess of the kernel): its cd and exports end
            # with the cell
            first_vline = len(self.vlines)
            for i, ln in enumerate(body):
                self.add(n, at + 2 + i, ln, "", ln)
            if body:
                self.scopes.append((first_vline, len(self.vlines) - 1))
        elif name in _WRITE_CELL_MAGICS:
            try:
                words = shlex.split(args)
            except ValueError:
                words = []
            append = any(w in ("-a", "--append") for w in words)
            names = [w for w in words if not w.startswith("-")]
            start = len(self.vlines) + 1
            for i, ln in enumerate(body):
                self.add(n, at + 2 + i, ln, "", "")
            if len(names) == 1:
                self.writes.append((names[0], append, start - 1, body, n))
        else:
            for i, ln in enumerate(body):
                self.add(n, at + 2 + i, ln, "", "")

    def python_lines(self, n: int, lines: list[str], base: int, lazy_tail: bool = False) -> None:
        first_vline = len(self.vlines) + 1
        quote: str | None = None
        depth = 0
        cont = False
        i = 0
        end = len(lines)
        if lazy_tail:
            # past the last line that could be IPython syntax (``!pip install`` atop a cell of
            # Python), the lines are plain Python: taken as they are, as a plain cell's
            end = next((j + 1 for j in range(len(lines) - 1, -1, -1) if _maybe_ipython(lines[j])), 0)
        while i < end:
            ln = lines[i]
            k = base + i + 1
            if quote is None and depth == 0 and not cont:
                stripped = ln.lstrip()
                indent = ln[:len(ln) - len(stripped)]
                handled = self.special(n, lines, i, k, ln, indent, stripped)
                if handled:
                    i += handled
                    continue
            quote, depth, cont = _advance(ln, quote, depth)
            self.add(n, k, ln, ln, "")
            i += 1
        if i < len(lines):
            tail = lines[i:]
            self.plain.append((len(self.vlines), n, base + i + 1))
            self.disp.extend(tail)
            self.py.extend(tail)
            self.sh.extend([""] * len(tail))
            self.vlines.extend([None] * len(tail))  # type: ignore[list-item]
        self.cell_ranges.append((n, first_vline, len(self.vlines) + 1 - first_vline))

    def _continued(self, lines: list[str], i: int) -> int:
        """How many lines the special line at ``i`` takes (backslash continuations)."""
        j = i
        while j < len(lines) - 1 and lines[j].endswith("\\"):
            j += 1
        return j - i + 1

    def special(self, n: int, lines: list[str], i: int, k: int, ln: str, indent: str, stripped: str) -> int:
        """Handle an IPython line at a logical line start; returns the lines used (0: Python)."""
        if not stripped:
            return 0
        c0 = stripped[0]
        ind = len(indent)
        if c0 == "!":
            bangs = 2 if stripped.startswith("!!") else 1
            count = self._continued(lines, i)
            self._shell_command(n, lines, i, k, count, ind + bangs, indent + "...", [(1, ind + bangs + 1)])
            return count
        m = _ASSIGN_SPECIAL.match(stripped)
        if m is not None:
            count = self._continued(lines, i)
            rhs = ind + m.end()  # 0-based column after the ! or %
            target = ln[:ind + m.end(2)]
            if m.group(3) == "!":
                py = target + "get_ipython().getoutput()"
                self._shell_command(n, lines, i, k, count, rhs, py, [(ind + m.end(2) + 1, len(py) + 2)])
            else:
                py = target + "get_ipython().run_line_magic()"
                for j in range(count):
                    raw = lines[i + j]
                    self.add(n, k + j, raw, py if j == 0 else "", "", opaque=[(1, len(raw) + 2)])
            return count
        if c0 == "%" or (_AUTOMAGIC.match(stripped) and not _parses(stripped)):
            return self.line_magic(n, lines, i, k, ln, indent, stripped)
        if c0 in "?/,;" or (stripped.rstrip().endswith("?") and _HELP_END.fullmatch(stripped.rstrip())):
            count = self._continued(lines, i)
            for j in range(count):
                self.add(n, k + j, lines[i + j], indent + "..." if j == 0 else "", "",
                         opaque=[(1, len(lines[i + j]) + 2)])
            return count
        return 0

    def _shell_command(self, n: int, lines: list[str], i: int, k: int, count: int, start: int, py: str,
                       first_opaque: list[tuple[int, int]]) -> None:
        """A ``!`` command (``!cmd``, ``x = !cmd``, ``%sx cmd``) from column ``start`` (0-based)
        of line ``i`` over its ``count`` lines, as IPython runs it: the lines joined into one
        (``inputtransformer2.assemble_continued_line``: each continued line without its
        backslash, joined with a space), run by a shell of its own. A comment (``#`` starting
        a word outside quotes) therefore runs to the end of the joined command: the lines
        after the one it starts on are no command."""
        first_vline = len(self.vlines)
        comment = _comment_line(lines[i:i + count], start) if count > 1 else None
        for j in range(count):
            raw = lines[i + j]
            at = start if j == 0 else 0
            base = list(first_opaque) if j == 0 else []
            if comment is not None and j > comment:  # inside the comment
                self.add(n, k + j, raw, "", "", opaque=[(1, len(raw) + 2)])
                continue
            sh, opaque = self._shell_words(raw, at)
            if j < count - 1:  # the backslash a column right, after a space
                sh = sh[:-1] + " \\"
                base.append((len(raw), len(raw) + 2))
                self.joined.add(len(self.vlines))
            self.sites.append((len(self.vlines), at, base))
            self.add(n, k + j, raw, py if j == 0 else "", sh, opaque=opaque + base)
        self.scopes.append((first_vline, len(self.vlines) - 1))

    def _shell_words(self, raw: str, start: int) -> tuple[str, list[tuple[int, int]]]:
        """The shell text of a ``!`` line from column ``start`` (0-based), IPython's ``{expr}``
        turned into ``$___`` of the same width."""
        body = raw[start:]
        opaque: list[tuple[int, int]] = []

        def sub(mt: re.Match) -> str:
            w = mt.end() - mt.start()
            opaque.append((start + mt.start() + 1, start + mt.end() + 1))
            return "$" + "_" * (w - 1) if w > 1 else "$"

        body = _BRACE.sub(sub, body) if "{" in body else body
        return " " * start + body, opaque

    def line_magic(self, n: int, lines: list[str], i: int, k: int, ln: str, indent: str, stripped: str) -> int:
        m = _MAGIC.match(stripped)
        name = m.group(1) if m else ""
        ind = len(indent)
        count = self._continued(lines, i)
        rest_at = ind + (m.end() if m else 1)
        rest = ln[rest_at:]
        whole = [(1, len(ln) + 2)]
        if name in ("env", "set_env") and count == 1 and rest.startswith(" "):
            # IPython's line: what follows the magic's name and one space, right-stripped
            params_at = rest_at + 1
            params = ln.rstrip()[params_at:]
            setting = env_setting(params)
            if setting is not None:
                dynamic = "{" in params or "$" in params  # IPython expands it from Python values
                ns, ne, vs, ve = setting
                built = env_shell(params_at + ns, params[ns:ne], None if dynamic else params[vs:ve], params_at + vs)
                if built is not None or dynamic:
                    sh, opaque, shift = built if built is not None else ("", [(1, len(ln) + 2)], None)
                    if dynamic:
                        self.env_sites.append((len(self.vlines), params_at))
                    self.add(n, k, ln, indent + "...", sh, opaque=opaque, shift=shift)
                    return 1
        if name == "run":
            words = rest.split()
            pos = rest_at
            # skip %run's own options (-i, -e, -t, -N n, -p, -d, -G, -n); keep -m
            script_at = None
            j = 0
            while j < len(words):
                w = words[j]
                pos = ln.index(w, pos)
                if w.startswith("-") and w != "-m":
                    pos += len(w)
                    j += 1
                    continue
                script_at = pos
                break
            if script_at is not None:
                for j in range(count):
                    raw = lines[i + j]
                    if j == 0:
                        gap = script_at - ind
                        if gap >= 7:
                            sh = indent + "python" + " " * (gap - 6) + raw[script_at:]
                            self.add(n, k, raw, indent + "...", sh, opaque=[(1, script_at + 1)])
                        else:
                            sh = indent + "python " + raw[script_at:]
                            delta = 7 - gap
                            self.add(n, k, raw, indent + "...", sh, opaque=[(1, script_at + 1)],
                                     shift=(script_at + 1 + delta, delta))
                    else:
                        self.add(n, k + j, raw, "", raw)
                return count
        if name in ("sx", "system"):
            self._shell_command(n, lines, i, k, count, rest_at, indent + "...", [(1, rest_at + 1)])
            return count
        if name in ("cd", "pushd", "popd") and count == 1:
            # the kernel's folder: later ! lines and %%bash cells start there (as ``cd``)
            words = rest.split()
            if "-b" in words:  # a bookmark: a folder only the kernel knows
                sh = " " * (len(ln) + 1) + "cd ~"
                self.add(n, k, ln, indent + "...", sh, opaque=[(1, len(sh) + 2)])
                return 1
            word_at = rest_at - len(name)
            sh, _ = self._shell_words(ln, word_at)
            self.sites.append((len(self.vlines), word_at, [(1, len(ln) + 2)]))
            self.add(n, k, ln, indent + "...", sh, opaque=[(1, len(ln) + 2)])
            return 1
        if name in ("time", "timeit", "prun") and count == 1:
            stmt_at = rest_at + len(rest) - len(rest.lstrip())
            if name == "timeit":
                om = _TIMEIT_OPT.match(ln, stmt_at)
                stmt_at = om.end() if om else stmt_at
            stmt = ln[stmt_at:]
            if stmt.strip() and stmt_at - ind >= 6 and _parses(stmt):
                py = indent + "if 1:" + " " * (stmt_at - ind - 5) + stmt
                self.add(n, k, ln, py, "", opaque=[(1, stmt_at + 1)])
                return 1
        for j in range(count):
            self.add(n, k + j, lines[i + j], indent + "..." if j == 0 else "", "",
                     opaque=[(1, len(lines[i + j]) + 2)])
        return count


def _comment_line(parts: list[str], start: int) -> int | None:
    """The index of the part of a continued ``!`` command (its lines, the first from column
    ``start``) where a shell comment starts once IPython has joined them; None without one."""
    quote: str | None = None
    prev = " "
    for j, part in enumerate(parts):
        text = part[start:] if j == 0 else part
        if j < len(parts) - 1:
            text = text[:-1]  # the continuation backslash
        escaped = False
        for c in text:
            if escaped:
                escaped = False
            elif quote == "'":
                quote = None if c == "'" else quote
            elif c == "\\":
                escaped = True
            elif quote == '"':
                quote = None if c == '"' else quote
            elif c in "'\"":
                quote = c
            elif c == "#" and (prev.isspace() or prev in ";&|()<>"):
                return j
            prev = c
        prev = " "  # the space IPython joins the lines with
    return None


def env_setting(params: str) -> tuple[int, int, int, int] | None:
    """Where ``%env``/``%set_env`` (with their parameters ``params``) set a variable, as
    IPython's ``OSMagics.env``/``set_env`` split them: (name start, name end, value start,
    value end) in ``params``; None when they set nothing (``%env`` lists, ``%env NAME``
    queries, a name with a space is refused). The split is at the first ``=`` when there is
    one (``%env NAME=value``, ``%env NAME = value``), else at the first space (``%env NAME
    value``); name and value are stripped."""
    if not params.strip():
        return None
    sep = "=" if "=" in params else " "
    if sep not in params:
        return None  # a query
    cut = params.index(sep)
    head, tail = params[:cut], params[cut + 1:]
    name = head.strip()
    if re.match(r".*\s.*", name):
        return None  # refused: "refusing to set env var with whitespace"
    ns = len(head) - len(head.lstrip())
    vs = cut + 1 + len(tail) - len(tail.lstrip())
    return ns, ns + len(name), vs, vs + len(tail.strip())


def env_shell(name_at: int, name: str, value: str | None, value_at: int
              ) -> tuple[str, list[tuple[int, int]], tuple[int, int] | None] | None:
    """The shell text of a ``%env`` line that sets ``name`` (at column ``name_at`` of the cell
    line, 0-based) to ``value`` (at column ``value_at``; None: a value only the kernel knows):
    ``NAME=value;export NAME`` with the name in its column, with its opaque ranges and shift;
    None when the name is no shell name."""
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return None
    value_sh = '"$___"' if value is None else value if _SIMPLE_WORD.fullmatch(value) else _quote(value)
    start = name_at + len(name) + 1  # 0-based column of the value in the shell text
    sh = " " * name_at + name + "=" + value_sh + ";export " + name
    opaque = [(1, name_at + 1), (start, start + 1), (start + len(value_sh) + 1, len(sh) + 2)]
    if value is None or value_sh != value:
        opaque.append((start + 1, start + len(value_sh) + 1))
    shift = (start + 1, start - value_at) if start != value_at else None
    return sh, opaque, shift


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\"'\"'") + "'"


def _parses(stmt: str) -> bool:
    try:
        ast.parse(stmt.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


_COMPILE_FLAGS = ast.PyCF_ONLY_AST | getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)


def compile_program(text: str, path: str) -> ast.Module:
    """``ast.parse`` as IPython compiles cells (top-level ``await`` allowed)."""
    return compile(text, path, "exec", _COMPILE_FLAGS, dont_inherit=True)  # type: ignore[return-value]


def _join(lines: list[str]) -> str:
    return "\n".join(lines) + "\n" if lines else ""


_PY_LANGUAGES = ("python", "python3", "python2", "ipython", "ipython3")


def read_notebook(path: str, text: str) -> Notebook:
    """Read a notebook (``ReadError`` when it is not valid nbformat 4 JSON)."""
    language, cells = load_cells(path, text)
    nb = layout(path, cells)
    nb.language = language
    if nb.language not in _PY_LANGUAGES:
        nb.python = None
        nb.python_text = ""
        return nb
    _parse_python(nb)
    _parse_shell(nb)
    return nb


def program_parses(path: str, text: str) -> bool:
    """Whether the notebook's Python program compiles (False for a text that is no notebook:
    its reader reports why)."""
    got = _decoded(path, text)
    if isinstance(got, ReadError):
        return False
    language, cells = got
    if language not in _PY_LANGUAGES:
        return True
    return _parses_program(_program_of(path, cells), path)


def _program_of(path: str, cells: tuple[tuple[str, str], ...]) -> str:
    """``layout(...).python_text`` of the decoded cells, without laying them out when every
    code cell is plain Python (no cell magic, no doctest prompt, no IPython line: the cells
    that ``_Builder.cell`` takes as they are)."""
    lines: list[str] = []
    for kind, src in cells:
        if kind != "code":
            continue
        head = src.lstrip()
        if head.startswith(("%%", ">>>")) or _maybe_ipython(src) or _indented(src):
            return layout(path, [Cell(number=i, cell_type=k, source=c)
                                 for i, (k, c) in enumerate(cells, start=1)]).python_text
        lines.extend(_lines(src))
    return _join(lines)


_INDENTED = re.compile(r"(?:[ \t]*\n)*[ \t]+\S")


def _indented(src: str) -> bool:
    """Whether the cell's first line that is not blank starts with a space or a tab."""
    return src[:1] in (" ", "\t", "\n") and _INDENTED.match(src) is not None


def _parses_program(text: str, path: str) -> bool:
    """Whether ``compile_program(text)`` succeeds, without building the syntax tree when it
    can be known otherwise (``python.parses_by_table``: the symbol table, built from the
    same parse, for a text shorter than the recursion limit); else the tree decides."""
    from trainlint.sources.python import parses_by_table

    if parses_by_table(text, path):
        return True
    try:
        compile_program(text, path)
    except _PARSE_ERRORS:
        return False
    return True


def layout(path: str, cells: list[Cell]) -> Notebook:
    b = _Builder(path)
    for c in cells:
        if c.cell_type == "code":
            b.cell(c)
    nb = Notebook(path=path, cells=cells, vlines=b.vlines, display=_join(b.disp), python_text=_join(b.py),
                  shell_text=_join(b.sh) if b.shell_any else "")
    nb._builder = b  # type: ignore[attr-defined]
    return nb


def python_program(path: str, text: str) -> str:
    """The Python program of a notebook's JSON text (lr-not-scaled reads an older revision)."""
    return layout(path, load_cells(path, text)[1]).python_text


# Commands a terminal runs that notebooks' instructions paste into code cells without ``!``
# (``gcloud compute tpus tpu-vm create ...``, ``curl ... | bash``): a cell that starts with one
# followed by an argument and does not parse is read as shell text meant for a terminal.
_TERMINAL_COMMANDS = frozenset({
    "apt", "apt-get", "aws", "az", "bash", "brew", "cd", "chmod", "conda", "cp", "curl", "docker", "echo",
    "exec", "export", "gcloud", "git", "gsutil", "huggingface-cli", "jupyter", "kubectl", "ls", "make",
    "mkdir", "mv", "nvidia-smi", "pip", "pip3", "python", "python3", "rm", "scp", "sh", "source", "ssh",
    "sudo", "tar", "unzip", "wget",
    # launchers and framework command lines (``swift sft``, ``accelerate launch``)
    "accelerate", "deepspeed", "torchrun", "trl", "llamafactory-cli", "lmf", "swift",
})
_COMMAND_LINE = re.compile(r"([A-Za-z][\w.-]*)\s+[^\s=(:.,\[]")
# an environment variable set for the command (``CUDA_VISIBLE_DEVICES=0 \``, ``NPROC=4 swift sft``)
_ENV_PREFIX = re.compile(r"[A-Z_][A-Z0-9_]*=[^\s=]*\s+(?:\\$|[A-Z_][A-Z0-9_]*=|[a-z][\w.-]*(?:\s|$))")


def _terminal_commands(cell_text: str) -> str | None:
    """The first line of a cell that reads as terminal commands (a known command, then an
    argument, as in ``gcloud compute ...``; or an upper-case environment variable set before a
    command, ``CUDA_VISIBLE_DEVICES=0 \\``); None otherwise."""
    for line in cell_text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _ENV_PREFIX.match(stripped):
            return stripped
        m = _COMMAND_LINE.match(stripped)
        return stripped if m is not None and m.group(1) in _TERMINAL_COMMANDS else None
    return None


def _syntax_finding(path: str, e: BaseException, line_base: int = 0, text: str | None = None,
                    cell: bool = False) -> Diagnostic:
    """TL001 for a notebook's program, or (``cell``) for one code cell whose text is ``text``."""
    from trainlint.diagnostics import Severity, input_problem

    if isinstance(e, SyntaxError):
        from trainlint.sources import newer_syntax

        newer = newer_syntax.valid_on_newer_python(text, e) if text is not None else None
        if newer is not None:  # valid on a newer Python than the one running trainlint
            return input_problem("TL001", "syntax-error", path, newer_syntax.message(e, newer),
                                 line_base + (e.lineno or 1), e.offset or 1, severity=Severity.INFO)
        shell = _terminal_commands(text) if cell and text is not None else None
        if shell is not None:  # instructions for a terminal, not a broken program
            shown = shell if len(shell) <= 40 else shell[:37] + "..."
            return input_problem(
                "TL001", "syntax-error", path,
                f"the cell holds terminal commands (`{shown}`), not Python: running it in the notebook "
                f"fails; prefix its lines with `!` or start it with `%%bash` to run them here",
                line_base + (e.lineno or 1), e.offset or 1, severity=Severity.INFO)
        return input_problem("TL001", "syntax-error", path, f"cannot parse Python: {e.msg}",
                             line_base + (e.lineno or 1), e.offset or 1)
    return input_problem("TL001", "syntax-error", path,
                         f"cannot parse Python: {type(e).__name__}: {e}", line_base + 1, 1)


_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError)


def _parse_python(nb: Notebook) -> None:
    from trainlint.sources.python import PythonFile

    text = nb.python_text
    if not text.strip():
        nb.python = None
    else:
        try:
            tree = compile_program(text, nb.path)
        except _PARSE_ERRORS as whole_error:
            # find the cells that do not parse on their own, blank them, read the rest
            b = nb._builder  # type: ignore[attr-defined]
            py = list(b.py)
            bad = 0
            for cell, first, count in b.cell_ranges:
                if count == 0:
                    continue
                part = _join(py[first - 1:first - 1 + count])
                if _parses_program(part, nb.path):
                    continue
                try:
                    compile_program(part, nb.path)
                except _PARSE_ERRORS as e:
                    bad += 1
                    nb.findings.append(_syntax_finding(nb.path, e, first - 1, part, cell=True))
                    for j in range(first - 1, first - 1 + count):
                        py[j] = ""
            nb.broken = True
            text = _join(py)
            try:
                tree = compile_program(text, nb.path) if bad else None
            except _PARSE_ERRORS:
                tree = None
            if tree is None:
                if not bad:
                    nb.findings.append(_syntax_finding(nb.path, whole_error, 0, nb.python_text))
                nb.python = None
                tree = None
            nb.python_text = text
        if tree is not None:
            nb.python = PythonFile(nb.path, text, tree)
            if nb._builder.sites or nb._builder.env_sites or "os" in text:  # type: ignore[attr-defined]
                from trainlint.sources.notebook_flow import apply_flow

                apply_flow(nb, tree)
    _written(nb)


# a launcher word of ``shell``'s launch lines, or one of its framework command lines (``_CLIS``)
_LAUNCH_WORD = re.compile(r"python|torchrun|accelerate|deepspeed|llamafactory-cli|lmf|\btrl\s+[a-z]")


def _parse_shell(nb: Notebook) -> None:
    """Only launch lines are read from the shell text (``!`` lines, ``%%bash`` cells), and its
    problems (an unterminated quote) count only beside a launch, as in Markdown: a text that
    cannot hold one (``shell.may_launch``: ``!pip install accelerate trl``, ``!git clone``) is
    not parsed. Most notebooks' shell text is only such lines."""
    if not nb.shell_text or not _LAUNCH_WORD.search(nb.shell_text):
        return
    from trainlint.sources.shell import may_launch, parse_shell

    if not may_launch(nb.shell_text):
        return
    b = nb._builder  # type: ignore[attr-defined]
    nb.shell = parse_shell(nb.shell_text, nb.path, scopes=[(a + 1, z + 1) for a, z in b.scopes])
    if nb.shell.launches:
        nb.problems.extend(nb.shell.problems)


def _written(nb: Notebook) -> None:
    """Read the files ``%%writefile`` cells write, each version on its own padded text."""
    from trainlint.sources.files import ParsedFile
    from trainlint.sources.files import TextFile
    from trainlint.sources.kinds import detect_kind

    b = nb._builder  # type: ignore[attr-defined]
    total = len(nb.vlines)
    current: dict[str, list[tuple[int, list[str]]]] = {}
    versions: dict[str, int] = {}
    for name, append, magic_line, body, _cell in b.writes:
        if "$" in name or "{" in name:
            continue
        key = os.path.normpath(name)
        parts = (current.get(key, []) if append else []) + [(magic_line + 1, body)]
        current[key] = parts
        lines = [""] * total
        for start, blines in parts:
            for j, ln in enumerate(blines):
                lines[start - 1 + j] = ln
        text = _join(lines)
        content = _join([ln for _, blines in parts for ln in blines])
        kind = detect_kind(key, content)
        if kind not in ("python", "shell", "deepspeed", "accelerate", "hf_args", "json", "yaml"):
            continue
        k = versions.get(key, 0)
        versions[key] = k + 1
        pseudo = f"{nb.path}{PSEUDO_SEP}" + (f"{k}{PSEUDO_SEP}" if k else "") + key
        pf = ParsedFile(path=pseudo, kind=kind, text=TextFile(pseudo, text), explicit=True)
        if kind == "python":
            from trainlint.sources.python import PythonFile

            try:
                pf.doc = PythonFile(nb.path, text, compile_program(text, nb.path))
            except _PARSE_ERRORS as e:
                nb.findings.append(_syntax_finding(nb.path, e))
                nb.broken = True
                continue
        else:
            from trainlint.sources.registry import READERS, invalid_config, problem_findings

            try:
                pf.doc = READERS[kind](nb.path, text)
            except ReadError as e:
                nb.findings.append(invalid_config(nb.path, f"cannot read {key} (written by this notebook): "
                                                  f"{e.message}", line=e.line, column=e.column))
                nb.broken = True
                continue
            except (RecursionError, MemoryError):
                continue
            nb.findings.extend(problem_findings(pf.doc, nb.path))
        nb.written.append(Written(key, magic_line, pf))


# -- locations --------------------------------------------------------------------------------


def notebook_of(ws: Any, path: str) -> Notebook | None:
    """The notebook ``path`` (or a pseudo path of a file it writes) belongs to."""
    nb_path = path.split(PSEUDO_SEP, 1)[0] if PSEUDO_SEP in path else path
    f = ws.files.get(nb_path)
    if f is None or f.kind != "notebook" or f.doc is None:
        return None
    return f.doc


def _map_related(nb: Notebook, r: Related) -> Related:
    loc = nb.locate(r.line, r.column)
    if loc is None:
        return r
    return replace(r, cell=loc[0], line=loc[1], column=loc[2])


def _map_edit(nb: Notebook, e: Edit) -> Edit | None:
    if not nb.editable(e.line, e.column, e.end_line, e.end_column):
        return None
    start = nb.locate(e.line, e.column)
    if start is None:
        return None
    end = nb.locate_end(start[0], e.end_line, e.end_column)
    if end is None or end[0] != start[0]:
        return None
    return replace(e, cell=start[0], line=start[1], column=start[2], end_line=end[1], end_column=end[2])


def map_diagnostic(nb: Notebook, d: Diagnostic, notebooks: dict[str, Notebook]) -> Diagnostic:
    if d.cell is not None or d.code == "TL000":
        return d
    start = nb.locate(d.line, d.column)
    if start is None:
        return d
    end = nb.locate_end(start[0], d.end_line, d.end_column) or start
    if end[0] != start[0]:
        end = (start[0], start[1], start[2] + 1)
    fix = d.fix
    if fix is not None:
        edits = []
        for e in fix.edits:
            other = notebooks.get(e.path)
            if other is None:
                edits.append(e)
                continue
            me = _map_edit(other, e)
            if me is None:
                edits = None
                break
            edits.append(me)
        fix = None if edits is None else replace(fix, edits=edits)
    related = [_map_related(notebooks[r.path], r) if r.path in notebooks and r.cell is None else r
               for r in d.related]
    return replace(d, cell=start[0], line=start[1], column=start[2], end_line=end[1], end_column=end[2],
                   fix=fix, related=related)


def to_cells(diagnostics: list[Diagnostic], ws: Any) -> list[Diagnostic]:
    """Findings with notebook positions turned into cell + line within the cell (their
    related places and fix edits too). A fix whose edits cannot be written back to the cell
    text (IPython syntax the readers saw differently) is dropped."""
    notebooks = {p: f.doc for p, f in ws.files.items() if f.kind == "notebook" and f.doc is not None}
    if not notebooks:
        return diagnostics
    labels = None
    basenames = {os.path.basename(p) for p in notebooks}
    out = []
    for d in diagnostics:
        if any(b in d.message or any(b in r.message for r in d.related) for b in basenames):
            labels = labels or _label_pattern(notebooks)
        if labels is not None and (labels.search(d.message) or any(labels.search(r.message) for r in d.related)):
            d = _relabel(d, labels, notebooks)
        path = d.path.split(PSEUDO_SEP, 1)[0] if PSEUDO_SEP in d.path else d.path
        nb = notebooks.get(path)
        if nb is None:
            if any(r.path in notebooks for r in d.related) or (
                    d.fix is not None and any(e.path in notebooks for e in d.fix.edits)):
                d = _map_foreign(d, notebooks)
            out.append(d)
            continue
        if path != d.path:
            d = replace(d, path=path)
        out.append(map_diagnostic(nb, d, notebooks))
    return out


def _label_pattern(notebooks: dict[str, Notebook]) -> re.Pattern[str]:
    names = sorted({p for p in notebooks} | {os.path.basename(p) for p in notebooks}, key=len, reverse=True)
    return re.compile(r"(?<![\w.-])(" + "|".join(re.escape(n) for n in names) + r"):(\d+)(?!\d)(?!:\d)")


def _relabel(d: Diagnostic, labels: re.Pattern[str], notebooks: dict[str, Notebook]) -> Diagnostic:
    """``nb.ipynb:17`` written in a message (a virtual line) becomes ``nb.ipynb:cell 4:2``."""
    by_name: dict[str, Notebook] = {}
    for p, nb in notebooks.items():
        by_name[p] = nb
        by_name.setdefault(os.path.basename(p), nb)

    def sub(m: re.Match) -> str:
        loc = by_name[m.group(1)].locate(int(m.group(2)), 1)
        return m.group(0) if loc is None else f"{m.group(1)}:cell {loc[0]}:{loc[1]}"

    return replace(d, message=labels.sub(sub, d.message),
                   related=[replace(r, message=labels.sub(sub, r.message)) for r in d.related])


def _map_foreign(d: Diagnostic, notebooks: dict[str, Notebook]) -> Diagnostic:
    related = [_map_related(notebooks[r.path], r) if r.path in notebooks and r.cell is None else r
               for r in d.related]
    fix = d.fix
    if fix is not None:
        edits = []
        for e in fix.edits:
            if e.path in notebooks:
                me = _map_edit(notebooks[e.path], e)
                if me is None:
                    edits = None
                    break
                e = me
            edits.append(e)
        fix = None if edits is None else replace(fix, edits=edits)
    return replace(d, related=related, fix=fix)


def cell_sources(text: str) -> list[str] | None:
    """Every cell's source text (index 0 is cell 1), or None when ``text`` is no notebook."""
    try:
        return [c.source for c in load_cells("", text)[1]]
    except ReadError:
        return None


def location_label(d: Any) -> str:
    """``path:cell N:line:col`` (notebooks) or ``path:line:col``."""
    cell = getattr(d, "cell", None)
    if cell is not None:
        return f"{d.path}:cell {cell}:{d.line}:{d.column}"
    return f"{d.path}:{d.line}:{d.column}"


# -- where cell sources are written in the notebook's JSON text ---------------------------------

_JSON_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class SourceSpan(Record):
    """Where one cell's ``source`` is written: the value's raw offsets, whether it is a list
    of lines, and each string literal (raw start, raw end, decoded text)."""

    __slots__ = ("start", "end", "is_list", "strings", "__dict__")
    start: int
    end: int
    is_list: bool
    strings: list[tuple[int, int, str]]

    def __init__(self, start: int, end: int, is_list: bool, strings: list[tuple[int, int, str]]) -> None:
        self.start = start
        self.end = end
        self.is_list = is_list
        self.strings = strings


class _Shallow:
    """A walk over the notebook's structure down to the cells' sources; every other value is
    skipped with the C JSON scanner."""

    def __init__(self, text: str) -> None:
        self.text = text

    def ws(self, i: int) -> int:
        return _JSON_WS.match(self.text, i).end()  # type: ignore[union-attr]

    def value_end(self, i: int) -> int:
        return _DECODER.raw_decode(self.text, i)[1]

    def sources(self) -> list[SourceSpan | None]:
        t = self.text
        out: list[SourceSpan | None] = []
        i = self.ws(1 if t.startswith("\ufeff") else 0)

        def cell_member(holder: dict, key: str, at: int) -> int:
            end = self.value_end(at)
            if key == "source":
                if t[at] == "[":
                    strings = []
                    j = self.ws(at + 1)
                    while t[j] != "]":
                        s, e = _DECODER.raw_decode(t, j)
                        strings.append((j, e, s))
                        j = self.ws(e)
                        if t[j] == ",":
                            j = self.ws(j + 1)
                    holder["span"] = SourceSpan(at, end, True, strings)
                elif t[at] == '"':
                    s, e = _DECODER.raw_decode(t, at)
                    holder["span"] = SourceSpan(at, end, False, [(at, e, s)])
            return end

        def top_member(key: str, at: int) -> int:
            if key != "cells" or t[at] != "[":
                return self.value_end(at)
            j = self.ws(at + 1)
            while t[j] != "]":
                holder: dict = {}
                end = self._object(j, lambda k, a: cell_member(holder, k, a))
                out.append(holder.get("span"))
                j = self.ws(end)
                if t[j] == ",":
                    j = self.ws(j + 1)
            return j + 1

        self._object(i, top_member)
        return out

    def _object(self, i: int, on_member) -> int:
        """Walk the object at ``i`` calling ``on_member(key, value offset) -> value end``;
        returns the offset after its closing brace."""
        t = self.text
        if t[i] != "{":
            raise ValueError("object expected")
        i = self.ws(i + 1)
        if t[i] == "}":
            return i + 1
        while True:
            key, i = _DECODER.raw_decode(t, i)
            i = self.ws(i)
            if t[i] != ":":
                raise ValueError("':' expected")
            i = self.ws(i + 1)
            i = self.ws(on_member(key, i))
            if t[i] == ",":
                i = self.ws(i + 1)
                continue
            if t[i] == "}":
                return i + 1
            raise ValueError("',' or '}' expected")


def source_spans(text: str) -> list[SourceSpan | None] | None:
    """Each cell's ``SourceSpan`` (index 0 is cell 1), None when the text is not a notebook."""
    try:
        return _Shallow(text).sources()
    except (ValueError, IndexError, RecursionError):
        return None


def raw_offset(literal: str, index: int) -> int:
    """Offset in a JSON string literal (with its quotes) of decoded character ``index``."""
    i, k = 1, 0
    n = len(literal) - 1
    while i < n and k < index:
        if literal[i] == "\\":
            if literal[i + 1] == "u":
                code = int(literal[i + 2:i + 6], 16)
                i += 12 if 0xD800 <= code < 0xDC00 and literal[i + 6:i + 8] == "\\u" else 6
            else:
                i += 2
        else:
            i += 1
        k += 1
    return i


def raw_position(text: str, spans: list[SourceSpan | None], cell: int, line: int, column: int
                 ) -> tuple[int, int] | None:
    """(line, column) in the notebook's JSON text of a cell position (1-based)."""
    if not 1 <= cell <= len(spans) or spans[cell - 1] is None:
        return None
    span = spans[cell - 1]
    assert span is not None
    src = "".join(s for _, _, s in span.strings)
    # decoded offset of (line, column)
    off, ln = 0, 1
    while ln < line:
        nl = src.find("\n", off)
        if nl == -1:
            break
        off, ln = nl + 1, ln + 1
    off = min(off + column - 1, len(src))
    raw = span.start
    acc = 0
    for a, b, s in span.strings:
        if off < acc + len(s) or (a, b, s) == span.strings[-1]:
            raw = a + raw_offset(text[a:b], max(0, off - acc))
            break
        acc += len(s)
    line_no = text.count("\n", 0, raw) + 1
    col = raw - (text.rfind("\n", 0, raw) + 1) + 1
    return line_no, col
