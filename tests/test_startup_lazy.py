"""Start-up (issue 18, eighth session): what a one-file check no longer imports or compiles
(patterns compiled on first use, the commands besides ``check`` defined when they run, stdlib
modules only some paths need), and the hand-written scans that replace patterns on its path
answer as the patterns do."""

from __future__ import annotations

import random
import re

import pytest

from trainlint.lazyre import lazy

from helpers import REPO_ROOT, lint_folder, probe_one_file_check, run_cli, write_files

# patterns of the modules a one-file check imports that only other paths use (a walk of many
# files, a fix, another file kind, a finding's fix text): never compiled by that check
UNUSED_ON_ONE_FILE = {
    "trainlint.partition": ["_FILE_NAME", "_MARK", "_NAME_AT", "_MODULE_AT", "_RUN_REST", "_UP_TO_LAST_GAP",
                            "_NAME_RUN", "_PLAIN_NAME"],
    "trainlint.sources.pruning": ["_LINE_END", "_CUT", "_WORD"],
    "trainlint.sources.python": ["_AST_LINE"],
    "trainlint.config": ["_VERSION"],
    "trainlint.linking": ["_LEADING_VARS"],
    "trainlint.resolve": ["_WHERE"],
    "trainlint.knowledge.versions": ["_DIST"],
    "trainlint.knowledge.training_args": ["_VERSION_RE"],
    "trainlint.rules._context": ["_TEST_NAME"],
}


def _probe(path, cwd) -> tuple[set[str], set[str]]:
    """(modules in sys.modules, ``module.NAME`` of the lazy patterns compiled) after a one-file check."""
    found = probe_one_file_check(path, cwd, (
        "from trainlint.lazyre import lazy\n"
        "done = [f'{m}.{k}' for m, mod in list(sys.modules.items()) if m.startswith('trainlint')\n"
        "        for k, v in vars(mod).items() if isinstance(v, lazy) and '_compiled' in vars(v)]\n"
        "print('MODS=' + ','.join(sorted(sys.modules)), file=sys.stderr)\n"
        "print('DONE=' + ','.join(sorted(done)), file=sys.stderr)\n"))
    assert set(found) >= {"MODS", "DONE"}, found
    return set(found["MODS"].split(",")), set(filter(None, found["DONE"].split(",")))


def test_one_file_check_leaves_out_what_it_does_not_need():
    mods, compiled = _probe(REPO_ROOT / "examples" / "bert_imdb" / "train.py", REPO_ROOT)
    assert "trainlint.checking" in mods  # the check ran
    # the other commands, and stdlib modules only a near miss or the rule discovery use
    assert not {"trainlint.cli_commands", "difflib", "pkgutil"} & mods
    for module, names in UNUSED_ON_ONE_FILE.items():
        assert module in mods, module
        assert not {f"{module}.{n}" for n in names} & compiled


def test_the_other_commands_are_there():
    out = run_cli("--help")
    for name in ("check", "fix", "rules", "gpus", "rule"):
        assert re.search(rf"^\s+{name}\s", out.stdout, re.M), out.stdout
    assert "Fix what can be fixed" in run_cli("fix", "--help").stdout
    assert run_cli("rule", "TL201").stdout.startswith("# logging-steps-too-low (TL201)")
    assert "TL201" in run_cli("rules").stdout and "A100" in run_cli("gpus").stdout


def test_lazy_pattern_is_the_compiled_pattern():
    text = "a1 b22 c333 --x-y no_z"
    for pattern, flags in [(r"[a-z](\d+)", 0), (r"^(?P<w>\w+)", re.M), (r"NO_(\w+)", re.I), (rb"\d+", 0)]:
        lz, rx = lazy(pattern, flags), re.compile(pattern, flags)
        data = text.encode() if isinstance(pattern, bytes) else text
        assert "_compiled" not in vars(lz)
        assert lz.pattern == rx.pattern and lz.flags == rx.flags and lz.groups == rx.groups
        assert lz.groupindex == rx.groupindex
        assert "_compiled" in vars(lz)
        assert [m.span() for m in lz.finditer(data, 2, 15)] == [m.span() for m in rx.finditer(data, 2, 15)]
        assert lz.findall(data) == rx.findall(data)
        assert (lz.search(data) or None) == (rx.search(data) or None) or lz.search(data).span() == rx.search(data).span()
        sub = b"-" if isinstance(pattern, bytes) else "-"
        assert lz.sub(sub, data) == rx.sub(sub, data) and lz.split(data) == rx.split(data)
        assert lz.compiled() is lz.compiled()
    with pytest.raises(re.error):
        lazy("(").search("x")  # a bad pattern fails where it is used, as re.compile would there


def test_requirement_line_scan_answers_as_the_pattern():
    from trainlint.knowledge.versions import _line_of, _requirement_at, _requirement_pattern

    rnd = random.Random(18)
    pieces = ["transformers", "Transformers", "TRL", "trl", "peft", " ", "\t", '"', "'", "=", ">", "<", "[", "]",
              "~", "^", "!", "a", "-", "_", ".", "x", "#", "\x1f"]
    for _ in range(40_000):
        line = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 9)))
        for package in ("transformers", "trl"):
            assert _requirement_at(line.lower(), package) == bool(_requirement_pattern(package).search(line)), \
                (line, package)
    text = 'name = "x"\ndependencies = [\n  "torch",\n  "Transformers >= 4.40",\n]\n'
    assert _line_of(text, "transformers") == 4 and _line_of(text, "trl") == 1
    # a line that is not ASCII goes to the pattern (re.IGNORECASE folds 'ſ' to 's')
    assert _line_of('a = 1\n"tranſformers>=4.40"\n', "transformers") == 2
    assert _line_of('"transformers>=4.40" # é\n', "transformers") == 1


def test_other_breaks_as_the_pattern():
    from trainlint.sources.python import _other_break_in

    pattern = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
    for text in ["", "a\nb\r\n", "x\x0by", "é\u2028", "\x85", "ab\x1d", "plain text", "\u00e9\u00e8", "\x1f"]:
        assert _other_break_in(text) == (pattern.search(text) is not None), repr(text)


def test_lowest_allowed_is_the_oldest_admitted():
    from trainlint.knowledge import public_names
    from trainlint.knowledge.pep440 import SpecifierSet, Version
    from trainlint.knowledge.versions import allowed_versions, lowest_allowed

    known = public_names.known_versions("transformers")
    rnd = random.Random(7)
    specs = [">=4.40", "<5", "==4.46.0", "~=4.45", "!=4.40.0,>=4.40", ">=3.0", "<4", "==4.44.9", ">=4.41.0,<4.50",
             ">5.0,<=5.3", "==4.40.0.0", ">=4.57.0.dev0"]
    for _ in range(60):
        a, b = rnd.sample(known, 2)
        specs.append(f">={min(a, b, key=Version)},<{max(a, b, key=Version)}")
    for text in specs:
        spec = SpecifierSet(text)
        named = [s.version for s in spec if s.operator in ("==", "===", ">=", "~=") and "*" not in s.version]
        candidates = [v for v in [*allowed_versions(spec, known), *map(Version, named)]
                      if spec.contains(v, prereleases=True)]
        assert lowest_allowed(spec, known) == (str(min(candidates)) if candidates else None), text


@pytest.mark.parametrize("comment, silenced", [
    ("# noqa", True), ("# NOQA", True), ("# noqa: TL201", True), ("# noqa: TL101", False),
    ("# trainlint: disable=TL201", True), ("# TrainLint: Disable=logging-steps-too-low", True),
    ("# trainlint: disable=TL101", False), ("# noqa: TL201 (é)", True), ("# plain comment", False),
    ("# café noqa", False), ("# café # noqa", True),
])
def test_suppression_comments_on_the_finding_line(tmp_path, comment, silenced):
    write_files(tmp_path, {"train.py": "from transformers import Trainer, TrainingArguments\n"
                                       f"args = TrainingArguments(output_dir='o', logging_steps=1)  {comment}\n"
                                       "Trainer(model=m, args=args).train()\n"})
    codes = [d.code for d in lint_folder(tmp_path).diagnostics]
    assert ("TL201" not in codes) == silenced, codes


def test_distribution_folder_names_read_as_the_pattern():
    from trainlint.knowledge.versions import _DIST, _dist_parts

    rnd = random.Random(3)
    pieces = ["torch", "Trans", "formers", "-", "_", ".", "4", "40", "0", "a", "rc1", "+cpu", ".dist-info",
              ".egg-info", "-info", "é", " ", "\n", "dev"]
    names = ["transformers-4.46.0.dist-info", "torch-2.13.0+cpu.dist-info", "a-1-2.dist-info", "x.egg-info",
             "-1.dist-info", "_a-1.dist-info", "a-x1.dist-info", "a-1.dist-info.dist-info", "a-1.dist-info\n"]
    names += ["".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 7))) for _ in range(30_000)]
    for n in names:
        m = _DIST.match(n)
        assert _dist_parts(n) == ((m.group("name"), m.group("version")) if m else None), repr(n)


def test_selection_reads_each_selector_as_matches_does():
    from trainlint.rule_index import entries, matches, selected

    rnd = random.Random(5)
    pool = ["ALL", "all", " TL2", "TL20", "tl6", "TL", "", "  ", "logging-steps-too-low", "LOGGING-STEPS-TOO-LOW",
            "TL201", "TL9", "x", "removed-argument ", "T"]
    for _ in range(300):
        select = rnd.sample(pool, rnd.randint(0, 3))
        ignore = rnd.sample(pool, rnd.randint(0, 2))
        expected = [e for e in entries() if any(matches(e["code"], e["name"], s) for s in select)
                    and not any(matches(e["code"], e["name"], s) for s in ignore)]
        assert selected(select, ignore) == expected, (select, ignore)


def test_version_keys_of_plain_releases_as_the_pattern():
    from trainlint.knowledge import training_args as ta

    def by_pattern(version: str) -> tuple:
        m = ta._VERSION_RE.match(version)
        nums = [int(p) for p in m.group(1).split(".")]
        while len(nums) < 3:
            nums.append(0)
        rest = m.group(2).strip().lower()
        pre = -1 if rest and not rest.lstrip(".").startswith("post") and not rest.startswith("+") else 0
        return (*nums, pre)

    for v in ["4.46.0", "4", "4.40", "5.24.0.1", "04.040", "0.0.0", "10.2.3.4.5", *ta.known_versions(),
              *ta.trl_known_versions()]:
        assert ta.vkey.__wrapped__(v) == by_pattern(v), v
    for v in ["4.46.0rc1", "v4.1", " 4.2", "4.2.post1", "4.2+cpu", "4..0", "4.", "٤.٤"]:
        assert ta.vkey.__wrapped__(v) == by_pattern(v), v
    with pytest.raises(ValueError):
        ta.vkey.__wrapped__("x4")


def _random_texts(pieces: list[str], n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    return ["".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 7))) for _ in range(n)]


def test_hand_scans_of_rule_helpers_answer_as_their_patterns():
    from trainlint.knowledge.versions import _LEADING_NAME, _leading_name
    from trainlint.rules._context import _TEST_NAME, _is_test_name
    from trainlint.rules.args.number_as_string import _NUMBER, _may_be_number

    spaces = [" ", "\t", "\x1c", "\u00a0", "\u2028", "\u200b", "\n"]
    for text in _random_texts(["torch", "Trl", "_", "-", ".", "9", "é", ">=", "[x]", ";", *spaces], 30_000, 1):
        m = _LEADING_NAME.match(text)
        assert _leading_name(text) == (m.group(1) if m else None), repr(text)
    for text in _random_texts(["test", "_", "tests", "conf", "conftest", ".py", "py", ".", "x", "\n", "T"], 30_000, 2):
        assert _is_test_name(text) == bool(_TEST_NAME.match(text)), repr(text)
    for text in _random_texts(["+", "-", ".", "0", "9", "_", "e", "E", "1e5", "x", " ", "٣"], 30_000, 3):
        if _NUMBER.match(text):
            assert _may_be_number(text), repr(text)  # what it lets through is what the pattern reads


def test_requirement_files_as_the_glob(tmp_path):
    from trainlint.knowledge.versions import REQUIREMENT_GLOB, requirement_files

    for name in ["requirements.txt", "requirement.txt", "requirements-dev.txt", "Requirements.txt",
                 "requirements.txt.bak", "requirements", "requirement_x.TXT", "requirementstxt", ".requirements.txt",
                 "requirement\n.txt"]:
        (tmp_path / name).write_text("x\n")
    (tmp_path / "requirements-dir.txt").mkdir()
    assert requirement_files(tmp_path) == list(tmp_path.glob(REQUIREMENT_GLOB))
    assert requirement_files(tmp_path / "requirements.txt") == [] == list((tmp_path / "requirements.txt").glob("requirement*.txt"))
    assert requirement_files(tmp_path / "missing") == []
