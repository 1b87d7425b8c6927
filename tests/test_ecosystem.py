"""SARIF and GitHub output, stdin, the process pool (same result as the plain pipeline) and the
findings cache (hits, misses, invalidation, --no-cache)."""

from __future__ import annotations

import json
import os
import sys
from io import StringIO
from pathlib import Path

import jsonschema
import pytest
from helpers import REPO_ROOT, commit_base, git, run_cli, write_files

from trainlint.config import load_settings
from trainlint.diagnostics import Diagnostic, Edit, Fix, Related, Severity, replace
from trainlint.engine import lint
from trainlint.report import github_format, sarif_format

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import corpus  # noqa: E402

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
BAD = (
    "from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments\n"
    "model = AutoModelForSequenceClassification.from_pretrained('bert-base-uncased')\n"
    "model.to('cuda')\n"
    "tok = AutoTokenizer.from_pretrained('bert-base-uncased')\n"
    "def enc(b):\n"
    "    return tok(b['text'], padding='max_length', truncation=True)\n"
    "args = TrainingArguments(output_dir='o', logging_steps=1, fp16=True)\n"
    "Trainer(model=model, args=args, train_dataset=ds.map(enc, batched=True))\n"
)


def _dump(result):
    return ([d.to_json() for d in result.diagnostics], result.files, result.texts,
            sorted(result.unparsable), result.kinds)


# -- SARIF ---------------------------------------------------------------------------------


def test_sarif_is_valid_and_complete(tmp_path):
    write_files(tmp_path, {"train.py": BAD})
    settings = load_settings(tmp_path, {"gpu": "A100"})
    result = lint([tmp_path / "train.py"], settings)
    assert {d.code for d in result.diagnostics} >= {"TL101", "TL102", "TL201", "TL501"}
    out = StringIO()
    sarif_format.render(result.diagnostics, result.texts, out)
    log = json.loads(out.getvalue())
    jsonschema.validate(log, SCHEMA, cls=jsonschema.Draft7Validator)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    from trainlint.rules import all_rules

    assert ids == [r.code for r in all_rules()]
    padding = rules[ids.index("TL102")]
    assert padding["name"] == "padding-max-length"
    assert padding["helpUri"].endswith("/rules/padding-max-length.md")
    assert padding["defaultConfiguration"]["level"] == "warning"
    assert "## Why is this bad?" in padding["help"]["markdown"]
    assert padding["fullDescription"]["text"] and padding["shortDescription"]["text"]
    assert len(run["results"]) == len(result.diagnostics)
    for d, r in zip(result.diagnostics, run["results"]):
        assert r["ruleId"] == d.code and ids[r["ruleIndex"]] == d.code
        region = r["locations"][0]["physicalLocation"]["region"]
        assert (region["startLine"], region["startColumn"], region["endLine"], region["endColumn"]) == \
            (d.line, d.column, d.end_line, d.end_column)
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("train.py")
        if d.fix is not None:
            reps = r["fixes"][0]["artifactChanges"][0]["replacements"]
            assert [(x["deletedRegion"]["startLine"], x["deletedRegion"]["startColumn"],
                     x["deletedRegion"]["endLine"], x["deletedRegion"]["endColumn"],
                     x["insertedContent"]["text"]) for x in reps] == \
                [(e.line, e.column, e.end_line, e.end_column, e.content) for e in d.fix.edits]
        if d.related:
            rel = r["relatedLocations"]
            assert [x["physicalLocation"]["region"]["startLine"] for x in rel] == [x.line for x in d.related]
    assert any("fixes" in r for r in run["results"]) and any("relatedLocations" in r for r in run["results"])


def test_sarif_levels_uris_and_empty_run():
    d = Diagnostic(code="TL001", name="syntax-error", severity=Severity.INFO, message="m",
                   path="dir with space/a,b.py", line=3, column=2, end_line=3, end_column=2)
    log = sarif_format.sarif_log([d])
    jsonschema.validate(log, SCHEMA, cls=jsonschema.Draft7Validator)
    res = log["runs"][0]["results"][0]
    assert res["level"] == "note"
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "dir%20with%20space/a%2Cb.py"
    absolute = sarif_format.artifact_uri("/tmp/x y.py")
    assert absolute == "file:///tmp/x%20y.py"
    empty = sarif_format.sarif_log([])
    jsonschema.validate(empty, SCHEMA, cls=jsonschema.Draft7Validator)
    assert empty["runs"][0]["results"] == []


def test_sarif_and_github_from_the_cli(tmp_path):
    write_files(tmp_path, {"train.py": BAD})
    out = run_cli("check", "train.py", "--gpu", "A100", "--format", "sarif", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    log = json.loads(out.stdout)
    jsonschema.validate(log, SCHEMA, cls=jsonschema.Draft7Validator)
    assert {r["ruleId"] for r in log["runs"][0]["results"]} >= {"TL101", "TL102", "TL201", "TL501"}
    gh = run_cli("check", "train.py", "--gpu", "A100", "--format", "github", cwd=tmp_path)
    assert gh.returncode == 1
    lines = gh.stdout.splitlines()
    assert len(lines) == len(log["runs"][0]["results"])
    assert any(line.startswith("::warning file=train.py,line=3,col=1,endLine=3,endColumn=17,"
                               "title=TL101 manual-device-placement::") for line in lines), lines


# -- GitHub annotations ----------------------------------------------------------------------


def test_github_escaping():
    assert github_format.escape_data("50% a\r\nb\nc:d,e") == "50%25 a%0D%0Ab%0Ac:d,e"
    assert github_format.escape_property("a:b,c%d\n") == "a%3Ab%2Cc%25d%0A"
    d = Diagnostic(code="TL201", name="logging-steps-too-low", severity=Severity.WARNING,
                   message="100% of steps: log\nless", path="odd,dir/x:y.py", line=4, column=5,
                   end_line=4, end_column=9)
    assert github_format.annotation(d) == (
        "::warning file=odd%2Cdir/x%3Ay.py,line=4,col=5,endLine=4,endColumn=9,"
        "title=TL201 logging-steps-too-low::100%25 of steps: log%0Aless")


def test_github_severity_fix_and_related():
    edit = Edit(path="t.py", line=1, column=1, end_line=1, end_column=2, content="")
    d = Diagnostic(code="TL501", name="fp16-on-bf16-hardware", severity=Severity.ERROR, message="m",
                   path="t.py", line=1, column=1, end_line=1, end_column=2,
                   fix=Fix(applicability="unsafe", edits=[edit]),
                   related=[Related(path="ds.json", line=2, column=3, message="set here")])
    line = github_format.annotation(d)
    assert line.startswith("::error file=t.py,")
    assert line.endswith("::m%0A(fix available: unsafe; run `trainlint fix --unsafe-fixes`)%0Ads.json:2:3: set here")
    info = replace(d, severity=Severity.INFO, fix=None, related=[])
    assert github_format.annotation(info).startswith("::notice ")
    assert "\n" not in line


# -- stdin -----------------------------------------------------------------------------------


def test_check_stdin_with_filename(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nignore = ["TL102"]\n')
    out = run_cli("check", "-", "--stdin-filename", "sub/train.py", "--format", "json", cwd=tmp_path, input=BAD)
    assert out.returncode == 1, out.stderr
    found = json.loads(out.stdout)
    assert {d["path"] for d in found} == {os.path.join("sub", "train.py")}
    codes = {d["code"] for d in found}
    assert "TL201" in codes and "TL101" in codes
    assert "TL102" not in codes  # the pyproject.toml above the stdin file name was read
    assert not (tmp_path / "sub" / "train.py").exists()


def test_check_stdin_kind_comes_from_the_filename(tmp_path):
    text = "args = TrainingArguments(\n"
    as_py = run_cli("check", "-", "--stdin-filename", "x.py", "--format", "concise", cwd=tmp_path, input=text)
    assert as_py.returncode == 1 and "x.py:1:" in as_py.stdout and "TL001" in as_py.stdout
    as_md = run_cli("check", "-", "--stdin-filename", "notes.md", "--format", "concise", cwd=tmp_path, input=text)
    assert as_md.returncode == 0 and as_md.stdout == ""
    default = run_cli("check", "-", "--format", "concise", cwd=tmp_path, input=BAD)
    assert default.returncode == 1 and default.stdout.startswith("stdin.py:")


def test_check_stdin_usage_errors(tmp_path):
    assert run_cli("check", "-", "x.py", cwd=tmp_path, input="").returncode == 2
    assert run_cli("check", "x.py", "--stdin-filename", "y.py", cwd=tmp_path).returncode == 2


# -- parallel == serial ----------------------------------------------------------------------


def _mixed_project(root: Path, n: int = 70) -> None:
    corpus.generate(root / "gen", n, seed=3)
    write_files(root, {
        "launch/train.py": BAD,
        "launch/run.sh": "torchrun --nproc_per_node 4 train.py --logging_steps 1\n",
        "launch/ds.json": '{"zero_optimization": {"stage": 2}, "fp16": {"enabled": true}}\n',
        "uses_config.py": BAD.replace("output_dir='o'", "output_dir='o', deepspeed='launch/ds.json'"),
        "broken.py": "from transformers import Trainer\nTrainer(\n",
        "suppressed.py": BAD.replace("logging_steps=1,", "logging_steps=1,  # trainlint: disable=TL201"),
        "unrelated.py": "print('no training here')\n",
        "notes/README.md": "Run `python train.py`.\n",
    })
    (root / "latin1.py").write_bytes(b"# Trainer\nx = '\xe9'\n")
    # a config outside the checked folder, pulled in by linking
    (root.parent / "ext_ds.json").write_text('{"zero_optimization": {"stage": 3}, "fp16": {"enabled": true}, '
                                             '"train_micro_batch_size_per_gpu": 4}\n')
    write_files(root, {"external.py": BAD.replace("output_dir='o'", "output_dir='o', deepspeed='../ext_ds.json'")})


def test_parallel_equals_serial(tmp_path):
    def lint_split(paths, settings, overlay, jobs, min_files=50):
        return lint(paths, settings, overlay, jobs=jobs, min_files=min_files)

    root = tmp_path / "proj"
    _mixed_project(root)
    settings = load_settings(root, {"gpu": "A100"})
    serial = lint([root], settings, jobs=1)
    assert len(serial.files) > 60 and serial.diagnostics
    assert any(d.path.endswith("ext_ds.json") for d in serial.diagnostics)  # read through linking
    pooled = lint_split([root], settings, {}, jobs=2, min_files=0)
    assert _dump(pooled) == _dump(serial)
    in_process = lint_split([root], settings, {}, jobs=1)
    assert _dump(in_process) == _dump(serial)
    auto = lint([root], settings, jobs=None)  # > 50 stand-alone scripts: the pool
    assert _dump(auto) == _dump(serial)
    # explicit files (no pre-filter) and a missing one
    names = [root / "unrelated.py", root / "launch" / "train.py", root / "missing.py", root / "external.py",
             *sorted((root / "gen").rglob("*.py"))[:55]]
    assert _dump(lint_split(names, settings, {}, jobs=2, min_files=0)) == _dump(lint(names, settings, jobs=1))


def test_standalone_split(tmp_path):
    from trainlint.partition import split

    root = tmp_path / "proj"
    _mixed_project(root, n=3)
    settings = load_settings(root)
    plan = split([root], settings, {})
    units, rest = plan.units, plan.rest
    alone = {os.path.relpath(u.path, root) for u in units}
    rest_names = {os.path.relpath(p, root) for p, _ in rest}
    assert os.path.join("launch", "train.py") in rest_names  # named by run.sh and README.md
    assert "uses_config.py" in rest_names  # names launch/ds.json
    assert "broken.py" in alone and "suppressed.py" in alone
    assert "unrelated.py" not in alone | rest_names  # dropped by the byte pre-filter, as before


# -- cache -----------------------------------------------------------------------------------


def _cached(paths, settings):
    result = lint(paths, settings, jobs=1, cache=True)
    return result, result.cache_stats


def test_cache_hit_miss_and_invalidation(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    project = tmp_path / "p"
    corpus.generate(project, 6, seed=1)
    write_files(project, {"bad.py": BAD})
    settings = load_settings(project, {"gpu": "A100"})
    plain = lint([project], settings, jobs=1)

    first, stats = _cached([project], settings)
    assert stats == (0, 7) and _dump(first) == _dump(plain)
    second, stats = _cached([project], settings)
    assert stats == (7, 0) and _dump(second) == _dump(plain)

    # a changed file is a miss, and its new findings are reported
    (project / "bad.py").write_text(BAD.replace("logging_steps=1", "logging_steps=50"))
    third, stats = _cached([project], settings)
    assert stats == (6, 1)
    assert _dump(third) == _dump(lint([project], settings, jobs=1))
    assert not any(d.code == "TL201" and d.path.endswith("bad.py") for d in third.diagnostics)

    # other settings: another namespace
    other = load_settings(project, {"gpu": "A100", "select": ["TL1"]})
    fourth, stats = _cached([project], other)
    assert stats == (0, 7) and {d.code[:3] for d in fourth.diagnostics} == {"TL1"}

    # a changed version pin in the project: another namespace
    write_files(project, {"pyproject.toml": "[tool.trainlint]\n", "requirements.txt": "transformers==4.46.0\n"})
    pinned = load_settings(project, {"gpu": "A100"})
    _, stats = _cached([project], pinned)
    assert stats[0] == 0
    _, stats = _cached([project], pinned)
    assert stats == (7, 0)
    (project / "requirements.txt").write_text("transformers==4.40.0\n")
    _, stats = _cached([project], pinned)
    assert stats == (0, 7)

    # a changed trainlint (code or knowledge data): another namespace
    from trainlint import cache as cache_mod

    monkeypatch.setattr(cache_mod, "code_fingerprint", lambda: "changed")
    _, stats = _cached([project], pinned)
    assert stats == (0, 7)


def test_cache_keys_on_the_git_base(tmp_path, monkeypatch):
    """lr-not-scaled compares with the file at HEAD: a new commit must not reuse old findings."""
    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    repo = tmp_path / "repo"
    repo.mkdir()
    head = "from transformers import TrainingArguments\n"
    commit_base(repo, {"train.py": head + "args = TrainingArguments(output_dir='o', "
                                          "per_device_train_batch_size=8, learning_rate=2e-5)\n"})
    (repo / "train.py").write_text(head + "args = TrainingArguments(output_dir='o', "
                                          "per_device_train_batch_size=32, learning_rate=2e-5)\n")
    settings = load_settings(repo)
    before, _ = _cached([repo], settings)
    assert any(d.name == "lr-not-scaled" for d in before.diagnostics)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "bigger batch")
    from trainlint.vcs import read_at_revision

    read_at_revision.cache_clear()  # the in-process memo of `git show` (a new process has none)
    after, stats = _cached([repo], settings)
    assert stats == (0, 1)
    assert _dump(after) == _dump(lint([repo], settings, jobs=1))
    assert not any(d.name == "lr-not-scaled" for d in after.diagnostics)


def test_files_that_name_missing_files_are_cached_until_the_file_appears(tmp_path, monkeypatch):
    """A missing reference (TL004) is cached with where it was looked for as dependencies: the
    second run answers from the cache, and the config appearing is a change."""
    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    write_files(tmp_path / "p", {"a.py": BAD.replace("output_dir='o'", "output_dir='o', deepspeed='ds.json'")})
    settings = load_settings(tmp_path / "p")
    first, _ = _cached([tmp_path / "p"], settings)
    assert any(d.code == "TL004" for d in first.diagnostics)
    again, stats = _cached([tmp_path / "p"], settings)
    assert stats == (1, 0) and _dump(again) == _dump(first)
    write_files(tmp_path / "p", {"ds.json": '{"zero_optimization": {"stage": 3}, "fp16": {"enabled": true}}\n'})
    changed, stats = _cached([tmp_path / "p"], settings)
    assert not any(d.code == "TL004" for d in changed.diagnostics)
    assert _dump(changed) == _dump(lint([tmp_path / "p"], settings, jobs=1))


def test_a_script_is_cached_with_the_config_it_reads_from_outside_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    write_files(tmp_path, {"p/src/a.py": BAD.replace("output_dir='o'", "output_dir='o', deepspeed='../ds.json'"),
                           "p/ds.json": '{"zero_optimization": {"stage": 3}, "fp16": {"enabled": true}}\n'})
    run = [tmp_path / "p" / "src"]
    settings = load_settings(tmp_path / "p")
    first, _ = _cached(run, settings)
    assert any(p.endswith("ds.json") for p in first.files)  # read from outside the run
    again, stats = _cached(run, settings)
    assert stats[1] == 0 and _dump(again) == _dump(first)
    (tmp_path / "p" / "ds.json").write_text('{"zero_optimization": {"stage": 2}, "bf16": {"enabled": true}}\n')
    changed, stats = _cached(run, settings)
    assert stats[1] >= 1 and _dump(changed) == _dump(lint(run, settings, jobs=1)) != _dump(first)


def test_cli_cache_location_and_no_cache(tmp_path):
    project = tmp_path / "proj"
    write_files(project, {"pyproject.toml": "[tool.trainlint]\nignore = []\n", "src/train.py": BAD})
    out = run_cli("check", "src", "--no-cache", cwd=project)
    assert out.returncode == 1 and not (project / ".trainlint_cache").exists()
    first = run_cli("check", "src", "--format", "json", cwd=project)
    assert (project / ".trainlint_cache" / ".gitignore").read_text().strip().endswith("*")
    files = list((project / ".trainlint_cache").rglob("*.json"))
    assert len(files) == 1
    second = run_cli("check", "src", "--format", "json", cwd=project)
    assert first.stdout == second.stdout and json.loads(first.stdout)
    # a corrupt cache file is ignored, never trusted
    files[0].write_text("{not json")
    third = run_cli("check", "src", "--format", "json", cwd=project)
    assert third.stdout == first.stdout


@pytest.mark.parametrize("n", [1, 60])
def test_cli_json_same_with_and_without_cache_and_pool(tmp_path, n):
    corpus.generate(tmp_path / "c", n, seed=5)
    env = {"TRAINLINT_CACHE_DIR": str(tmp_path / "cache")}
    plain = run_cli("check", "c", "--no-cache", "-j", "1", "--format", "json", cwd=tmp_path, env=env)
    pooled = run_cli("check", "c", "--no-cache", "-j", "2", "--format", "json", cwd=tmp_path, env=env)
    cold = run_cli("check", "c", "--format", "json", cwd=tmp_path, env=env)
    warm = run_cli("check", "c", "--format", "json", cwd=tmp_path, env=env)
    assert plain.stdout == pooled.stdout == cold.stdout == warm.stdout
    assert plain.returncode == warm.returncode


# -- the faster walks equal the stdlib ones ---------------------------------------------------


@pytest.mark.slow  # walks every module of the installed packages: ~100 s on 2 cores
def test_fast_walk_and_source_of_equal_the_stdlib(tmp_path):
    import ast

    from trainlint.sources.python import parse_python, walk_nodes

    leaves = (ast.expr_context, ast.operator, ast.boolop, ast.cmpop, ast.unaryop)
    texts = [p.read_text() for p in corpus.generate(tmp_path, 15, seed=9)]
    texts += [p.read_text() for p in sorted((REPO_ROOT / "trainlint").rglob("*.py"))[:20]]
    texts.append("x = 1\r\ny = 'é\u2028' + f(a,\x0c b)\rz = [\n  1,\n  'ü', lambda q: q or -q]\n")
    checked = 0
    for text in texts:
        pf = parse_python("t.py", text)
        assert walk_nodes(pf.tree) == [n for n in ast.walk(pf.tree) if not isinstance(n, leaves)]
        for node in ast.walk(pf.tree):
            if hasattr(node, "end_col_offset"):
                assert pf.source_of(node) == (ast.get_source_segment(text, node) or "")
                checked += 1
    assert checked > 10000


def test_a_field_read_by_another_module_of_the_package_is_a_dependency_of_the_cached_result(tmp_path, monkeypatch):
    """TL613 leaves a re-declared removed field alone when another module of the class's package
    reads it; the cached result depends on those modules, so a warm run that follows the read's
    removal reports it."""
    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    reading = ("from transformers import Trainer\nclass MyTrainer(Trainer):\n"
               "    def log(self, logs, *a, **k):\n        logs['r'] = self.args.warmup_ratio\n"
               "        return super().log(logs, *a, **k)\n")
    write_files(tmp_path, {"p/proj/__init__.py": "",
                           "p/proj/arguments.py": "from dataclasses import dataclass\n"
                                                  "from transformers import TrainingArguments\n@dataclass\n"
                                                  "class MyArgs(TrainingArguments):\n    warmup_ratio: float = 0.03\n",
                           "p/proj/trainer.py": reading})
    settings = load_settings(tmp_path / "p", {"transformers_version": "5.24.0"})
    run = [tmp_path / "p"]
    first, _ = _cached(run, settings)
    assert not any(d.code == "TL613" for d in first.diagnostics)
    again, stats = _cached(run, settings)
    assert stats[1] == 0 and _dump(again) == _dump(first)
    (tmp_path / "p" / "proj" / "trainer.py").write_text(reading.replace("self.args.warmup_ratio", "0.0"))
    changed, _ = _cached(run, settings)
    assert [d.path.rsplit("/", 1)[-1] for d in changed.diagnostics if d.code == "TL613"] == ["arguments.py"]
    assert _dump(changed) == _dump(lint(run, settings, jobs=1))


@pytest.mark.parametrize("text,reads", [
    ("x = self.args.ref_adapter_name\n", True),
    ("if args.ref_adapter_name == 'ref':\n    pass\n", True),
    ("name = getattr(args, 'ref_adapter_name', None)\n", True),
    ('name = getattr(self.args, "ref_adapter_name")\n', True),
    ("cfg = vars(args)\nname = cfg['ref_adapter_name']\n", True),
    ("name = args.to_dict().get(\"ref_adapter_name\")\n", True),
    ("kwargs['ref_adapter_name'] = 'ref'\n", False),  # a key set, never read
    ("args.ref_adapter_name = 'ref'\n", False),  # set, never read
    ("args.ref_adapter_name_2 = 1\nprint(args.other)\n", False),
    ("ref_adapter_name = 1\n", False),
])
def test_package_reads_finds_a_read_of_the_field_in_another_module(tmp_path, text, reads):
    from trainlint.sources.files import package_reads

    write_files(tmp_path, {"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/args.py": "x.ref_adapter_name\n",
                           "pkg/sub/trainer.py": text, "outside.py": "y = a.ref_adapter_name\n"})
    assert package_reads(str(tmp_path / "pkg" / "args.py"), "ref_adapter_name") is reads
    assert package_reads(str(tmp_path / "outside.py"), "ref_adapter_name") is False  # no package
