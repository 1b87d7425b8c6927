"""``fix`` keeps each file's parse across its passes (``checking.Reuse``): a group of linked
files whose texts a pass changed is read again with only its changed files parsed, and
checked in a forked child so that the kept documents are never linked or checked in place.
The outcome must be the one of the plain passes, which read and check everything afresh:
the same fixed texts, the same fixes applied, reverted and left outside, the same findings
remaining, and the same files written by ``fix --apply``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest
from helpers import run_cli, settings_for, write_files

import trainlint.checking as checking
import trainlint.engine as engine
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules.base import Rule
from trainlint.setup import Setup

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the kept parses need os.fork")

ROOT = Path(__file__).resolve().parent.parent


def _key(d: Diagnostic) -> tuple:
    fix = None if d.fix is None else (d.fix.applicability, tuple(
        (e.path, e.cell, e.line, e.column, e.end_line, e.end_column, e.content) for e in d.fix.edits))
    return (d.path, d.cell, d.line, d.column, d.end_line, d.end_column, d.code, d.name, d.message,
            d.severity.name, fix, tuple((r.path, r.line, r.message) for r in d.related))


def _summary(out: engine.FixOutcome) -> tuple:
    return (sorted(out.original.items()), sorted(out.fixed.items()), [_key(d) for d in out.applied],
            [(_key(d), e) for d, e in out.reverted], [_key(d) for d in out.remaining],
            [(_key(d), p) for d, p in out.outside])


def _both(monkeypatch, paths: list[Path], root: Path, unsafe: bool = False) -> tuple[tuple, tuple, int]:
    """(plain passes, passes with the kept parses, groups checked in a child)."""
    made: list[checking.Reuse] = []
    original = checking.Reuse.__init__

    def plain(self):
        original(self)
        self.enabled = False

    def kept(self):
        original(self)
        # threads other tests left behind turn the kept parses off (``Reuse``'s guard for a
        # language server); the mechanism is what is compared here
        self.enabled = hasattr(os, "fork")
        made.append(self)

    monkeypatch.setattr(checking.Reuse, "MIN_BYTES", 0)  # the small trees here too
    monkeypatch.setattr(checking.Reuse, "__init__", plain)
    a = engine.fix_outcome(paths, settings_for(root), unsafe=unsafe)
    monkeypatch.setattr(checking.Reuse, "__init__", kept)
    b = engine.fix_outcome(paths, settings_for(root), unsafe=unsafe)
    assert made and made[0].enabled
    return _summary(a), _summary(b), made[0].children


HELPERS = '''from transformers import TrainingArguments


def make_args(out):
    return TrainingArguments(output_dir=out, evaluation_strategy="steps", logging_steps=1,
                             report_to="all", save_steps=100, eval_steps=30,
                             load_best_model_at_end=True)
'''
TRAIN = '''from transformers import Trainer, AutoModelForCausalLM
from helpers import make_args
from mytrainers import MyTrainer

model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype="auto", use_auth_token=True)
trainer = MyTrainer(model=model, args=make_args("out"), tokenizer=None)
trainer.train()
'''
TRAINERS = '''from transformers import Trainer


class MyTrainer(Trainer):
    pass
'''
TRAIN_CLI = '''from transformers import HfArgumentParser, TrainingArguments, Trainer

parser = HfArgumentParser(TrainingArguments)
(args,) = parser.parse_args_into_dataclasses()
Trainer(model=None, args=args).train()
'''
RUN_SH = '''#!/bin/bash
accelerate launch --num_processes 2 train_cli.py --output_dir out --evaluation_strategy steps \\
    --logging_steps 1 --report_to all --deepspeed ds.json
'''
DS = '''{
  "train_batch_size": "auto",
  "fp16": {"enabled": true},
  "bf16": {"enabled": true},
  "zero_optimization": {"stage": 2}
}
'''
ARGS_YAML = '''output_dir: out
evaluation_strategy: steps
logging_steps: 1
report_to: all
'''
README = '''# Training

```bash
python train_cli.py args.yaml
bash run.sh
```
'''


def _repository(root: Path) -> Path:
    write_files(root, {"pyproject.toml": '[project]\nname = "demo"\ndependencies = ["transformers==4.46.0"]\n',
                       "helpers.py": HELPERS, "train.py": TRAIN, "mytrainers.py": TRAINERS,
                       "train_cli.py": TRAIN_CLI, "run.sh": RUN_SH, "ds.json": DS, "args.yaml": ARGS_YAML,
                       "README.md": README, "unrelated.py": "import os\nprint(os.getcwd())\n"})
    return root


def test_kept_parses_give_the_plain_passes_outcome_on_a_linked_repository(tmp_path, monkeypatch):
    root = _repository(tmp_path / "repo")
    for unsafe in (False, True):
        plain, kept, children = _both(monkeypatch, [root], root, unsafe)
        assert kept == plain
        assert plain[1], "the tree must have fixes, or the comparison shows nothing"
        assert children >= 2  # the first pass and the pass after the fixes ran in a child


def test_kept_parses_give_the_plain_passes_outcome_on_the_examples(tmp_path, monkeypatch):
    root = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", root)
    for unsafe in (False, True):
        plain, kept, _ = _both(monkeypatch, [root], root, unsafe)
        assert kept == plain


class _Step(Rule):
    """Each pass's fix makes the next finding: ``logging_steps=N`` (N < 4) becomes N + 1, so
    the file is right only after three passes (a fix that creates a new fixable finding)."""

    code = "TL196"
    name = "test-step"
    severity = Severity.WARNING
    summary = "test"
    fix_safety = "safe"

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for site in setup.sites:
            v = site.values.get("logging_steps")
            if v is not None and v.span is not None and isinstance(v.value, int) and v.value < 4:
                yield self.diagnostic(v.span, f"logging_steps={v.value}", edits=[v.span.edit(str(v.value + 1))])


def test_kept_parses_follow_the_fixed_point_loop(tmp_path, monkeypatch):
    from trainlint.rules.args.logging_steps import LoggingStepsTooLow

    monkeypatch.setattr(checking, "make_rules", lambda settings: [_Step(settings), LoggingStepsTooLow(settings)])
    root = _repository(tmp_path / "repo")
    plain, kept, children = _both(monkeypatch, [root], root)
    assert kept == plain
    fixed = dict(plain[1])
    assert "logging_steps=4" in fixed[str(root / "helpers.py")]
    assert children >= 4  # passes 1 to 4, each on a changed group


class _Unbase(Rule):
    """A fix in one module that changes what another, unchanged, module links to: the
    repository's ``MyTrainer`` stops being a Trainer subclass. A pass that kept the unchanged
    script's document as the last pass linked it (its repository classes) would still see a
    Trainer there; a fresh read does not."""

    code = "TL195"
    name = "test-unbase"
    severity = Severity.WARNING
    summary = "test"
    fix_safety = "safe"

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        import ast

        for pf in setup.scripts:
            for other, cd in pf.external_defs.values():
                for base in cd.bases:
                    if isinstance(base, ast.Name) and base.id == "Trainer":
                        span = other.span(base)
                        yield self.diagnostic(span, "unbase", edits=[span.edit("object")])


class _Trainers(Rule):
    """Reports every Trainer construction of a script (no fix)."""

    code = "TL194"
    name = "test-trainers"
    severity = Severity.WARNING
    summary = "test"

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf in setup.scripts:
            for tc in pf.trainer_calls:
                yield self.diagnostic(pf.span(tc.site.node), f"a {tc.class_name}")


def test_kept_parses_see_a_change_in_what_an_unchanged_file_links_to(tmp_path, monkeypatch):
    monkeypatch.setattr(checking, "make_rules", lambda settings: [_Unbase(settings), _Trainers(settings)])
    root = _repository(tmp_path / "repo")
    plain, kept, children = _both(monkeypatch, [root], root)
    assert kept == plain
    assert list(dict(plain[1])) == [str(root / "mytrainers.py")]  # train.py is unchanged
    assert "MyTrainer(object)" in dict(plain[1])[str(root / "mytrainers.py")]
    # the first pass sees the MyTrainer call of train.py; after the fix it is no Trainer
    first = engine.fix_outcome([root], settings_for(root)).first
    assert any(d.code == "TL194" and d.path.endswith("train.py") for d in first.diagnostics)
    assert not any(d[6] == "TL194" and d[0].endswith("train.py") for d in plain[4])
    assert children >= 2


_PLAIN = """
import sys
import trainlint.checking as checking
original = checking.Reuse.__init__
def plain(self):
    original(self)
    self.enabled = False
checking.Reuse.__init__ = plain
from trainlint.cli import entry
sys.argv = ["trainlint", *sys.argv[1:]]
entry()
"""


def _plain_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``trainlint ARGS`` with the plain passes (every file read and checked afresh)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", _PLAIN, *args], capture_output=True, text=True, cwd=cwd, env=env)


def test_fix_apply_writes_the_same_files_with_and_without_kept_parses(tmp_path):
    """Through the installed command (a real process, the default threshold): a group of
    linked files above ``Reuse.MIN_BYTES``, so the command keeps its parses."""
    trees = []
    for name in ("plain", "kept"):
        root = _repository(tmp_path / name)
        filler = "".join(f"def helper_{i}(x):\n    return x * {i}\n\n" for i in range(3000))  # > 64 KB
        (root / "utils.py").write_text("from helpers import make_args\n" + filler)
        trees.append(root)
    args = ["fix", "--apply", "--unsafe-fixes", "."]
    plain = _plain_cli(args, trees[0])
    kept = run_cli(*args, cwd=trees[1])
    assert (plain.returncode, plain.stdout, plain.stderr) == (kept.returncode, kept.stdout, kept.stderr)
    texts = [{str(p.relative_to(t)): p.read_text() for p in sorted(t.rglob("*")) if p.is_file()} for t in trees]
    assert texts[0] == texts[1]
    assert texts[0]["helpers.py"] != HELPERS  # something was fixed
