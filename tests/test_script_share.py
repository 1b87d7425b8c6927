"""Per-script rules (``ScriptRule``) and the sharing of their findings across the setups of a
workspace (``checking.ScriptShare``): a setup gets the findings of an earlier one only when it
holds the same script and answers every question the rule asked of the setup (``Facts``) the
same; the findings are then the ones the rule reports on the setup on its own."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from helpers import settings_for, write_files

from trainlint.checking import RuleSet, ScriptShare, _check_setup
from trainlint.resolve import build_setups, workspace_context
from trainlint.rules import all_rules
from trainlint.rules.base import Facts, ScriptRule, plain, same
from trainlint.setup import OPTION, Setup, Value
from trainlint.workspace import Workspace, read_entry

SCRIPT_RULES = [r for r in all_rules() if issubclass(r, ScriptRule)]


def test_there_are_script_rules():
    codes = {r.code for r in SCRIPT_RULES}
    assert {"TL611", "TL609", "TL133", "TL136", "TL101", "TL119"} <= codes


@pytest.mark.parametrize("rule", SCRIPT_RULES, ids=lambda r: r.code)
def test_a_script_rule_never_holds_the_setup(rule):
    """By construction: ``check`` is ScriptRule's (the loop over the scripts), and no method
    of the rule takes the setup; it knows the setup only through ``Facts.ask``."""
    assert rule.check is ScriptRule.check
    for name, fn in vars(rule).items():
        if inspect.isfunction(fn):
            assert "setup" not in inspect.signature(fn).parameters, f"{rule.code}.{name} takes the setup"
    assert "facts._" not in inspect.getsource(rule)


def _setups(root: Path, files: dict[str, str], monkeypatch, **kw) -> tuple[list[Setup], list, object]:
    write_files(root, files)
    monkeypatch.chdir(root)
    settings = settings_for(root, **kw)
    ws = Workspace(settings=settings, overlay={})
    for rel in files:
        read_entry(ws, rel, True)
    setups = build_setups(ws, settings, workspace_context(ws, settings))
    rules = RuleSet(settings)
    return setups, rules, ws


def _variant(setup: Setup, tf: str | None = None, trl: str | None = None, files: list[str] | None = None) -> Setup:
    """The same scripts in another setup: other target versions, other files beside them."""
    def version(v: Value | None, text: str | None, name: str) -> Value | None:
        return v if text is None else Value(value=text, origin=OPTION, name=name, note="--" + name)

    return Setup(root=setup.root, scripts=setup.scripts, sites=setup.all_sites, world_size=setup.world_size,
                 gpu=setup.gpu, files=list(setup.files) + (files or []),
                 extra={k: v for k, v in setup.extra.items() if not k.startswith("_")},
                 transformers_version=version(setup.transformers_version, tf, "transformers-version"),
                 trl_version=version(setup.trl_version, trl, "trl-version"), versions=dict(setup.versions))


def _plain_run(setup: Setup, rules: list) -> list:
    return [d.to_json() for d in _check_setup(_variant(setup), rules)]


def _shared_run(setups: list[Setup], rules: list) -> list[list]:
    share = ScriptShare()
    return [[d.to_json() for d in _check_setup(s, rules, share)] for s in setups], share


# A module that every setup holds (a trainer module the tests import), whose findings depend on
# the target: AdamW left transformers' top level in 5.0 (TL611), gradient_checkpointing_enable's
# old spelling is judged against the target's model API (TL609).
_FILES = {
    "train.py": "from transformers import AdamW, Trainer, TrainingArguments\n"
                "model = load()\nmodel.to('cuda')\n"
                "trainer = Trainer(model=model, args=TrainingArguments(output_dir='o'))\ntrainer.train()\n",
}


def test_setups_with_other_answers_get_their_own_findings(tmp_path, monkeypatch):
    setups, rule_set, _ = _setups(tmp_path, _FILES, monkeypatch, select=["TL611", "TL101"])
    (setup,) = setups
    rules = [rule_set._rule(e) for e in rule_set.entries]
    old, new = _variant(setup, tf="4.49.0"), _variant(setup, tf="5.24.0")
    order = [new, old, new, old, _variant(setup, tf="5.24.0"), _variant(setup, tf="4.49.0")]
    shared, share = _shared_run(order, rules)
    assert shared == [_plain_run(s, rules) for s in order]
    assert shared[0] != shared[1], "the target decides TL611 here: the test must tell the setups apart"
    assert any(d["code"] == "TL611" for d in shared[0]) and not any(d["code"] == "TL611" for d in shared[1])
    assert share.hits >= 4  # the later setups took what the earlier ones with the same answers found

    # the control: a share that ignored the answers would hand the 5.24 findings to 4.49
    monkeypatch.setattr(Facts, "agrees", lambda self, log: True)
    wrong, _ = _shared_run(order, rules)
    assert wrong != [_plain_run(s, rules) for s in order]


def test_an_answer_that_is_not_plain_is_never_shared(tmp_path, monkeypatch):
    setups, _, _ = _setups(tmp_path, {"train.py": "x = 1\n"}, monkeypatch)
    (setup,) = setups
    seen = []

    class Probe(ScriptRule):
        code, name = "TL999", "probe"

        def check_script(self, pf, facts):
            seen.append(facts.ask(lambda s: s.scripts))  # a list: not plain
            return ()

    probe = Probe(settings_for(tmp_path))
    share = ScriptShare()
    for s in (setup, _variant(setup), _variant(setup)):
        _check_setup(s, [probe], share)
    assert len(seen) == 3 and share.hits == 0


def test_plain_and_same():
    assert plain(("a", 1, None, (2.0, b"x"), frozenset({"x"})))
    assert not plain([1]) and not plain({"a": 1}) and not plain((1, [2])) and not plain(object())
    assert same(("4.49.0", "installed"), ("4.49.0", "installed"))
    assert not same(1, True) and not same(1, 1.0) and not same((1,), (True,))
    assert not same(frozenset({1}), frozenset({True}))


@pytest.mark.parametrize("rule", SCRIPT_RULES, ids=lambda r: r.code)
def test_every_case_shared_across_variants_gives_the_plain_findings(rule, tmp_path, monkeypatch):
    """Each case of each per-script rule: its setups, and the same scripts under other target
    versions and beside a launcher that installs an old transformers, checked through one
    share in an order that mixes them, give what each setup gives on its own."""
    for i, case in enumerate(rule.cases):
        root = tmp_path / str(i)
        root.mkdir()
        files = case.all_files()
        setups, rule_set, _ = _setups(root, files, monkeypatch, select=[rule.code], options=case.options)
        monkeypatch.chdir(root)
        (root / "old.sh").write_text("pip install transformers==4.40.0\npython train.py\n")
        rules = [rule_set._rule(e) for e in rule_set.entries]
        for setup in setups:
            variants = [_variant(setup), _variant(setup, tf="4.46.0", trl="0.12.0"), _variant(setup),
                        _variant(setup, files=["old.sh"]), _variant(setup, tf="5.24.0")]
            mixed = [variants[k] for k in (0, 1, 2, 3, 0, 4, 1, 3)]
            shared, _ = _shared_run(mixed, rules)
            assert shared == [_plain_run(s, rules) for s in mixed], (rule.code, i)


def test_kept_answers_live_for_one_check_and_note_what_they_read():
    from trainlint import reads

    calls = []

    def compute():
        calls.append(1)
        reads.note("/project/requirements.txt")
        return ("4.46.0", "requirements.txt")

    assert reads.kept("k", compute) == ("4.46.0", "requirements.txt") and len(calls) == 1
    assert reads.kept("k", compute) and len(calls) == 2  # no scope: computed each time
    with reads.one_check():
        reads.kept("k", compute)
        with reads.recording() as seen:
            assert reads.kept("k", compute) == ("4.46.0", "requirements.txt")
        assert len(calls) == 3  # kept within the check
        assert seen == {"/project/requirements.txt"}  # a hit notes what the first call read
    with reads.one_check():
        reads.kept("k", compute)
    assert len(calls) == 4  # a new check asks again
