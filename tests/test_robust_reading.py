"""Never break: every kind of bad input is a TL0xx finding with a location, and the run goes
on with the other files. Only a bug in trainlint (TL000) makes the exit code 2."""

from __future__ import annotations

import codecs
import os
import sys
from pathlib import Path

import pytest
from helpers import run_cli, settings_for

from trainlint.engine import lint
from trainlint.sources import files as files_mod
from trainlint.sources import registry

GOOD = ("from transformers import TrainingArguments\n"
        "args = TrainingArguments(output_dir='out', logging_steps=1, save_total_limit=2)\n")


def _lint(root: Path, *paths: Path):
    return lint(list(paths) or [root], settings_for(root))


def _by_path(result) -> dict[str, list]:
    out: dict[str, list] = {}
    for d in result.diagnostics:
        out.setdefault(Path(d.path).name, []).append(d)
    return out


def _codes(result, name: str) -> list[str]:
    return [d.code for d in _by_path(result).get(name, [])]


def _good(root: Path) -> Path:
    p = root / "good.py"
    p.write_text(GOOD)
    return p


def _assert_good_checked(result) -> None:
    assert "TL201" in _codes(result, "good.py"), "the other files must still be checked"
    assert not result.internal_errors, result.internal_errors


# -- Python -----------------------------------------------------------------------------------


def test_syntax_error_has_its_position(tmp_path):
    (tmp_path / "bad.py").write_text("from transformers import TrainingArguments\nargs = TrainingArguments(\n")
    _good(tmp_path)
    result = _lint(tmp_path)
    (d,) = _by_path(result)["bad.py"]
    assert d.code == "TL001" and d.line == 2 and "cannot parse Python" in d.message
    assert str(tmp_path / "bad.py") in result.unparsable
    _assert_good_checked(result)


def test_3000_deep_parentheses(tmp_path):
    (tmp_path / "deep.py").write_text("import transformers\nx = " + "(" * 3000 + "1" + ")" * 3000 + "\n")
    _good(tmp_path)
    result = _lint(tmp_path)
    (d,) = _by_path(result)["deep.py"]
    assert d.code == "TL001" and "too many nested parentheses" in d.message
    assert d.line == 2 and d.column > 1
    _assert_good_checked(result)


@pytest.mark.parametrize("expr", [
    "-" * 100_000 + "1",  # the parser's stack: MemoryError
    "+".join(["1"] * 100_000),  # ast construction: RecursionError
    "a" + ".b" * 60_000,
    "[" * 150 + "]" * 150 + "+" + "not " * 50_000 + "x",
])
def test_pathological_nesting_is_a_syntax_error_finding(tmp_path, expr):
    (tmp_path / "deep.py").write_text("import transformers\nx = " + expr + "\n")
    _good(tmp_path)
    result = _lint(tmp_path)
    assert _codes(result, "deep.py") == ["TL001"]
    _assert_good_checked(result)


def test_deep_but_valid_code_is_analysed(tmp_path):
    """A 900-term concatenation and a 900-link call chain compile in CPython: they must be
    analysed (the rules still see the TrainingArguments call in the same file)."""
    (tmp_path / "train.py").write_text(
        "from transformers import TrainingArguments\n"
        "s = " + " + ".join(f"'{i}'" for i in range(900)) + "\n"
        "t = x" + ".y()" * 900 + "\n"
        "args = TrainingArguments(output_dir='out', logging_steps=1, save_total_limit=2)\n")
    result = _lint(tmp_path)
    assert _codes(result, "train.py") == ["TL201"]


def test_null_byte_late_in_python_file(tmp_path):
    (tmp_path / "nul.py").write_bytes(b"import transformers\n" + b"x = 1\n" * 3000 + b"y = '\x00'\n")
    _good(tmp_path)
    result = _lint(tmp_path)
    (d,) = _by_path(result)["nul.py"]
    assert d.code == "TL002" and "binary" in d.message and d.line == 3002 and d.column == 6
    _assert_good_checked(result)


def test_binary_file(tmp_path):
    (tmp_path / "model.py").write_bytes(bytes(range(256)) * 4)
    _good(tmp_path)
    result = _lint(tmp_path)
    assert _codes(result, "model.py") == ["TL002"]
    _assert_good_checked(result)


def test_latin1_with_pep263_cookie_is_read(tmp_path):
    (tmp_path / "latin.py").write_bytes(
        ("# -*- coding: latin-1 -*-\nfrom transformers import TrainingArguments\n"
         "note = 'caf\xe9'\nargs = TrainingArguments(output_dir='out', logging_steps=1, save_total_limit=2)\n").encode("latin-1"))
    result = _lint(tmp_path)
    (d,) = _by_path(result)["latin.py"]
    assert d.code == "TL201" and d.line == 4


def test_latin1_without_cookie_is_an_unreadable_file_with_position(tmp_path):
    (tmp_path / "latin.py").write_bytes("import transformers\nnote = 'caf\xe9'\n".encode("latin-1"))
    _good(tmp_path)
    result = _lint(tmp_path)
    (d,) = _by_path(result)["latin.py"]
    assert d.code == "TL002" and d.line == 2 and d.column == 12 and "PEP 263" in d.message
    _assert_good_checked(result)


@pytest.mark.parametrize("data, fragment", [
    (b"# -*- coding: no-such-codec -*-\nimport transformers\n", "bad encoding declaration"),
    (codecs.BOM_UTF8 + b"# -*- coding: latin-1 -*-\nimport transformers\n", "bad encoding declaration"),
    (b"# coding: rot13\nimport transformers\n", "encoding"),
])
def test_bad_encoding_declarations(tmp_path, data, fragment):
    (tmp_path / "enc.py").write_bytes(data)
    _good(tmp_path)
    result = _lint(tmp_path)
    (d,) = _by_path(result)["enc.py"]
    assert d.code == "TL002" and fragment in d.message
    _assert_good_checked(result)


def test_bom_file_is_read_and_positions_ignore_the_bom(tmp_path):
    (tmp_path / "bom.py").write_bytes(codecs.BOM_UTF8 + GOOD.encode())
    result = _lint(tmp_path)
    (d,) = _by_path(result)["bom.py"]
    assert d.code == "TL201" and d.line == 2


def test_empty_files(tmp_path):
    for name in ("empty.py", "empty.json", "empty.yaml", "empty.sh"):
        (tmp_path / name).write_text("")
    _good(tmp_path)
    result = _lint(tmp_path, *(tmp_path / n for n in ("empty.py", "empty.json", "empty.yaml", "empty.sh", "good.py")))
    assert _codes(result, "empty.py") == []
    assert _codes(result, "empty.yaml") == []
    assert _codes(result, "empty.sh") == []
    assert _codes(result, "empty.json") == ["TL003"]  # json.loads("") fails too
    _assert_good_checked(result)


def test_huge_file_is_reported_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(files_mod, "MAX_FILE_BYTES", 1000)
    (tmp_path / "big.py").write_text("import transformers\n" + "x = 1\n" * 500)
    result = _lint(tmp_path, tmp_path / "big.py")
    (d,) = result.diagnostics
    assert d.code == "TL002" and "too large" in d.message


def test_file_that_grows_after_its_stat_is_read_whole_or_reported(tmp_path, monkeypatch):
    # the read asks for the size the stat gave (and one byte more): a file longer by then is
    # read on to the limit, never cut
    text = "import transformers\n" + "x = 1\n" * 400
    (tmp_path / "grown.py").write_text(text)
    real = os.fstat

    class Shrunk:
        def __init__(self, st):
            self.st_mode, self.st_size = st.st_mode, 10

    monkeypatch.setattr(files_mod.os, "fstat", lambda fd: Shrunk(real(fd)))
    assert files_mod.read_text(str(tmp_path / "grown.py")).text == text
    real_stat = os.stat
    monkeypatch.setattr(files_mod.os, "stat", lambda p, *a, **k: Shrunk(real_stat(p, *a, **k)))
    assert files_mod.read_text(str(tmp_path / "grown.py")).text == text
    monkeypatch.setattr(files_mod, "MAX_FILE_BYTES", 1000)  # over the limit by the time it is read
    with pytest.raises(files_mod.ReadProblem, match="too large"):
        files_mod.read_text(str(tmp_path / "grown.py"))


# -- what is not a readable file --------------------------------------------------------------


def test_directory_fifo_dangling_link_and_link_loop(tmp_path):
    (tmp_path / "folder.py").mkdir()
    os.mkfifo(tmp_path / "fifo.py")  # opening it for reading would block forever
    os.symlink(tmp_path / "nowhere.py", tmp_path / "dangling.py")
    os.symlink(tmp_path / "loop_b.py", tmp_path / "loop_a.py")
    os.symlink(tmp_path / "loop_a.py", tmp_path / "loop_b.py")
    os.symlink(tmp_path, tmp_path / "self_dir")  # a folder link loop: not followed
    _good(tmp_path)
    # walked ...
    result = _lint(tmp_path)
    assert _codes(result, "fifo.py") == ["TL002"]
    assert _codes(result, "dangling.py") == ["TL002"]
    assert _codes(result, "loop_a.py") == ["TL002"] and _codes(result, "loop_b.py") == ["TL002"]
    msgs = {Path(d.path).name: d.message for d in result.diagnostics}
    assert "FIFO" in msgs["fifo.py"]
    assert "dangling" in msgs["dangling.py"]
    assert "loop" in msgs["loop_a.py"]
    _assert_good_checked(result)
    # ... and named explicitly
    named = [tmp_path / n for n in ("fifo.py", "dangling.py", "loop_a.py", "missing.py", "good.py")]
    result = _lint(tmp_path, *named)
    for n in ("fifo.py", "dangling.py", "loop_a.py", "missing.py"):
        assert _codes(result, n) == ["TL002"], n
    _assert_good_checked(result)


def test_unreadable_file(tmp_path, monkeypatch):
    """Tests run as root, which can read anything: simulate a permission error."""
    bad = tmp_path / "secret.py"
    bad.write_text(GOOD)
    _good(tmp_path)
    real_open = os.open

    def fake_open(path, *args, **kwargs):
        if str(path) == str(bad):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(files_mod.os, "open", fake_open)
    result = _lint(tmp_path)
    (d,) = _by_path(result)["secret.py"]
    assert d.code == "TL002" and "Permission denied" in d.message
    _assert_good_checked(result)


# -- JSON / YAML ------------------------------------------------------------------------------

DS = '{\n  "train_micro_batch_size_per_gpu": 8,\n  "zero_optimization": {"stage": 2}\n}\n'


def test_invalid_deepspeed_json_has_the_parser_position(tmp_path):
    (tmp_path / "ds.json").write_text('{\n  "train_micro_batch_size_per_gpu": 8,\n  "zero_optimization": {"stage": 2,}\n}\n')
    _good(tmp_path)
    result = _lint(tmp_path)
    (d,) = _by_path(result)["ds.json"]
    assert d.code == "TL003" and d.line == 3 and "Trailing comma" in d.message
    assert str(tmp_path / "ds.json") in result.unparsable
    _assert_good_checked(result)


def test_nan_and_duplicate_keys_in_json(tmp_path):
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"stage": 2},\n "gradient_clipping": NaN,\n'
                                      ' "zero_optimization": {"stage": 3}}\n')
    result = _lint(tmp_path)
    found = sorted((d.line, d.column, d.message) for d in _by_path(result)["ds.json"] if d.code == "TL003")
    assert len(found) == 2
    assert found[0][:2] == (2, 23) and "NaN" in found[0][2]
    assert found[1][0] == 3 and "Duplicate key" in found[1][2]
    # readable despite both: not marked unparsable, the rules still see it
    assert str(tmp_path / "ds.json") not in result.unparsable


def test_json_nested_100000_deep(tmp_path):
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "ds.json").write_text('{"zero_optimization": ' * 3000 + "1" + "}" * 3000)
    _good(tmp_path)
    for result in (_lint(tmp_path), _lint(tmp_path, *tmp_path.iterdir())):
        assert _codes(result, "deep.json") == ["TL003"]
        assert _codes(result, "ds.json") == ["TL003"]
        _assert_good_checked(result)


BOMB = ("distributed_type: MULTI_GPU\n"
        "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        + "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")))


def test_yaml_alias_bomb_is_refused_quickly(tmp_path):
    (tmp_path / "accelerate.yaml").write_text(BOMB)
    _good(tmp_path)
    result = _lint(tmp_path)
    (d,) = _by_path(result)["accelerate.yaml"]
    assert d.code == "TL003" and "alias" in d.message and d.line > 1
    _assert_good_checked(result)


def test_yaml_deep_block_nesting_and_recursive_alias(tmp_path):
    (tmp_path / "deep.yaml").write_text("distributed_type: MULTI_GPU\nx:\n" + "".join("  " * i + "  a:\n" for i in range(3000)))
    (tmp_path / "rec.yaml").write_text("distributed_type: MULTI_GPU\nnum_processes: &x [1, *x]\n")
    _good(tmp_path)
    result = _lint(tmp_path)
    assert _codes(result, "deep.yaml") == ["TL003"]
    assert _codes(result, "rec.yaml") == ["TL003"]
    _assert_good_checked(result)


def test_large_walked_json_is_only_validated(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "MAX_WALKED_GENERIC_JSON", 100)
    (tmp_path / "tokenizer.json").write_text('{"vocab": {' + ", ".join(f'"t{i}": {i}' for i in range(100)) + "}}")
    (tmp_path / "broken.json").write_text('{"vocab": [' + ", ".join(str(i) for i in range(100)) + "}")
    result = _lint(tmp_path)
    assert _codes(result, "tokenizer.json") == []
    (d,) = _by_path(result)["broken.json"]
    assert d.code == "TL003" and d.column > 100


def test_missing_references_in_launch_lines(tmp_path):
    (tmp_path / "train.py").write_text("from transformers import TrainingArguments\n")
    (tmp_path / "run.sh").write_text("torchrun --nproc_per_node 2 train.py --deepspeed ds_zero2.json\n")
    _good(tmp_path)
    result = _lint(tmp_path)
    (d,) = _by_path(result)["run.sh"]
    assert d.code == "TL004" and "ds_zero2.json" in d.message and d.line == 1 and d.column > 30
    _assert_good_checked(result)


# -- internal errors: caught per file, TL000, exit code 2 --------------------------------------


def test_reader_crash_is_tl000_for_that_file_only(tmp_path, monkeypatch):
    (tmp_path / "ds.json").write_text(DS)
    _good(tmp_path)

    def broken(path, text):
        raise KeyError("boom")

    monkeypatch.setitem(registry.READERS, "deepspeed", broken)
    result = _lint(tmp_path)
    (d,) = _by_path(result)["ds.json"]
    assert d.code == "TL000" and "KeyError" in d.message and "report" in d.message
    assert str(tmp_path / "ds.json") in result.unparsable
    assert "TL201" in _codes(result, "good.py")


def test_kind_detection_crash_falls_back_to_the_suffix(tmp_path, monkeypatch):
    import trainlint.sources.kinds as kinds

    def broken(path, text):
        raise RecursionError("too deep")

    monkeypatch.setattr(kinds, "detect_kind", broken)
    (tmp_path / "x.json").write_text("{")
    result = _lint(tmp_path, tmp_path / "x.json")
    assert [d.code for d in result.diagnostics] == ["TL003"]


def test_cli_exit_codes(tmp_path):
    """Input problems are findings (exit 1); they never make the exit code 2."""
    (tmp_path / "bad.py").write_text("import transformers\nx = (\n")
    (tmp_path / "bad.json").write_text('{"zero_optimization": ')
    (tmp_path / "bin.py").write_bytes(b"\x00\x01")
    out = run_cli("check", str(tmp_path), "--format", "concise")
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    assert {"TL001", "TL002", "TL003"} <= {line.split()[1] for line in out.stdout.splitlines()}
    out = run_cli("check", str(tmp_path), "--exit-zero")
    assert out.returncode == 0


def test_cli_internal_error_is_one_line_and_exit_2(tmp_path):
    """A crash outside the per-file isolation (here: in the reporter) is still no traceback."""
    _good(tmp_path)
    boot = tmp_path / "boot"
    boot.mkdir()
    (boot / "sitecustomize.py").write_text(
        "import trainlint.report.concise_format as m\n"
        "def render(*a, **k):\n    raise RuntimeError('reporter exploded')\n"
        "m.render = render\n")
    out = run_cli("check", str(tmp_path), "--format", "concise", env={"PYTHONPATH": str(boot)})
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "internal error" in out.stderr and "reporter exploded" in out.stderr and "report it" in out.stderr


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the interpreter parses PEP 701 f-strings itself")
def test_python_312_fstring_is_info_not_a_broken_file(tmp_path):
    """unslothai/notebooks: `f"{row["question"]}"` is valid from Python 3.12 (PEP 701); on an
    older interpreter trainlint cannot analyse it, and says so as info, not as an error."""
    import json

    (tmp_path / "new.py").write_text('from transformers import Trainer\nq = f"{row["question"]}, think"\n')
    (tmp_path / "broken.py").write_text('from transformers import Trainer\nq = f"{row["question"}"\n')
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ['from trl import SFTTrainer\n', 'instruction = f"{dataset[100]["question"]}, reason"\n']}
    (tmp_path / "nb.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                                   "cells": [cell]}))
    by = {Path(d.path).name: d for d in _lint(tmp_path).diagnostics if d.code == "TL001"}
    assert by["new.py"].severity.value == "info" and "valid from Python 3.12" in by["new.py"].message
    assert by["nb.ipynb"].severity.value == "info"
    assert by["broken.py"].severity.value == "error" and "cannot parse Python: " in by["broken.py"].message


def test_databricks_notebook_export_with_a_shell_line_is_info(tmp_path):
    """databrickslabs/dolly's train_dolly.py: a Databricks notebook saved as .py, whose `!deepspeed
    ... \\` cell runs the training; Python cannot parse it, but the file is not broken: info that
    says why. The same `!` line in a plain .py, or a broken line in the export, stays an error."""
    export = ("# Databricks notebook source\n# MAGIC %md\n# MAGIC ## Train\n\n# COMMAND ----------\n\n"
              "import os\nfrom transformers import Trainer\n\n# COMMAND ----------\n\n"
              "!deepspeed {num_gpus_flag} \\\n    --module training.trainer \\\n    --epochs 2\n")
    (tmp_path / "train_dolly.py").write_text(export)
    (tmp_path / "plain.py").write_text(export.replace("# Databricks notebook source\n", ""))
    (tmp_path / "broken_export.py").write_text("# Databricks notebook source\nfrom transformers import Trainer\nx = (\n")
    by = {Path(d.path).name: d for d in _lint(tmp_path).diagnostics if d.code == "TL001"}
    assert by["train_dolly.py"].severity.value == "info", by["train_dolly.py"].message
    assert "Databricks notebook" in by["train_dolly.py"].message and "!deepspeed" in by["train_dolly.py"].message
    assert by["plain.py"].severity.value == "error"
    assert by["broken_export.py"].severity.value == "error"
