"""Every rule's embedded cases: must-flag cases flag, must-not-flag cases stay silent, and each
expected fix produces exactly the expected text, parses, and is idempotent."""

from __future__ import annotations

import ast

import pytest
from helpers import commit_base, fix_folder, lint_folder, write_files

from trainlint.rules import all_rules

CASES = [(rule, i, case) for rule in all_rules() for i, case in enumerate(rule.cases)]


def test_every_checking_rule_has_flag_and_no_flag_cases():
    for rule in all_rules():
        if rule.produced_by_engine and rule.code in ("TL000", "TL002"):
            continue
        kinds = {c.flags for c in rule.cases}
        assert kinds == {True, False}, f"{rule.code} {rule.name} needs must-flag and must-not-flag cases"


@pytest.mark.parametrize("rule,index,case", CASES, ids=[f"{r.code}-{r.name}-{i}" for r, i, _ in CASES])
def test_case(rule, index, case, tmp_path):
    files = case.all_files()
    if case.git_base is not None:
        commit_base(tmp_path, case.git_base)
    write_files(tmp_path, files)
    rule_options = {rule.name: case.rule_options} if case.rule_options else None
    result = lint_folder(tmp_path, options=case.options, rule_options=rule_options)
    hits = [d for d in result.diagnostics if d.code == rule.code]
    internal = [d for d in result.diagnostics if d.code == "TL000"]
    assert not internal, internal
    if case.flags:
        assert hits, f"{rule.code} should flag:\n{files}"
        if case.severity:
            assert {d.severity.value for d in hits} == {case.severity}, hits
        if case.message:
            assert all(case.message in d.message for d in hits), hits
        if case.fixable is not None:
            assert all((d.fix is not None) == case.fixable for d in hits), hits
    else:
        assert not hits, f"{rule.code} should not flag:\n{files}\n{hits}"
    if case.fixed is not None:
        outcome = fix_folder(tmp_path, unsafe=case.unsafe, select=[rule.code], options=case.options,
                             rule_options=rule_options)
        target = str(tmp_path / case.fixed_path)
        got = outcome.fixed.get(target)
        assert got == case.fixed, f"fix result differs:\n{got}"
        if target.endswith(".py"):
            ast.parse(got)
        # idempotent: fixing the fixed files changes nothing more
        write_files(tmp_path, {case.fixed_path: got})
        again = fix_folder(tmp_path, unsafe=case.unsafe, select=[rule.code], options=case.options,
                           rule_options=rule_options)
        assert again.fixed == {}, again.fixed
