"""The rule index: which rules exist, where each lives, and what can make it fire.

``trainlint/rules/index.json`` is generated from the rule classes by
``python scripts/gen_rule_index.py`` (``tests/test_pipeline.py`` fails when it is out of step
with the rules found in ``trainlint/rules/`` and its sub-packages). It lets the earlier stages
(settings, suppressions, the pre-filter) know the rules' codes and names without importing a
single rule module, and the registry import only the modules a run can need.

Selection by code prefix, full code or name is here too (``is_selected``): it needs no rule.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

INDEX_PATH = Path(__file__).resolve().parent / "rules" / "index.json"
# the rules' ``index_words()`` (``{"words": {code: {trigger: [name, ...]}}}``), generated with the index and
# read only when a file holds the triggers of a rule that has words
WORDS_PATH = INDEX_PATH.parent / "trigger_words.json"


@lru_cache(maxsize=1)
def entries() -> tuple[dict[str, Any], ...]:
    """One entry per rule, ordered by code: ``code``, ``name``, ``module``, ``class``,
    ``engine`` (reported by the readers, not run), ``triggers`` (``Rule.triggers``: a sorted
    list, or None), ``words`` (True when the rule has ``Rule.index_words()``, in
    ``trigger_words.json``; else None) and ``needs``."""
    with open(INDEX_PATH, encoding="utf-8") as f:
        return tuple(json.load(f)["rules"])


def lookup(code_or_name: str) -> dict[str, Any] | None:
    """The entry of the rule with this code (any case) or name."""
    key = code_or_name.strip()
    for e in entries():
        if e["code"].upper() == key.upper() or e["name"] == key.lower():
            return e
    return None


def matches(code: str, name: str, selector: str) -> bool:
    """``selector`` (``ALL``, a code prefix like ``TL2``, a full code or a name) picks the rule."""
    s = selector.strip()
    if not s:
        return False
    return s.upper() == "ALL" or code.upper().startswith(s.upper()) or name == s.lower()


def is_selected(code: str, name: str, selectors: list[str]) -> bool:
    return any(matches(code, name, s) for s in selectors)


def selected(select: list[str], ignore: list[str]) -> list[dict[str, Any]]:
    """The entries ``select`` picks and ``ignore`` does not (``matches``, each selector read
    once)."""
    picks, skips = _selector(select), _selector(ignore)
    return [e for e in entries() if picks(e["code"], e["name"]) and not skips(e["code"], e["name"])]


def _selector(selectors: list[str]) -> Any:
    """``lambda code, name: any(matches(code, name, s) for s in selectors)``."""
    kept = [s.strip() for s in selectors]
    kept = [s for s in kept if s]
    if any(s.upper() == "ALL" for s in kept):
        return lambda code, name: True
    prefixes = tuple(s.upper() for s in kept)
    names = {s.lower() for s in kept}
    return lambda code, name: code.upper().startswith(prefixes) or name in names


def _active(entry: dict[str, Any], settings: Any) -> bool:
    return not entry["engine"] and all(getattr(settings, n, None) for n in entry["needs"])


def prefilter_names(settings: Any) -> tuple[str, ...] | None:
    """The names of which a walked Python file must contain one to be parsed on account of the
    rules that declare no ``words``: the triggers of the selected rules that can report under
    ``settings``; None when one of them declares none (then the broad pre-filter applies)."""
    return prefilter(settings).names


class Prefilter:
    """Whether a walked Python file holds a trigger of a selected rule (``wanted``): one of
    ``names`` as a substring, or, for a rule with words, one of its triggers as a substring and
    one of that trigger's words as a whole identifier. ``names`` is None when a selected rule
    declares no triggers (then the caller's broad pre-filter applies)."""

    def __init__(self, names: tuple[str, ...] | None, worded: list[tuple[str, list[str]]]) -> None:
        self.names = names
        self.worded = worded  # (trigger, the codes of the rules with words for it)
        # ``names`` as ``wanted`` asks them: those that end in ``Config`` (TRL's configs,
        # ``BitsAndBytesConfig``) by what stands before each ``Config`` of the text, one scan
        # for them all (not one scan of the whole text per name); the others one by one
        self._direct = tuple(n for n in names or () if not n.endswith("Config"))
        self._config_heads = tuple(n[:-len("Config")] for n in names or () if n.endswith("Config"))

    def wanted(self, text: str) -> bool:
        if self.names is None:
            return True
        if any(n in text for n in self._direct):
            return True
        heads = self._config_heads
        if heads:
            i = text.find("Config")
            while i >= 0:
                if text.endswith(heads, 0, i):
                    return True
                i = text.find("Config", i + 6)
        tokens: set[str] | None = None
        for trigger, codes in self.worded:
            if trigger in text:
                for code in codes:
                    words = rule_words(code, trigger)
                    if tokens is None and len(words) <= _FEW_WORDS:
                        # a few words: each searched for (a scan of the text each), not
                        # every word of the text collected (peft's ``peft``: 3 words)
                        if any(holds_identifier(text, w) for w in words):
                            return True
                        continue
                    if tokens is None:
                        tokens = identifiers(text)
                    if not words.isdisjoint(tokens):
                        return True
        return False


def prefilter(settings: Any) -> Prefilter:
    key = (tuple(settings.select), tuple(settings.extend_select), tuple(settings.ignore), bool(settings.gpu))
    found = _PREFILTERS.get(key)
    if found is None:
        found = _PREFILTERS[key] = _make_prefilter(settings)
    return found


_PREFILTERS: dict[tuple, Prefilter] = {}


def _make_prefilter(settings: Any) -> Prefilter:
    names: set[str] = set()
    worded: dict[str, set[str]] = {}
    for e in selected(list(settings.select) + list(settings.extend_select), list(settings.ignore)):
        if not _active(e, settings):
            continue
        if e["triggers"] is None:
            return Prefilter(None, [])
        if e.get("words"):
            for t in e["triggers"]:
                worded.setdefault(t, set()).add(e["code"])
        else:
            names.update(e["triggers"])
    # a name that contains another is redundant in a substring test
    kept = tuple(sorted(n for n in names if not any(m != n and m in n for m in names)))
    return Prefilter(kept, [(t, sorted(codes)) for t, codes in sorted(worded.items())])


_IDENTIFIER = None


def identifiers(text: str) -> set[str]:
    """The identifier-like words of ``text`` (ASCII letters, digits, underscores; a superset of
    the identifiers a Python parser would find in it)."""
    global _IDENTIFIER
    if _IDENTIFIER is None:
        import re

        _IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
    return set(_IDENTIFIER.findall(text))


# Up to this many words, ``holds_identifier`` of each costs less than ``identifiers`` of the text
# (a substring scan is some 50 times faster than collecting the text's words).
_FEW_WORDS = 16
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_DIGITS = frozenset("0123456789")
_LETTERS = _WORD_CHARS - _DIGITS  # where an identifier starts


def holds_identifier(text: str, word: str) -> bool:
    """``word in identifiers(text)``, without collecting the words of ``text``: an occurrence of
    ``word`` with no name character after it and, before it, only digits (none, or a run of
    them) after something that is no name character (``identifiers`` starts a word at the first
    letter or underscore after a non-name character or digits: ``1peft`` holds ``peft``)."""
    if not word or word[0] in _DIGITS or not _WORD_CHARS.issuperset(word):
        return False  # never one of ``identifiers``
    n = len(text)
    size = len(word)
    chars, digits = _WORD_CHARS, _DIGITS
    i = text.find(word)
    while i >= 0:
        end = i + size
        if end == n or text[end] not in chars:
            j = i
            while j and text[j - 1] in digits:
                j -= 1
            if not j or text[j - 1] not in chars:
                return True
        i = text.find(word, i + 1)
    return False


def can_trigger(entry: dict[str, Any], present: set[str], tokens: Any = None) -> bool:
    """Whether the rule of ``entry`` may report on a setup of Python files only, in which the
    trigger names ``present`` occur (substrings); ``tokens()`` gives the words of the setup's
    texts (``words_of``), for a rule with ``index_words()`` or ``fires_on``."""
    triggers = entry["triggers"]
    if triggers is not None and present.isdisjoint(triggers):
        return False
    if tokens is None:
        return True
    fires_on = entry.get("fires_on")
    if fires_on is not None and tokens().isdisjoint(fires_on):
        return False
    if entry.get("words"):
        return any(t in present and not rule_words(entry["code"], t).isdisjoint(tokens()) for t in triggers or ())
    return True


_HYPHENATED = None


def hyphenated(text: str) -> list[str]:
    """What ``re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)+", text)`` gives, in linear
    time: that pattern, tried at every letter of a name with no ``-`` after it, reads the rest
    of the name again from each (quadratic in the name's length; 1.8 s of a check of
    unsloth's notebooks). Here the search goes from ``-`` to ``-`` (a fast scan: most text has
    few, and most of those are no join of two names: ``a - b``, ``-1``): at one that stands
    between two name characters, the run of name characters and ``-`` pieces around it is read
    from the run's start, and what the pattern would give of that run is cut from it: from its
    first letter or underscore (leading digits, and pieces of digits only, are skipped), when
    a ``-`` piece follows. (A pattern that starts with a class of name characters, tried at
    every name of the text, was 15x slower on unsloth's notebook programs.)"""
    global _HYPHENATED
    if _HYPHENATED is None:
        import re

        _HYPHENATED = re.compile(r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)+")
    out: list[str] = []
    chars = _WORD_CHARS
    last = len(text) - 1
    end = 0  # where the last run read ends: the next one starts after it
    find = text.find
    i = find("-", 1)
    while i >= 0:
        if i < last and text[i - 1] in chars and text[i + 1] in chars:
            start = i - 1
            while start > end and text[start - 1] in chars:
                start -= 1
            run = _HYPHENATED.match(text, start).group()  # type: ignore[union-attr]
            end = start + len(run)
            if run[0] in _LETTERS:  # the common case: the run is the match
                out.append(run)
            else:
                pieces = run.split("-")
                for k, piece in enumerate(pieces):
                    head = piece.lstrip("0123456789")
                    if head:
                        if k + 1 < len(pieces):
                            out.append("-".join((head, *pieces[k + 1:])))
                        break
            i = find("-", end + 1)
        else:
            i = find("-", i + 1)
    return out


def words_of(text: str) -> set[str]:
    """The words a setup's text holds for ``Rule.fires_on`` and ``index_words()``: its
    identifiers (``identifiers``), each run of name characters joined by ``-`` read with ``_``
    (``--logging-steps`` holds ``logging_steps``; ``hyphenated``), and ``X`` for each ``no_X``
    (HfArgumentParser's ``--no_dataloader_pin_memory`` sets ``dataloader_pin_memory``)."""
    found = identifiers(text)
    if "-" in text:
        found.update(m.replace("-", "_") for m in hyphenated(text))
    if "no_" in text or "no-" in text:  # a word that starts with ``no_`` holds one of them
        found.update([w[3:] for w in found if w.startswith("no_")])
    return found


@lru_cache(maxsize=None)
def _all_words() -> dict[str, dict[str, list[str]]]:
    with open(WORDS_PATH, encoding="utf-8") as f:
        return json.load(f)["words"]


@lru_cache(maxsize=None)
def rule_words(code: str, trigger: str) -> frozenset[str]:
    """The words of the rule ``code`` for ``trigger`` (``Rule.index_words()``; empty when none)."""
    return frozenset(_all_words().get(code, {}).get(trigger, ()))


def unknown_selector(selector: str) -> str | None:
    """None when ``selector`` (a code, a code prefix, a name or ``ALL``) matches some rule; else
    the error text, with the nearest codes or names ("did you mean ...?"). Reads the index only."""
    s = selector.strip()
    if not s or s.upper() == "ALL" or any(matches(e["code"], e["name"], s) for e in entries()):
        return None
    import difflib

    names = [e["name"] for e in entries()]
    codes = [e["code"] for e in entries()]
    close: list[str] = []
    if s.upper().startswith("TL"):
        norm = "TL" + s.upper()[2:].replace("O", "0").replace("-", "").replace("_", "").replace(" ", "")
        prefixed = [c for c in codes if c.startswith(norm)]
        close = [norm] if prefixed else difflib.get_close_matches(norm, codes, n=3, cutoff=0.8)
    else:
        close = difflib.get_close_matches(s.lower().replace("_", "-"), names, n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else " (see `trainlint rules`)"
    return f"unknown rule code, prefix or name {s!r}{hint}"
