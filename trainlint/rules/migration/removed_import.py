"""TL611 removed-import: a name the target transformers / trl / peft no longer exports"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterable

from trainlint.diagnostics import Diagnostic, Edit, Severity, Span
from trainlint.knowledge import training_args as ta
from trainlint.rules._versioned import _source, target, target_text
from trainlint.rules.base import Case, Facts, ScriptRule
from trainlint.setup import Setup
from trainlint.sources.python import PythonFile

if TYPE_CHECKING:  # pragma: no cover
    from trainlint.knowledge import public_names

_PACKAGES = ("transformers", "trl", "peft")  # the packages whose names the data covers


def _pn():
    """The names data (imported, and its file read, only for a file that imports from one of
    the packages)."""
    from trainlint.knowledge import public_names

    return public_names

_GUARDS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException", "AttributeError"}


def _target_version(setup: Setup, package: str) -> tuple[str, str]:
    """(version, words) of the target ``package``: transformers and trl from the setup's target;
    peft (no target setting) as ``Setup.target_of`` resolves it: the project's declaration
    (the installed version when it satisfies it), else the installed version; else the newest
    the data knows. Worked out once per setup and package (every import asks)."""
    key = "_tl611_target_" + package
    found = setup.extra.get(key)
    if found is None:
        found = setup.extra[key] = _find_target_version(setup, package)
    return found


def _find_target_version(setup: Setup, package: str) -> tuple[str, str]:
    tf, _, trl, _ = target(setup)
    if package == "transformers":
        return tf, target_text(setup)
    if package == "trl":
        return trl, target_text(setup, "trl")
    v = setup.target_of(package)
    resolved = setup.versions.get(package)
    if v and resolved is not None:
        return v, f"target {package} {v} from {_source(resolved.note or '')}"
    newest = _pn().known_versions("peft")[-1]
    return newest, f"target peft {newest} from the newest the data knows"


def _may_have_status(package: str, name: str) -> bool:
    """Whether ``_status`` can find ``name`` removed or a stub at some version: it has a
    removal history, or it is a TRL trainer (a stub in some releases)."""
    return _pn().removed(package, name) is not None or (package == "trl" and name.endswith("Trainer"))


def _guarded(pf: PythonFile, node: ast.AST) -> bool:
    """Whether ``node`` sits in a ``try`` that catches ImportError (a fallback import), or under
    an ``if`` that tests a version or an availability helper (a version-gated import)."""
    chain = _ancestors(pf, node)
    if chain is None:  # not found by position (an f-string's parts): every parent of the file
        parents = _parents(pf)
        chain = []
        cur = node
        while id(cur) in parents:
            cur = parents[id(cur)]
            chain.append(cur)
        chain.reverse()
    cur = node
    for parent in reversed(chain):
        if isinstance(parent, ast.Try) and cur in parent.body:
            for h in parent.handlers:
                names = {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(h.type)
                         if isinstance(n, (ast.Name, ast.Attribute))} if h.type is not None else {"BaseException"}
                if names & _GUARDS:
                    return True
        if isinstance(parent, ast.If):
            test = ast.unparse(parent.test).lower()
            if "version" in test or "available" in test:
                return True
        cur = parent
    return False


def _ancestors(pf: PythonFile, node: ast.AST) -> list[ast.AST] | None:
    """The nodes from the module down to ``node``'s parent, found by descending only into the
    nodes whose extent holds ``node``'s (and into those without a position: ``arguments``,
    comprehensions, ``withitem``, ``match_case``); None when that search does not reach it.
    A tree has one path to a node, so a path that ends at ``node`` itself is its ancestors."""
    if getattr(node, "end_lineno", None) is None:
        return None
    target = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
    stack: list[tuple[ast.AST, int]] = [(pf.tree, 0)]
    path: list[ast.AST] = []
    while stack:
        cur, depth = stack.pop()
        del path[depth:]
        path.append(cur)
        for child in reversed(list(ast.iter_child_nodes(cur))):
            if child is node:
                return path
            if _may_hold(child, target):
                stack.append((child, depth + 1))
    return None


def _may_hold(n: ast.AST, target: tuple[int, int, int, int]) -> bool:
    end = getattr(n, "end_lineno", None)
    if end is None:
        return True  # no position: look inside
    start = (n.lineno, n.col_offset)  # type: ignore[attr-defined]
    decorators = getattr(n, "decorator_list", None)
    if decorators:
        start = min(start, *((d.lineno, d.col_offset) for d in decorators))
    return start <= target[:2] and target[2:] <= (end, n.end_col_offset)  # type: ignore[attr-defined]


def _parents(pf: PythonFile) -> dict[int, ast.AST]:
    cached = getattr(pf, "_tl611_parents", None)
    if cached is None:
        cached = {}
        for n in pf.nodes:
            for child in ast.iter_child_nodes(n):
                cached[id(child)] = n
        pf._tl611_parents = cached  # type: ignore[attr-defined]
    return cached


class RemovedImport(ScriptRule):
    """
    ## What it does
    Flags `from transformers import X` / `from trl import X` / `from peft import X` (and
    `transformers.X` after `import transformers`) when the target version of that package no
    longer exports `X`, but an earlier release did: `AdamW`, `TextDataset`,
    `LineByLineTextDataset`, `AutoModelWithLMHead`, `is_torch_tpu_available` (transformers),
    `DataCollatorForCompletionOnlyLM`, `pack_examples`, `AlignPropTrainer`, `DDPOTrainer` and
    the trainers that moved to `trl.experimental` (`BCOTrainer`, `CPOTrainer`, `GKDTrainer`,
    `NashMDTrainer`, `OnlineDPOTrainer`, `ORPOTrainer`, `PPOTrainer`, `PRMTrainer`,
    `XPOTrainer`, ...), `prepare_model_for_int8_training` (peft). A name a release dropped and a
    later one exports again (`BertLayer` and some thirty other model building blocks, absent from
    the top level of transformers 4.45-4.51) is flagged when the target sits in that gap, never at a
    version that has it; the message names the releases that do. It also flags, as a warning,
    a TRL trainer whose top-level import is a deprecation stub in the target release. Imports in
    a `try` that catches `ImportError`, or under an `if` on a version or an `is_*_available()`
    helper, are left alone. The names of every release are read from the released wheels (the
    lazy `_import_structure` included, and what transformers 5's lazy module serves on access:
    `BertTokenizerFast` as `BertTokenizer`, `LayoutLMTokenizer` through its converter); the target transformers/TRL version is the usual one, the
    peft version the installed one, else the newest known.

    ## Why is this bad?
    `ImportError: cannot import name 'AdamW' from 'transformers'` stops the script before
    anything runs, typically on a machine that installed a newer release than the one the
    script was written for.

    ## Example
    ```python
    from transformers import AdamW
    from trl import ORPOTrainer
    from peft import prepare_model_for_int8_training
    ```

    ## Use instead
    ```python
    from torch.optim import AdamW  # weight_decay defaults to 0.01 here
    from trl.experimental.orpo import ORPOTrainer
    from peft import prepare_model_for_kbit_training
    ```

    ## Fix safety
    A move within the same package (`trl` -> `trl.experimental.orpo`) and a former alias
    (`prepare_model_for_int8_training` -> `prepare_model_for_kbit_training`) are safe: the same
    object. `AdamW` -> `torch.optim.AdamW` is unsafe (other `weight_decay` default; no fix when
    `correct_bias=` is passed), so is `is_torch_tpu_available` -> `is_torch_xla_available` (true
    for any XLA device). The others have no one-line replacement: the message says what to use.
    A plain `from X import Name` is rewritten (uses of the name are kept by importing the new
    object under the old local name when the name changes). A safe fix stays safe only when the
    new import works on the oldest version the notebook or shell script installs itself
    (`%pip install "peft==0.2.0"`) or the project allows (`trl>=0.19.1`: no
    `trl.experimental.orpo` there), as read from the released wheels; otherwise it is unsafe.
    A name that the target release exports nowhere (`BCOTrainer` in trl 1.14+) gets no fix.

    ## References
    - huggingface/transformers#36177 (AdamW removed in 4.50)
    - huggingface/trl#3704 (`DataCollatorForCompletionOnlyLM`, `pack_examples`); trl 0.26-0.28
      `trl/trainer/*_trainer.py` stubs ("is now located in `trl.experimental`")
    - huggingface/peft#1583 (`prepare_model_for_int8_training`)
    - sentence-transformers/ColBERT#390, CogStack/MedCAT#523, yuh-zha/AlignScore#23 (breakage seen
      in public repositories)
    """

    code = "TL611"
    name = "removed-import"
    severity = Severity.ERROR
    # importing a removed name names its library, and the name itself: a file that merely
    # imports transformers is not parsed on this rule's account
    triggers = _PACKAGES
    fix_safety = "safe"
    summary = "an import of a name the target transformers/trl/peft release no longer exports"

    @classmethod
    def index_words(cls) -> dict[str, tuple[str, ...]]:
        from trainlint.knowledge import trl_trainers

        words = {p: set(_pn().removed_names(p)) for p in _PACKAGES}
        words["trl"].update(trl_trainers.stub_trainers())
        return {p: tuple(sorted(names)) for p, names in words.items()}

    cases = [
        Case("""
            from transformers import AdamW, get_scheduler
            opt = AdamW(model.parameters(), lr=1e-4)
            """, options={"transformers_version": "4.50.0"}, unsafe=True,
             fixed="from transformers import get_scheduler\nfrom torch.optim import AdamW\n"
                   "opt = AdamW(model.parameters(), lr=1e-4)\n"),
        Case("""
            from transformers import AdamW
            opt = AdamW(model.parameters(), lr=1e-4, correct_bias=False)
            """, options={"transformers_version": "5.24.0"}, fixed=None, unsafe=True,
             note="correct_bias has no torch equivalent: no fix"),
        Case("""
            import transformers
            ds = transformers.TextDataset(tokenizer=tok, file_path="a.txt", block_size=128)
            """, options={"transformers_version": "5.0.0"}),
        Case("""
            import peft as p
            def prepare(model):
                return p.prepare_model_for_int8_training(model)
            """, note="through a module alias, in a function"),
        Case("""
            from trl import ORPOConfig, ORPOTrainer
            """, options={"trl_version": "0.29.0"},
             fixed="from trl.experimental.orpo import ORPOConfig, ORPOTrainer\n"),
        Case("""
            from trl import SFTTrainer, DataCollatorForCompletionOnlyLM
            """, options={"trl_version": "0.20.0"}),
        Case("""
            from trl import BCOTrainer
            """, options={"trl_version": "0.27.0"}, note="a deprecation stub in 0.26-0.28: a warning",
             fixed="from trl.experimental.bco import BCOTrainer\n"),
        Case("""
            from trl import BCOTrainer
            """, options={"trl_version": "1.16.0"}, fixable=False,
             note="removed from trl.experimental too (1.14): nothing to import it from, no fix"),
        Case(files={"setup.py": "from setuptools import setup\nsetup(install_requires=['trl>=0.19.1'])\n",
                    "train.py": "from trl import ModelConfig, ORPOTrainer, TrlParser\n"},
             options={"trl_version": "1.16.0"}, unsafe=True,
             fixed="from trl import ModelConfig, TrlParser\nfrom trl.experimental.orpo import ORPOTrainer\n",
             note="alignment-handbook: the project allows trl 0.19.1, which has no trl.experimental.orpo: unsafe"),
        Case("""
            from peft import LoraConfig, prepare_model_for_int8_training
            model = prepare_model_for_int8_training(model)
            """, fixed="from peft import LoraConfig, prepare_model_for_kbit_training\n"
                       "model = prepare_model_for_kbit_training(model)\n"),
        Case(files={"requirements.txt": "transformers==4.48.0\n",
                    "train.py": "from transformers import BertLayer, BertModel\n"},
             message="exported it again", fixable=False,
             note="removed from the top level and re-added later: a project pinned in the gap lacks it"),
        Case(files={"pyproject.toml": '[project]\nname = "p"\nversion = "0"\ndependencies = ["transformers==4.51.3"]\n',
                    "train.py": "import transformers\nlayer = transformers.RoFormerLayer(config)\n"},
             message="exported it again", note="the last release of the gap, through the module"),
        # must not flag
        Case("""
            from transformers import AdamW
            """, options={"transformers_version": "4.49.0"}, flags=False),
        Case(files={"requirements.txt": "transformers==4.52.1\n",
                    "train.py": "from transformers import BertLayer, BertModel\n"},
             flags=False, note="re-added: the pinned release exports it again"),
        Case(files={"requirements.txt": "transformers==4.44.2\n",
                    "train.py": "from transformers import BertLayer\n"},
             flags=False, note="before the gap: the pinned release has it"),
        Case("""
            from transformers import AutoTokenizer, GPTNeoXTokenizerFast, LayoutLMTokenizer
            """, options={"transformers_version": "5.4.0"}, flags=False,
             note="transformers 5's lazy module serves XTokenizerFast as XTokenizer, and LayoutLMTokenizer "
                  "as BertTokenizer (SLOW_TO_FAST_CONVERTERS)"),
        Case("""
            try:
                from transformers import AdamW
            except ImportError:
                from torch.optim import AdamW
            """, options={"transformers_version": "5.24.0"}, flags=False, note="a fallback import"),
        Case("""
            from trl import SFTTrainer, DPOTrainer
            from peft import prepare_model_for_kbit_training
            """, options={"trl_version": "1.16.0"}, flags=False),
        Case("""
            from trl import ORPOTrainer
            """, options={"trl_version": "0.25.0"}, flags=False),
    ]

    def check_script(self, pf: PythonFile, facts: Facts) -> Iterable[Diagnostic]:
        imported = [n for n in pf.of_type(ast.ImportFrom) if n.level == 0 and n.module in _PACKAGES]
        modules = {local for local, qn in pf.imports.items() if qn in _PACKAGES}
        if not imported and not modules:
            return
        for node in imported:
            yield from self._import_from(facts, pf, node)
        if modules:
            yield from self._attributes(facts, pf, modules)

    # -- from X import Name ------------------------------------------------------------------

    def _import_from(self, facts: Facts, pf: PythonFile, node: ast.ImportFrom) -> Iterable[Diagnostic]:
        package = node.module or ""
        if not any(_may_have_status(package, a.name) for a in node.names):
            return  # no name with a history the target could lack: no version to work out
        version, where = facts.ask(_target_version, package)
        for alias in node.names:
            status = self._status(package, alias.name, version)
            if status is None or _guarded(pf, node):
                continue
            kind, h, moved_to = status
            sp = pf.span(alias)
            name_span = Span(path=pf.path, line=sp.line, column=sp.column, end_line=sp.line,
                             end_column=sp.column + len(alias.name))
            message, severity = self._message(package, alias.name, kind, h, moved_to, where, version)
            edits, applicability, fix_message = self._fix(pf, node, alias, package, moved_to)
            if edits and applicability == "safe":
                applicability, note = facts.ask(_destination_support, pf.path, package, alias.name, fix_message)
                message += note
            yield self.diagnostic(name_span, message, edits=edits, fix_message=fix_message,
                                  applicability=applicability, severity=severity)  # type: ignore[arg-type]

    def _status(self, package: str, name: str, version: str
                ) -> tuple[str, public_names.NameHistory, str | None] | None:
        """("removed" | "stub", history, where it lives now) or None."""
        h = _pn().missing_at(package, name, version)
        if h is not None:
            return "removed", h, _pn().import_path(package, name, version)
        if package == "trl" and name.endswith("Trainer"):
            from trainlint.knowledge import trl_trainers

            sig = trl_trainers.signature(name, version)
            if sig is not None and sig.stub and not sig.module.startswith("trl.experimental"):
                h = _pn().removed(package, name)
                later = _pn().import_path(package, name, h.removed_in) if h and h.removed_in else None
                hist = h or _pn().NameHistory(package, name, (), None, None)
                return "stub", hist, later or _stub_path(sig.stub, name)
        return None

    def _message(self, package: str, name: str, kind: str, h: public_names.NameHistory, moved_to: str | None,
                 where: str, version: str) -> tuple[str, Severity]:
        rep = _pn().replacement(package, name)
        # the stretch without it that holds the target: (first release without it, first with it again)
        since, back = (h.gap_at(version) if kind == "removed" else None) or (h.removed_in, None)
        if moved_to:
            advice = f"import it from {moved_to}"
        elif rep and rep.get("import"):
            mod, _, new = rep["import"].rpartition(".")
            advice = f"use {new} from {mod}" + (f" ({rep['note']})" if rep.get("note") else "")
        elif rep and rep.get("advice"):
            advice = rep["advice"]
        elif back:
            advice = "the known releases that export it: " + ", ".join(a if a == b else f"{a}-{b}" for a, b in h.present)
        else:
            advice = f"it is not exported by {package} any more"
        if kind == "stub":
            gone = f", removed from the top level in {package} {h.removed_in}" if h.removed_in else ""
            return (f"`from {package} import {name}` is a deprecated re-export in the target release{gone} "
                    f"({where}): {advice}", Severity.WARNING)
        if back:  # re-added later: the target sits in the gap
            return (f"{package} {since} removed {name} from its top level and {back} exported it again, but the "
                    f"target release lacks it ({where}): ImportError at start-up; {advice}", Severity.ERROR)
        return (f"{package} {since} removed {name} from its top level ({where}): ImportError at start-up; "
                f"{advice}", Severity.ERROR)

    def _fix(self, pf: PythonFile, node: ast.ImportFrom, alias: ast.alias, package: str, moved_to: str | None
             ) -> tuple[list[Edit] | None, str | None, str]:
        rep = _pn().replacement(package, alias.name)
        if moved_to:
            module, new_name, safety = moved_to, alias.name, "safe"
        elif rep and rep.get("import"):
            module, _, new_name = rep["import"].rpartition(".")
            safety = rep.get("safety", "unsafe")
            refuse = set(rep.get("refuse_keywords", ()))
            local = alias.asname or alias.name
            if refuse and any(isinstance(c.node.func, ast.Name) and c.node.func.id == local
                              and any(k.arg in refuse for k in c.node.keywords) for c in pf.calls):
                return None, None, ""
        else:
            return None, None, ""
        if any(a.name == "*" for a in node.names) or ";" in pf.lines[node.lineno - 1]:
            return None, None, ""
        local = alias.asname or alias.name
        edits: list[Edit] = []
        if new_name != alias.name and alias.asname is None:
            # rename the uses too, when the name is bound only by this import
            if len(pf.module_scope.bindings.get(alias.name, [])) != 1:
                return None, None, ""
            for n in pf.of_type(ast.Name):
                if n.id == alias.name:
                    edits.append(pf.span(n).edit(new_name))
            text_alias = new_name
        else:
            text_alias = f"{new_name} as {local}" if new_name != local else new_name
        stmt_span = pf.span(node)
        if module == package:
            # same module: rename in place
            sp = pf.span(alias)
            edits.append(Span(path=pf.path, line=sp.line, column=sp.column, end_line=sp.line,
                              end_column=sp.column + len(alias.name)).edit(new_name))
        elif len(node.names) == 1 or all(
                (_pn().import_path(package, a.name, None) or "") == module
                or self._moves_with(package, a.name, module) for a in node.names):
            # every name goes to the same place: rewrite the module of the statement
            names_text = pf.source_of(node)[pf.source_of(node).index(" import ") + len(" import "):]
            if len(node.names) == 1:
                names_text = text_alias if not pf.source_of(node).rstrip().endswith(")") else f"({text_alias})"
            edits = [e for e in edits]
            edits.append(stmt_span.edit(f"from {module} import {names_text}"))
        else:
            from trainlint.fixing.python_edits import remove_item

            spans = [pf.span(a) for a in node.names]
            i = node.names.index(alias)
            edits.append(remove_item(pf, spans, i))
            edits.append(Edit(path=pf.path, line=stmt_span.end_line + 1, column=1, end_line=stmt_span.end_line + 1,
                              end_column=1, content=f"from {module} import {text_alias}\n"))
        return edits, safety, f"import {new_name} from {module}"

    def _moves_with(self, package: str, name: str, module: str) -> bool:
        """Whether ``name`` of the same statement moves to ``module`` too (ORPOConfig with
        ORPOTrainer): its history ends where the other's does."""
        h = _pn().removed(package, name)
        return h is not None and h.removed_in is not None and _pn().import_path(package, name, h.removed_in) \
            == module

    # -- transformers.Name after import transformers ------------------------------------------

    def _attributes(self, facts: Facts, pf: PythonFile, modules: set[str]) -> Iterable[Diagnostic]:
        for node in pf.attribute_nodes():
            if not (isinstance(node.value, ast.Name) and node.value.id in modules and isinstance(node.ctx, ast.Load)):
                continue
            package = pf.imports[node.value.id]
            if not _may_have_status(package, node.attr):
                continue
            version, where = facts.ask(_target_version, package)
            status = self._status(package, node.attr, version)
            if status is None or _guarded(pf, node):
                continue
            kind, h, moved_to = status
            sp = pf.span(node)
            attr_span = Span(path=pf.path, line=sp.end_line, column=sp.end_column - len(node.attr),
                             end_line=sp.end_line, end_column=sp.end_column)
            message, severity = self._message(package, node.attr, kind, h, moved_to, where, version)
            message = message.replace("ImportError at start-up", "AttributeError when it runs")
            rep = _pn().replacement(package, node.attr)
            edits, applicability, fix_message = None, None, ""
            if moved_to is None and rep and rep.get("import", "").rpartition(".")[0] == package:
                new = rep["import"].rpartition(".")[2]
                edits, applicability = [attr_span.edit(new)], rep.get("safety", "unsafe")
                fix_message = f"use {package}.{new}"
            yield self.diagnostic(attr_span, message, edits=edits, fix_message=fix_message,
                                  applicability=applicability, severity=severity)  # type: ignore[arg-type]


def exports_at(package: str, name: str, module: str, version: str) -> bool | None:
    """Whether ``from module import name`` works in ``package`` ``version``, by the data read
    from the released wheels: the top level's names, the sub-packages a name moved to, and the
    deprecation stubs that say where it lives; None for a version older than the data."""
    known = _pn().known_versions(package)
    if ta.vkey(version) < ta.vkey(known[0]):
        return None
    if module == package:
        return _pn().exists(package, name, version)
    if _pn().import_path(package, name, version) == module:
        return True
    if package == "trl" and name.endswith("Trainer"):
        from trainlint.knowledge import trl_trainers

        sig = trl_trainers.signature(name, version)
        if sig is not None and sig.stub and _stub_path(sig.stub, name) == module:
            return True
    return False


def _destination_support(setup: Setup, path: str, package: str, name: str, fix_message: str) -> tuple[str, str]:
    """(applicability, message note) of a safe import fix: it stays safe only when the new
    import works on the oldest version the file installs or the project allows (the target
    itself is checked by the finding); otherwise it would break the code there."""
    from trainlint.rules._versioned import allowed_low, declares, version_words

    low = allowed_low(setup, package, path)
    if low is None:
        return "safe", ""
    # "import NEW from MODULE"
    new_name, _, module = fix_message[len("import "):].partition(" from ")
    ok = exports_at(package, new_name, module, low[0]) if low[0] != "0" else None
    if ok:
        return "safe", ""
    why = "which the data does not reach" if ok is None else f"where `from {module} import {new_name}` fails"
    return "unsafe", f" (the fix is unsafe: {declares(low[1])} {version_words(package, low)}, {why})"


def _stub_path(text: str, name: str) -> str | None:
    """``from trl.experimental.bco import BCOTrainer`` quoted in a stub's warning."""
    import re

    m = re.search(r"from (trl\.experimental(?:\.\w+)*) import " + re.escape(name), text)
    return m.group(1) if m else None
