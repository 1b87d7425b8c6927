"""``sources.newer_syntax.parses_with_pep701``: whether a text that this interpreter rejects for
its f-strings is valid with Python 3.12's (PEP 701), without libcst.

The verdict decides between TL001 as info ("valid from Python 3.12, not checked") and TL001 as
an error ("cannot parse Python"). It is compared with libcst's Python 3.12 grammar (what the
reader asked before; always installed) and, where one is on this machine, with a real Python
3.12+ interpreter, on texts built from the pieces of f-strings and on small edits of them (one
character dropped, added or changed: the texts near the border between valid and invalid).
"""

from __future__ import annotations

import ast
import json
import os
import random
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from trainlint.sources.newer_syntax import parses_with_pep701, valid_on_newer_python

pytestmark = pytest.mark.skipif(sys.version_info >= (3, 12), reason="the interpreter parses PEP 701 f-strings itself")

_QUOTES = ['"', "'", '"""', "'''"]
_EDITS = list("{}[]()\"'!:=#\\\n rfN")
_BEFORE = ["", "# it's \"f{\" \n", 'y = "a" \\\n', '"""doc f"{x}" """\n', 'z = r"\\" \n', "if a:\n    ",
           "def g():\n    "]
_AROUND = ["", '"a" ', "b'x' ", '""']
_AFTER = ["", ' "b"', '""', " f'{y}'", ' # c "', ".upper()", ", 1"]


class _Texts:
    """Random f-string texts: nested strings with any quotes, nested f-strings, debug ``=``,
    conversions, format specs with fields, comments and newlines inside fields."""

    def __init__(self, seed: int, escapes: bool = True) -> None:
        self.rng = random.Random(seed)
        self.escapes = escapes  # bad escapes too (``\\x4``), which libcst does not judge

    def string(self, depth: int) -> str:
        rng = self.rng
        if depth < 3 and rng.random() < 0.4:
            return self.fstring(depth + 1)
        q = rng.choice(_QUOTES)
        body = rng.choice(["q", "question", "\\n", " ", "{", "}", "\\\\", "it's" if q[0] == '"' else 'say "hi"'])
        return rng.choice(["", "", "r", "b", "u"]) + q + body + q

    def expr(self, depth: int) -> str:
        rng, e, s = self.rng, self.expr, self.string
        c = rng.randrange(16)
        return [
            lambda: rng.choice(["x", "row", "a.b", "1", "None"]),
            lambda: "row[" + s(depth) + "]",
            lambda: s(depth),
            lambda: e(depth) + rng.choice([" if ", " + ", " != ", " == ", " <= ", " and "]) + e(depth)
            + (" else y" if rng.random() < 0.5 else ""),
            lambda: "(lambda: " + e(depth) + ")()",
            lambda: "{" + s(depth) + ": 1}[" + s(depth) + "]",
            lambda: "x[1:2]",
            lambda: s(depth) + ".join(" + e(depth) + ")",
            lambda: "(" + e(depth) + " +\n " + e(depth) + ")",
            lambda: e(depth) + ' # note } "\n',
            lambda: "*a,",
            lambda: "yield",
            lambda: " " + e(depth) + " ",
            lambda: "(x := 3)",
            lambda: "f(" + e(depth) + ", k=" + e(depth) + ")",
            lambda: "[i for i in " + e(depth) + "]",
        ][c]()

    def field(self, depth: int) -> str:
        rng = self.rng
        text = "{" + self.expr(depth)
        if rng.random() < 0.2:
            text += rng.choice(["=", " = "])
        if rng.random() < 0.2:
            text += rng.choice(["!r", "!s", "!a"])
        if rng.random() < 0.3:
            text += ":" + rng.choice([">10", ".2f", "{w}", "'>10", "{w}.{p}", "%Y"] + ["\\x41", "\\x4"] * self.escapes)
        return text + "}"

    def fstring(self, depth: int = 0) -> str:
        rng = self.rng
        q = rng.choice(_QUOTES)
        parts = []
        for _ in range(rng.randint(1, 4)):
            if rng.random() < 0.6:
                parts.append(self.field(depth))
            else:
                parts.append(rng.choice(["text ", "{{", "}}", "\\n", ", ", "\\{",
                                         "'" if q[0] == '"' else '"'] + (["\n"] if len(q) == 3 else [])
                                        + ["\\N{EM DASH}", "\\u00e9", "\\x4", "\\N{EM DAS}", "\\U00110000"] * self.escapes))
        return rng.choice(["f", "f", "rf", "fr", "F"]) + q + "".join(parts) + q

    def text(self) -> str:
        rng = self.rng
        t = (rng.choice(_BEFORE) + "x = " + rng.choice(_AROUND) + self.fstring() + rng.choice(_AFTER) + "\n")
        if rng.random() < 0.5:  # one or two characters dropped, added or changed
            chars = list(t)
            for _ in range(rng.randint(1, 2)):
                k = rng.randrange(4, len(chars))
                op = rng.randrange(3)
                if op == 0:
                    del chars[k]
                elif op == 1:
                    chars.insert(k, rng.choice(_EDITS if self.escapes else _EDITS[:-1]))
                else:
                    chars[k] = rng.choice(_EDITS if self.escapes else _EDITS[:-1])
            t = "".join(chars)
        return t


def _fstring_errors(seed: int, count: int, escapes: bool = True) -> list[str]:
    """``count`` random texts with f-strings that this interpreter rejects (what
    ``valid_on_newer_python`` is asked of)."""
    gen = _Texts(seed, escapes)
    out: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        while len(out) < count:
            t = gen.text()
            try:
                ast.parse(t)
            except SyntaxError:
                out.append(t)
            except ValueError:
                pass
    return out


def _libcst_verdict(text: str) -> bool:
    import libcst

    try:
        libcst.parse_module(text, config=libcst.PartialParserConfig(python_version="3.12"))
    except Exception:  # noqa: BLE001 - invalid for libcst
        return False
    return True


@pytest.mark.parametrize("text", [
    'q = f"{row["question"]}, think"\n',  # unslothai/notebooks
    "x = f'{d['k']!r:>{w}}'\n",
    'x = f"{"\\n".join(lines)}"\n',  # a backslash in the expression
    'x = f"""{a  # a comment\n}"""\n',
    'x = f"{a = }" f"{b=!s:>10}" f"{d["k"]}"\n',
    'x = f"{f"{f"{x}"}"}"\n',  # nested to any depth
    'x = f"{x:{y:{z}}}"\n',
    'x = f"{*a, b}{d["k"]}"\n',
    'x = f"{(x for x in y)}" + f"{d["k"]}"\n',  # a generator in its own parentheses
    'x = ""f"{a["b"]}"""\n',  # empty strings beside the f-string
    'x = f"\\N{EM DASH} {a["b"]}"\n',
    'def g():\n    return f"{row["a"]}"\n',
])
def test_valid_from_python_312(text):
    assert parses_with_pep701(text)
    e = pytest.raises(SyntaxError, ast.parse, text).value
    assert valid_on_newer_python(text, e) == "3.12"


@pytest.mark.parametrize("text", [
    'q = f"{row["question"}"\n',  # a bracket left open
    'x = f"{}" + f"{d["k"]}"\n',  # an empty field
    'x = f"{x for x in y}" + f"{d["k"]}"\n',  # a bare generator
    'x = f"{x!z}" + f"{d["k"]}"\n',  # no such conversion
    "x = f'{x:'>10}' + f'{d['k']}'\n",  # the closing quote inside the format spec
    'x = f"{d["k"]}} "\n',  # a single }
    'x = f"\\N{NO SUCH NAME} {d["k"]}"\n',
    'x = f"\\x4 {d["k"]}"\n',
    'x = f"{d["k"]}\n"\n',  # a newline in a one-line f-string
    'x = f"{d["k"]}" if\n',  # the code around it is invalid
    'x = f"{) (x := 3)}" + f"{d["k"]}"\n',  # a bracket closing nothing
])
def test_invalid_on_python_312_too(text):
    assert not parses_with_pep701(text)


def test_the_same_verdict_as_libcst_on_random_f_strings():
    texts = _fstring_errors(20261204, 3000, escapes=False)
    valid = [t for t in texts if _libcst_verdict(t)]
    assert len(valid) > 100  # the border is crossed both ways
    differ = [t for t in texts if parses_with_pep701(t) != _libcst_verdict(t)]
    assert not differ, differ[:5]


def _python_312() -> str | None:
    """A Python 3.12 that runs (a pyenv shim of a version not selected does not). 3.12, the
    version the finding names: 3.13 reads a few texts differently (``f"{x:{w}{{b}"``: a
    ``{{`` after a field in a format spec is valid on 3.13.0, not on 3.12.1)."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = [str(v / "bin" / "python3") for v in sorted(root.glob("3.12*"), reverse=True)]
    found += [w for w in [shutil.which("python3.12")] if w]
    for exe in found:
        try:
            ok = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2] == (3, 12))"],
                                capture_output=True, text=True, timeout=60)
        except OSError:
            continue
        if ok.returncode == 0 and ok.stdout.strip() == "True":
            return exe
    return None


_JUDGE = """
import ast, json, sys, warnings
warnings.simplefilter("ignore")
out = []
for t in json.load(sys.stdin):
    try:
        ast.parse(t); out.append(True)
    except SyntaxError:
        out.append(False)
    except Exception:  # the parser's own bug (3.12.1: a debug `=` inside a format spec)
        out.append(None)
print(json.dumps(out))
"""


def test_the_same_verdict_as_a_real_python_312():
    exe = _python_312()
    if exe is None:
        pytest.skip("no Python 3.12 on this machine")
    texts = _fstring_errors(4122026, 4000)
    got = subprocess.run([exe, "-c", _JUDGE], input=json.dumps(texts), capture_output=True, text=True, check=True)
    verdicts = json.loads(got.stdout)
    judged = [(t, v) for t, v in zip(texts, verdicts) if v is not None]
    assert len(judged) > 3500 and sum(v for _, v in judged) > 100
    differ = [(t, v) for t, v in judged if parses_with_pep701(t) != v]
    assert not differ, differ[:5]

