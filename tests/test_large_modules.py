"""Very large modules are parsed in pieces and without the top-level statements that cannot
matter (``trainlint.sources.pruning``): the findings and fixes must be those of a whole parse.
Here every module is read that way (the size threshold set to 0, tiny pieces) and compared with
the ordinary reading, on the rule cases, the examples, generated training scripts and the
pathological files of the benchmark."""

from __future__ import annotations

import ast
import importlib.util
import random
import sys
from pathlib import Path

import pytest
from helpers import fix_folder, lint_folder, write_files

from trainlint.rules import all_rules
from trainlint.sources import pruning

ROOT = Path(__file__).resolve().parent.parent


def _findings(root: Path) -> list[dict]:
    return [d.to_json() for d in lint_folder(root).diagnostics]


@pytest.fixture
def pruned(monkeypatch):
    """Every module read in pieces of a few hundred characters, pruned."""
    def on() -> None:
        monkeypatch.setattr(pruning, "LARGE_MODULE_CHARS", 0)
        monkeypatch.setattr(pruning, "PIECE_CHARS", 300)
        monkeypatch.setattr(pruning, "KEEP_ALL_ABOVE", 1.01)  # prune even when little goes
    return on


def _benchmark_module(name: str):
    if str(ROOT / "benchmarks") not in sys.path:  # as when run as a script: its helpers beside it
        sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _pathological_texts() -> dict[str, str]:
    patho = _benchmark_module("pathological")
    head = patho.HEAD
    filler = "".join(patho.FILLER.format(i=i) for i in range(60))
    return {
        "calls.py": head + "".join(patho.ARGS.format(i=i) for i in range(40)),
        "pairs.py": head + "".join(patho.PAIR.format(i=i) for i in range(40)),
        "helpers.py": head + filler + "trainer = Trainer(model=model, args=TrainingArguments('o', eval_strategy='steps', logging_steps=1))\n",
        "blocks.py": patho.BLOCKS_HEAD + "".join(patho.BLOCK.format(i=i) for i in range(30)),
    }


# names that flow between statements, and statements that look unrelated but are not
FLOWS = '''"""Module docstring."""
from transformers import Trainer, TrainingArguments
import os

LR = 1e-3
STEPS = 1


def unrelated(x):
    return [v * 2 for v in range(x)]


def build():
    return TrainingArguments(output_dir="o", learning_rate=LR, logging_steps=STEPS, report_to="none", **CONFIG)


CONFIG = dict(fp16=False)
CONFIG["bf16"] = True
os.environ["WANDB_DISABLED"] = "true"
args = build()
model = None


class Other:
    value = 3


if __name__ == "__main__":
    trainer = Trainer(model=model, args=args)
    trainer.train()
    trainer.train()
'''

TRICKY = '''from transformers import TrainingArguments
X = """
def not_code():
    pass
"""
def f(a,
b=1):
    return a
@decorator
def g():
    pass
if X:
    pass
else:
    pass
try:
    pass
except Exception:
    pass
finally:
    pass
total = 1 + \\
2
(n := 10)
match n:
    case [a, *rest]:
        pass
    case {"k": v, **others}:
        pass
values = [
1, 2]
args = TrainingArguments(output_dir="o", logging_steps=total, learning_rate=n); y = 2
'''


def test_pieces_give_the_statements_of_a_whole_parse():
    for text in (TRICKY, FLOWS, TRICKY.replace("\n", "\r\n"), *_pathological_texts().values()):
        whole = [(s.lineno, s.end_lineno) for s in ast.parse(text).body]
        for size in (1, 40, 300, 10_000):
            got = [(off + s.lineno, off + s.end_lineno) for off, tree, _ in pruning.module_pieces(text, size)
                   for s in tree.body]
            assert got == whole, size


def test_a_broken_module_is_not_cut():
    with pytest.raises(SyntaxError):
        list(pruning.module_pieces("x = 1\ny = (\nz = 2\n", 1))
    with pytest.raises(ValueError):  # only a whole parse says whether this is allowed
        list(pruning.module_pieces("x = 1\nfrom __future__ import annotations\n", 1))


def test_relevant_text_keeps_lines_and_flowing_names(monkeypatch):
    monkeypatch.setattr(pruning, "LARGE_MODULE_CHARS", 0)
    monkeypatch.setattr(pruning, "KEEP_ALL_ABOVE", 1.01)
    triggers = ("Trainer", "TrainingArguments")
    out = pruning.relevant_text(FLOWS, triggers)
    assert out.count("\n") == FLOWS.count("\n")
    assert "def unrelated" not in out and "class Other" not in out  # nothing flows from them
    for kept in ('"""Module docstring."""', "LR = 1e-3", "STEPS = 1", "def build", 'CONFIG["bf16"] = True',
                 "os.environ", "args = build()", "model = None", "trainer.train()"):
        assert kept in out, kept
    kept_lines = {i for i, line in enumerate(out.splitlines()) if line}
    assert all(out.splitlines()[i] == FLOWS.splitlines()[i] for i in kept_lines)
    helpers = _pathological_texts()["helpers.py"]
    assert "def helper_" not in pruning.relevant_text(helpers, triggers)
    # small modules and rules without triggers: as they are
    monkeypatch.setattr(pruning, "LARGE_MODULE_CHARS", 10**9)
    assert pruning.relevant_text(FLOWS, triggers) == FLOWS
    monkeypatch.setattr(pruning, "LARGE_MODULE_CHARS", 0)
    assert pruning.relevant_text(FLOWS, None) == FLOWS
    assert pruning.relevant_text("x = (\n", triggers) == "x = (\n"  # does not parse: the whole parse says why


def _case_folders(root: Path) -> None:
    for rule in all_rules():
        for i, case in enumerate(rule.cases):
            files = case.all_files()
            if any(p.endswith(".py") for p in files):
                write_files(root / f"{rule.code}_{i}", files)


def test_findings_are_those_of_a_whole_parse_on_the_rule_cases(tmp_path, pruned):
    _case_folders(tmp_path)
    before = _findings(tmp_path)
    pruned()
    assert _findings(tmp_path) == before


def test_findings_and_fixes_are_those_of_a_whole_parse_on_examples_and_generated_files(tmp_path, pruned):
    import shutil

    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    corpus = _benchmark_module("corpus")
    out = tmp_path / "corpus"
    out.mkdir()
    for i in range(12):
        (out / f"script_{i}.py").write_text(corpus.script(random.Random(i), i))
    write_files(tmp_path / "patho", {**_pathological_texts(), "flows.py": FLOWS, "tricky.py": TRICKY})
    before = _findings(tmp_path)
    fixed_before = fix_folder(tmp_path / "patho").fixed
    assert fixed_before  # the blocks have safe fixes
    pruned()
    assert _findings(tmp_path) == before
    assert fix_folder(tmp_path / "patho").fixed == fixed_before


def test_statement_lines_of_pieces():
    text = TRICKY + "".join(f"v{i} = {i}\n" for i in range(200))
    tree = ast.parse(text)
    whole = [min([s.lineno] + [d.lineno for d in getattr(s, "decorator_list", [])]) for s in tree.body]
    import trainlint.sources.pruning as p

    old = p.PIECE_CHARS
    try:
        p.PIECE_CHARS = 100
        assert p.statement_lines(text) == whole
        with pytest.raises(SyntaxError) as err:
            p.statement_lines(text + "y = (\n")
        assert err.value.lineno == text.count("\n") + 1  # the module's line, not the piece's
    finally:
        p.PIECE_CHARS = old
