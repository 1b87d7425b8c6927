"""The parse floor of ``benchmarks/scale.py`` (the reference of issue 18's repository goal)
parses what it claims to: the Python files the rules' pre-filter keeps and the code of the
notebooks whose code cells mention a trigger, with their shell lines and magics left out."""

from __future__ import annotations

import ast
import gc
import json
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

import scale  # noqa: E402


def _notebook(*cells: tuple[str, str]) -> str:
    return json.dumps({"cells": [{"cell_type": kind, "metadata": {}, "source": src.splitlines(keepends=True),
                                  **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                                 for kind, src in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.parametrize("floor", ["FLOOR_RULES", "FLOOR_CHECKED", "FLOOR_HELD"])
def test_floor_parses_scripts_and_notebook_programs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, floor: str) -> None:
    (tmp_path / "train.py").write_text("from transformers import Trainer, TrainingArguments\n"
                                       "args = TrainingArguments(output_dir='o', logging_steps=1)\n")
    (tmp_path / "plain.py").write_text("print('no training here')\n")
    (tmp_path / "train.ipynb").write_text(_notebook(
        ("markdown", "# Fine-tuning"),
        ("code", "!pip install transformers\n%%time\nimport os"),
        ("code", "from transformers import Trainer, TrainingArguments\nargs = TrainingArguments(output_dir='o')")))
    # a notebook whose markdown mentions the Trainer but whose code does not: no program to parse
    (tmp_path / "notes.ipynb").write_text(_notebook(("markdown", "We use the Trainer and TrainingArguments."),
                                                    ("code", "x = 1")))
    (tmp_path / "ds.json").write_text('{"train_batch_size": 8}')
    (tmp_path / "cfg.yaml").write_text("lr: 1e-5\n")
    parsed: list[str] = []
    real = ast.parse

    def recording(source, *args, **kwargs):  # type: ignore[no-untyped-def]
        tree = real(source, *args, **kwargs)  # a SyntaxError propagates to the floor, which skips it
        parsed.append(source.decode() if isinstance(source, bytes) else source)
        return tree

    monkeypatch.setattr(ast, "parse", recording)
    monkeypatch.setattr(sys, "argv", ["floor", str(tmp_path)])
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__floor__"}
    try:
        exec(compile(getattr(scale, floor), "floor", "exec"), namespace)
    finally:
        gc.enable()  # FLOOR_HELD turns the collector off, as trainlint's run does
    if floor == "FLOOR_HELD":  # every tree kept to the end
        assert [type(t) for t in namespace["KEPT"]] == [ast.Module, ast.Module]
    else:
        assert "KEPT" not in namespace
    assert len(parsed) == 2, parsed  # train.py and train.ipynb's program; not plain.py, not notes.ipynb
    script = next(p for p in parsed if p.startswith("from transformers"))
    assert "logging_steps=1" in script
    program = next(p for p in parsed if "#!pip install transformers" in p)
    assert "#%%time" in program and "args = TrainingArguments(output_dir='o')" in program
