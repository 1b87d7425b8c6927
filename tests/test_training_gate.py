"""``Rule.needs_training``: a rule that reports only through a setup's training calls is not run
on a setup without one (a library module, a test that imports transformers), and skipping it
changes no finding."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import REPO_ROOT, write_files

from trainlint import checking
from trainlint.config import Settings, load_settings
from trainlint.diagnostics import Severity
from trainlint.engine import lint
from trainlint.rules.base import Rule
from trainlint.setup import ArgsSite, Setup
from trainlint.sources.python import parse_python

_MODULE = "from transformers import PreTrainedModel\n\ndef helper(model):\n    return model.config\n"
_ARGS = "from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o')\n"
_TRAINER = "from transformers import Trainer\nTrainer(model=model, args=args)\n"


class _Probe(Rule):
    """Reports once on every setup it is run on (and counts them)."""

    code = "TL999"
    name = "probe"
    severity = Severity.WARNING
    summary = "probe"
    runs = 0

    def check(self, setup):
        type(self).runs += 1
        yield self.diagnostic(_span(setup), "probe")


class _TrainingProbe(_Probe):
    code = "TL998"
    needs_training = True


def _span(setup):
    from trainlint.diagnostics import Span

    return Span(path=str(setup.files[0]), line=1, column=1, end_line=1, end_column=2)


def _script_setup(text: str) -> Setup:
    pf = parse_python("train.py", text)
    return Setup(root=Path("."), scripts=[pf], sites=pf.sites, files=["train.py"])


def _codes(setup: Setup) -> list[str]:
    _Probe.runs = _TrainingProbe.runs = 0
    settings = Settings()
    rules = [_Probe(settings), _TrainingProbe(settings)]
    return sorted(d.code for d in checking._check_setup(setup, rules))


def test_a_needs_training_rule_is_not_run_on_a_setup_without_a_training_call():
    assert _codes(_script_setup(_MODULE)) == ["TL999"]
    assert _TrainingProbe.runs == 0 and _Probe.runs == 1


@pytest.mark.parametrize("setup", [
    pytest.param(lambda: _script_setup(_ARGS), id="TrainingArguments call"),
    pytest.param(lambda: _script_setup(_TRAINER), id="Trainer call alone"),
    pytest.param(lambda: Setup(root=Path("."), sites=[ArgsSite(path="run.sh", class_name="TrainingArguments")],
                               files=["run.sh"]), id="launch-line site without a script"),
])
def test_a_needs_training_rule_runs_and_reports_on_each_kind_of_training_call(setup):
    assert _codes(setup()) == ["TL998", "TL999"]
    assert _TrainingProbe.runs == 1


def test_a_setup_answers_once_whatever_the_number_of_rules(monkeypatch):
    asked = []
    real = checking._has_training_call
    monkeypatch.setattr(checking, "_has_training_call", lambda s: asked.append(s) or real(s))
    settings = Settings()
    rules = [_TrainingProbe(settings) for _ in range(5)]
    assert checking._check_setup(_script_setup(_MODULE), rules) == []
    assert len(asked) == 1


def test_declared_rules_are_rules_that_reach_their_findings_through_training_calls():
    """The attribute is declared where it belongs (a config or launch-line rule keeps False)."""
    from trainlint.rules import all_rules

    declared = {r.code for r in all_rules() if r.needs_training}
    assert {"TL101", "TL110", "TL201", "TL601", "TL301"} <= declared
    # configs, launch lines, requirements, imports, model loads alone: never
    assert not declared & {"TL124", "TL133", "TL306", "TL311", "TL319", "TL415", "TL418", "TL508", "TL550",
                           "TL607", "TL608", "TL611", "TL612", "TL613"}


# -- the gate changes no finding ---------------------------------------------------------


def _case_tree(root: Path) -> None:
    """Every rule's embedded cases, each in a folder of its own: one tree of hundreds of small
    setups, with and without training calls, configs and launch lines."""
    from trainlint.rules import all_rules

    for rule in all_rules():
        for i, case in enumerate(rule.cases):
            write_files(root / "cases" / f"{rule.code}_{i}", case.all_files())


def _dump(result) -> str:
    return json.dumps([d.to_json() for d in result.diagnostics], indent=0)


def _tree(tmp_path: Path) -> Path:
    import shutil

    from test_ecosystem import _mixed_project
    from test_pipeline import repository_tree

    root = tmp_path / "repo"
    repository_tree(root)
    _mixed_project(root / "mixed", n=20)
    shutil.copytree(REPO_ROOT / "examples", root / "examples_dir")
    _case_tree(root)
    return root


@pytest.mark.parametrize("options", [{}, {"gpu": "A100"}], ids=["no gpu", "A100"])
def test_the_gate_changes_no_finding_over_repository_shaped_trees(tmp_path, monkeypatch, options):
    """The whole rule set over repository-shaped trees (the pipeline's and the scheduler test's
    trees, the examples, every rule case in a folder of its own), with the gate and with every
    rule run on every setup: the same findings, and the gate spared runs."""
    root = _tree(tmp_path)
    monkeypatch.chdir(root)
    settings = load_settings(root, options)
    real = checking._has_training_call
    without: list[object] = []

    def counted(setup):
        found = real(setup)
        if not found:
            without.append(setup)
        return found

    monkeypatch.setattr(checking, "_has_training_call", counted)
    gated = lint([Path(".")], settings, jobs=1)
    assert len(without) > 50, len(without)  # setups the gate skipped rules on
    monkeypatch.setattr(checking, "_has_training_call", lambda setup: True)
    plain = lint([Path(".")], settings, jobs=1)
    assert _dump(gated) == _dump(plain)
    from trainlint.rules import all_rules

    declared = {r.code for r in all_rules() if r.needs_training}
    reported = {d.code for d in gated.diagnostics}
    assert len(reported & declared) > 30, sorted(reported & declared)  # the comparison covers them
    assert os.path.isdir(root / "cases")
