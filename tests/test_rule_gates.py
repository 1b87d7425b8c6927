"""The rules' gates and indexes answer as the plain scans they replace: a name looked for in the
text before a walk (``analysis.may_name``), the calls of a name from the call index instead of a
scan of every call, the definitions from the statement index instead of ``ast.walk``, the flow
index's device moves. Each is compared with the plain computation on every Python file of the
rule cases and on snippets written to reach the spellings a gate could miss (an alias import, a
method call on a variable, a compatibility character the parser normalizes)."""

from __future__ import annotations

import ast
from pathlib import Path

from trainlint.analysis import _dotted, _flow_index, device_move, may_name
from trainlint.sources.python import parse_python

_SPELLINGS = '''
import transformers as tf
import argparse as ap
from transformers.integrations import HfDeepSpeedConfig as DSC
p = ap.ArgumentParser()
p.add_argument("--fp16", type=bool)
def build(cfg, obj):
    m = tf.AutoModelForCausalLM.from_pretrained("x", ｌoad_in_4bit=True)
    keep = tf.integrations.HfDeepSpeedConfig(cfg)
    DSC(cfg)
    setattr(obj, "gradient_checkpointing_enable", cfg)
    obj.setattr(1)
    opts = dict(padding="max_length")
    tok.encode_plus("t", **opts)
    class Inner:
        def test_x(self):
            async def test_y():
                pass
    return m.to("cuda"), m.cuda(), (lambda: m.to(dtype=1))()
'''


def _texts() -> list[str]:
    from trainlint.rules import all_rules

    out = [_SPELLINGS]  # and the package's own top-level modules: real code, classes and all
    out += [p.read_text(encoding="utf-8") for p in sorted((Path(__file__).parent.parent / "trainlint").glob("*.py"))]
    for rule in all_rules():
        for case in rule.cases:
            out += [text for path, text in case.all_files().items() if path.endswith(".py")]
    return out


def _files():
    for text in _texts():
        try:
            yield parse_python("train.py", text)
        except Exception:  # noqa: BLE001 - a case that is not valid Python
            continue


def _identifiers(tree: ast.AST) -> set[str]:
    """Every identifier the parser produced (names, attributes, keywords, definitions,
    parameters, imported names): what a rule can look for by name."""
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.keyword) and n.arg:
            out.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, ast.alias):
            out.update(n.name.split("."))
            if n.asname:
                out.add(n.asname)
    return out


def test_may_name_never_misses_an_identifier():
    """``may_name`` is false only for a name that is no identifier of the file: also when the
    identifier is spelled with a compatibility character (``ｌoad_in_4bit`` is ``load_in_4bit``
    once parsed); and it is false for a name the file lacks, ASCII or not (the gate works)."""
    checked = 0
    for pf in _files():
        idents = _identifiers(pf.tree)
        for name in ("load_in_4bit", "from_pretrained", "HfDeepSpeedConfig", "setattr", "padding", "pad_token",
                     "torch_dtype", "add_argument", "parse_args_into_dataclasses", "device_map", "train",
                     "use_auth_token", "zzz_not_a_name"):
            if name in idents:
                assert may_name(pf, name), (name, pf.text[:200])
                checked += 1
    assert checked > 500
    spelled = parse_python("a.py", "m.from_pretrained('x', ｌoad_in_4bit=True)\n")
    assert "load_in_4bit" not in spelled.text and may_name(spelled, "load_in_4bit")
    assert not may_name(spelled, "use_auth_token")
    assert not may_name(parse_python("b.py", "x = 'é'  # café\n"), "from_pretrained")
    assert not may_name(parse_python("c.py", "x = 1\n"), "from_pretrained")


_TOKENIZE_FALSE_SPELLINGS = [
    "t = tok.apply_chat_template(m, tokenize=False)\n",
    "t = tok.apply_chat_template(m, tokenize = (False))\n",
    "t = tok.apply_chat_template(\n    m,\n    tokenize=  # text, not ids\n    False,\n)\n",
    "t = tok.apply_chat_template(m, tokenize \\\n    = False)\n",
    "t = tok.apply_chat_template(m, tokenize=\r    False)\r",
    "t = tok.apply_chat_template(m, ｔokenize=Ｆalse)\n",  # NFKC: the parser reads tokenize=False
]


def test_chat_template_gate_never_misses_tokenize_false():
    """TL133's gate (``_may_render``) is true for every file with a ``tokenize=False`` keyword
    (what ``_template_text`` needs): every rule case's file and the spellings above (spaces,
    parentheses, a comment, a continuation, a lone ``\\r``, compatibility characters); false for
    a file that names ``tokenize`` and ``False`` apart (the walk the gate spares)."""
    from trainlint.rules.script.chat_template_double_bos import _may_render

    checked = 0
    files = list(_files()) + [parse_python("s.py", text) for text in _TOKENIZE_FALSE_SPELLINGS]
    for pf in files:
        if any(isinstance(n, ast.keyword) and n.arg == "tokenize" and isinstance(n.value, ast.Constant)
               and n.value.value is False for n in ast.walk(pf.tree)):
            assert _may_render(pf), pf.text[:300]
            checked += 1
    assert checked >= len(_TOKENIZE_FALSE_SPELLINGS) + 5, checked
    for text in ("t = tok.apply_chat_template(m, tokenize=True, add_generation_prompt=False)\n",
                 "t = tok.apply_chat_template(m, detokenize=False)\n", "t = f(tokenize=Falsey)\n"):
        assert not _may_render(parse_python("n.py", text)), text


def test_calls_named_spares_the_walk_of_a_non_ascii_file_without_the_name():
    """``calls_named`` of a name a non-ASCII text cannot hold answers without walking the file
    (a comment or string in another script is not a reason to walk it), and a call spelled with
    a compatibility character is still found (the text does not hold the name, its NFKC form
    does)."""
    plain = parse_python("a.py", "# 训练脚本\nx = f('é')\n")
    assert plain.calls_named("from_pretrained") == [] and not plain._walked
    spelled = parse_python("b.py", "# 训练\nm = M.ｆrom_pretrained('x')\n")
    assert "from_pretrained" not in spelled.text
    found = spelled.calls_named("from_pretrained")
    assert [cs.node.func.attr for cs in found] == ["from_pretrained"]


def test_may_call_never_misses_a_call():
    """``may_call`` (the gate of ``calls_named``) is true for the name of every call whose
    function is ``name`` or ``x.name``, docstrings and class statements around it or not."""
    checked = 0
    for pf in _files():
        called = {getattr(n.func, "id", None) or getattr(n.func, "attr", None)
                  for n in ast.walk(pf.tree) if isinstance(n, ast.Call)} - {None}
        for name in called:
            assert pf.may_call(name), (name, pf.text[:200])
            checked += 1
        assert not pf.may_call("zzz_not_a_name")
    assert checked > 1000


def test_calls_of_a_name_from_the_index_are_the_scan():
    """The calls the rules now take from ``calls_named`` (``setattr(...)``, ``HfDeepSpeedConfig(...)``,
    ``x.train(...)``, ``x.from_pretrained(...)``/``x.push_to_hub(...)``) are, in order, those a scan
    of every call finds."""
    checked = 0
    for pf in _files():
        calls = pf.calls

        def scan(keep):
            return [cs for cs in calls if keep(cs.node.func)]

        pairs = [
            (scan(lambda f: isinstance(f, ast.Name) and f.id == "setattr"),
             [cs for cs in pf.calls_named("setattr") if isinstance(cs.node.func, ast.Name)]),
            (scan(lambda f: _dotted(f).split(".")[-1] == "HfDeepSpeedConfig"),
             [cs for cs in pf.calls_named("HfDeepSpeedConfig") if _dotted(cs.node.func).split(".")[-1] == "HfDeepSpeedConfig"]),
            (scan(lambda f: isinstance(f, ast.Attribute) and f.attr == "train"),
             [cs for cs in pf.calls_named("train") if isinstance(cs.node.func, ast.Attribute)]),
            (scan(lambda f: isinstance(f, ast.Attribute) and f.attr in ("from_pretrained", "push_to_hub")),
             [cs for cs in pf.calls_named("from_pretrained", "push_to_hub") if isinstance(cs.node.func, ast.Attribute)]),
        ]
        for want, got in pairs:
            assert [id(cs) for cs in got] == [id(cs) for cs in want]
            checked += len(want)
    assert checked > 300


def test_definitions_from_the_statement_index_are_the_walk():
    """Classes and functions from ``of_type`` (the statement index) are every one ``ast.walk``
    finds, nested ones included (a method's class, a test module's test functions)."""
    checked = 0
    for pf in _files():
        for kind in (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef):
            want = {id(n) for n in ast.walk(pf.tree) if isinstance(n, kind)}
            assert {id(n) for n in pf.of_type(kind)} == want
            checked += len(want)
    assert checked > 200


def test_flow_index_moves_are_device_move_of_every_call():
    """The flow index asks ``device_move`` only of ``.to``/``.cuda`` calls: the same moves, and
    the same calls by name, as asking it of every call."""
    checked = 0
    for pf in _files():
        by_name, moves, _ = _flow_index(pf)
        plain_moves = [device_move(pf, cs.node, cs.scope) for cs in pf.calls]
        assert moves == plain_moves
        plain: dict[str, list[int]] = {}
        for i, cs in enumerate(pf.calls):
            names = set()
            func = cs.node.func
            if isinstance(func, ast.Attribute):
                root = func.value
                while isinstance(root, (ast.Attribute, ast.Subscript)):
                    root = root.value
                if isinstance(root, ast.Name):
                    names.add(root.id)
            if cs.node.args and isinstance(cs.node.args[0], ast.Name):
                names.add(cs.node.args[0].id)
            mv = plain_moves[i]
            if mv is not None and isinstance(mv[0], ast.Name):
                names.add(mv[0].id)
            for n in names:
                plain.setdefault(n, []).append(i)
        assert by_name == plain
        checked += sum(m is not None for m in moves)
    assert checked > 10


def test_a_rule_that_breaks_on_a_readme_launched_setup_is_reported(tmp_path, monkeypatch):
    """An internal error of a rule on a setup that a walked README launches is reported on the
    setup's script (the README's own findings are not reported), never dropped."""
    import trainlint.checking as checking
    from trainlint.diagnostics import Severity
    from trainlint.rules.base import Rule

    from tests.helpers import lint_folder, write_files

    class BreaksOnLaunch(Rule):
        code = "TL197"
        name = "test-breaks-on-launch"
        severity = Severity.WARNING
        summary = "test"

        def check(self, setup):
            if setup.extra.get("launch") is not None:
                raise ZeroDivisionError("bug")
            return iter(())

    monkeypatch.setattr(checking, "make_rules", lambda settings: [BreaksOnLaunch(settings)])
    write_files(tmp_path, {
        "README.md": "Train:\n\n```bash\npython train.py --output_dir out\n```\n",
        "train.py": "from transformers import TrainingArguments, HfArgumentParser\n"
                    "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n",
    })
    monkeypatch.chdir(tmp_path)
    found = lint_folder(tmp_path)
    errors = [d for d in getattr(found, "diagnostics", found) if d.code == "TL000"]
    assert errors and all(d.path.endswith("train.py") for d in errors), errors


_HF_SCRIPT = ("from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
              "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
              "Trainer(model=m, args=args).train()\n")


def _setup_rules(root, files):
    """{the setup's first file name (its launch file when it has one): the codes
    ``RuleSet.for_setup`` keeps}, for every setup linking builds of ``files``, as ``run_rules`` asks."""
    from tests.helpers import write_files
    from trainlint.checking import RuleSet
    from trainlint.config import Settings
    from trainlint.resolve import build_setups, workspace_context
    from trainlint.workspace import Workspace, read_file

    write_files(root, files)
    settings = Settings()
    ws = Workspace(settings=settings, overlay={})
    for name in sorted(files):
        read_file(ws, str(root / name), True)
    rule_set, seen = RuleSet(settings), {}
    rules = rule_set.for_workspace(ws, seen)
    out = {}
    for setup in build_setups(ws, settings, workspace_context(ws, settings)):
        key = setup.extra.get("launch_file") or setup.files[0]
        key = str(key).rsplit("/", 1)[-1] + (f":{setup.extra['launch'].span.line}" if "launch" in setup.extra else "")
        out[key] = {r.code for r in rule_set.for_setup(setup, ws, rules, seen)}
    return out


def test_held_words_hold_every_word_words_of_finds():
    """``RuleSet._held_words`` (substring tests, with ``-`` read as ``_``) holds every rule word
    ``words_of`` finds in a text: on every text of the rule cases and on random texts of the
    words' pieces, hyphens, digits and ``no_`` prefixes."""
    import random

    from trainlint.checking import RuleSet
    from trainlint.config import Settings
    from trainlint.rule_index import words_of
    from trainlint.rules import all_rules

    rule_set = RuleSet(Settings())
    vocab = {w for e in rule_set.entries for w in (e.get("fires_on") or ())}
    assert {"logging_steps", "fp16", "fp16_full_eval", "optim", "gradient_checkpointing"} <= vocab
    texts = [_SPELLINGS, "python train.py --no-dataloader-pin-memory --logging-steps=1 --fp16-full-eval 1e-5-x -c-"]
    for rule in all_rules():
        for case in rule.cases:
            texts += list(case.all_files().values())
    rng = random.Random(11)
    pieces = ["no_", "no-", "-", "--", "_", "1", " ", "\n", "=", "logging", "steps", "fp16", "full", "eval",
              "optim", "izers", "gradient", "checkpointing", "torch", "compile"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(5000)]
    for text in texts:
        held = rule_set._held_words(None, None, text)
        missed = (words_of(text) & vocab) - held
        assert not missed, (text, missed)
    assert "logging_steps" not in rule_set._held_words(None, None, "logging_step = 1")
    assert "logging_steps" in rule_set._held_words(None, None, "--logging-steps 1")


def test_a_launch_setup_runs_only_the_rules_whose_words_its_line_or_scripts_hold(tmp_path):
    """A launch line and Python files only (no linked config): a rule with ``fires_on`` runs
    only where the line (as linking read it: ``--logging-steps`` is ``logging_steps``, a
    ``$VAR`` is substituted) or a script holds one of its words; a rule without words always
    does. Each line that sets the value still reports it."""
    from tests.helpers import lint_folder

    files = {
        "run.sh": "python train.py --output_dir o --logging-steps 0\n"
                  "python train.py --output_dir o\n"
                  'STEPS="--logging_steps 0"\npython train.py --output_dir o $STEPS\n',
        "train.py": _HF_SCRIPT,
    }
    kept = _setup_rules(tmp_path, files)
    assert "TL206" in kept["run.sh:1"] and "TL206" not in kept["run.sh:2"] and "TL206" in kept["run.sh:4"], kept
    assert all("TL224" in codes and "TL415" in codes for codes in kept.values()), kept
    found = sorted((d.path.rsplit("/", 1)[-1], d.line, d.code) for d in lint_folder(tmp_path).diagnostics
                   if d.code == "TL206")
    assert [(p, line) for p, line, _ in found] == [("run.sh", 1), ("run.sh", 4)], found


def test_a_launch_setup_with_a_linked_config_runs_every_rule(tmp_path):
    """An args file or accelerate config gives values that no launch word names: all rules."""
    files = {
        "run.sh": "accelerate launch --config_file acc.yaml train.py --output_dir o\n",
        "acc.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\n",
        "train.py": _HF_SCRIPT,
    }
    kept = _setup_rules(tmp_path, files)
    assert "TL206" in kept["run.sh:1"], kept


def test_a_framework_cli_launch_keeps_its_rules_without_a_script(tmp_path):
    """``trl sft`` builds its sites from the line alone: no trigger is asked of it (there is
    no script to hold one), and a value written on it still reports."""
    from tests.helpers import lint_folder

    files = {"run.sh": "trl sft --model_name_or_path m --dataset_name d --output_dir o "
                       "--optim adamw_bnb_8bit --fsdp full_shard\n"}
    kept = _setup_rules(tmp_path, files)
    assert "TL243" in kept["run.sh:1"] and "TL206" not in kept["run.sh:1"], kept
    found = [(d.path.rsplit("/", 1)[-1], d.code) for d in lint_folder(tmp_path).diagnostics]
    assert ("run.sh", "TL243") in found, found
