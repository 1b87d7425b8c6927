"""The rule index's words (``Rule.fires_on``): a one-file run imports only the rules whose
triggers and words occur in the setup's files, and that selection must never change a finding.

- every case of every rule, and the examples, give the same findings with the index-driven
  selection as with every selected rule imported and run;
- each rule's words are necessary on its must-flag cases: renamed everywhere in the case's
  files (identifiers and ``--flag-forms``), the rule no longer reports, with every rule run;
- the index holds the words the rule classes declare (``tests/test_pipeline.py`` keeps the whole
  index in step).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import commit_base, lint_folder, write_files

from trainlint.rule_index import can_trigger, lookup, words_of
from trainlint.rules import all_rules

REPO_ROOT = Path(__file__).resolve().parent.parent
CASES = [(rule, i, case) for rule in all_rules() for i, case in enumerate(rule.cases)]
WORDED = [(rule, i, case) for rule, i, case in CASES if rule.fires_on and case.flags]


def _every_rule(monkeypatch) -> None:
    """Make runs import and run every selected rule, whatever the files hold."""
    import trainlint.checking as checking

    def make(settings):
        rs = checking.RuleSet(settings)
        return [rs._rule(e) for e in rs.entries]

    monkeypatch.setattr(checking, "make_rules", make)


def _findings(root: Path, case) -> list[dict]:
    rule_options = None
    if case is not None and case.rule_options:
        rule_options = {r.name: case.rule_options for r in all_rules() if case in r.cases}
    result = lint_folder(root, options=case.options if case is not None else None, rule_options=rule_options)
    return [d.to_json() for d in result.diagnostics]


def _write(root: Path, case) -> None:
    if case.git_base is not None:
        commit_base(root, case.git_base)
    write_files(root, case.all_files())


def test_index_selection_changes_no_finding_on_the_cases(tmp_path, monkeypatch):
    """All 900-odd cases (must-flag and must-not-flag, every rule's findings on them)."""
    differ = []
    for rule, i, case in CASES:
        root = tmp_path / f"{rule.code}-{i}"
        root.mkdir()
        _write(root, case)
        indexed = _findings(root, case)
        with monkeypatch.context() as m:
            _every_rule(m)
            every = _findings(root, case)
        if indexed != every:
            missing = [d for d in every if d not in indexed]
            differ.append(f"{rule.code} case {i}: the index path misses {missing}")
    assert not differ, "\n".join(differ)


@pytest.mark.parametrize("name", ["bert_imdb", "flan_t5_multigpu", "glue_cli", "verify_demo"])
def test_index_selection_changes_no_finding_on_the_examples(name, monkeypatch):
    root = REPO_ROOT / "examples" / name
    indexed = _findings(root, None)
    _every_rule(monkeypatch)
    assert _findings(root, None) == indexed


def _renamed(text: str, words: tuple[str, ...]) -> str:
    """Every spelling of ``words`` that ``words_of`` reads as one (``logging_steps``,
    ``logging-steps``, ``no_logging_steps``) made another name."""
    for w in sorted(words, key=len, reverse=True):
        for form in {w, w.replace("_", "-")}:
            text = re.sub(rf"(?<![A-Za-z0-9_])((?:no[_-])?){re.escape(form)}(?![A-Za-z0-9_])", rf"\g<1>{form}Q", text)
    return text


@pytest.mark.parametrize("rule,index,case", WORDED, ids=[f"{r.code}-{r.name}-{i}" for r, i, _ in WORDED])
def test_words_are_necessary(rule, index, case, tmp_path, monkeypatch):
    """A must-flag case with each of the rule's words renamed (``logging_steps`` ->
    ``logging_stepsQ``) in every file no longer flags, with every rule run: the rule cannot
    report on a setup that holds none of its words, so skipping it there loses nothing."""
    _every_rule(monkeypatch)
    files = {p: _renamed(t, rule.fires_on) for p, t in case.all_files().items()}
    assert files != case.all_files(), f"{rule.code}: no word of {rule.fires_on} in the case"
    if case.git_base is not None:
        commit_base(tmp_path, {p: _renamed(t, rule.fires_on) for p, t in case.git_base.items()})
    write_files(tmp_path, files)
    rule_options = {rule.name: case.rule_options} if case.rule_options else None
    result = lint_folder(tmp_path, options=case.options, rule_options=rule_options)
    hits = [d for d in result.diagnostics if d.code == rule.code]
    assert not hits, f"{rule.code} reports without any of {rule.fires_on}:\n{files}\n{hits}"


def test_index_holds_the_declared_words():
    for rule in all_rules():
        entry = lookup(rule.code)
        assert entry["fires_on"] == (None if rule.fires_on is None else sorted(set(rule.fires_on))), rule.code
        if rule.fires_on is not None:
            assert rule.fires_on and all(w.isidentifier() for w in rule.fires_on), rule.code


def test_words_of_reads_flags_with_hyphens():
    assert {"logging_steps", "python", "train"} <= words_of("python train.py --logging-steps 1\n")
    assert "dataloader_pin_memory" in words_of("torchrun train.py --no_dataloader_pin_memory")
    assert "logging_steps" in words_of("args = TrainingArguments(logging_steps=1)")
    entry = {"code": "TLX", "triggers": ["TrainingArguments"], "fires_on": ["logging_steps"], "words": None}
    assert can_trigger(entry, {"TrainingArguments"}, lambda: words_of("TrainingArguments(logging_steps=1)"))
    assert not can_trigger(entry, {"TrainingArguments"}, lambda: words_of("TrainingArguments(eval_steps=1)"))
    assert not can_trigger(entry, set(), lambda: words_of("logging_steps"))


def test_a_rule_is_imported_only_when_its_word_occurs(tmp_path):
    from trainlint.checking import RuleSet
    from trainlint.config import Settings
    from trainlint.workspace import Workspace, read_file

    def codes(text: str) -> set[str]:
        (tmp_path / "train.py").write_text(text)
        ws = Workspace(settings=Settings(), overlay={})
        read_file(ws, str(tmp_path / "train.py"), True)
        return {r.code for r in RuleSet(Settings()).for_workspace(ws)}

    plain = codes("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o')\n")
    assert "TL201" not in plain and "TL224" in plain  # TL224 reports an absent save_total_limit
    assert "TL201" in codes("from transformers import TrainingArguments\n"
                            "args = TrainingArguments(output_dir='o', logging_steps=1)\n")
    assert "TL201" in codes("from transformers import HfArgumentParser, TrainingArguments\n"
                            "p = HfArgumentParser(TrainingArguments)\n"
                            "(a,) = p.parse_args_into_dataclasses(['--output-dir', 'o', '--logging-steps', '1'])\n")


def test_trigger_names_found_as_substring_search_finds_them():
    """``TriggerNames.found_in`` (a name looked for only where a shorter name or gate it holds
    is) gives the names a plain substring search gives, on the rules' trigger names and
    random texts made of them, their pieces and noise."""
    import random

    from trainlint.checking import RuleSet, TriggerNames
    from trainlint.config import Settings

    names = RuleSet(Settings())._trigger_names().names
    assert {"Trainer", "SFTConfig", "TrainingArguments", "Seq2SeqTrainingArguments"} <= names
    pieces = sorted(names) + ["Config", "Train", "ing", "Arguments", "Seq2Seq", "SFT", "_", " ", "\n", "x"]
    rng = random.Random(7)
    for extra in (set(), {"ab", "abc", "b"}):
        tn = TriggerNames(set(names) | extra)
        for _ in range(2000):
            text = "".join(rng.choice(pieces + sorted(extra)) for _ in range(rng.randint(0, 12)))
            assert tn.found_in(text) == {n for n in tn.names if n in text}, text


def test_held_names_answer_as_substring_search_does():
    """``TriggerNames.held`` (each name searched on its first question, in any order; the names
    that end with a gate found together from the gate's occurrences) holds exactly the names a
    plain substring search finds, and ``holds_any`` agrees with it."""
    import random

    from trainlint.checking import RuleSet, TriggerNames
    from trainlint.config import Settings

    names = RuleSet(Settings())._trigger_names().names
    pieces = sorted(names) + ["Config", "Train", "ing", "Arguments", "Seq2Seq", "SFT", "DPO", "Online", "er",
                              "_", " ", "\n", "x"]
    rng = random.Random(11)
    for extra in (set(), {"ab", "abc", "b", "aConfig", "Configx", "xTrainer"}):
        tn = TriggerNames(set(names) | extra)
        every = sorted(tn.names)
        # sets of which some hold others (as the rules' triggers do): answered through the smaller
        base = tuple(rng.sample(every, 6))
        orders = [base, base[:3], base + tuple(rng.sample(every, 2)), tuple(rng.sample(every, 4))]
        tn.plan_orders(orders)
        for _ in range(3000):
            text = "".join(rng.choice(pieces + sorted(extra)) for _ in range(rng.randint(0, 12)))
            held = tn.held(text)
            asked = rng.sample(every, len(every))
            some = tuple(rng.sample(every, 3))
            assert held.holds_any(some) == any(n in text for n in some), (text, some)
            for order in rng.sample(orders, len(orders)):
                assert held.holds_any(order) == any(n in text for n in order), (text, order)
            assert {n for n in asked if held.holds(n)} == {n for n in every if n in text}, text


def test_holds_identifier_is_membership_in_identifiers():
    """``holds_identifier`` (one word searched for) answers ``word in identifiers(text)``:
    on random texts of name characters, digits, non-ASCII letters and separators, and words
    that are no identifier (a digit first, a dash, empty)."""
    import random

    from trainlint.rule_index import holds_identifier, identifiers

    rng = random.Random(11)
    alphabet = "ab1_ é.\n9-"
    words = ["a", "b", "ab", "a1", "_a", "1a", "a-b", "", "ba_", "é"]
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        for word in words:
            assert holds_identifier(text, word) == (word in identifiers(text)), (text, word)


def test_hyphenated_is_the_patterns_findall():
    """``hyphenated`` (linear) gives what the pattern it stands for gives (``findall`` of
    ``[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)+``): on random texts of letters, digits,
    underscores, dashes, non-ASCII letters and separators, and on runs that start with digits
    or with pieces of digits only (``12-ab-cd`` gives ``ab-cd``; ``1-2`` nothing)."""
    import random

    from trainlint.rule_index import hyphenated

    pattern = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)+")
    fixed = ["12-ab-cd", "1-2", "1a-b", "x-12a-b", "a--b-c", "-a-b-", "éab-c", "--logging-steps 1", "a-b c-d"]
    rng = random.Random(5)
    alphabet = "ab_Z19-- é.\n"
    texts = fixed + ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(30000)]
    for text in texts:
        assert hyphenated(text) == pattern.findall(text), text
    assert hyphenated("12-ab-cd") == ["ab-cd"] and hyphenated("1-2") == []


def test_prefilter_wanted_is_its_definition():
    """``Prefilter.wanted`` (the names ending in ``Config`` asked in one scan, a few words each
    searched for) gives what its definition gives: one of ``names`` as a substring, or a
    worded trigger as a substring with one of its rule's words among the text's identifiers."""
    import random

    from trainlint.config import Settings
    from trainlint.rule_index import identifiers, prefilter, rule_words

    found = prefilter(Settings())
    assert found.names is not None and any(n.endswith("Config") for n in found.names) and found.worded

    def defined(text: str) -> bool:
        if any(n in text for n in found.names):
            return True
        tokens = identifiers(text)
        return any(trigger in text and not rule_words(code, trigger).isdisjoint(tokens)
                   for trigger, codes in found.worded for code in codes)

    words = sorted({w for t, codes in found.worded for c in codes for w in list(rule_words(c, t))[:5]})
    pieces = list(found.names) + [t for t, _ in found.worded] + words + [
        "Config", "SFT", "DPO", "Bits", "And", "Bytes", "1", "_", " ", ".", "\n", "x", "é"]
    rng = random.Random(5)
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        assert found.wanted(text) == defined(text), text
