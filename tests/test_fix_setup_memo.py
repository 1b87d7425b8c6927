"""``fix``'s later passes take the findings of a setup whose digest an earlier pass checked
(``trainlint.fixing.setup_memo``): the digest must describe what the rules can read, so that
the same content gives the same digest whatever objects hold it, and a change anywhere a
setup reaches (its files, a module linking pulled in, a site's consumer, the rules that run)
gives another; the outcome must be the plain passes' (``tests/test_fix_reuse.py`` compares
the whole outcome with the memo in use)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import settings_for, write_files
from test_fix_reuse import _repository

import trainlint.checking as checking
import trainlint.engine as engine
from trainlint import reads
from trainlint.fixing.setup_memo import SetupMemo
from trainlint.resolve import build_setups, run_context, run_root
from trainlint.setup import Consumer
from trainlint.workspace import Workspace, read_entry


def _setups(root: Path, overlay: dict[str, str] | None = None) -> tuple[Workspace, list]:
    settings = engine.with_target_root(settings_for(root), [root])
    ws = Workspace(settings=settings, overlay=overlay or {})
    for p, explicit in engine._walk_order([root], settings):
        read_entry(ws, p, explicit)
    return ws, build_setups(ws, settings, run_context(settings, run_root([root])))


def _digests(ws: Workspace, setups: list, codes: tuple[str, ...] = ("TL201",)) -> dict[tuple, str | None]:
    memo = SetupMemo()
    memo.start(ws)
    return {(tuple(s.files), s.extra.get("launch_file", "")): memo.key(s, codes) for s in setups}


def test_the_same_texts_give_the_same_digests_from_a_fresh_read(tmp_path):
    root = _repository(tmp_path / "repo")
    a = _digests(*_setups(root))
    b = _digests(*_setups(root))
    assert len(a) >= 5 and None not in a.values()
    assert a == b  # no address, no id of an object: only what the rules can read
    assert len(set(a.values())) == len(a)


def test_a_change_reaches_the_setups_that_link_the_changed_file_and_no_other(tmp_path):
    root = _repository(tmp_path / "repo")
    before = _digests(*_setups(root))
    trainers = str(root / "mytrainers.py")
    text = (root / "mytrainers.py").read_text().replace("class MyTrainer(Trainer):", "class MyTrainer(object):")
    after = _digests(*_setups(root, {trainers: text}))
    changed = {k for k in before if before[k] != after.get(k)}
    names = {tuple(Path(p).name for p in k[0]): k for k in before}
    # train.py links MyTrainer (now no Trainer): its setup differs, as the changed file's own
    assert changed == {names[("train.py", "helpers.py", "mytrainers.py")], names[("mytrainers.py",)]}
    # the launch lines' setups and the args file's are the same: their rules need not run again
    assert {("README.md", "train_cli.py"), ("run.sh", "train_cli.py", "ds.json"), ("args.yaml",)} <= set(names)
    # the rules that run are part of the digest
    ws, setups = _setups(root)
    assert _digests(ws, setups, ("TL201",)) != _digests(ws, setups, ("TL201", "TL202"))


def test_what_linking_sets_on_a_site_is_in_the_digest(tmp_path):
    root = _repository(tmp_path / "repo")
    ws, setups = _setups(root)
    with_site = next(s for s in setups if s.all_sites)
    memo = SetupMemo()
    memo.start(ws)
    before = memo.key(with_site, ())
    with_site.all_sites[0].consumer = Consumer(kind="project", via="test")
    memo = SetupMemo()
    memo.start(ws)
    assert memo.key(with_site, ()) != before


def test_an_object_the_digest_does_not_know_runs_the_rules(tmp_path):
    root = _repository(tmp_path / "repo")
    ws, setups = _setups(root)
    setups[0].extra["opaque"] = object()
    memo = SetupMemo()
    memo.start(ws)
    assert memo.key(setups[0], ()) is None
    assert memo.get(None) is None


def test_a_hit_notes_what_the_rules_read_and_a_read_of_a_changed_file_misses(tmp_path):
    root = _repository(tmp_path / "repo")
    ws, setups = _setups(root)
    memo = SetupMemo()
    memo.start(ws)
    key = memo.key(setups[0], ())
    memo.put(key, ["finding"], {"/outside/requirements.txt"})
    with reads.recording() as seen:
        assert memo.get(key) == ["finding"]
    assert seen == {"/outside/requirements.txt"}
    memo.put(key, ["finding"], {str(root / "train.py")})
    ws.overlay[str(root / "train.py")] = "changed"
    memo.start(ws)
    assert memo.get(key) is None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the kept parses need os.fork")
def test_the_pass_after_the_fixes_takes_the_unchanged_setups_from_the_memo(tmp_path, monkeypatch):
    root = _repository(tmp_path / "repo")
    made: list[checking.Reuse] = []
    original = checking.Reuse.__init__

    def kept(self):
        original(self)
        self.enabled = True  # other tests' threads turn it off (the language server's guard)
        made.append(self)

    monkeypatch.setattr(checking.Reuse, "MIN_BYTES", 0)
    monkeypatch.setattr(checking.Reuse, "__init__", kept)
    out = engine.fix_outcome([root], settings_for(root))
    assert out.fixed and made[0].children >= 2
    # README.md's launch line and args.yaml: their files are not fixed, their setups' findings
    # are the first pass's
    assert not {"README.md", "train_cli.py", "args.yaml"} & {Path(p).name for p in out.fixed}
    assert made[0].setups.entries and made[0].setups.hits >= 2


def test_a_document_reached_only_through_another_is_in_the_digest():
    """A script whose linked class lives in a module the setup does not list: the module's
    digest (its text, what linking set on it) is part of the setup's, through the script."""
    from trainlint.fixing.setup_memo import _Digest
    from trainlint.setup import Setup
    from trainlint.sources.python import parse_python

    def digest(module_text: str, linked: bool = False) -> str | None:
        script = parse_python("train.py", "from mod import MyTrainer\nMyTrainer(model=None)\n")
        module = parse_python("mod.py", module_text)
        script.external_defs["MyTrainer"] = (module, module.tree.body[-1])
        module.external_defs["Base"] = (script, script.tree.body[0])  # a cycle back to the script
        if linked:  # what linking sets on the module, its text the same
            module.local_classes["Other"] = ("trainer", "Trainer")
        texts = {"train.py": script.text, "mod.py": module.text}
        return _Digest(texts).setup(Setup(root=Path("."), scripts=[script], files=["train.py"]), ())

    a = digest("from transformers import Trainer\nclass MyTrainer(Trainer):\n    pass\n")
    b = digest("from transformers import Trainer\nclass MyTrainer(Trainer):\n    pass\n")
    c = digest("from transformers import Trainer\nclass MyTrainer(object):\n    pass\n")
    assert a is not None and a == b and c != a
    assert digest("from transformers import Trainer\nclass MyTrainer(Trainer):\n    pass\n", linked=True) != a


def test_every_attribute_the_python_reader_makes_is_known_to_the_digest():
    """A reader attribute the digest does not know is walked into every setup's digest (its
    scopes, calls and nodes): correct but slow (the index-on-first-use change renamed the
    index's attributes and made fix 10-14 % slower that way). Every attribute of an indexed
    file is either the reader's (``PYTHON_READ``/``PYTHON_CACHES``, skipped) or one linking
    and the rules fill (walked): a new attribute must be put in one of the two."""
    import ast

    from trainlint.fixing.setup_memo import PYTHON_CACHES, PYTHON_READ
    from trainlint.sources.python import PythonFile

    text = ("from transformers import Trainer, TrainingArguments\n"
            "args = TrainingArguments(output_dir='o', logging_steps=1)\n"
            "trainer = Trainer(model=m, args=args)\n"
            "trainer.train()\n")
    pf = PythonFile("t.py", text, ast.parse(text))
    pf.name_uses("args")  # the index walked, its lookups made
    _ = pf.nodes, pf.lines, pf.calls, pf.module_scope
    pf.source_of(pf.tree.body[1])
    filled_later = {"imports", "local_classes", "external_defs", "external_qualified", "external_args",
                    "args_calls", "trainer_calls"}
    unknown = set(vars(pf)) - PYTHON_READ - PYTHON_CACHES - filled_later
    assert not unknown, f"put these in PYTHON_READ (reader-made) or walk them: {sorted(unknown)}"
