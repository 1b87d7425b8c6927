"""Checking a group of files: their setups, every selected rule on each, and the filter
(selection, per-file ignores, suppression comments, de-duplication).

This is the unit of work both schedulers run (``engine``: in this process; ``parallel``: in
a pool of worker processes). A group is either one stand-alone script or the files that link
to each other (``partition``); the ``RunContext`` is the run's, resolved once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainlint import reads
from trainlint.config import ConfigError, Settings
from trainlint.consumers import with_assumed, with_consumer
from trainlint.diagnostics import OLDER_THAN_DATA, Diagnostic, Severity, internal_error
from trainlint.record import Record, replace
from trainlint.resolve import RunContext, build_setups, single_file_setup, workspace_context
from trainlint.rule_index import can_trigger, is_selected, selected, words_of
from trainlint.rules.base import Facts, Rule, ScriptRule
from trainlint.suppression import Suppressions
from trainlint.workspace import Workspace, defer_syntax_checks, read_entry, settle_syntax

if TYPE_CHECKING:  # fix's memo: imported where a fix makes one, never by ``check``
    from trainlint.fixing.setup_memo import SetupMemo


class RuleSet:
    """The selected rules of a run (input problems come from the readers), each made once, on
    first need: a workspace of Python files only gets the rules whose triggers it contains
    (``Rule.triggers``) and that can report on Python files alone (``Rule.python_alone``), so a
    one-file run imports only the rule modules that can report."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.entries = [e for e in selected(settings.select + settings.extend_select, settings.ignore)
                        if not e["engine"] and all(getattr(settings, n, None) for n in e["needs"])]
        self._made: dict[str, Rule] = {}
        self._by_code = {e["code"]: e for e in self.entries}
        self._fires_on = {e["code"]: None if e.get("fires_on") is None else frozenset(e["fires_on"])
                          for e in self.entries}

    def _rule(self, entry: dict[str, Any]) -> Rule:
        rule = self._made.get(entry["code"])
        if rule is None:
            import importlib

            cls = getattr(importlib.import_module(entry["module"]), entry["class"])
            rule = self._made[entry["code"]] = cls(self.settings, self.settings.options_for(cls))
        return rule

    def _trigger_names(self) -> TriggerNames:
        names = self.__dict__.get("_names")
        if names is None:
            names = self._names = TriggerNames({t for e in self.entries for t in (e["triggers"] or ())})
            names.plan_orders([self._order(e["triggers"]) for e in self.entries if e["triggers"]])
        return names

    def make_all(self) -> None:
        """Make every selected rule now (before a pool forks its workers)."""
        for e in self.entries:
            self._rule(e)

    def for_workspace(self, ws: Workspace, seen: dict[Any, Any] | None = None) -> list[Rule]:
        """The rules that may report on ``ws``; ``seen`` (``for_setup``'s) keeps each file's
        trigger names (``HeldNames``), searched here and there once for both."""
        texts = [_python_text(f) for f in ws.files.values()]
        if any(t is None for t in texts):
            return [self._rule(e) for e in self.entries]
        if seen is None:
            seen = {}
        names = self._trigger_names()
        held: list[HeldNames] = []
        texts = []
        for path, f in ws.files.items():
            if f.doc is None:
                continue
            text = _python_text(f)
            texts.append(text)
            h = seen.get(path)
            if h is None:
                h = seen[path] = names.held(text)
            held.append(h)
        present = _Present(held, self._order)
        found: list[set[str]] = []

        def tokens() -> set[str]:  # the words of the texts, for rules with words; once
            if not found:
                found.append(set().union(*(words_of(text) for text in texts)))
            return found[0]

        return [self._rule(e) for e in self.entries if e.get("python_alone", True) and can_trigger(e, present, tokens)]

    def _order(self, triggers: Any) -> tuple[str, ...]:
        """``triggers`` in the order a text is searched for one: shortest first (``Trainer``
        before the ``...Config`` names, ``trl`` before ``transformers``), which a text that
        holds any mostly holds; made once per set of triggers (most rules share one)."""
        orders = self.__dict__.get("_orders")
        if orders is None:
            orders = self._orders = {}
        key = tuple(triggers)
        order = orders.get(key)
        if order is None:
            order = orders[key] = tuple(sorted(set(triggers), key=lambda n: (len(n), n)))
        return order

    def for_setup(self, setup: Any, ws: Workspace, rules: list[Rule], seen: dict[Any, Any]) -> list[Rule]:
        """Of ``rules`` (the workspace's), those that may report on ``setup``: when every file
        of the setup is Python (a script, a notebook's program) and it holds no linked config,
        the rules that a run of those files alone could report with (``python_alone``, a
        trigger in their texts; a rule with words is kept on its triggers alone: running it
        costs about what searching the texts for its words would); for a launch line and
        Python files only, the rules whose words the line or the files may hold
        (``_for_launch``); otherwise all of them. ``seen`` keeps each file's trigger names and
        words across the setups of the workspace."""
        public = [k for k in setup.extra if not k.startswith("_")]
        if public and set(public) <= _LAUNCH_KEYS and setup.files:
            return self._for_launch(setup, ws, rules, seen)
        if public or not setup.files:
            return rules
        names = self._trigger_names()
        held: list[HeldNames] = []
        for path in setup.files:
            found = seen.get(path)
            if found is None:
                f = ws.files.get(path)
                text = _python_text(f) if f is not None and f.doc is not None else None
                # every selected rule's names: those of rules the workspace does not run are
                # never asked below
                found = seen[path] = None if text is None else names.held(text)
            if found is None:
                return rules
            held.append(found)
        out = []
        triggered: dict[tuple[str, ...], bool] = {(): False}  # by ordered triggers: most rules share them
        for r, order in self._triggers_of(rules):
            if order is None:
                out.append(r)
                continue
            hit = triggered.get(order)
            if hit is None:
                hit = triggered[order] = any(h.holds_any(order) for h in held)
            if hit:
                out.append(r)
        return out

    def _triggers_of(self, rules: list[Rule]) -> list[tuple[Rule, tuple[str, ...] | None]]:
        """(rule, its ordered triggers, or None for a rule without triggers) for each rule of
        ``rules`` that can report on Python files alone (``python_alone``), in order; for the
        last list asked (every setup of a workspace asks the workspace's)."""
        last = self.__dict__.get("_last_triggers")
        if last is not None and last[0] is rules:
            return last[1]
        entries = self._by_code
        out = []
        for r in rules:
            e = entries[r.code]
            if e.get("python_alone", True):
                out.append((r, None if e["triggers"] is None else self._order(e["triggers"])))
        self._last_triggers = (rules, out)  # the list is kept: its id stays its own
        return out

    def _for_launch(self, setup: Any, ws: Workspace, rules: list[Rule], seen: dict[Any, Any]) -> list[Rule]:
        """A launch line's setup whose other files are all Python (no linked config): every
        rule but those with ``Rule.fires_on`` of which neither the Python files nor the line
        (``_launch_text``: its launcher, options, script flags and variables, as linking read
        them) may hold one (``_held_words``). Such a rule reports on a written value only, and
        every value of the setup is written in those (a config that gives values makes the
        setup's files hold a file that is not Python: then all rules). Triggers are not asked:
        a framework CLI (``trl sft``) builds its sites with no script. The lines that launch a
        script share its words (found once), so the test costs less than the rules it spares;
        a Python-only setup's files are mostly its own, and it is not asked."""
        launch = setup.extra.get("launch")
        launch_file = setup.extra.get("launch_file")
        if launch is None or launch_file is None:
            return rules
        held: list[set[str]] = []
        for path in setup.files:
            if str(path) == str(launch_file):
                continue
            f = ws.files.get(path)
            text = _python_text(f) if f is not None and f.doc is not None else None
            if text is None:
                return rules
            held.append(self._held_words(seen, path, text))
        for pf in setup.scripts:  # a script is one of the files; its text is searched either way
            if pf.path not in ws.files:
                return rules
        held.append(self._held_words(None, None, _launch_text(launch)))
        fires_on = self._fires_on
        words = set().union(*held)  # a rule's word in one of the texts: in their union
        return [r for r in rules if _may_fire(fires_on[r.code], words)]

    def _held_words(self, seen: dict[Any, Any] | None, path: Any, text: str) -> set[str]:
        """Which of the selected rules' ``fires_on`` words ``text`` may hold: those that are
        substrings of it read with every ``-`` as ``_``. Each word ``words_of(text)`` finds is
        one (an identifier, a hyphenated run read with ``_`` for ``-``, the ``X`` of a
        ``no_X``), so a rule none of whose words is held here has none in ``words_of``; a held
        word may be part of a longer identifier only, and the rule then runs, as it would
        without the test. Kept in ``seen`` by ``path`` (None: not kept)."""
        key = ("words", path)
        found = seen.get(key) if seen is not None else None
        if found is None:
            names = self.__dict__.get("_word_names")
            if names is None:
                names = self._word_names = TriggerNames(
                    {w for e in self.entries for w in (e.get("fires_on") or ())})
            found = names.found_in(text.replace("-", "_") if "-" in text else text)
            if seen is not None:
                seen[key] = found
        return found


def _may_fire(fires_on: frozenset[str] | None, held: set[str]) -> bool:
    """Whether a rule with ``fires_on`` may report on a setup whose texts hold ``held`` of the
    words (``RuleSet._held_words``, of every text together): it has no words, or one of them
    is held."""
    return fires_on is None or not fires_on.isdisjoint(held)


class TriggerNames:
    """A set of trigger names, and which of them a text holds as substrings (``found_in``): a
    name that holds another name, or one of the ``GATES``, is looked for only in a text that
    holds that one (``SFTConfig`` only where ``Config`` is, ``Seq2SeqTrainingArguments`` only
    where ``TrainingArguments`` is): the same set, with fewer searches."""

    GATES = ("Config", "Trainer")

    def __init__(self, names: set[str]) -> None:
        self.names = frozenset(names)
        order = sorted(names | set(self.GATES), key=lambda n: (len(n), n))
        # (name, the longest shorter name or gate it holds, or None), shortest first
        self._plan = [(n, next((m for m in reversed(order[:i]) if m in n), None)) for i, n in enumerate(order)]
        # ordered trigger set -> (the largest smaller one it holds, the names it adds): ``plan_orders``
        self._split: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def found_in(self, text: str) -> set[str]:
        hit: set[str] = set()
        for name, gate in self._plan:
            if (gate is None or gate in hit) and name in text:
                hit.add(name)
        return hit & self.names

    def plan_orders(self, orders: list[tuple[str, ...]]) -> None:
        """For each of the ordered trigger tuples the planning asks (``HeldNames.holds_any``),
        the largest other one among them that it holds and the names it adds: a text that
        holds one of the rules' common triggers then answers every larger set at once, and
        one that holds none of them is searched for the added names only."""
        distinct = sorted(set(orders), key=len)
        split: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[str, ...]]] = {}
        for order in distinct:
            mine = set(order)
            sub = max((o for o in distinct if len(o) < len(order) and mine.issuperset(o)), key=len, default=None)
            if sub is not None:
                split[order] = (sub, tuple(n for n in order if n not in sub))
        self._split = split

    def held(self, text: str) -> HeldNames:
        """Which of the names ``text`` holds, each searched when first asked (``HeldNames``)."""
        if "_gates" not in self.__dict__:
            self._gates = dict(self._plan)
            # the names that end with a gate (``SFTConfig``...), by gate: by the length of what
            # precedes it, each such piece's name
            groups: dict[str, dict[int, dict[str, str]]] = {}
            for n in self.names:
                g = next((g for g in self.GATES if n.endswith(g) and n != g), None)
                if g is not None:
                    groups.setdefault(g, {}).setdefault(len(n) - len(g), {})[n[:len(n) - len(g)]] = n
            self._suffixed = {n: g for g, by_len in groups.items() for pieces in by_len.values()
                              for n in pieces.values()}
            self._groups = {g: sorted(by_len.items()) for g, by_len in groups.items()}
        return HeldNames(text, self)


class HeldNames:
    """The trigger names one text holds (substrings), each searched on its first question, a
    name that holds a shorter name or gate only where that one is (``TriggerNames``). The
    planning asks whether a text holds any of a rule's triggers: a text that holds the first
    one asked (``Trainer``) answers every rule with the same triggers without another
    search, where finding all the names would search the whole text for each absent one.
    The names that end with a gate (the TRL ``...Config`` classes, which a text without
    ``Trainer`` is asked for one by one) are found together, from the gate's occurrences: a
    name ``XConfig`` is in the text exactly where ``X`` stands before one of them."""

    __slots__ = ("text", "_names", "_hit", "_any")

    def __init__(self, text: str, names: TriggerNames) -> None:
        self.text = text
        self._names = names
        self._hit: dict[str, bool] = {}
        self._any: dict[tuple[str, ...], bool] = {}  # ``holds_any``, by its names

    def holds(self, name: str) -> bool:
        hit = self._hit.get(name)
        if hit is None:
            names = self._names
            suffix = names._suffixed.get(name)
            if suffix is not None:
                self._suffixed_by(suffix)
                return self._hit[name]
            gate = names._gates.get(name)
            hit = self._hit[name] = (gate is None or self.holds(gate)) and name in self.text
        return hit

    def _suffixed_by(self, gate: str) -> None:
        """Whether the text holds each name that ends with ``gate``, from one pass over the
        gate's occurrences (none: none of them)."""
        groups = self._names._groups[gate]
        found: set[str] = set()
        if self.holds(gate):
            text = self.text
            i = text.find(gate)
            while i >= 0:
                for size, pieces in groups:
                    if i >= size:
                        n = pieces.get(text[i - size:i])
                        if n is not None:
                            found.add(n)
                i = text.find(gate, i + 1)
        hit = self._hit
        for _, pieces in groups:
            for n in pieces.values():
                hit[n] = n in found

    def holds_any(self, names: tuple[str, ...]) -> bool:
        found = self._any.get(names)
        if found is None:
            split = self._names._split.get(names)
            if split is not None:  # a smaller set of the rules' triggers, and the names it lacks
                found = self.holds_any(split[0]) or self._holds_one(split[1])
            else:
                found = self._holds_one(names)
            self._any[names] = found
        return found

    def _holds_one(self, names: tuple[str, ...]) -> bool:
        hit = self._hit
        for name in names:
            h = hit.get(name)
            if h or h is None and self.holds(name):
                return True
        return False


class _Present:
    """The trigger names the texts of a workspace hold, as ``can_trigger`` asks them
    (``isdisjoint``, ``in``): each name searched text by text until one holds it."""

    __slots__ = ("_held", "_order", "_hit", "_none")

    def __init__(self, held: list[HeldNames], order: Any) -> None:
        self._held = held
        self._order = order
        self._hit: dict[str, bool] = {}
        self._none: dict[tuple[str, ...], bool] = {}  # ``isdisjoint``, by the ordered names

    def __contains__(self, name: str) -> bool:
        hit = self._hit.get(name)
        if hit is None:
            hit = self._hit[name] = any(h.holds(name) for h in self._held)
        return hit

    def isdisjoint(self, names: Any) -> bool:
        order = self._order(names)
        none = self._none.get(order)
        if none is None:
            none = self._none[order] = not any(n in self for n in order)
        return none


_LAUNCH_KEYS = frozenset({"launch", "launch_file", "site_refs"})  # a launch line's own keys (``linking``)


def _launch_text(launch: Any) -> str:
    """The strings of a launch line as linking read it (``LaunchCommand``), one a line: the
    launcher and its CLI or module, the script, the positionals, every option's name, key,
    value(s) and raw text (after ``$VAR`` substitution), every variable's name and value.
    Each word ``words_of`` finds in the line's values is in it (``_held_words``)."""
    parts = [launch.launcher, launch.cli or "", launch.module or ""]
    if launch.script is not None:
        parts.append(launch.script[0])
    parts.extend(text for text, _ in launch.positionals)
    for f in [*launch.script_args, *launch.launcher_flags, *launch.launcher_args.values()]:
        parts.extend((f.name, f.key, f.value or "", f.raw))
        parts.extend(text for text, _ in f.extra_values)
    for name, a in launch.env.items():
        parts.extend((name, a.name, a.value or ""))
    return "\n".join(parts)


def _python_text(f: Any) -> str | None:
    """The text the triggers are searched in for a setup of Python files only: a script's, or a
    notebook's Python program when it has no launch line and writes no file (a notebook is then
    a Python program); None for any other file."""
    if f.kind == "python":
        return f.text.text
    nb = f.doc if f.kind == "notebook" else None
    if nb is not None and not nb.launches and not nb.written:
        return nb.python_text
    return None


def make_rules(settings: Settings) -> RuleSet | list[Rule]:
    """The run's rules (a ``RuleSet``; a list of rule instances works too)."""
    return RuleSet(settings)


def run_rules(ws: Workspace, settings: Settings, declared: set[str] | None = None, *,
              ctx: RunContext | None = None, rules: RuleSet | list[Rule] | None = None,
              memo: SetupMemo | None = None, leave: list[Any] | None = None) -> list[Diagnostic]:
    """Every rule on every setup of ``ws``; ``declared`` (when given) collects the setups' files.
    ``memo`` (``fix``'s passes): a setup whose digest an earlier pass checked takes its findings
    from there (``trainlint.fixing.setup_memo``). ``leave``: what the check made is appended to
    it instead of freed on return (``run_task``)."""
    if rules is None:
        rules = make_rules(settings)
    if ctx is None:
        ctx = workspace_context(ws, settings)
    linking_error: Diagnostic | None = None
    try:
        setups = build_setups(ws, settings, ctx)  # linking may read more files and add input problems
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - linking failed: check each script on its own
        first = sorted(ws.files)[0] if ws.files else "."
        linking_error = internal_error(first, "linking the files of the setup", exc)
        docs = [(f.path, f.doc) for f in ws.files.values() if f.kind == "python" and f.doc is not None]
        docs += [(f.path, f.doc.python) for f in ws.files.values()  # a notebook's program
                 if f.kind == "notebook" and f.doc is not None and f.doc.python is not None]
        setups = [single_file_setup(path, doc, ctx) for path, doc in docs]
    settle_syntax(ws)  # the syntax checks linking's full reads did not make needless
    out: list[Diagnostic] = list(ws.problems)
    if linking_error is not None:
        out.append(linking_error)
    rule_set = rules if isinstance(rules, RuleSet) else None
    seen: dict[Any, Any] = {}
    if rule_set is not None:
        rules = rule_set.for_workspace(ws, seen) if setups else []
    planned = [(setup, rule_set.for_setup(setup, ws, rules, seen) if rule_set is not None else rules)
               for setup in setups]
    keys: list[str | None] = [None] * len(planned)
    if memo is not None:  # every digest before any rule runs
        memo.start(ws)
        keys = [memo.key(setup, tuple(r.code for r in here)) for setup, here in planned]
    share = ScriptShare()
    if leave is not None:
        leave.append((setups, planned, share, seen))
    with reads.one_check():  # answers the setups share (a package's target for a folder), for this check
        _check_setups(planned, keys, share, out, declared, memo)
    return _without_walked_markdown(ws, out)


def _check_setups(planned: list, keys: list, share: ScriptShare, out: list[Diagnostic], declared: set[str] | None,
                  memo: SetupMemo | None) -> None:
    for (setup, here), key in zip(planned, keys):
        if declared is not None:
            declared.update(str(f) for f in setup.files)
        if memo is None:
            out.extend(_check_setup(setup, here, share))
            continue
        found = memo.get(key)
        if found is None:
            with reads.recording() as outside:
                found = _check_setup(setup, here, share)
            memo.put(key, found, outside)
        out.extend(found)


class ScriptShare:
    """The findings of each per-script rule (``ScriptRule``) on each script, kept across the
    setups of one workspace (a module that every test imports, a script that forty README
    commands launch): with the questions the rule asked of the setup (``Facts``) and their
    answers, and the notes of what it read (``reads``). A setup that holds the script and
    answers every one of those questions the same gets those findings; any other is checked
    afresh (and its answers kept too). What the rule knows of a setup is only those answers,
    so the findings are the ones it would report."""

    MAX_VARIANTS = 8  # distinct answer sets kept per (rule, script)

    def __init__(self) -> None:
        # id(rule), id(script) -> (rule, script, [(log, findings, notes)]): the objects are
        # kept, so their ids are not reused while this lives
        self._entries: dict[tuple[int, int], tuple[Any, Any, list]] = {}
        self.hits = 0  # scripts whose findings were shared (for tests and benchmarks)
        self.runs = 0

    def findings(self, rule: ScriptRule, setup: Any, facts: Facts) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        for pf in setup.scripts:
            key = (id(rule), id(pf))
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = (rule, pf, [])
            variants = entry[2]
            for log, found, notes in variants:
                if facts.agrees(log):
                    if notes:
                        reads.replay(notes)
                    self.hits += 1
                    out.extend(found)
                    break
            else:
                view = facts.recording()
                with reads.recording() as notes:
                    found = list(rule.check_script(pf, view))
                self.runs += 1
                if len(variants) < self.MAX_VARIANTS:
                    variants.append((view.log, found, frozenset(notes)))
                out.extend(found)
        return out


def _check_setup(setup: Any, rules: list[Rule], share: ScriptShare | None = None) -> list[Diagnostic]:
    """What ``rules`` report on ``setup``; ``share``: per-script findings kept across setups."""
    out: list[Diagnostic] = []
    docs = str(setup.extra.get("launch_file", "")).lower().endswith(_DOCS)
    facts: Facts | None = None
    training: bool | None = None  # whether the setup has a training call (asked once)
    sites: bool | None = None  # whether the setup has a site a site rule looks at (asked once)
    for rule in rules:
        try:
            kind = _KIND.get(type(rule))
            if kind is None:
                kind = _kind(type(rule))
            if kind & _NEEDS_TRAINING:
                if training is None:
                    training = _has_training_call(setup)
                if not training:
                    continue  # ``Rule.needs_training``: nothing it reads is in the setup
                kind &= ~_NEEDS_TRAINING
            if kind == _SITE:
                if sites is None:
                    sites = _has_known_sites(setup)
                if not sites:
                    continue  # ``SiteRule.check`` looks at those sites only: nothing to report
            if share is not None and kind == _PER_SCRIPT:
                if facts is None:
                    facts = Facts(setup)
                found = share.findings(rule, setup, facts)
            else:
                found = list(rule.check(setup))
            if not found:
                continue
            found = with_assumed(setup, with_consumer(setup, found))
            # judged against a release newer than the target (the data starts later): an
            # assumption, so info, and a fix of it is not proven on the target: unsafe
            found = [_assumed_version(d) if OLDER_THAN_DATA in d.message else d for d in found]
            if docs:  # a README command is documentation: at most a warning
                found = [replace(d, severity=Severity.WARNING) if d.severity is Severity.ERROR
                         and d.path.lower().endswith(_DOCS) else d for d in found]
            out.extend(found)
        except Exception as exc:  # noqa: BLE001 - one broken rule must not stop the run
            # on a file that is reported: a README that launches the setup is not, when walked
            path = next((str(f) for f in setup.files if not str(f).lower().endswith(_DOCS)),
                        str(setup.files[0]) if setup.files else str(setup.root))
            out.append(internal_error(path, f"rule {rule.code} ({rule.name})", exc))
    return out


_DOCS = (".md", ".markdown", ".mdx")
_PLAIN, _PER_SCRIPT, _SITE = range(3)
_NEEDS_TRAINING = 4  # a bit over those: run only on a setup with a training call (``_has_training_call``)
_KIND: dict[type, int] = {}  # rule class -> how it is run: per script (``ScriptShare``), per site, plain


def _kind(t: type) -> int:
    """``_PER_SCRIPT`` for a ``ScriptRule`` that keeps ``ScriptRule.check``, ``_SITE`` for a
    ``SiteRule`` that keeps ``SiteRule.check`` (a site rule's module imports ``_versioned``:
    without it loaded there is none), else ``_PLAIN``; with ``_NEEDS_TRAINING`` for a rule that
    declares ``Rule.needs_training`` and for a ``_SITE`` rule (its sites are training calls)."""
    import sys

    versioned = sys.modules.get("trainlint.rules._versioned")
    site_rule = getattr(versioned, "SiteRule", None)
    if issubclass(t, ScriptRule) and t.check is ScriptRule.check:
        kind = _PER_SCRIPT
    elif site_rule is not None and issubclass(t, site_rule) and t.check is site_rule.check:
        kind = _SITE
    else:
        kind = _PLAIN
    if kind == _SITE or getattr(t, "needs_training", False):
        kind |= _NEEDS_TRAINING
    _KIND[t] = kind
    return kind


def _has_training_call(setup: Any) -> bool:
    """Whether ``setup`` has a training call, the one thing a ``Rule.needs_training`` rule
    reports through: a TrainingArguments-like site of any reader (``all_sites``: the Python
    calls linking took, a launch line's flags, an args file, a framework CLI's values), or a
    Trainer or TrainingArguments call in one of its scripts (found when the file was read and
    linked; ``trainer_contexts`` and ``model_flows`` start from ``trainer_calls``). Lists that
    are already there: no walk."""
    if setup.all_sites:
        return True
    return any(pf.trainer_calls or pf.args_calls for pf in setup.scripts)


def _has_known_sites(setup: Any) -> bool:
    """Whether ``setup`` has a site of a class the versioned data knows (``known_sites``);
    True when asking fails (each site rule then meets the failure and reports it)."""
    from trainlint.rules._versioned import known_sites

    try:
        return bool(known_sites(setup))
    except Exception:  # noqa: BLE001 - the rules report it
        return True


def _assumed_version(d: Diagnostic) -> Diagnostic:
    fix = d.fix
    if fix is not None and fix.applicability == "safe":
        fix = replace(fix, applicability="unsafe")
    return replace(d, severity=Severity.INFO, fix=fix)


def _without_walked_markdown(ws: Workspace, found: list[Diagnostic]) -> list[Diagnostic]:
    """A Markdown file found by a folder walk is read for its commands, which tell who reads
    a script or an args file (a README's ``accelerate launch sft.py --config recipe.yaml``);
    findings in the Markdown itself are reported only when it is named explicitly."""
    quiet = {p for p, f in ws.files.items() if f.kind == "markdown" and not f.explicit}
    if not quiet:
        return found
    return [d for d in found if d.path not in quiet]


def filter_findings(diagnostics: list[Diagnostic], ws: Workspace, settings: Settings) -> list[Diagnostic]:
    """What is reported: selected, not ignored for the file, not suppressed, once, sorted."""
    selectors = settings.select + settings.extend_select
    sup = Suppressions(ws)
    seen: set[tuple] = set()
    kept: list[Diagnostic] = []
    for d in diagnostics:
        if d.code != "TL000":
            if not is_selected(d.code, d.name, selectors) or is_selected(d.code, d.name, settings.ignore):
                continue
            ignored = settings.ignored_for(d.path)
            if ignored and is_selected(d.code, d.name, ignored):
                continue
            if sup.suppressed(d):
                continue
        key = (d.path, d.line, d.column, d.code, d.message)
        if key in seen:
            continue
        seen.add(key)
        kept.append(d)
    if any(f.kind == "notebook" for f in ws.files.values()):
        from trainlint.sources.notebook import to_cells

        kept = to_cells(kept, ws)  # notebook findings: cell + line within the cell
    kept.sort(key=lambda d: d.sort_key())
    return kept


class Outcome(Record):
    """What checking one group gave."""

    __slots__ = ("diagnostics", "texts", "kinds", "unparsable", "deps", "__dict__")
    diagnostics: list[Any]
    texts: dict[str, str]  # the files read (with linked configs pulled in from outside)
    kinds: dict[str, str]
    unparsable: list[str]
    deps: list[str]  # files its setups declared besides the group's own, and where linking found none

    def __init__(self, diagnostics: list[Any], texts: dict[str, str], kinds: dict[str, str],
                 unparsable: list[str], deps: list[str]) -> None:
        self.diagnostics = diagnostics
        self.texts = texts
        self.kinds = kinds
        self.unparsable = unparsable
        self.deps = deps


def check_group(entries: list[tuple[str, bool]], settings: Settings, overlay: dict[str, str],
                ctx: RunContext, rules: RuleSet | list[Rule] | None = None, reuse: Reuse | None = None,
                leave: list[Any] | None = None) -> Outcome:
    """Read ``entries`` ((path, explicit) in walk order) into one workspace and check it.
    ``reuse``: the parses kept across the passes of one ``fix`` (``Reuse``); ``leave``: the
    workspace and what its check made are appended to it instead of freed (``run_task``)."""
    ws = Workspace(settings=settings, overlay=overlay)
    if leave is not None:
        leave.append(ws)
    if reuse is not None and reuse.wanted(entries):
        ws.reads = reuse.reads
    defer_syntax_checks(ws)  # settled in ``run_rules``, after linking's reads
    for path, explicit in entries:
        read_entry(ws, path, explicit)
    if ws.reads is not None:
        ws.reads = None  # what linking reads besides is read afresh
        assert reuse is not None
        out = reuse.in_child(lambda: _check_read(ws, entries, settings, ctx, rules, reuse.setups), rules, ws)
        if out is not None:
            return out
        ws = Workspace(settings=settings, overlay=overlay)  # the child failed: check here, afresh
        for path, explicit in entries:
            read_entry(ws, path, explicit)
    return _check_read(ws, entries, settings, ctx, rules, leave=leave)


def _check_read(ws: Workspace, entries: list[tuple[str, bool]], settings: Settings, ctx: RunContext,
                rules: RuleSet | list[Rule] | None, memo: SetupMemo | None = None,
                leave: list[Any] | None = None) -> Outcome:
    declared: set[str] = set()
    with reads.recording() as outside:  # what rules read from outside the workspace
        diagnostics = filter_findings(run_rules(ws, settings, declared, ctx=ctx, rules=rules, memo=memo, leave=leave), ws,
                                      settings)
    declared.update(outside - ws.files.keys())
    declared.difference_update(p for p, _ in entries)
    declared.update(ws.absent - ws.files.keys())  # a file that appears there can change the result
    return Outcome(diagnostics, {p: f.text.text for p, f in ws.files.items()},
                   {p: f.kind for p, f in ws.files.items()}, sorted(ws.unparsable), sorted(declared))


class Reuse:
    """What one ``fix`` keeps across its passes so that a group of linked files whose texts
    changed is not parsed again whole: each file's read (``Workspace.reads``, keyed on its
    text), made in this process, which then never links or checks them. Linking, setups,
    rules and the filter run in a forked child process on the workspace as read (copy on
    write), which sends back the outcome, so every document this process keeps stays exactly
    as its reader made it: a later pass gets, for each file whose text did not change, what
    reading it again would give, and the check is the same as a fresh one. Only groups of
    several files are checked this way (a stand-alone script that changed has nothing to
    reuse), and only where ``os.fork`` exists; if the child fails for any reason, the group
    is read again and checked in this process."""

    MIN_BYTES = 64 * 1024  # smaller groups parse faster than a child process starts

    def __init__(self) -> None:
        import os

        import threading

        self.reads: dict[tuple, tuple] = {}
        # forking is safe only when no other thread can hold a lock the child would need (an
        # import's): the thread running the fix and the main thread waiting for it, as in the
        # command line; a language server's threads keep the plain passes
        self.enabled = hasattr(os, "fork") and threading.active_count() <= 2
        self.children = 0  # how many groups were checked in a child (for tests)
        # the findings of each setup checked in a child, by digest: a later pass's child runs
        # the rules only on setups whose digest is new (``trainlint.fixing.setup_memo``)
        from trainlint.fixing.setup_memo import SetupMemo

        self.setups = SetupMemo()

    def wanted(self, entries: list[tuple[str, bool]]) -> bool:
        if not self.enabled or len(entries) < 2:
            return False
        import os

        size = 0
        for path, _ in entries:
            try:
                size += os.stat(path).st_size
            except OSError:
                continue
            if size >= self.MIN_BYTES:
                return True
        return False

    def in_child(self, check: Any, rules: RuleSet | list[Rule] | None, ws: Workspace) -> Outcome | None:
        """``check()`` run in a forked child; its outcome, or None when the child failed."""
        import gc
        import os
        import pickle
        import sys
        import warnings

        if isinstance(rules, RuleSet):
            try:  # made here, so that the next pass's child inherits them instead of importing
                rules.for_workspace(ws)
            except Exception:  # noqa: BLE001 - the child meets (and reports) the same problem
                pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        read_end, write_end = os.pipe()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
            try:
                pid = os.fork()
            except OSError:
                os.close(read_end)
                os.close(write_end)
                return None
        if pid == 0:  # the child: check, send the outcome, leave without any clean-up
            code = 1
            try:
                os.close(read_end)
                gc.freeze()  # what it inherited is never freed here: keep the collector off it
                self.setups.hits = 0  # this child's, sent back
                data = pickle.dumps((check(), self.setups.added, self.setups.hits), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(write_end, "wb") as f:
                    f.write(data)
                code = 0
            except BaseException:  # noqa: BLE001 - the parent checks the group itself
                pass
            finally:
                os._exit(code)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as f:
            data = f.read()
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            return None
        try:
            out, added, hits = pickle.loads(data)
        except Exception:  # noqa: BLE001
            return None
        self.children += 1
        self.setups.merge(added)
        self.setups.hits += hits
        return out


def check_unit(path: str, explicit: bool, text: str, settings: Settings, ctx: RunContext,
               rules: RuleSet | list[Rule] | None = None, leave: list[Any] | None = None) -> Outcome:
    """One stand-alone script, checked as a run of its own (its text already read)."""
    return check_group([(path, explicit)], settings, {path: text}, ctx, rules, leave=leave)


def run_task(task: Any, settings: Settings, overlay: dict[str, str], ctx: RunContext,
             rules: RuleSet | list[Rule] | None = None, reuse: Reuse | None = None,
             leave: list[Any] | None = None) -> Outcome:
    """One task of a run's plan, whichever scheduler runs it: a stand-alone script (an object
    with ``path``, ``explicit`` and ``text``) or a group of (path, explicit) entries.

    ``leave``: a list the task's workspace and setups are appended to, so that they are not
    freed when it returns. For the last task of a process that ends right after the run
    (``os._exit``: nothing is freed there): freeing a group's trees, indexes and setups one
    object at a time is work no one needs (peft: 2.3 % of the run's instructions)."""
    if isinstance(task, list):
        return check_group(task, settings, overlay, ctx, rules, reuse, leave=leave)
    return check_unit(task.path, task.explicit, task.text, settings, ctx, rules, leave=leave)
