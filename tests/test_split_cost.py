"""The shortcuts of the run's planning (the walk, the split, linking) give the answers of the
work they replace."""

from __future__ import annotations

import random

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
