"""Never break, never lose: a folder of mangled copies of every shipped example (truncated,
bytes flipped, empty, binary, a 20,000-call file, 3,000-deep parentheses, a YAML alias bomb,
NaN in JSON, a symlink loop...) is checked and fixed by the installed command with no
traceback; every file that does not parse is reported and left byte-identical; all of it in
under a minute."""

from __future__ import annotations

import ast
import io
import json
import os
import random
import re
import time
import tokenize
from pathlib import Path

from helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SUFFIXES = {".py", ".json", ".yaml", ".yml", ".sh"}


def _python_parses(data: bytes) -> bool:
    if b"\x00" in data:
        return False
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
        if text.startswith("\ufeff"):
            text = text[1:]
        ast.parse(text)
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError):
        return False
    return True


def _parses(path: Path) -> bool:
    """Independent of trainlint: CPython's own parsers and ruamel."""
    data = path.read_bytes()
    if path.suffix == ".py":
        return _python_parses(data)
    if b"\x00" in data:
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    try:
        if path.suffix == ".json":
            json.loads(text[1:] if text.startswith("\ufeff") else text)
        elif path.suffix in (".yaml", ".yml"):
            from ruamel.yaml import YAML

            YAML(typ="safe", pure=True).load(text)
    except Exception:  # noqa: BLE001 - any parser error
        return False
    return True


def _mangle_examples(out: Path) -> tuple[set[Path], set[Path]]:
    """The mangled folder; returns (files that must be reported and left alone because they
    do not parse, paths that are not readable files at all)."""
    rng = random.Random(9)
    originals = sorted(p for p in EXAMPLES.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    assert len(originals) >= 8
    for src in originals:
        rel = src.relative_to(EXAMPLES)
        data = src.read_bytes()
        stem, suffix = rel.with_suffix(""), src.suffix
        variants = {
            "orig": data,
            "truncated": data[: len(data) * 2 // 3],
            "cut_early": data[: len(data) // 5],
            "flipped": bytearray(data),
            "empty": b"",
            "binary": bytes(rng.randrange(256) for _ in range(512)),
            "crlf": data.replace(b"\n", b"\r\n"),
        }
        flipped = variants["flipped"]
        for _ in range(4):
            i = rng.randrange(len(flipped))
            flipped[i] = rng.randrange(256)
        variants["flipped"] = bytes(flipped)
        for name, content in variants.items():
            dst = out / stem.parent / f"{stem.name}_{name}{suffix}"
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(content)

    special = out / "special"
    special.mkdir()
    header = "from transformers import Trainer, TrainingArguments\n"
    (special / "many_calls.py").write_text(header + "".join(f"x{i} = f({i}, key={i})\n" for i in range(20_000)))
    (special / "deep_parens.py").write_text(header + "x = " + "(" * 3000 + "1" + ")" * 3000 + "\n")
    (special / "deep_unary.py").write_text(header + "x = " + "-" * 50_000 + "1\n")
    (special / "long_concat.py").write_text(
        header + "s = " + " + ".join(f"'{i}'" for i in range(2000)) + "\n"
        "args = TrainingArguments(output_dir='o', eval_strategy='steps', logging_steps=1)\n")
    (special / "bomb_accelerate.yaml").write_text(
        "distributed_type: MULTI_GPU\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        + "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")))
    (special / "nan_ds.json").write_text('{"zero_optimization": {"stage": 2}, "gradient_clipping": NaN,'
                                         ' "train_micro_batch_size_per_gpu": Infinity}\n')
    (special / "deep_ds.json").write_text('{"zero_optimization": ' * 3000 + "1" + "}" * 3000)
    (special / "nul_late.py").write_bytes(header.encode() + b"x = 1\n" * 2000 + b"\x00\n")
    (special / "latin1_no_cookie.py").write_bytes(header.encode() + "s = 'caf\xe9'\n".encode("latin-1"))
    (special / "bad_cookie.py").write_bytes(b"# -*- coding: nope -*-\n" + header.encode())
    os.symlink("loop_b.py", special / "loop_a.py")
    os.symlink("loop_a.py", special / "loop_b.py")
    os.symlink("nowhere.json", special / "dangling.json")
    os.symlink("..", special / "parent_link")  # a folder link back up: never followed
    os.mkfifo(special / "fifo.sh")
    (special / "folder.py").mkdir()

    unparsable = {p for p in out.rglob("*") if p.is_file() and not p.is_symlink()
                  and p.suffix in SUFFIXES and not _parses(p)}
    unparsable.add(special / "bomb_accelerate.yaml")  # valid YAML that trainlint refuses to expand
    not_files = {special / n for n in ("loop_a.py", "loop_b.py", "dangling.json", "fifo.sh")}
    return unparsable, not_files


def test_mangled_examples_never_break_and_never_lose(tmp_path):
    folder = tmp_path / "mangled"
    folder.mkdir()
    unparsable, not_files = _mangle_examples(folder)
    assert len(unparsable) > 20
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink()}

    start = time.perf_counter()
    check = run_cli("check", str(folder), "--format", "concise", "--gpu", "A100")
    fix = run_cli("fix", "--apply", "--unsafe-fixes", str(folder), "--gpu", "A100")
    again = run_cli("check", str(folder), "--format", "json", "--gpu", "A100")
    elapsed = time.perf_counter() - start

    for out in (check, fix, again):
        assert out.returncode in (0, 1), out.stderr[-3000:]
        assert "Traceback" not in out.stdout + out.stderr
        assert "TL000" not in out.stdout, [ln for ln in out.stdout.splitlines() if "TL000" in ln]
    assert elapsed < 60, f"check + fix + check took {elapsed:.1f}s"

    reported: dict[str, set[str]] = {}
    for line in check.stdout.splitlines():
        m = re.match(r"^(.*):\d+:\d+: (TL\d{3}) ", line)
        if m:
            reported.setdefault(os.path.normpath(m.group(1)), set()).add(m.group(2))
    for p in sorted(unparsable | not_files):
        codes = reported.get(os.path.normpath(str(p)), set())
        assert codes & {"TL001", "TL002", "TL003"}, f"{p.relative_to(folder)} not reported: {codes}"
    for p in sorted(unparsable):
        assert p.read_bytes() == before[p], f"{p.relative_to(folder)} was changed though it does not parse"

    # what was fixed still parses, and keeps its newline style
    changed = [p for p, data in before.items() if p.exists() and p.read_bytes() != data]
    assert changed, "the readable copies have fixable findings"
    for p in changed:
        assert _parses(p), f"{p.relative_to(folder)} no longer parses after fix"
        if b"\r\n" in before[p]:
            assert p.read_bytes().count(b"\n") == p.read_bytes().count(b"\r\n")
    # the folder holds nothing new (no temporary files left)
    assert {p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()} == set(before)
    # a second fix is a no-op
    second = run_cli("fix", "--apply", "--unsafe-fixes", str(folder), "--gpu", "A100")
    assert second.returncode in (0, 1) and "Traceback" not in second.stderr
    assert all(p.read_bytes() == (before[p] if p not in changed else p.read_bytes()) for p in before)
    assert "Fixed 0 findings" in second.stderr, second.stderr[-2000:]
