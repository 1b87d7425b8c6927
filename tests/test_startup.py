"""Start-up (issue 18): settings and rule options without pydantic unless a value needs it,
the same values and the same error messages as the pydantic schema."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trainlint.config import ConfigError, Settings, _plain_values, load_settings
from trainlint.diagnostics import Severity
from trainlint.rules.args.logging_steps import LoggingStepsOptions

from helpers import REPO_ROOT, probe_one_file_check

TRAIN = ("from transformers import Trainer, TrainingArguments\n"
         "args = TrainingArguments(output_dir='o', logging_steps=1)\n"
         "Trainer(model=m, args=args).train()\n")


def _probe(path: Path, cwd: Path) -> set[str]:
    found = probe_one_file_check(
        path, cwd, "print('MODS=' + ','.join(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr)\n")
    assert "MODS" in found, found
    return set(found["MODS"].split(","))


def test_one_file_check_never_imports_pydantic(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.trainlint]\nselect = ["ALL"]\nignore = ["TL6"]\ngpus = 2\nfail-on = "error"\n'
        '[tool.trainlint.per-file-ignores]\n"tests/*" = ["TL2"]\n')
    mods = _probe(tmp_path / "train.py", tmp_path)
    assert "trainlint" in mods and "pydantic" not in mods and "pydantic_core" not in mods


def test_plain_pins_are_read_without_packaging(tmp_path):
    """The repository's pyproject.toml pins plain releases (``transformers>=4.40``): the one-file
    check reads them with ``trainlint.knowledge.pep440``; a pre-release pin needs ``packaging``."""
    mods = _probe(REPO_ROOT / "examples" / "bert_imdb" / "train.py", REPO_ROOT)
    assert "trainlint" in mods and "packaging" not in mods
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "requirements.txt").write_text("transformers>=4.57.0.dev0\n")
    assert "packaging" in _probe(tmp_path / "train.py", tmp_path)


def test_rule_options_import_pydantic_only_when_set(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint.logging-steps-too-low]\nthreshold = 3\n')
    assert "pydantic" in _probe(tmp_path / "train.py", tmp_path)


def _load(tmp_path: Path, table: str, **overrides):
    (tmp_path / "pyproject.toml").write_text("[tool.trainlint]\n" + table + "\n")
    return load_settings(tmp_path, overrides)


@pytest.mark.parametrize("table, message", [
    ("gpus = 0", "invalid setting gpus: Input should be greater than or equal to 1"),
    ("gpus = 1.5", "invalid setting gpus: Input should be a valid integer, got a number with a fractional part"),
    ('fail-on = "bad"', "invalid setting fail-on: Input should be 'info', 'warning' or 'error'"),
    ('select = "TL2"', "invalid setting select: Input should be a valid list"),
    ("select = [1]", "invalid setting select.0: Input should be a valid string"),
    ("gpu = 4", "invalid setting gpu: Input should be a valid string"),
    ('[tool.trainlint.per-file-ignores]\n"x" = "TL1"', "invalid setting per-file-ignores.x: Input should be a valid list"),
    ("[tool.trainlint.logging-steps-too-low]\nthreshold = 0",
     "invalid options for rule logging-steps-too-low: Input should be greater than or equal to 1 (threshold)"),
    ('[tool.trainlint.lr-not-scaled]\nrule = "cubic"',
     "invalid options for rule lr-not-scaled: Input should be 'sqrt' or 'linear' (rule)"),
    ('[tool.trainlint.lr-not-scaled]\ntolerance = "x"',
     "invalid options for rule lr-not-scaled: Input should be a valid number, unable to parse string as a number "
     "(tolerance)"),
    ("[tool.trainlint.lr-not-scaled]\nextra = 1", "invalid options for rule lr-not-scaled: Extra inputs are not permitted (extra)"),
    ("[tool.trainlint.lr-not-scaled]\nreference-learning-rate = 0",
     "invalid options for rule lr-not-scaled: Input should be greater than 0 (reference-learning-rate)"),
])
def test_bad_config_messages(tmp_path, table, message):
    (tmp_path / "train.py").write_text(TRAIN)
    with pytest.raises(ConfigError) as e:
        s = _load(tmp_path, table)
        from trainlint.rules.args.logging_steps import LoggingStepsTooLow
        from trainlint.rules.hardware.lr_scaling import LrNotScaled
        for rule in (LoggingStepsTooLow, LrNotScaled):
            s.options_for(rule)
    assert str(e.value) == message


def test_coerced_values_come_from_the_schema(tmp_path):
    s = _load(tmp_path, 'gpus = "4"\nfail-on = "info"')
    assert s.gpus == 4 and s.fail_on is Severity.INFO
    s = _load(tmp_path, 'select = ["TL2"]', gpus=2, base="main")
    assert (s.select, s.gpus, s.base, s.project_root) == (["TL2"], 2, "main", tmp_path)


PLAIN_CASES = [
    {"select": ["TL2"], "ignore": [], "extend-select": ["TL5"], "exclude": ["a/*"]},
    {"per-file-ignores": {"x/*.py": ["TL1", "TL2"]}, "gpu": "A100", "gpus": 8},
    {"transformers-version": "4.46.0", "trl-version": "0.20.0", "base": "HEAD~1", "fail-on": "error"},
    {"fail-on": Severity.INFO, "rule_options": {"lr-not-scaled": {"rule": "linear"}}},
    {"project_root": Path("/tmp"), "config_path": Path("/tmp/pyproject.toml"), "target_root": None},
    {"select": ["ALL"], "gpus": None, "gpu": None},
]


def test_schema_fields_match_the_settings():
    from trainlint.config import FIELDS
    from trainlint.config_schema import SettingsModel

    assert {n: (f.alias or n) for n, f in SettingsModel.model_fields.items()} == {n: k for n, (k, _) in FIELDS.items()}
    assert {n: f.default for n, f in SettingsModel.model_fields.items()} == \
        {n: (list(d) if isinstance(d, tuple) else d) for n, (_, d) in FIELDS.items()}


@pytest.mark.parametrize("data", PLAIN_CASES)
def test_plain_values_agree_with_the_schema(data):
    from trainlint.config import _validated

    plain = _plain_values(data)
    assert plain is not None
    assert Settings(**plain) == _validated(dict(data))


@pytest.mark.parametrize("data", [
    {"gpus": "4"}, {"gpus": True}, {"gpus": 0}, {"select": ("TL2",)}, {"select": "TL2"}, {"fail-on": "WARNING"},
    {"project_root": "/tmp"}, {"nope": 1}, {"select": ["A"], "extend_select": [], "extend-select": []},
    {"per-file-ignores": {"a": "TL1"}}, {"rule_options": {"x": 1}},
])
def test_anything_else_goes_to_the_schema(data):
    assert _plain_values(data) is None


def test_rule_options_defaults_and_validation():
    from trainlint.rules.args.logging_steps import LoggingStepsTooLow
    from trainlint.rules.hardware.lr_scaling import LrNotScaled

    d = LoggingStepsOptions.model_construct()
    assert (d.threshold, d.fix_value) == (1, 10)
    s = Settings(rule_options={"logging-steps-too-low": {"threshold": 5, "fix-value": 20},
                               "lr-not-scaled": {"reference-batch-size": 8, "tolerance": 1}})
    v = s.options_for(LoggingStepsTooLow)
    assert (v.threshold, v.fix_value) == (5, 20)
    v = s.options_for(LrNotScaled)
    assert (v.rule, v.reference_batch_size, v.reference_learning_rate, v.tolerance) == ("sqrt", 8, None, 1.0)
    assert isinstance(v.tolerance, float)
    assert [name for name, _, _ in __import__("trainlint.rules.hardware.lr_scaling", fromlist=["x"])
            .LrNotScaled.options_doc()] == ["rule", "reference-batch-size", "reference-learning-rate", "tolerance"]


def test_settings_copy_and_pickle():
    import pickle

    s = Settings(select=["TL2"], gpus=2)
    t = s.model_copy(update={"target_root": Path("/x")})
    assert t.target_root == Path("/x") and t.select == ["TL2"] and s.target_root is None
    assert pickle.loads(pickle.dumps(t)) == t
    assert Settings().select == ["ALL"] and Settings().select is not Settings().select


# -- trigger words (TL611 from removed_names.json) ---------------------------------------------

def test_trigger_words_are_in_step():
    sys.path.insert(0, str(REPO_ROOT / "scripts"))
    from gen_rule_index import words_text

    from trainlint.rule_index import WORDS_PATH

    assert WORDS_PATH.read_text(encoding="utf-8") == words_text(), \
        "trainlint/rules/trigger_words.json is stale: run python scripts/gen_rule_index.py"


def test_removed_import_words_come_from_the_data():
    from trainlint.knowledge import public_names, trl_trainers
    from trainlint.rule_index import lookup, rule_words

    assert lookup("TL611")["words"] and lookup("TL611")["triggers"] == ["peft", "transformers", "trl"]
    for package in ("transformers", "trl", "peft"):
        assert set(public_names.removed_names(package)) <= rule_words("TL611", package)
    assert {"AdamW", "TextDataset"} <= rule_words("TL611", "transformers")
    assert "prepare_model_for_int8_training" in rule_words("TL611", "peft")
    assert set(trl_trainers.stub_trainers()) | {"DataCollatorForCompletionOnlyLM"} <= rule_words("TL611", "trl")
    assert "ORPOTrainer" in rule_words("TL611", "trl") and "ORPOTrainer" not in rule_words("TL611", "transformers")
    every = set().union(*(rule_words("TL611", p) for p in ("transformers", "trl", "peft")))
    assert "AutoModelForCausalLM" not in every and "LoraConfig" not in every


@pytest.mark.parametrize("text, wanted", [
    ("from transformers import AutoModelForCausalLM\nm = AutoModelForCausalLM.from_pretrained('x')\n", False),
    ("from peft import LoraConfig, get_peft_model\n", False),
    ("import transformers\nprint(transformers.__version__)\n", False),
    ("from transformers import AdamW\n", True),
    ("from transformers import (\n    get_scheduler,\n    AdamW as Opt,\n)\n", True),
    ("import transformers as tf\nopt = tf.AdamW(params)\n", True),
    ("from peft import prepare_model_for_int8_training\n", True),
    ("from trl import ORPOTrainer\n", True),
    ("from peft import utils\nfrom transformers import set_seed\n", False),  # trl's removed names
    ("from trl import set_seed\n", True),
    ("AdamW = 1  # no package named\n", False),
    ("from transformers import TrainingArguments\n", True),  # the other rules' triggers
])
def test_prefilter_words(text, wanted):
    from trainlint.workspace import wanted_python

    assert wanted_python(text, Settings()) is wanted


def test_removed_import_alone_prefilter(tmp_path):
    """A walked file whose only finding is TL611 is still found; one that merely imports
    transformers is not parsed (no TL001 for a broken one that the broad filter would let
    through is lost: it is syntax-checked)."""
    import json

    (tmp_path / "opt.py").write_text("from transformers import AdamW\nopt = AdamW(params)\n")
    (tmp_path / "plain.py").write_text("from transformers import AutoModel\nm = AutoModel.from_pretrained('x')\n")
    (tmp_path / "broken.py").write_text("from transformers import AutoModel\ndef f(:\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["transformers>=5.0"]\n')
    out = subprocess.run([sys.executable, "-m", "trainlint", "check", ".", "--no-cache", "--format", "json"],
                         cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})
    found = sorted((d["path"], d["code"]) for d in json.loads(out.stdout))
    assert found == [("broken.py", "TL001"), ("opt.py", "TL611")], out.stdout + out.stderr


# -- requirements without packaging.requirements ------------------------------------------------

REQUIREMENTS = [
    "transformers", "transformers>=4.40", "transformers >= 4.40 , < 6", "Transformers==4.46.0", "trl~=0.20",
    "transformers[torch,sentencepiece]>=4.41.2", "transformers[ torch ] >=4.41", "transformers==4.*", "peft!=0.10.0",
    "accelerate>=0.26.0,<2", "torch===2.1.0+cu118", "transformers>=4.0.0rc1", "transformers>=1!4.0",
    "deepspeed>=0.14.0; platform_system == 'Linux'", "transformers @ git+https://github.com/huggingface/transformers",
    "transformers (>=4.40)", "transformers>=4.*", "transformers~=4", "trl>=", ">=4.0", "transformers>=4.0 extra",
    "transformers[]", "transformers>=4.0,", "my_pkg.name-x>=1.0.post1", "a>=1.0.dev0", "_bad>=1", "x.>=1",
    "transformers<=4.50.3,>=4.41.2,!=4.46.0", "transformers>4.4,<5.0.0.dev0", "transformers==4.40.0 ; python_version<'3.12'",
    "#", "# transformers>=4.40", "-e .", "./local_pkg", "", "  ", "@ git+https://x/y", "(transformers)",
]


def test_a_text_without_a_leading_name_is_no_requirement_and_needs_no_packaging():
    """A text that does not start with a project name (a comment, a flag, a path) is refused
    before ``packaging.requirements`` is imported, as ``packaging`` refuses it; random texts
    of requirement characters agree with ``packaging`` on that."""
    import random
    import subprocess
    import sys

    from packaging.requirements import InvalidRequirement, Requirement

    from trainlint.knowledge.versions import _leading_name

    rng = random.Random(180)
    alphabet = "aZ9._-<>=!~*+,[] ;@#/()'\""
    for text in ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10))) for _ in range(5_000)]:
        if _leading_name(text) is None:
            with pytest.raises(InvalidRequirement):
                Requirement(text)
    code = ("import sys; from trainlint.knowledge.versions import parse_requirement; "
            "assert parse_requirement('#') is None and parse_requirement('-r base.txt') is None; "
            "print('packaging.requirements' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("text", REQUIREMENTS)
def test_requirements_read_as_packaging_does(text):
    from packaging.requirements import InvalidRequirement, Requirement

    from trainlint.knowledge.versions import parse_requirement

    try:
        req = Requirement(text)
        expected = (req.name, req.specifier)
    except InvalidRequirement:
        expected = None
    got = parse_requirement(text)
    assert (None if got is None else (got.name, got.specifier)) == expected
    if got is not None:
        assert [(s.operator, s.version) for s in sorted(got.specifier, key=str)] == \
            [(s.operator, s.version) for s in sorted(expected[1], key=str)]


def test_bare_requirements_read_as_the_pattern_reads_them():
    """``_bare_requirement`` (no spaces, no extras) gives the pattern's name and specifiers
    whenever it answers, on the list above and on random texts of requirement characters."""
    import random
    import re

    from trainlint.knowledge.versions import _SIMPLE_REQUIREMENT, _bare_requirement

    rng = random.Random(18)
    alphabet = "aZ9._-<>=!~*+,[] ;@"
    texts = REQUIREMENTS + ["transformers>=4.40,<5", "trl==0.9.6", "peft", "a", "a.", "x>==1", "x=1", "x~=1.0,!=1.0.1",
                            "x>=1.0.post1", "x===1.0", "x<", "x>=1,", "x>=1,,<2", "-x>=1", "x_>=1"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(20_000)]
    texts += ["ab" + "".join(rng.choice("<>=!~0123456789.,*+") for _ in range(rng.randint(1, 10))) for _ in range(20_000)]
    answered = 0
    for text in texts:
        bare = _bare_requirement(text)
        if bare is None:
            continue
        answered += 1
        m = re.fullmatch(_SIMPLE_REQUIREMENT, text)
        assert m is not None and (m.group("name"), m.group("spec") or "") == bare, text
    assert answered > 1_000


@pytest.mark.parametrize("text", REQUIREMENTS + ["tomli>=2.0; python_version < '3.11'", "transformers-x>=1", "torch"])
@pytest.mark.parametrize("package", ["transformers", "tomli", "deepspeed", "torch"])
def test_matches_as_packaging_does(text, package):
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    from trainlint.knowledge.versions import _matches

    try:
        req = Requirement(text)
        expected = req.specifier if canonicalize_name(req.name) == canonicalize_name(package) else None
    except InvalidRequirement:
        expected = None
    got = _matches(text, package)
    assert (None if got is None else got.specifier) == expected


# -- rules that never report on Python files alone ----------------------------------------------

def test_rules_not_python_alone_flag_only_with_another_file():
    """A rule marked ``python_alone = False`` is never run on a workspace of Python files: each
    of its must-flag cases holds a file that is not a script (the DeepSpeed config)."""
    from trainlint.rules import all_rules

    marked = [r for r in all_rules() if not r.python_alone]
    assert len(marked) >= 33
    for rule in marked:
        for case in rule.cases:
            if case.flags:
                assert any(not p.endswith(".py") for p in case.all_files()), (rule.code, case.note)


def test_python_only_workspace_skips_them(tmp_path):
    from trainlint.checking import RuleSet
    from trainlint.workspace import Workspace, read_file

    (tmp_path / "train.py").write_text("from transformers import TrainingArguments\n"
                                       "args = TrainingArguments(output_dir='o', logging_steps=1, deepspeed='ds.json')\n")
    ws = Workspace(settings=Settings(), overlay={})
    read_file(ws, str(tmp_path / "train.py"), True)
    codes = {r.code for r in RuleSet(Settings()).for_workspace(ws)}
    assert "TL201" in codes and not any(c.startswith("TL3") for c in codes)
    (tmp_path / "ds.json").write_text('{"train_batch_size": 8}\n')
    read_file(ws, str(tmp_path / "ds.json"), False)
    assert "TL301" in {r.code for r in RuleSet(Settings()).for_workspace(ws)}


# -- YAML through libyaml, as ruamel reads it ------------------------------------------------------

YAML_CASES = [
    "a: # c\nb: 1\n", "a:  # c\n  \nb: 1\n", "x:\n  a: # c\n  b: 1\n", "x:\n  a: # c\ny: 1\n", "x:\n  a: # c\n",
    "a: # c\n", "x:\n  - a: # c\n    b: 1\n", "x:\n  - a: # c\n  - b\n", "a:\n# c\nb: 1\n", "x:\n  a:\n  # c\ny: 1\n",
    "x:\n  a: # c\n  # d\n  b: 1\n", "a:\n", "a:", "a: &x\nb: *x\n",
    'a: &x yes\nb: !!str yes\nc: !!int "3"\nd: 0o17\ne: 017\nf: 1_000\ng: 2e8\nh: 1e-5\ni: .5\nj: ~\nk: 2001-12-14\nl: =\n',
    'a: "x"\nb: |\n  line\n  two\n\nc: >-\n  f\n  g\n', "a: {b: , c: 1}\n", "- \n- b\n", "? a\n: b\n", "? a\n:\n", "? a\n:\nb: 1\n", "x:\n  ? a\n  : # c\n  b: 1\n",
    "a: é\nb: 日本語\nc: 1\nd:\ne: ü\n", "a:\n  b:\n    c:\n", "a: 1\n---\nb: 2\n", "%YAML 1.1\n---\na: yes\n",
    "a: [1, 2,\n  3]\nb: {x: 1}\n", "a: 1\na: 1\nb: x\nb: y\nc: yes\nc: !!str yes\n",
    "base: &b\n  x: 1\nchild:\n  <<: *b\n  y: 2\n", "a:\t1\n", 'a: "unterminated\n', "a: b: c\n",
    "a:\r\n  b: 1\r\n  c:\r\nd: 2\r\n", "compute_environment: LOCAL_MACHINE\ndeepspeed_config:\n  zero_stage: 3\n"
    "  offload_optimizer_device: none\ndistributed_type: DEEPSPEED\nmixed_precision: bf16\nnum_processes: 8\n",
    "learning_rate: 2e-5\nlr: 1.0e-5\nwarmup: .1\nbf16: true\nfp16: no\nmax_steps: -1\nnull_value: null\n"
    "list:\n- a\n-   b   # c\n- 'q'\n",
]


def _yaml_dump(text: str, fast: bool):
    from trainlint.sources import yamldoc
    from trainlint.sources.errors import ReadError

    def dump(n, out):
        out.append((n.kind, n.start, n.end, getattr(n, "key", None), getattr(n, "key_start", None),
                    getattr(n, "key_end", None), repr(n.value) if n.kind == "scalar" else None, n.tag, n.style,
                    n.flow, n.alias, [(m.start, m.end) for m in n.merges]))
        for c in n.members + n.items:
            dump(c, out)

    original = yamldoc._compose_libyaml
    if not fast:
        yamldoc._compose_libyaml = lambda t: None
    try:
        root = yamldoc.parse_yaml(text, "x.yaml")
        out: list = []
        dump(root, out)
        return out, [repr(p) for p in root.doc.problems]
    except ReadError as e:
        return "error", str(e)
    finally:
        yamldoc._compose_libyaml = original


def _yaml_files() -> list[Path]:
    return sorted(p for d in ("tests", "examples") for p in (REPO_ROOT / d).rglob("*")
                  if p.suffix in (".yaml", ".yml") and p.is_file())


@pytest.mark.parametrize("text", YAML_CASES + [p.read_text(encoding="utf-8") for p in _yaml_files()])
def test_libyaml_reads_yaml_as_ruamel_does(text):
    assert _yaml_dump(text, True) == _yaml_dump(text, False)


def test_libyaml_is_used_for_plain_configs():
    from trainlint.sources.yamldoc import _compose_libyaml

    assert _compose_libyaml(YAML_CASES[-2]) is not None and _compose_libyaml(YAML_CASES[-1]) is not None
    for text in ("a:\t1\n", "%YAML 1.1\n---\na: yes\n", "a: >\n  f\n", 'a: "unterminated\n'):
        assert _compose_libyaml(text) is None, text
