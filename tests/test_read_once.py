"""Issue 18 (the parse floor): each Python file is parsed once per workspace. A walked script no
selected rule reads is only checked to parse (TL001), and that check waits until linking has
read what it needs (``workspace.defer_syntax_checks`` / ``settle_syntax``): a repository module
linking then reads in full is parsed once, not checked and then parsed. Each test below fails
if the wait dropped a TL001 or a finding that crosses modules, or parsed a file twice."""

from __future__ import annotations

import collections

import pytest
from helpers import lint_folder, write_files

import trainlint.workspace as workspace
from trainlint.config import load_settings
from trainlint.workspace import PY_PREFILTER, wanted_python

# a dataclass module that mentions a training library (the broad pre-filter lets it through)
# and no trigger of a rule: walked, it is only syntax-checked
EXTRA = ("# options read with the transformers parser\n"
         "from dataclasses import dataclass, field\n\n\n@dataclass\nclass Extra:\n"
         "    lora_r: int = 8\n    log_every: int = field(default=1)\n")
TRAIN = ("from transformers import HfArgumentParser, TrainingArguments, Trainer\n"
         "from arguments import Extra\n"
         "parser = HfArgumentParser((Extra, TrainingArguments))\n"
         "extra, _ = parser.parse_args_into_dataclasses()\n"
         "args = TrainingArguments(output_dir='o', logging_steps=extra.log_every)\n"
         "Trainer(model=m, args=args).train()\n")
BROKEN = "# a transformers helper\ndef f(:\n    pass\n"


@pytest.fixture
def parses(monkeypatch):
    """Every ``_parse_python`` call, by path: (syntax check only?); the parse of a module that
    linking only follows names through (``read_linked_module``) is a full one."""
    seen: dict[str, list[bool]] = collections.defaultdict(list)
    orig = workspace._parse_python

    def counted(ws, path, text, syntax_only=False):
        seen[path.replace("\\", "/").rsplit("/", 1)[-1]].append(syntax_only)
        return orig(ws, path, text, syntax_only)

    monkeypatch.setattr(workspace, "_parse_python", counted)
    linked = workspace.read_linked_module

    def linked_counted(ws, path):  # a module linking only follows names through: parsed there
        before = path in ws.files
        found = linked(ws, path)
        if found is not None or (not before and path in ws.files):
            seen[path.replace("\\", "/").rsplit("/", 1)[-1]].append(False)
        return found

    monkeypatch.setattr(workspace, "read_linked_module", linked_counted)
    return seen


def _codes(result, code):
    return [d for d in result.diagnostics if d.code == code]


def test_the_texts_are_what_the_tests_say(tmp_path):
    settings = load_settings(tmp_path, {})
    for text in (EXTRA, BROKEN):  # only syntax-checked when walked
        assert not wanted_python(text, settings) and any(t in text for t in PY_PREFILTER)
    assert wanted_python(TRAIN, settings)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_module_linking_reads_is_parsed_once_and_still_linked(tmp_path, parses, jobs):
    write_files(tmp_path, {".git/HEAD": "x\n", "arguments.py": EXTRA, "train.py": TRAIN})
    from helpers import settings_for
    from trainlint.engine import lint

    result = lint([tmp_path], settings_for(tmp_path), jobs=jobs, min_files=1)
    (d,) = _codes(result, "TL201")  # the field default crosses the module
    assert d.path.endswith("train.py") and d.line == 5
    if jobs == 1:  # (a pool parses in its workers)
        assert parses["arguments.py"] == [False]  # the full read linking made, no syntax check first
        assert parses["train.py"] == [False]


def test_a_walked_script_nothing_reads_is_still_checked(tmp_path, parses):
    write_files(tmp_path, {".git/HEAD": "x\n", "helper.py": BROKEN, "ok.py": "# transformers\nx = 1\n",
                           "train.py": TRAIN, "arguments.py": EXTRA})
    result = lint_folder(tmp_path)
    (d,) = _codes(result, "TL001")
    assert d.path.endswith("helper.py") and (d.line, d.column) == (2, 7)
    assert parses["helper.py"] == [True] and parses["ok.py"] == [True]


def test_a_broken_module_that_linking_reads_is_reported_once(tmp_path, parses):
    # walked (syntax check waiting) and imported by the script: linking's full read reports it
    write_files(tmp_path, {".git/HEAD": "x\n", "arguments.py": BROKEN + EXTRA, "train.py": TRAIN})
    result = lint_folder(tmp_path)
    (d,) = _codes(result, "TL001")
    assert d.path.endswith("arguments.py") and (d.line, d.column) == (2, 7)
    assert "cannot parse Python" in d.message
    assert parses["arguments.py"] == [False]
    # the script's own findings stay (its TrainingArguments still checked)
    assert result.diagnostics and all(x.path.endswith(("arguments.py", "train.py")) for x in result.diagnostics)


def test_a_broken_module_that_is_not_walked_is_reported_by_the_link(tmp_path, parses):
    # excluded from the walk: only linking reads it (as an explicit file), and reports it
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nexclude = ["vendor"]\n', encoding="utf-8")
    write_files(tmp_path, {".git/HEAD": "x\n", "vendor/arguments.py": BROKEN + EXTRA,
                           "train.py": TRAIN.replace("from arguments", "from vendor.arguments")})
    result = lint_folder(tmp_path)
    (d,) = _codes(result, "TL001")
    assert d.path.replace("\\", "/").endswith("vendor/arguments.py")
    assert parses["arguments.py"] == [False]


def test_the_same_outcome_as_checking_at_once(tmp_path, monkeypatch):
    """The wait turned off (each walked script checked as it is read) gives the same findings."""
    write_files(tmp_path, {".git/HEAD": "x\n", "arguments.py": EXTRA, "train.py": TRAIN, "helper.py": BROKEN,
                           "pkg/__init__.py": "# transformers\nfrom .mod import Extra\n",
                           "pkg/mod.py": BROKEN, "run.py": TRAIN.replace("from arguments", "from pkg")})
    waited = lint_folder(tmp_path)
    monkeypatch.setattr(workspace, "defer_syntax_checks", lambda ws: None)
    import trainlint.checking as checking

    monkeypatch.setattr(checking, "defer_syntax_checks", lambda ws: None)
    at_once = lint_folder(tmp_path)
    assert [d.to_dict() if hasattr(d, "to_dict") else repr(d) for d in waited.diagnostics] == \
        [d.to_dict() if hasattr(d, "to_dict") else repr(d) for d in at_once.diagnostics]
    assert {d.path.replace("\\", "/").rsplit("/", 1)[-1] for d in waited.diagnostics if d.code == "TL001"} \
        == {"helper.py", "mod.py"}
    assert sorted(waited.unparsable) == sorted(at_once.unparsable)


@pytest.mark.parametrize("text, problems", [
    ('{"a": 1, "b": [1, 2]}\n', 0),
    ('{"a": 1, "a": 2}\n', 1),  # a duplicate key: still reported (the verdict is the text's)
    ('{"a": NaN}\n', 1),
])
def test_a_walked_json_is_loaded_once_by_its_kind_and_its_reader(tmp_path, monkeypatch, text, problems):
    import trainlint.sources.jsondoc as jsondoc
    from trainlint.workspace import Workspace, read_entry

    loads = []
    orig = jsondoc._checked_loads
    monkeypatch.setattr(jsondoc, "_checked_loads", lambda t: loads.append(t) or orig(t))
    (tmp_path / "results.json").write_text(text, encoding="utf-8")
    ws = Workspace(settings=load_settings(tmp_path, {}), overlay={})
    read_entry(ws, str(tmp_path / "results.json"), False)
    assert len(loads) == 1
    doc = ws.files[str(tmp_path / "results.json")].doc
    assert len(doc.doc.problems) + len(ws.deferred_problems.get(str(tmp_path / "results.json"), [])) >= problems
    assert bool(ws.deferred_problems.get(str(tmp_path / "results.json"))) == bool(problems)


@pytest.mark.parametrize("large", [False, True])
def test_a_valid_walked_json_is_loaded_once_and_not_searched_for_dialects(tmp_path, monkeypatch, large):
    """The searches for another dialect (comments, a template) run only for a file that does
    not read; a large walked JSON only validated is not loaded again after its kind was told."""
    import json

    from trainlint.sources import registry
    from trainlint.workspace import Workspace, read_entry

    if large:
        monkeypatch.setattr(registry, "MAX_WALKED_GENERIC_JSON", 100)
    searched, loads = [], []
    for name in ("_other_dialect", "_template"):
        orig = getattr(registry, name)
        monkeypatch.setattr(registry, name, lambda t, orig=orig, name=name: searched.append(name) or orig(t))
    real_loads = json.loads
    monkeypatch.setattr(json, "loads", lambda t, *a, **k: loads.append(1) or real_loads(t, *a, **k))
    good = '[' + ", ".join(f'{{"instruction": "q{i}", "output": "a{i}"}}' for i in range(20)) + "]\n"
    broken_plain = good[:-3] + "\n"  # cut short: broken in no other dialect
    broken_jsonc = "// a dataset\n" + good.replace("]\n", ",]\n")
    for name, text in (("good.json", good), ("plain.json", broken_plain), ("jsonc.json", broken_jsonc)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    ws = Workspace(settings=load_settings(tmp_path, {}), overlay={})
    read_entry(ws, str(tmp_path / "good.json"), False)
    assert searched == [] and len(loads) == 1
    assert not ws.problems and not ws.deferred_problems
    read_entry(ws, str(tmp_path / "plain.json"), False)
    read_entry(ws, str(tmp_path / "jsonc.json"), False)
    assert searched  # the broken files were searched
    assert [p.code for p in ws.problems] == ["TL003"] and ws.problems[0].path.endswith("plain.json")
    assert list(ws.deferred_problems) == [str(tmp_path / "jsonc.json")]


def test_no_json_verdict_outlives_the_run(tmp_path):
    """The JSON verdicts kept for a run's parses (the split tells a file's kind, the task
    parses it) are dropped when the run ends: a language server's later checks do not hold the
    texts of earlier ones, even of a JSON nobody parsed."""
    import trainlint.sources.jsondoc as jsondoc

    jsondoc.json_value('{"held": "by nobody"}')  # a verdict no parse takes
    write_files(tmp_path, {"train.py": "from transformers import TrainingArguments\n"
                                       "args = TrainingArguments(output_dir='o', logging_steps=1)\n",
                           "results.json": '{"eval_loss": 1.0}\n'})
    lint_folder(tmp_path)
    assert jsondoc._CHECKED == {} and jsondoc._CHECKED_CHARS == [0]


def test_the_notebook_flow_finds_what_a_walk_of_every_node_finds():
    """``notebook_flow`` finds the aliases of ``os`` among the statements (an import is one) and
    the names a statement binds with the reader's child walk: the same as ``ast.walk`` and
    ``ast.iter_child_nodes`` on this project's modules and on nested, aliased imports."""
    import ast
    from pathlib import Path

    from trainlint.sources import notebook_flow as flow

    def aliases_by_walk(tree):
        out = {"os": set(), "environ": set(), "chdir": set()}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "os":
                        out["os"].add(a.asname or "os")
            elif isinstance(node, ast.ImportFrom) and node.module == "os" and not node.level:
                for a in node.names:
                    if a.name in ("environ", "chdir"):
                        out[a.name].add(a.asname or a.name)
        return out

    def bound_by_walk(stmt):
        out, todo = set(), [stmt]
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
                continue
            if isinstance(node, ast.Lambda):
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                out.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                out.update(a.asname or a.name.split(".")[0] for a in node.names)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                out.update(node.names)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                out.add(node.name)
            todo.extend(ast.iter_child_nodes(node))
        return out

    snippet = ("def f():\n    try:\n        import os as o\n    except ImportError as e:\n        from os import environ as env\n"
               "    finally:\n        pass\n"
               "match x:\n    case 1:\n        from os import chdir as cd\n"
               "with a as (b, c):\n    [d for d in range(3)]\n    del q\n    (w := 1)\n    global g\n"
               "for i, *j in z:\n    lambda k: k\n    class C: pass\n")
    root = Path(__file__).resolve().parent.parent / "trainlint"
    texts = [snippet] + [p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.py"))[:120]]
    found = 0
    for text in texts:
        tree = ast.parse(text)
        assert flow._aliases(tree) == aliases_by_walk(tree)
        for stmt in tree.body:
            assert flow._bound(stmt) == bound_by_walk(stmt)
        found += any(aliases_by_walk(tree).values())
    assert flow._aliases(ast.parse(snippet)) == {"os": {"o"}, "environ": {"env"}, "chdir": {"cd"}}
    assert found > 5
