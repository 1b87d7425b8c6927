"""The server's session without the protocol: which files make one setup with a document."""

from __future__ import annotations

from pathlib import Path

from trainlint.server.convert import LineIndex, uri_to_path
from trainlint.server.session import Session, norm


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_group_follows_launch_lines_and_configs_both_ways(tmp_path: Path) -> None:
    _tree(tmp_path, {
        "scripts/run.sh": "torchrun --nproc_per_node 2 src/train.py --deepspeed configs/ds.json\n",
        "src/train.py": "from transformers import Trainer\n",
        "configs/ds.json": '{"train_micro_batch_size_per_gpu": 4}\n',
        "other/train.py": "from transformers import Trainer\n",  # same name, another setup
        "other/run.sh": "python train.py --logging_steps 1\n",
        "README.md": "Run `bash scripts/run.sh`.\n",
    })
    s = Session(root=tmp_path)
    group = set(s.group(str(tmp_path / "configs/ds.json")))
    assert norm(tmp_path / "scripts/run.sh") in group
    assert norm(tmp_path / "src/train.py") in group  # named by run.sh, which names ds.json
    assert norm(tmp_path / "other/train.py") not in group
    assert norm(tmp_path / "other/run.sh") not in group
    assert set(s.group(str(tmp_path / "other/train.py"))) == {norm(tmp_path / "other/train.py"),
                                                              norm(tmp_path / "other/run.sh")}


def test_open_buffer_changes_the_group(tmp_path: Path) -> None:
    _tree(tmp_path, {"run.sh": "python train.py\n", "train.py": "x = 1\n", "ds.json": "{}\n"})
    s = Session(root=tmp_path)
    assert norm(tmp_path / "ds.json") not in s.group(str(tmp_path / "run.sh"))  # nothing names it
    s.open(str(tmp_path / "train.py"), "args = dict(deepspeed='ds.json')\n", 1)
    assert norm(tmp_path / "train.py") in s.affected_documents(str(tmp_path / "ds.json"))


def test_lint_uses_the_buffer_not_the_disk(tmp_path: Path) -> None:
    _tree(tmp_path, {"train.py": "from transformers import TrainingArguments\n"
                                 "a = TrainingArguments(output_dir='o', logging_steps=1, max_steps=10000)\n"})
    s = Session(root=tmp_path)
    path = str(tmp_path / "train.py")
    assert any(d.code == "TL201" for d in s.lint(path).by_path[norm(path)])
    s.open(path, "from transformers import TrainingArguments\n"
                 "a = TrainingArguments(output_dir='o', logging_steps=50, max_steps=10000)\n", 2)
    assert not any(d.code == "TL201" for d in s.lint(path).by_path[norm(path)])


def test_positions_count_utf16_units() -> None:
    idx = LineIndex("a = '😀'; b = 1\nsecond\n")
    # character column 10 (1-based) is after the emoji: one character, two UTF-16 units
    assert idx.position(1, 10) == (0, 10)
    assert idx.offset_chars(0, 10) == (1, 10)
    assert idx.position(9, 1) == (2, 0)  # clamped to the end of the text
    assert LineIndex('no newline').position(2, 1) == (0, 10)
    assert uri_to_path("untitled:Untitled-1") is None
    assert uri_to_path("file:///tmp/a%20b.py") == "/tmp/a b.py"
