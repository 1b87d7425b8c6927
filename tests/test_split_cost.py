"""The shortcuts of the run's planning (the walk, the split, linking) give the answers of the
work they replace."""

from __future__ import annotations

import random
from pathlib import Path

import pathspec
import pytest

from trainlint.sources.files import _IgnoreSpec

_LINES = [
    "__pycache__/", "*.py[cod]", "*$py.class", "*.so", ".Python", "build/", "dist/", "*.egg-info/",
    ".installed.cfg", "*.egg", "MANIFEST", "*.manifest", "pip-log.txt", "htmlcov/", ".tox/", "*.cover",
    "docs/_build/", "target/", ".ipynb_checkpoints", "profile_default/", ".env", ".venv", "env/", "venv/",
    "/site", ".mypy_cache/", "wandb", "outputs/", "**/results/*.json", "data/**", "!data/keep.json",
    "logs/*", "!logs/important/", "a/**/b", "*.[jy]son", "!config.json", "#comment", "", "  ",
    "\\#literal", "\\!bang", "foo[!x]bar", "src/*/tmp", "tmp?", "*.ya?ml", "(?P<x>y)", "we(ird)[.]py",
    "/scripts/*.sh", "!/scripts/run.sh", "**/", "cache", "!cache/", "nested/deep/",
]
_PARTS = ["src", "data", "logs", "important", "a", "b", "c", "build", "dist", "results", "scripts", "cache",
          "outputs", "tmp", "tmpx", "foo.bar", "x.egg-info", ".venv", "venv", "nested", "deep", "site", "#literal",
          "!bang", "fooabar", "fooxbar", "(?P<x>y)", "we(ird).py", "we(ird)[.]py"]
_NAMES = ["train.py", "mod.pyc", "config.json", "keep.json", "x.yaml", "x.yml", "run.sh", "go.sh", "README.md",
          "notes.txt", "a.so", "f.cover", "w.json", "wandb", ".env", "tmp1", "tmp", "cache"]


def _paths(rng: random.Random) -> list[str]:
    out = []
    for _ in range(300):
        parts = [rng.choice(_PARTS) for _ in range(rng.randrange(0, 4))]
        name = rng.choice(_NAMES + _PARTS)
        path = "/".join(parts + [name])
        out.append(path + "/" if rng.random() < 0.3 else path)
    return out


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_walks_ignore_spec_answers_as_pathspec():
    rng = random.Random(18)
    tried = ignored = 0
    for _ in range(60):
        lines = rng.sample(_LINES, rng.randrange(1, 25))
        spec = pathspec.PathSpec.from_lines("gitwildmatch", lines)
        fast = _IgnoreSpec(spec)
        assert fast._any  # the shortcut is in use
        for path in _paths(rng):
            expected = spec.match_file(path)
            assert fast.match_file(path) == expected, (lines, path)
            tried += 1
            ignored += expected
    assert 0 < ignored < tried  # both answers were asked


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_walks_ignore_spec_from_lines_answers_as_pathspec_and_compiles_no_pattern_until_one_matches():
    rng = random.Random(1810)
    built = unbuilt = 0
    for _ in range(60):
        lines = rng.sample(_LINES, rng.randrange(1, 25))
        spec = pathspec.PathSpec.from_lines("gitwildmatch", lines)
        lazy = _IgnoreSpec.from_lines(lines)
        eager = _IgnoreSpec(spec)
        # the same expressions as the spec's compiled patterns (translated, not compiled)
        assert (lazy._anchored and lazy._anchored.pattern) == (eager._anchored and eager._anchored.pattern)
        assert (lazy._unanchored and lazy._unanchored.pattern) == (eager._unanchored and eager._unanchored.pattern)
        # nothing compiled per pattern yet (a spec of comments only is asked itself)
        assert lazy._any == eager._any and (lazy._spec is None) == eager._any
        for path in _paths(rng):
            assert lazy.match_file(path) == spec.match_file(path), (lines, path)
        built += lazy._spec is not None
        unbuilt += lazy._spec is None
    assert built and unbuilt  # both: some asked the spec, some never needed it


def test_a_gitignore_whose_paths_match_no_pattern_never_builds_its_pathspec(tmp_path, monkeypatch):
    from trainlint.sources import files

    (tmp_path / ".gitignore").write_text("*.log\nwandb/\n# comment\n\n!keep.log\n")
    (tmp_path / "train.py").write_text("x = 1\n")
    (tmp_path / "run.sh").write_text("python train.py\n")
    made = []
    real = pathspec.PathSpec.from_lines
    monkeypatch.setattr(pathspec.PathSpec, "from_lines", classmethod(
        lambda cls, *a, **k: made.append(a) or real(*a, **k)))
    assert sorted(p.name for p, _ in files.walk([tmp_path])) == ["run.sh", "train.py"]
    assert made == []
    (tmp_path / "wandb").mkdir()
    (tmp_path / "wandb" / "x.py").write_text("x = 1\n")
    assert sorted(p.name for p, _ in files.walk([tmp_path])) == ["run.sh", "train.py"]
    assert len(made) == 1  # a path the alternation matched: the spec answers it


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_gitignore_without_negations_answers_from_its_alternation_alone(monkeypatch):
    """No ``!`` line: every pattern that matches says "ignored", so the alternation's match is
    the answer and the ``PathSpec`` is never made (the answers stay pathspec's)."""
    rng = random.Random(1811)
    plain = [line for line in _LINES if not line.startswith("!")]
    made = []
    real = pathspec.PathSpec.from_lines
    for _ in range(40):
        lines = rng.sample(plain, rng.randrange(1, 25))
        spec = real("gitwildmatch", lines)
        monkeypatch.setattr(pathspec.PathSpec, "from_lines", classmethod(
            lambda cls, *a, **k: made.append(a) or real(*a, **k)))
        lazy = _IgnoreSpec.from_lines(lines)
        monkeypatch.undo()
        ignored = 0
        for path in _paths(rng):
            expected = spec.match_file(path)
            assert lazy.match_file(path) == expected, (lines, path)
            ignored += expected
        if lazy._any:
            assert lazy._spec is None
    assert made == []


def test_patterns_that_start_in_any_folder_are_asked_under_one_copy_of_that_start():
    from trainlint.sources.files import _ANY_FOLDERS, _alternation

    joined = _alternation(["(?:.+/)?build(?P<ps_d>/)", "(?:.+/)?[^/]*\\.log(?:(?P<ps_d>/)|$)", "docs/x$"],
                          _ANY_FOLDERS)
    assert joined.pattern.count(_ANY_FOLDERS) == 1
    for path, hit in (("build/", True), ("a/b/build/", True), ("a/x.log", True), ("x.log/y", True),
                      ("docs/x", True), ("a/docs/x", False), ("builds/", False), ("x.logs", False)):
        assert (joined.match(path) is not None) == hit, path


def test_a_pattern_is_asked_at_the_start_only_when_its_anchor_holds_for_all_of_it():
    from trainlint.sources.files import _anchored

    assert _anchored(r"^(?:.+/)?build(?P<ps_d>/)")
    assert _anchored(r"^a(?:b|c)[|]\|d")
    assert not _anchored(r"^a|b")
    assert not _anchored(r"(?:.+/)?a")
    assert not _anchored(r"^[]|]x|y")
    for pattern, path in ((r"^a|b", "xb"), (r"^[]|]x|y", "zy")):  # a spec of such a pattern
        spec = pathspec.PathSpec([pathspec.pattern.RegexPattern(pattern)])
        assert spec.match_file(path) and _IgnoreSpec(spec).match_file(path)


# -- the split: its indexes made once per text give the groups of the plain searches ----------

_WORD = r"(?<![\w.-]){}(?![\w-])"
_PIECES = ["train", "run", "x", ".", "-", "_", "py", "sh", "yaml", " ", "/", "\n", "'", "=", "é", "+", "r",
           ".py", ".sh", ".yaml", "t", "ds", "cfg", "--", "Ω"]
_SCRIPTS = ["train.py", "run.py", "xtrain.py", "train-x.py", "ds.py", "Ω.py", "r.py"]
_OTHERS = ["run.sh", "train.sh", "ds.yaml", "cfg.yaml", "t+r.sh", "x.sh", "train.py.sh"]


def _reference_groups(files: dict[str, str]) -> tuple[set[str], set[frozenset[str]]]:
    """The stand-alone scripts and the groups, by the searches the indexes replace: a
    non-Python text names a file (its name as a substring, a script's stem as a word), a
    script names a non-Python file (a substring)."""
    import os
    import re

    def py(p: str) -> bool:
        return p.endswith(".py")

    base = {p: os.path.basename(p) for p in files}
    edges = set()
    for p, text in files.items():
        for q in files:
            if q == p:
                continue
            if not py(p) and (base[q] in text or (py(q) and re.search(_WORD.format(re.escape(base[q][:-3])), text))):
                edges.add((p, q))
            elif py(p) and not py(q) and base[q] in text:
                edges.add((p, q))
    linked = {p for e in edges for p in e}
    alone = {p for p in files if py(p) and p not in linked}
    parent = {p: p for p in files if p not in alone}

    def find(p: str) -> str:
        while parent[p] != p:
            p = parent[p]
        return p

    for a, b in edges:
        parent[find(a)] = find(b)
    groups: dict[str, set[str]] = {}
    for p in parent:
        groups.setdefault(find(p), set()).add(p)
    return alone, {frozenset(g) for g in groups.values()}


def test_the_split_groups_files_as_the_searches_of_their_texts_do(tmp_path, monkeypatch):
    """Random trees of scripts and launch files whose texts name each other's files (names
    inside longer names, stems as words, runs across lines): the stand-alone scripts and the
    groups are those of plain searches of each text."""
    import os

    from trainlint.config import load_settings
    from trainlint.partition import split

    rng = random.Random(18)
    grouped = 0
    for n in range(40):
        root = tmp_path / f"t{n}"
        files: dict[str, str] = {}
        for name in rng.sample(_SCRIPTS, rng.randint(2, len(_SCRIPTS))):
            files[f"zz{rng.randint(0, 1)}/{name}"] = "from transformers import TrainingArguments\n" + \
                "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 12))) + "\n"
        for name in rng.sample(_OTHERS, rng.randint(1, len(_OTHERS))):
            files[f"zz{rng.randint(0, 1)}/{name}"] = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 40)))
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        monkeypatch.chdir(root)
        settings = load_settings(root)
        plan = split([Path(".")], settings, {})
        alone, groups = _reference_groups({os.path.normpath(p): t for p, t in files.items()})
        assert {u.path for u in plan.units} == alone, files
        assert {frozenset(p for p, _ in g) for g in plan.groups} == groups, files
        grouped += sum(len(g) > 1 for g in groups)
    assert grouped > 20  # files were linked, and not all of them


def test_the_files_of_an_imported_module_name_are_grouped_with_its_importers(tmp_path, monkeypatch):
    from trainlint.config import load_settings
    from trainlint.partition import split

    files = {
        "a/utils.py": "from transformers import TrainingArguments\n",
        "b/utils.py": "from transformers import TrainingArguments\n",
        "c/utils.py": "from transformers import TrainingArguments\n",
        "c/train.py": "from utils import helper\nfrom transformers import TrainingArguments\n",
        "d/eval.py": "from utils import helper\nfrom transformers import TrainingArguments\n",
        "e/other.py": "from transformers import TrainingArguments\n",
        "e/cfg.yaml": "x: 1\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    plan = split([Path(".")], load_settings(tmp_path), {})
    groups = {frozenset(p for p, _ in g) for g in plan.groups}
    assert frozenset({"a/utils.py", "b/utils.py", "c/utils.py", "c/train.py", "d/eval.py"}) in groups
    assert [u.path for u in plan.units] == ["e/other.py"]


def test_a_json_files_kind_is_told_once_per_run(tmp_path, monkeypatch):
    """The split tells each JSON file's kind (whether its words can name a script); the tasks'
    workspaces take it from the split's read: one ``detect_kind`` per JSON file, and the
    findings of one workspace that tells every kind itself."""
    import sys
    from collections import Counter

    from trainlint.checking import filter_findings, run_rules
    from trainlint.config import load_settings
    from trainlint.engine import lint
    from trainlint.sources import kinds
    from trainlint.workspace import read_workspace

    sys.path.insert(0, str(Path(__file__).parent))
    from test_pipeline import repository_tree

    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    repository_tree(root)
    (root / "data").mkdir()
    (root / "data" / "records.json").write_text('[{"text": "train.py", "id": 1}]\n', encoding="utf-8")
    monkeypatch.chdir(root)
    settings = load_settings(root)
    ws = read_workspace([Path(".")], settings, {})
    plain = filter_findings(run_rules(ws, settings), ws, settings)
    told: Counter = Counter()
    real = kinds.detect_kind

    def counted(path, text):
        told[path] += 1
        return real(path, text)

    monkeypatch.setattr(kinds, "detect_kind", counted)
    serial = lint([Path(".")], settings, jobs=1)
    assert [d.to_json() for d in serial.diagnostics] == [d.to_json() for d in plain]
    jsons = [p for p in told if p.endswith(".json")]
    assert "data/records.json" in jsons and any(serial.kinds.get(p) == "deepspeed" for p in jsons)
    assert all(told[p] == 1 for p in jsons), told


def test_the_verdicts_of_long_json_texts_read_before_are_kept_for_each_text():
    """The split reads every JSON file's value (its kind) before the tasks parse them: each long
    text's verdict (plain, or a duplicate key to report) is kept for that text, whatever the
    order of the parses; an equal text read by no one is checked itself."""
    from trainlint.sources.jsondoc import LAZY_MIN_CHARS, LazyJsonNode, json_value, parse_json

    body = ", ".join(f'"k{i}": {i}' for i in range(LAZY_MIN_CHARS // 8))
    plain_text = "{" + body + "}"
    dup_text = "{" + body + ', "k1": 0}'
    assert len(plain_text) >= LAZY_MIN_CHARS
    json_value(plain_text)
    json_value(dup_text)
    dup = parse_json(dup_text, "dup.json")
    plain = parse_json(plain_text, "plain.json")
    assert isinstance(plain, LazyJsonNode) and not isinstance(dup, LazyJsonNode)
    assert any("duplicate" in p.message.lower() for p in dup.doc.problems)
    again = parse_json(("x" + dup_text)[1:], "dup2.json")  # an equal text no one read before
    assert not isinstance(again, LazyJsonNode) and again.doc.problems


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_translated_pattern_that_sets_its_own_flags_leaves_the_spec_compiled_at_once(monkeypatch):
    factory = pathspec.util.lookup_pattern("gitwildmatch")
    monkeypatch.setattr(factory, "pattern_to_regex", classmethod(lambda cls, line: ("(?i)^" + line + "$", True)))
    lazy = _IgnoreSpec.from_lines(["build"])
    assert not lazy._any and lazy._spec is not None  # its flags (IGNORECASE) are the spec's to say
    assert lazy.match_file("BUILD") and lazy.match_file("build") and not lazy.match_file("x")


def test_walk_names_are_the_walks_paths_normalised(tmp_path, monkeypatch):
    """``walk_names`` (the run's walk) gives ``os.path.normpath(str(p))`` of each of ``walk``'s
    paths, for roots written in several ways, overlapping roots and explicit files."""
    import os

    from trainlint.sources import files

    (tmp_path / ".gitignore").write_text("*.log\nbuild/\nignored/\n")
    for rel in ("train.py", "run.sh", "a/b/cfg.yaml", "a/b/c/ds.json", "a/README.md", "ignored/x.py",
                "keep/build/y.py", "keep/z.py", "n.ipynb"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    shapes = [[Path(".")], [Path("./")], [tmp_path], [Path("a")], [Path("a/")], [Path("a/b/..")],
              [Path("."), Path("a")], [Path("a"), Path(".")], [Path("train.py"), Path(".")],
              [Path("keep/../a/b"), Path("a")]]
    for paths in shapes:
        for exclude in ([], ["a/b/*"], ["*.sh"]):
            walked = list(files.walk(paths, exclude))
            assert walked  # something to compare
            assert list(files.walk_names(paths, exclude)) == [(os.path.normpath(str(p)), e) for p, e in walked]
            if paths == [Path(".")] and not exclude:
                assert sorted(os.path.normpath(str(p)) for p, _ in walked) == [
                    "a/README.md", "a/b/c/ds.json", "a/b/cfg.yaml", "keep/z.py", "n.ipynb", "run.sh", "train.py"]


def test_a_word_with_other_characters_is_found_as_its_pattern_finds_it():
    """A stem that is no plain name (``Llama3.1_(8B)-Alpaca``) is looked for by its
    occurrences with the characters around them asked (``partition._has_word``), not by a
    pattern compiled for it: the same answers as the pattern's search, on random texts of
    such names, their parts, word characters (non-ASCII ones too), dots, dashes and blanks."""
    from trainlint.partition import _has_word, _word

    rng = random.Random(18)
    names = ["Llama3.1_(8B)-Alpaca", "a b", "(8B)", "x.y z", "é (1)", "-m", "a", ".", "[x]", "", "tr ain"]
    pieces = ["Llama3.1_(8B)-Alpaca", "(8B)", "a b", "a", "b", "_", "-", ".", " ", "\n", "é", "ß", "١",
              "x.y z", "é (1)", "-m", "[x]", "tr", "ain", "(", ")", "/"]
    found = 0
    for _ in range(6000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        name = rng.choice(names)
        expected = _word(name).search(text) is not None
        assert _has_word(text, name) is expected, (text, name)
        found += expected
    assert 500 < found < 5500
