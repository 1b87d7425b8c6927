"""``trainlint.knowledge.pep440`` answers as ``packaging`` does: every release the data files
know, against specifier sets built from them (and edge forms), in order, membership, text and
clauses; what is not plain goes to ``packaging`` itself."""

from __future__ import annotations

import itertools
import random

import pytest
from packaging.specifiers import SpecifierSet as PSet
from packaging.version import Version as PVersion

from trainlint.knowledge import pep440
from trainlint.knowledge.pep440 import InvalidSpecifier, InvalidVersion, Release, SpecifierSet, Version


def _data_versions() -> list[str]:
    from trainlint.knowledge import behaviour, public_names, training_args

    found = set(training_args.known_versions()) | set(training_args.trl_known_versions())
    for package in ("transformers", "trl", "peft", "accelerate", "datasets"):
        try:
            found |= set(public_names.known_versions(package))
        except KeyError:
            pass
    found |= set(behaviour.known_versions("deepspeed"))
    return sorted(found)


DATA = _data_versions()
EDGE = ["0", "1", "4", "4.0", "4.40", "4.40.0", "4.40.0.0", "04.040", "4.41", "4.39.9", "5", "5.0.0", "10.0",
        "0.10.0", "0.9.6", "1.0.0.1", "2.2", "2.2.0", "3"]
VERSIONS = sorted(set(DATA) | set(EDGE))
OPS = ["==", "!=", "<=", ">=", "<", ">", "~="]


def test_the_data_has_plain_releases_only():
    assert len(DATA) > 100
    assert all(isinstance(Version(v), Release) for v in DATA), [v for v in DATA if not isinstance(Version(v), Release)]


def test_versions_order_and_print_as_packaging():
    ours = sorted(VERSIONS, key=Version)
    assert [str(PVersion(v)) for v in ours] == [str(v) for v in sorted(PVersion(v) for v in VERSIONS)]
    for a, b in itertools.product(EDGE + DATA[::7], repeat=2):
        va, vb, pa, pb = Version(a), Version(b), PVersion(a), PVersion(b)
        assert (va == vb, va < vb, va <= vb, va > vb, va >= vb, va != vb) == \
            (pa == pb, pa < pb, pa <= pb, pa > pb, pa >= pb, pa != pb), (a, b)
        assert (hash(va) == hash(vb)) == (va == vb) or va != vb
    for v in VERSIONS:
        assert str(Version(v)) == str(PVersion(v)) and Version(v).release == PVersion(v).release


def test_plain_and_packaging_versions_mix():
    for a in ("5.0.0rc1", "4.57.0.dev0", "2.5.1+cu121", "1!1.0", "4.40.0.post1", "v4.40"):
        assert not isinstance(Version(a), Release)
        for b in EDGE + DATA[::11]:
            pa, pb = PVersion(a), PVersion(b)
            assert (Version(b) < Version(a), Version(a) < Version(b), Version(b) == Version(a)) == (pb < pa, pa < pb, pb == pa)
    assert max([Version("5.0.0rc1"), Version("4.57.0"), Version("5.0.0")]) == Version("5.0.0")
    assert str(min([Version("5.0.0rc1"), Version("4.57.0")])) == "4.57.0"
    with pytest.raises(InvalidVersion):
        Version("not a version")


def _sets() -> list[str]:
    rng = random.Random(18)
    pool = EDGE + DATA
    out = [f"{op}{v}" for op in OPS for v in EDGE if not (op == "~=" and "." not in v)]
    for _ in range(1500):
        n = rng.choice([1, 2, 2, 3])
        clauses = []
        for _ in range(n):
            op = rng.choice(OPS)
            v = rng.choice(pool)
            if op == "~=" and "." not in v:
                v += ".0"
            clauses.append(f"{op}{' ' if rng.random() < 0.2 else ''}{v}")
        out.append(rng.choice([",", ", ", " , "]).join(clauses))
    out += ["", " ", ">=4.40,", ">=4.40,>=4.40", ">=4.40.0,>=4.40", "<5,>=4.40,!=4.45.1"]
    return out


def test_specifier_sets_admit_what_packaging_admits():
    for text in _sets():
        ours, theirs = SpecifierSet(text), PSet(text)
        assert isinstance(ours, pep440._PlainSet), text
        assert len(ours) == len(theirs) and [(c.operator, c.version) for c in ours] == \
            [(c.operator, c.version) for c in theirs], text
        for v in VERSIONS:
            expected = theirs.contains(PVersion(v), prereleases=False)
            assert ours.contains(Version(v), prereleases=False) is expected, (text, v)
            assert ours.contains(Version(v), prereleases=True) is expected, (text, v)
            assert ours.contains(v) is theirs.contains(v), (text, v)
        assert str(ours) == str(theirs) and ours == theirs, text
        assert [(c.operator, c.version) for c in ours] == [(c.operator, c.version) for c in theirs], text


def test_what_is_not_plain_is_packaging_s():
    for text in (">=4.0.dev0", "==4.*", "===4.40.0", ">=v4.40", "~=4", ">=4.40,<5.0.0rc1", ">=1!2.0", "==4.40.0+local"):
        try:
            theirs = PSet(text)
        except Exception:
            with pytest.raises(InvalidSpecifier):
                SpecifierSet(text)
            continue
        ours = SpecifierSet(text)
        assert not isinstance(ours, pep440._PlainSet) and str(ours) == str(theirs) and len(ours) == len(theirs)
        for v in VERSIONS[::5] + ["5.0.0rc1", "4.57.0.dev0"]:
            for pre in (None, True, False):
                assert ours.contains(Version(v), prereleases=pre) is theirs.contains(PVersion(v), prereleases=pre), (text, v)
    for bad in (">=", "=>4.0", "4.0", ">=4.0 extra", "~=4.0.*"):
        with pytest.raises(InvalidSpecifier):
            SpecifierSet(bad)
    # a plain set takes packaging's pre-releases as packaging's set does
    s = SpecifierSet(">=4.40,<5")
    for v in ("5.0.0rc1", "4.50.0rc1", "4.57.0.dev0", "4.40.0.post1"):
        for pre in (None, True, False):
            assert s.contains(PVersion(v), prereleases=pre) is PSet(">=4.40,<5").contains(PVersion(v), prereleases=pre)
