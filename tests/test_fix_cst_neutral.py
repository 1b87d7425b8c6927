"""A fixed Python file is parsed by libcst unless the change provably cannot change libcst's
verdict (``trainlint.fixing.cst_neutral``): names, numbers or plain strings substituted, or one
literal keyword argument added to a call. Each guard of that shortcut has a case here that
fails without it; the accepted shapes are checked against the installed libcst."""

from __future__ import annotations

import json

import libcst
import pytest

import trainlint.fixing.apply as apply_mod
from trainlint.diagnostics import Diagnostic, Edit, Fix, Severity
from trainlint.fixing.apply import apply_fix_pass, parses
from trainlint.fixing.cst_neutral import keeps_libcst_verdict

KEEPS = [
    ("m = f(x, torch_dtype=1)\n", "m = f(x, dtype=1)\n"),
    ("class A:\n    def f(self):\n        m = g(a, torch_dtype=t).to(d)\n        return m\n\nx = 1\n",
     "class A:\n    def f(self):\n        m = g(a, dtype=t).to(d)\n        return m\n\nx = 1\n"),
    ("a = f(lr=1e-4)\n", "a = f(lr=2e-5)\n"),
    ("a = f(n=1)\n", "a = f(n=1.0)\n"),
    ("a = f(x='fp16')\n", "a = f(x=\"bf16\")\n"),
    ("a = f(x, torch_dtype=1)\nb = f(y, torch_dtype=2)\n", "a = f(x, dtype=1)\nb = f(y, dtype=2)\n"),
    ("a = m.old_name(x)\n", "a = m.new_name(x)\n"),
    ("@dec\ndef f():\n    return g(torch_dtype=1)\n", "@dec\ndef f():\n    return g(dtype=1)\n"),
    ("a = f(x)\n", "a = f(x, k=1)\n"),
    ("a = f(x)\n", "a = f(x, k = 1)\n"),
    ("a = f(\n    x,\n)\n", "a = f(\n    x,\n    k={'u': False},\n)\n"),
    ("a = f(\n    x\n)\n", "a = f(\n    x,\n    k=True\n)\n"),
    ("a = f(*a, **kw)\n", "a = f(*a, **kw, k=None)\n"),
    ("a = f(x, *a)\n", "a = f(x, k=[1, 2.5, 'a'], *a)\n"),
    ("a = f(x)\n", "a = f(x, k=-1)\n"),
    ("a = f(x)\n", "a = f(x, k=torch.bfloat16)\n"),
    ("a = f(x)\r\n", "a = f(x, k=1)\r\n"),
    ("x = 1; y = f(a)\n", "x = 1; y = f(a, k=2)\n"),
    ("s = 'é'; a = f(x)\n", "s = 'é'; a = f(x, k=1)\n"),
    ("def f():\n    return g(\n        a,  # note\n    )\n", "def f():\n    return g(\n        a,  # note\n        k=(1, 2),\n    )\n"),
]

# every guard: the shortcut must answer False (libcst then parses the changed statements)
REFUSES = [
    ("a = x\n", "a = match\n"),  # a soft keyword for a name
    ("a = f(x=f'{y}')\n", "a = f(x=f'{z}')\n"),  # inside an f-string
    ("a = f(x='a')\n", "a = f(x='a\\n')\n"),  # a string with a backslash
    ("a = x + y\n", "a = x - y\n"),  # an operator
    ("a = x  # c\n", "a = x  # d\n"),  # a comment
    ("if a:\n    x = 1\n", "if a:\n  x = 1\n"),  # indentation
    ("a = f(x, y)\n", "a = f(x,  y)\n"),  # other text around the tokens
    ("s = '''\nf(a)\n'''\n", "s = '''\nf(a, k=1)\n'''\n"),  # inside a string: one token changed
    ("a = f(x)\n", "a = f(x, k=lambda: 1)\n"),  # not a literal value
    ("a = f(x)\n", "a = f(x, k=(yield))\n"),
    ("a = f(x)\n", "a = f(x, k=1 if y else 2)\n"),
    ("a = f(x)\n", "a = f(x, k=f'{y}')\n"),
    ("a = f(x)\n", "a = f(x, y)\n"),  # a positional argument
    ("a = f(x)\n", "a = f(x, *y)\n"),
    ("a = f(x)\n", "a = f(x, **y)\n"),
    ("a = g[x]\n", "a = g[x, k]\n"),  # not a call
    ("a = g[x]\n", "a = g[x, k:1]\n"),
    ("def f(x): pass\n", "def f(x, k=1): pass\n"),  # a parameter list, not a call
    ("class A(B): pass\n", "class A(B, metaclass=M): pass\n"),
    ("a = f(x)\n", "a = f(x)\nb = 2\n"),  # a new statement
    ("a = f(x)\nb = f(y)\n", "a = f(x, k=1)\nb = f(y, k=1)\n"),  # two insertions
    ("a = f(x, old=1)\n", "a = f(x, new=1, k=2)\n"),  # an insertion and a substitution
    ("a = f(x)\n", "a = f(x, k=1)  # new\n"),  # a comment with it
    ("a = f(x)\n", "a = f(x, k=1, j=2)\n"),  # two keywords
    ("a = f(x)\r", "a = f(x, k=1)\r"),  # a lone carriage return
    ("a = f(x)\n\x0cb = 1\n", "a = f(x, k=1)\n\x0cb = 1\n"),  # a form feed
    ("a = f(x)\n", "a = f(x, \\\n k=1)\n"),  # a backslash continuation
    ("a = f(x)\n", "a = f(x, if=1)\n"),  # a keyword as the name (does not parse)
]


@pytest.mark.parametrize(("before", "after"), KEEPS)
def test_the_shortcut_accepts_what_libcst_accepts(before, after):
    libcst.parse_module(before)
    assert keeps_libcst_verdict(before, after)
    libcst.parse_module(after)  # the installed libcst agrees


@pytest.mark.parametrize(("before", "after"), REFUSES)
def test_each_guard_sends_the_change_to_libcst(before, after):
    assert not keeps_libcst_verdict(before, after)


def test_unchanged_text_and_large_modules():
    assert keeps_libcst_verdict("x = 1\n", "x = 1\n")
    big = "x = f(a)\n" * 120_000  # parsed in pieces elsewhere: never shown here
    assert not keeps_libcst_verdict(big, big.replace("f(a)", "f(a, k=1)", 1))


def test_the_rest_of_a_large_file_is_not_part_of_the_comparison():
    body = "".join(f"def f{i}(x):\n    return g(x, torch_dtype=1)\n\n" for i in range(300))
    after = body.replace("def f150(x):\n    return g(x, torch_dtype=1)", "def f150(x):\n    return g(x, dtype=1)")
    assert after != body and keeps_libcst_verdict(body, after)
    libcst.parse_module(after)


def diag(path: str, edits: list[tuple[int, int, int, int, str]], line: int = 1) -> Diagnostic:
    return Diagnostic(code="TL199", name="test-rule", severity=Severity.WARNING, message="m", path=path,
                      line=line, column=1, end_line=line, end_column=2,
                      fix=Fix(applicability="safe", edits=[Edit(path=path, line=a, column=b, end_line=c,
                                                                end_column=d, content=t)
                                                           for a, b, c, d, t in edits]))


@pytest.fixture
def libcst_rejects(monkeypatch):
    """libcst rejects everything it is asked to parse; the calls are counted."""
    calls: list[str] = []

    def reject(chunk: str):
        calls.append(chunk)
        raise libcst.ParserSyntaxError("rejected for the test", lines=[chunk], raw_line=1, raw_column=0)

    monkeypatch.setattr(libcst, "parse_module", reject)
    return calls


def test_a_rename_is_applied_without_libcst_and_other_fixes_still_go_through_it(libcst_rejects):
    text = "m = load(x, torch_dtype=t)\ny = 2\n"
    rename = diag("a.py", [(1, 13, 1, 24, "dtype")])
    pr = apply_fix_pass([rename], {"a.py": text}, {"a.py": "python"})
    assert pr.texts == {"a.py": "m = load(x, dtype=t)\ny = 2\n"} and not pr.reverted
    assert libcst_rejects == []
    added = diag("a.py", [(1, 26, 1, 26, ", use_cache=False")])
    pr = apply_fix_pass([added], {"a.py": text}, {"a.py": "python"})
    assert pr.texts == {"a.py": "m = load(x, torch_dtype=t, use_cache=False)\ny = 2\n"}
    assert libcst_rejects == []
    statement = diag("a.py", [(2, 1, 2, 1, "z = 3\n")], line=2)  # a new statement: libcst reads it
    pr = apply_fix_pass([statement], {"a.py": text}, {"a.py": "python"})
    assert pr.texts == {} and [d for d, _ in pr.reverted] == [statement]
    assert libcst_rejects and "rejected for the test" in pr.reverted[0][1]


def test_parses_asks_libcst_only_for_changes_outside_the_shortcut(libcst_rejects):
    before = "m = f(x, torch_dtype=t)\n"
    assert parses("a.py", "m = f(x, dtype=t)\n", "python", before=before) is None
    assert libcst_rejects == []
    assert parses("a.py", "m = f(x, torch_dtype=t, k=lambda: 1)\n", "python", before=before) is not None
    assert len(libcst_rejects) == 1
    # without the text before the fixes there is nothing to compare with
    assert parses("a.py", "m = f(x, dtype=t)\n", "python") is not None


def _notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": c.splitlines(keepends=True)} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def test_a_notebook_program_uses_the_same_shortcut(libcst_rejects):
    before = _notebook("import torch\n", "args = TrainingArguments(\n    output_dir='o',\n)\n")
    added = _notebook("import torch\n", "args = TrainingArguments(\n    output_dir='o',\n    bf16=True,\n)\n")
    assert parses("n.ipynb", added, "notebook", before=before) is None
    assert libcst_rejects == []
    lam = _notebook("import torch\n", "args = TrainingArguments(\n    output_dir='o',\n    f=lambda: 1,\n)\n")
    assert parses("n.ipynb", lam, "notebook", before=before) is not None
    assert len(libcst_rejects) == 1
    assert parses("n.ipynb", added, "notebook") is not None  # no notebook before: libcst reads it


def test_no_libcst_import_when_no_statement_changed(monkeypatch):
    called: list[list[str]] = []
    monkeypatch.setattr(apply_mod, "_libcst_parse", lambda chunks: called.append(chunks))
    text = "x = 1\n" * 3000  # several pieces, none changed
    apply_mod._libcst_roundtrip(text, apply_mod._top_level_chunks(text, list(range(1, 3001))), text)
    assert called == []
