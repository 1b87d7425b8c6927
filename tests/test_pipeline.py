"""The pipeline's scheduling: the stand-alone split's name index, the layering of the stages,
and one result whatever the scheduler (default, -j 1, -j 2, warm cache)."""

from __future__ import annotations

import random
import re

from trainlint.partition import NameIndex


def _word(name: str) -> re.Pattern[str]:  # the regular expression the index replaces
    return re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])")


ALPHABET = ["train", "run", ".", "-", "_", "py", "json", "yaml", "sh", " ", "/", "\n", "\"", "'", "=",
            "é", "x1", "ds", "cfg", ".py", ".json", "(", "+", "Ω"]
NAMES = ["train.py", "run.sh", "ds.json", "cfg.yaml", "x1.py", "train-x.py", "a b.json", "é.json",
         "run", "train", "train.", "ds", "py", "x1", "run.sh.bak", "TRAIN.PY", "t+r.json", "Ω.py"]


def test_name_index_gives_the_answers_of_the_searches():
    rng = random.Random(7)
    suffixes = {n[n.rfind("."):] for n in NAMES if n.rfind(".") > 0}
    checked = 0
    for _ in range(400):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 60)))
        index = NameIndex(text, suffixes, max(len(n) for n in NAMES))
        for name in NAMES:
            assert index.mentions(name) == (name in text), (name, text)
            stem = name[:-3] if name.endswith(".py") else name
            assert index.mentions_word(stem) == bool(_word(stem).search(text)), (stem, text)
            checked += 1
    assert checked == 400 * len(NAMES)


def test_name_index_on_file_names_in_configs():
    text = 'bash run.sh src/train.py --deepspeed "ds_z3.json" # see xtrain.py and train.v2'
    index = NameIndex(text, {".py", ".json"}, 32)
    assert index.mentions("train.py") and index.mentions("ds_z3.json") and index.mentions("xtrain.py")
    assert not index.mentions("rain.json") and not index.mentions("ds_z2.json")
    assert index.mentions_word("train") and index.mentions_word("run") and index.mentions_word("ds_z3")
    assert not index.mentions_word("rain") and not index.mentions_word("v2")


def _agrees_on_random_texts(scan, reference, pieces: list[str], *, seed: int, longest: int) -> None:
    """``scan`` gives ``reference``'s answer on 4,000 random texts made of ``pieces``, more than
    a quarter of which it finds something in."""
    rng = random.Random(seed)
    found = 0
    for _ in range(4_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, longest)))
        names = scan(text)
        assert names == reference(text), text
        found += bool(names)
    assert found > 1_000


def test_notebook_names_are_the_matches_of_the_regular_expression():
    from trainlint.partition import _FILE_NAME, _mentioned_names

    def searched(text: str) -> set[str]:  # what the linear scan replaces
        return {(m.group(1) or m.group(2)).rsplit("/", 1)[-1] for m in _FILE_NAME.finditer(text)}

    pieces = ["a", "b", "py", "json", "sh", "yaml", "yml", "ipynb", ".", "-", "-m", " ", "\n", "/", "_", "é",
              "1", "m", "x.py", "-m pkg.train", "(", "\t", "..", "pyc", "\"", "--", "a" * 300, "-" * 90]
    _agrees_on_random_texts(_mentioned_names, searched, pieces, seed=3, longest=40)
    assert _mentioned_names("!python -m a.b-c.py x.json-y.py -m pkg.run.\n") == {"b", "-c.py", "x.json-y.py", "run"}
    # a notebook's base64 image: one long run of name characters, scanned once
    blob = "iVBOR" + "xQk9" * 50_000 + ".py"
    assert _mentioned_names(blob) == {blob}


def test_imported_names_are_the_matches_of_the_regular_expression():
    from trainlint.partition import _IMPORT, _imported_parts

    def searched(text: str) -> set[str]:  # what the scan of the lines that hold ``import`` replaces
        return {part for groups in _IMPORT.findall(text) for m in groups for part in m.split(".") if part}

    pieces = ["import", "from", " ", "\t", "\n", "\r", ".", "a", "b.c", "pkg", "x", "import a", "from . import b",
              "from .pkg.m import (c)", "  import d.e", "#", "\"", "as", "_", "é", "\n\n", "importer", "from a import"]
    _agrees_on_random_texts(_imported_parts, searched, pieces, seed=5, longest=30)
    assert _imported_parts("x = 1  # import y\nfrom .pkg.sub import m\n\timport a.b as c\n") == {"pkg", "sub", "a", "b"}


# -- layering ----------------------------------------------------------------------------------

import ast  # noqa: E402
from pathlib import Path  # noqa: E402

PACKAGE = Path(__file__).resolve().parent.parent / "trainlint"

# Each stage imports only the ones before it (or modules of its own stage, without a circle).
LAYERS = [
    ("model", ["trainlint", "trainlint.record", "trainlint.diagnostics", "trainlint.config", "trainlint.rule_index",
               "trainlint.knowledge", "trainlint.setup", "trainlint.vcs", "trainlint.stack",
               "trainlint.reads"]),
    ("readers", ["trainlint.sources"]),
    ("workspace", ["trainlint.workspace"]),
    ("linking", ["trainlint.consumers", "trainlint.folders", "trainlint.modules", "trainlint.linking"]),
    ("setups", ["trainlint.resolve"]),
    ("rules", ["trainlint.analysis", "trainlint.script_values", "trainlint.memory", "trainlint.estimate", "trainlint.fixing.python_edits",
               "trainlint.fixing.text_edits", "trainlint.rules"]),
    ("checking", ["trainlint.suppression", "trainlint.checking", "trainlint.partition", "trainlint.fixing.setup_memo"]),
    ("schedulers", ["trainlint.parallel", "trainlint.cache"]),
    ("pipeline", ["trainlint.engine", "trainlint.fixing"]),
    ("report", ["trainlint.report"]),
    ("cli", ["trainlint.cli", "trainlint.cli_commands", "trainlint.preflight", "trainlint.__main__", "trainlint.estimate_command", "trainlint.verify",
             "trainlint.server"]),
]


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> int:
    best, found = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, found = len(p), i
    assert found is not None, f"{module} belongs to no stage: add it to LAYERS"
    return found


def _imports(tree: ast.Module, module: str, known: set[str]) -> list[tuple[int, str]]:
    """(line, imported trainlint module) for every import outside ``if TYPE_CHECKING:``."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "trainlint"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.rsplit(".", node.level)[0]
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.split(".")[0] != "trainlint":
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((node.lineno, sub if sub in known else target))
    return out


def _graph() -> dict[str, list[tuple[int, str]]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(files)
    return {m: _imports(ast.parse(p.read_text(encoding="utf-8")), m, known) for m, p in files.items()}


def test_stages_import_only_earlier_stages():
    bad = []
    for module, imports in _graph().items():
        for line, target in imports:
            if _layer(target) > _layer(module):
                bad.append(f"{module}:{line} imports {target} "
                           f"({LAYERS[_layer(module)][0]} -> {LAYERS[_layer(target)][0]})")
    assert not bad, "\n".join(bad)


def _unit(module: str) -> str:
    """A sub-package (``trainlint.sources``) counts as one unit: its modules may call each
    other; the package as a whole must not be in a circle with another."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or (PACKAGE / parts[-1]).is_dir() and len(parts) == 2 else module


def test_no_import_cycles():
    graph: dict[str, set[str]] = {}
    for m, imps in _graph().items():
        graph.setdefault(_unit(m), set()).update(_unit(t) for _, t in imps if _unit(t) != _unit(m))
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph.get(m, ())):
            if m.startswith(t + "."):
                continue  # a module importing its own package
            if state.get(t) == 1:
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t, stack)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


# -- the rule index ---------------------------------------------------------------------------------


def test_rule_index_is_in_step_with_the_rules():
    import sys

    sys.path.insert(0, str(PACKAGE.parent / "scripts"))
    from gen_rule_index import index_text

    from trainlint.rule_index import INDEX_PATH
    from trainlint.rules import all_rules, discover_rules

    assert INDEX_PATH.read_text(encoding="utf-8") == index_text(), \
        "trainlint/rules/index.json is stale (a rule was added, renamed or moved): run python scripts/gen_rule_index.py"
    assert all_rules() == discover_rules()


# -- one result whatever the scheduler ------------------------------------------------------------

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

from helpers import REPO_ROOT, write_files  # noqa: E402

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import corpus  # noqa: E402

TRAIN = (
    "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
    "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
    "model.to('cuda')\n"
    "args = TrainingArguments(output_dir='o', logging_steps=1, fp16=True, per_device_train_batch_size=8{extra})\n"
    "Trainer(model=model, args=args).train()\n"
)
HF_SCRIPT = (
    "from transformers import HfArgumentParser, Seq2SeqTrainingArguments, Trainer\n"
    "parser = HfArgumentParser((Seq2SeqTrainingArguments,))\n"
    "(args,) = parser.parse_args_into_dataclasses()\n"
    "Trainer(model=None, args=args).train()\n"
)


def repository_tree(root: Path) -> None:
    """A repository-shaped tree: launch scripts linking scripts and configs (several setups),
    an args file read by the script beside it, stand-alone scripts, broken and foreign files, a
    config outside the tree, a version pin and ``[tool.trainlint]`` at the root."""
    corpus.generate(root / "examples" / "gen", 60, seed=11)
    write_files(root, {
        "pyproject.toml": '[tool.trainlint]\ngpu = "A100"\nignore = ["TL102"]\n'
                          '[tool.trainlint.per-file-ignores]\n"examples/gen/project_00/*" = ["TL2"]\n',
        "requirements.txt": "transformers==4.46.0\ntrl==0.12.0\n",
        "scripts/sft.sh": "accelerate launch --config_file configs/accel.yaml src/train.py "
                          "--deepspeed configs/ds_z3.json --learning_rate 2e-5 --per_device_train_batch_size 8 "
                          "--logging_steps 1 --fp16\n"
                          "torchrun --nproc_per_node 4 src/pretrain.py --gradient_accumulation_steps 4\n",
        "scripts/dpo.sh": "deepspeed --num_gpus 8 src/dpo.py --deepspeed configs/ds_z2.json\n",
        "configs/accel.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\n"
                              "num_processes: 4\nmixed_precision: bf16\n"
                              "deepspeed_config:\n  deepspeed_config_file: configs/ds_z3.json\n",
        "configs/ds_z3.json": '{"zero_optimization": {"stage": 3}, "fp16": {"enabled": true}, '
                              '"train_micro_batch_size_per_gpu": 4}\n',
        "configs/ds_z2.json": '{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}, '
                              '"bf16": {"enabled": "auto"}}\n',
        "configs/broken.json": '{"zero_optimization": {"stage": 3,\n',
        "configs/tsconfig.json": '// comments: another tool\n{"compilerOptions": {}}\n',
        "src/train.py": HF_SCRIPT,
        "src/pretrain.py": TRAIN.format(extra=""),
        "src/dpo.py": TRAIN.format(extra=", bf16=True"),
        "examples/args/sft.yaml": "output_dir: o\nlearning_rate: '2e-5'\nlogging_steps: 0\n",
        "examples/args/run.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                                "(args,) = HfArgumentParser((TrainingArguments,)).parse_yaml_file('x')\n",
        "examples/alone.py": TRAIN.format(extra=""),
        "examples/suppressed.py": TRAIN.format(extra="").replace("logging_steps=1,", "logging_steps=1,  # noqa: TL201"),
        "examples/outside.py": TRAIN.format(extra=", deepspeed='../../ext_ds.json'"),
        "examples/broken.py": "from transformers import Trainer\nTrainer(\n",
        "examples/unrelated.py": "print('no training here')\n",
    })
    (root.parent / "ext_ds.json").write_text('{"zero_optimization": {"stage": 3}, "fp16": {"enabled": true}}\n')


def _everything(result):
    return (json.dumps([d.to_json() for d in result.diagnostics], indent=0), result.files, result.texts,
            sorted(result.unparsable), result.kinds)


def test_every_scheduler_gives_the_same_result(tmp_path, monkeypatch):
    from trainlint.checking import filter_findings, run_rules
    from trainlint.config import load_settings
    from trainlint.engine import lint
    from trainlint.workspace import read_workspace

    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    repository_tree(root)
    monkeypatch.chdir(root)
    settings = load_settings(root)
    # the plain pipeline: every file in one workspace
    ws = read_workspace([Path(".")], settings, {})
    plain = filter_findings(run_rules(ws, settings), ws, settings)
    serial = lint([Path(".")], settings, jobs=1)
    found = {(d.code, d.path) for d in serial.diagnostics}
    assert [d.to_json() for d in serial.diagnostics] == [d.to_json() for d in plain]
    assert serial.files == sorted(ws.files)
    # what the tree is built to show: linked setups, the args file, configs, the outside config
    assert any(p.endswith("ds_z3.json") for _, p in found) and any(p.endswith("sft.sh") for _, p in found)
    assert any(p.endswith("ext_ds.json") for _, p in found)
    assert ("TL003", "configs/broken.json") in found and ("TL001", "examples/broken.py") in found
    assert not any(p.startswith("examples/gen/project_00") and c.startswith("TL2") for c, p in found)
    assert any(c == "TL201" for c, p in found) and ("TL201", "examples/suppressed.py") not in found
    assert len(serial.files) > 60 and len(serial.diagnostics) > 100

    from trainlint.partition import split

    plan = split([Path(".")], settings, {})
    groups = [{p for p, _ in g} for g in plan.groups]
    assert {"scripts/sft.sh", "src/train.py", "configs/accel.yaml", "configs/ds_z3.json"} <= \
        next(g for g in groups if "scripts/sft.sh" in g)
    assert {"examples/args/sft.yaml", "examples/args/run.py"} in groups and {"configs/broken.json"} in groups
    assert len(plan.units) > 55

    default_cold = lint([Path(".")], settings, jobs=None, cache=True)
    assert default_cold.cache_stats is not None and default_cold.cache_stats[0] == 0
    warm = lint([Path(".")], settings, jobs=None, cache=True)
    assert warm.cache_stats is not None and warm.cache_stats[0] > 50 and warm.cache_stats[1] == 0
    assert warm.cache_stats[0] >= len(plan.units) - 3 + len(plan.groups) - 1  # linked groups are cached too
    pooled = lint([Path(".")], settings, jobs=2, min_files=0)
    for other in (default_cold, warm, pooled):
        assert _everything(other) == _everything(serial)

    # the cold run stored the whole run: the warm one answered without reading a file
    assert warm.whole_run_cached and not default_cold.whole_run_cached
    # a file touched, not changed: still the whole run (its hash is checked)
    os.utime(root / "src" / "dpo.py", ns=(10**18, 10**18))
    touched = lint([Path(".")], settings, jobs=1, cache=True)
    assert touched.whole_run_cached and _everything(touched) == _everything(serial)
    # a walked file changed that no finding depends on: every task from its own entry
    (root / "examples" / "unrelated.py").write_text("print('still no training here')\n")
    tasks = lint([Path(".")], settings, jobs=1, cache=True)
    assert not tasks.whole_run_cached and tasks.cache_stats[1] == 0 and tasks.cache_stats[0] > 50
    assert _everything(tasks) == _everything(serial)

    # a changed config, launch script, args file or config outside the tree of a cached group:
    # that group is checked again, and the result is a fresh run's
    before = serial
    for path, text in [
        ("configs/ds_z3.json", '{"zero_optimization": {"stage": 2}, "bf16": {"enabled": true}}\n'),
        ("scripts/sft.sh", "accelerate launch --config_file configs/accel.yaml src/train.py "
                           "--deepspeed configs/ds_z3.json --learning_rate 2e-5 --logging_steps 0\n"),
        ("examples/args/sft.yaml", "output_dir: o\nlearning_rate: 2e-5\nlogging_steps: 5\nwarmup_steps: -1\n"),
        ("../ext_ds.json", '{"zero_optimization": {"stage": 2}, "bf16": {"enabled": true}}\n'),
    ]:
        (root / path).write_text(text)
        changed = lint([Path(".")], settings, jobs=None, cache=True)
        assert not changed.whole_run_cached and changed.cache_stats[1] >= 1, path
        fresh = lint([Path(".")], settings, jobs=1)
        assert _everything(changed) == _everything(fresh), path
        assert _everything(changed) != _everything(before), path
        again = lint([Path(".")], settings, jobs=None, cache=True)
        assert again.whole_run_cached and _everything(again) == _everything(fresh), path
        before = fresh


def test_a_readme_links_what_its_commands_run_not_what_its_prose_names(tmp_path, monkeypatch):
    """Linking reads a Markdown file's launch lines, which are in its shell blocks: a script its
    prose names (``train.py``, "the sft recipe") stands alone, with the result of one
    workspace; one a command runs is checked with the README, as the launch line's setup."""
    from trainlint.checking import filter_findings, run_rules
    from trainlint.config import load_settings
    from trainlint.engine import lint
    from trainlint.partition import split
    from trainlint.workspace import read_workspace

    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    write_files(root, {
        "train.py": TRAIN.format(extra=""),
        "sft.py": TRAIN.format(extra=", bf16=True"),
        "dpo.py": TRAIN.format(extra=", bf16=True"),
        "README.md": "See `train.py` and the sft recipe; dpo.py reads flags.\n\n"
                     "```bash\n$ accelerate launch dpo.py --learning_rate 1e-3 --fp16\n```\n",
    })
    monkeypatch.chdir(root)
    settings = load_settings(root)
    plan = split([Path(".")], settings, {})
    assert sorted(u.path for u in plan.units) == ["sft.py", "train.py"]
    assert [{p for p, _ in g} for g in plan.groups] == [{"README.md", "dpo.py"}]
    ws = read_workspace([Path(".")], settings, {})
    plain = filter_findings(run_rules(ws, settings), ws, settings)
    serial = lint([Path(".")], settings, jobs=1)
    assert [d.to_json() for d in serial.diagnostics] == [d.to_json() for d in plain]
    assert {d.path for d in serial.diagnostics} >= {"train.py", "sft.py", "dpo.py"}


def test_a_run_reads_each_walked_file_once(tmp_path, monkeypatch):
    """The split's reads serve the tasks' workspaces (and linking's modules): one read per file,
    and the same result as one workspace that reads every file itself."""
    from collections import Counter

    from trainlint.checking import filter_findings, run_rules
    from trainlint.config import load_settings
    from trainlint.engine import lint
    from trainlint.sources import files
    from trainlint import partition, workspace
    from trainlint.workspace import read_workspace

    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    repository_tree(root)
    write_files(root, {"src/helpers.py": "def helper():\n    return 1\n",
                       "src/uses.py": TRAIN.format(extra="") + "from helpers import helper\n"})
    monkeypatch.chdir(root)
    settings = load_settings(root)
    ws = read_workspace([Path(".")], settings, {})
    plain = filter_findings(run_rules(ws, settings), ws, settings)
    reads: Counter = Counter()
    real = files.read_text

    def counted(path, overlay=None):
        if not (overlay and path in overlay):  # a stand-alone script's task gets its text so
            reads[path] += 1
        return real(path, overlay)

    monkeypatch.setattr(partition, "read_text", counted)
    monkeypatch.setattr(workspace, "read_text", counted)
    followed: list[str] = []
    real_linked = workspace.read_linked_module

    def linked(ws, path):
        followed.append(path)
        return real_linked(ws, path)

    monkeypatch.setattr(workspace, "read_linked_module", linked)
    serial = lint([Path(".")], settings, jobs=1)
    assert [d.to_json() for d in serial.diagnostics] == [d.to_json() for d in plain]
    # dropped by the pre-filter, read by linking as a module (only followed: no file of the result)
    assert os.path.join("src", "helpers.py") in followed and "src/helpers.py" not in serial.files
    walked = {p for p, _ in partition.walk_order([Path(".")], settings)}
    assert reads and all(n == 1 for p, n in reads.items() if p in walked), [p for p, n in reads.items() if n > 1]


def test_the_cache_sees_a_config_appear_where_linking_looked(tmp_path, monkeypatch):
    """A script's setup looked for ``local/ds.json`` beside it, found none there and took the one
    of the folder above (ignored by git, so outside the walk). A config that appears beside
    it is the one a fresh run reads: the cache must not answer with the old result."""
    from trainlint.config import load_settings
    from trainlint.engine import lint

    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    write_files(root, {
        ".gitignore": "local/\n",
        "examples/train.py": TRAIN.format(extra=", deepspeed='local/ds.json'"),
        "local/ds.json": '{"zero_optimization": {"stage": 3}, "fp16": {"enabled": true}}\n',
    })
    monkeypatch.chdir(root)
    settings = load_settings(root)
    first = lint([Path(".")], settings, jobs=1, cache=True)
    assert "local/ds.json" in first.files and lint([Path(".")], settings, cache=True).whole_run_cached
    write_files(root, {"examples/local/ds.json": '{"zero_optimization": {"stage": 2}, "bf16": {"enabled": true}}\n'})
    fresh = lint([Path(".")], settings, jobs=1)
    assert "examples/local/ds.json" in fresh.files and _everything(fresh) != _everything(first)
    for _ in range(2):
        cached = lint([Path(".")], settings, jobs=1, cache=True)
        assert _everything(cached) == _everything(fresh)


def test_a_json_that_is_no_config_does_not_link_the_scripts_its_words_mention(tmp_path, monkeypatch):
    """The words of a JSON that is no config (a dataset's records, results) are not asked
    whether they name a script: linking never follows them, so a script they mention by its
    stem still stands alone, with the result of one workspace. A README command, a config's
    words and a file name in the records still join what they name."""
    from trainlint.checking import filter_findings, run_rules
    from trainlint.config import load_settings
    from trainlint.engine import lint
    from trainlint.partition import split
    from trainlint.workspace import read_workspace

    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    records = [{"instruction": f"train the model, then run sft and dpo ({i})", "output": "ok"} for i in range(50)]
    write_files(root, {
        "train.py": TRAIN.format(extra=""),
        "sft.py": TRAIN.format(extra=", bf16=True"),
        "dpo.py": HF_SCRIPT,
        "data/records.json": json.dumps(records + [{"see": "ds_z3.json"}]),
        "data/results.json": json.dumps({"train": {"loss": 1.0}, "sft": 2}),
        "data/ds_z3.json": '{"zero_optimization": {"stage": 3}, "fp16": {"enabled": true}}\n',
        "data/ds_z2.json": '{"zero_optimization": {"stage": 2}, "note": "for dpo"}\n',
        "README.md": "```bash\npython sft.py --learning_rate 1e-3 --deepspeed data/ds_z3.json\n```\n",
    })
    monkeypatch.chdir(root)
    settings = load_settings(root)
    plan = split([Path(".")], settings, {})
    assert [u.path for u in plan.units] == ["train.py"]  # named only by the records' and results' words
    groups = [{p for p, _ in g} for g in plan.groups]
    assert {"README.md", "sft.py", "data/ds_z3.json", "data/records.json"} <= next(g for g in groups if "sft.py" in g)
    assert "dpo.py" in next(g for g in groups if "data/ds_z2.json" in g)  # a config's words still count
    ws = read_workspace([Path(".")], settings, {})
    plain = filter_findings(run_rules(ws, settings), ws, settings)
    serial = lint([Path(".")], settings, jobs=1)
    assert [d.to_json() for d in serial.diagnostics] == [d.to_json() for d in plain]
    assert any(d.path == "train.py" for d in serial.diagnostics) and any(d.path == "sft.py" for d in serial.diagnostics)


ARGV_READER = """import sys
from dataclasses import dataclass, field
from transformers import HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArgs:
    model_name_or_path: str = field(default="gpt2")


model_args, training_args = HfArgumentParser((ModelArgs, TrainingArguments)).parse_yaml_file(sys.argv[1])
Trainer(model=None, args=training_args).train()
"""


def test_a_script_that_reads_the_args_files_of_its_sub_folder_is_checked_with_them(tmp_path, monkeypatch):
    """Linking looks for the reader of an args file no launch line names beside it and in the
    folder above (``parse_yaml_file(sys.argv[1])`` in ``train.py``, ``configs/run.yaml``): the
    split keeps that script with the args files of its own and of its sub-folders, so the
    file's values are judged as in one workspace; a script two folders up stands alone."""
    from trainlint.checking import filter_findings, run_rules
    from trainlint.config import load_settings
    from trainlint.engine import lint
    from trainlint.partition import split
    from trainlint.workspace import read_workspace

    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    run = "model_name_or_path: gpt2\noutput_dir: out\nlogging_steps: 1\nper_device_train_batch_size: 8\n"
    write_files(root, {
        "train.py": ARGV_READER,
        "configs/run.yaml": run,
        "far/away.py": ARGV_READER,
        "far/deep/er/run.yaml": run,
    })
    monkeypatch.chdir(root)
    settings = load_settings(root)
    plan = split([Path(".")], settings, {})
    assert [u.path for u in plan.units] == ["far/away.py"]
    assert {"train.py", "configs/run.yaml"} in [{p for p, _ in g} for g in plan.groups]
    ws = read_workspace([Path(".")], settings, {})
    plain = filter_findings(run_rules(ws, settings), ws, settings)
    for jobs in (1, 2):
        found = lint([Path(".")], settings, jobs=jobs, min_files=0)
        assert [d.to_json() for d in found.diagnostics] == [d.to_json() for d in plain]
    # the value is judged with the reader's TrainingArguments (only where the reader is near)
    assert ("TL201", "configs/run.yaml") in {(d.code, d.path) for d in plain}
    assert not any(d.path == "far/deep/er/run.yaml" and d.code == "TL201" for d in plain)


def test_every_rule_declares_its_triggers_and_its_cases_contain_them():
    """The pre-filter parses a walked script only if it holds a trigger of a selected rule, and
    a workspace of scripts only gets the rules it triggers: a trigger list that misses what a
    rule reports on would hide its findings (the case tests, which walk their folder, catch
    that too)."""
    from trainlint.rules import all_rules

    for rule in all_rules():
        assert rule.triggers is not None, (
            f"{rule.code} {rule.name}: declare `triggers` (trainlint/rules/_triggers.py), the names a "
            "walked script must contain for the rule to report on it (() if it never reports on a script alone)")
        for case in rule.cases:
            files = case.all_files()
            if rule.produced_by_engine or not case.flags or not files or not all(p.endswith(".py") for p in files):
                continue  # input problems come from the readers, whatever the triggers
            assert any(t in text for text in files.values() for t in rule.triggers), \
                f"{rule.code} flags a case that holds none of its triggers {rule.triggers}"


def test_the_prefilter_is_the_selected_rules_triggers():
    from trainlint.config import Settings
    from trainlint.rule_index import prefilter_names
    from trainlint.workspace import wanted_python

    every = Settings.model_construct()
    names = prefilter_names(every)
    assert names is not None and "TrainingArguments" in names and "from_pretrained" not in names
    assert "tokenizer" not in names and "Config" not in names  # the broad filter's words are not triggers
    with_gpu = Settings.model_construct(gpu="A100")
    assert "from_pretrained" in prefilter_names(with_gpu)  # the memory estimate needs a target GPU
    only_ds = Settings.model_construct(select=["TL3"])
    assert set(prefilter_names(only_ds)) >= {"deepspeed", "DeepSpeed"}
    helper = "import torch\ntokenizer = load_tokenizer()\nconfig = LoraConfig(r=8)\n"
    assert not wanted_python(helper, every) and wanted_python(helper)  # the broad pre-filter took it
    assert wanted_python(helper + "args = TrainingArguments('o')\n", every)
    assert wanted_python("model = AutoModel.from_pretrained('x', torch_dtype=torch.float16)\n", every)  # TL608


# -- the text format ----------------------------------------------------------------------------


def test_text_format_is_written_directly_and_literally():
    import io

    from trainlint.diagnostics import Diagnostic, Edit, Fix, Related, Severity
    from trainlint.report import text_format

    text = "x = 1\n" * 99 + "args = TrainingArguments(logging_steps=1, tag='[bold]:100:')\n"
    d = Diagnostic(code="TL201", name="logging-steps-too-low", severity=Severity.WARNING,
                   message="logging_steps=1 [red]logs[/] every step", path="t.py", line=100, column=26,
                   end_line=100, end_column=41,
                   fix=Fix(applicability="safe", message="use 50",
                           edits=[Edit(path="t.py", line=100, column=40, end_line=100, end_column=41, content="50")]),
                   related=[Related(path="t.py", line=1, column=1, message="set here")])
    out = io.StringIO()
    text_format.render([d], {"t.py": text}, out, color=False)
    assert out.getvalue() == (
        "t.py:100:26: TL201 [*] logging-steps-too-low (warning)\n"
        "  logging_steps=1 [red]logs[/] every step\n"
        "      |\n"
        "  100 | args = TrainingArguments(logging_steps=1, tag='[bold]:100:')\n"
        "      |                          ^^^^^^^^^^^^^^^\n"
        "  = fix (safe): use 50\n"
        "  = note: t.py:1: set here\n"
        "\n"
        "Found 1 finding.\n"
        "[*] 1 fixable with `trainlint fix --apply`.\n")
    colored = io.StringIO()
    text_format.render([d], {"t.py": text}, colored, color=True)
    assert "\x1b[1;33mTL201\x1b[0m" in colored.getvalue() and "[bold]:100:" in colored.getvalue()


# -- one git process per run ----------------------------------------------------------------------


def test_one_git_process_serves_every_file_of_a_run(tmp_path):
    import os
    import shutil

    from helpers import git, run_cli

    real = shutil.which("git")
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    repo = tmp_path / "repo"
    repo.mkdir()
    head = "from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', learning_rate=2e-5, "
    files = {f"t{i}.py": head + "per_device_train_batch_size=8)\n" for i in range(6)}
    write_files(repo, files)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    write_files(repo, {name: text.replace("=8)", "=32)") for name, text in files.items()})
    env = {"PATH": f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}"}
    out = run_cli("check", ".", "--format", "concise", "--no-cache", "-j", "1", cwd=repo, env=env)
    assert out.stdout.count("lr-not-scaled") == 6, out.stdout + out.stderr
    calls = log.read_text().splitlines()
    assert len(calls) == 1 and "cat-file --batch" in calls[0], calls


def test_a_walked_broken_training_file_is_still_reported(tmp_path):
    from trainlint.config import load_settings
    from trainlint.engine import lint

    write_files(tmp_path, {"cut.py": "import accelerate\nstate = accelerate.PartialState(\n",
                           "plain.py": "import accelerate\nprint(accelerate.__version__)\n"})
    for jobs in (1, 2):
        result = lint([tmp_path], load_settings(tmp_path), jobs=jobs, min_files=0)
        assert [(d.code, Path(d.path).name) for d in result.diagnostics] == [("TL001", "cut.py")]
        assert [Path(p).name for p in result.files] == ["cut.py"]  # plain.py was only read


def test_the_cache_sees_files_rules_read_from_outside_the_workspace(tmp_path, monkeypatch):
    """Rules read a local checkpoint's ``config.json`` and the requirement files of the folders
    above a script (``trainlint.reads``); neither is walked here (outside the tree, or not a
    kind the walk reads). A change to either is a change: the cache must not answer with the
    old result, per task or for the whole run."""
    from trainlint.config import load_settings
    from trainlint.engine import lint

    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    write_files(tmp_path, {
        "ckpt/config.json": '{"model_type": "gpt2", "torch_dtype": "float16"}',
        "repo/pyproject.toml": '[tool.trainlint]\ntransformers-version = "5.24.0"\n',
        "repo/train.py": (
            "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
            "model = AutoModelForCausalLM.from_pretrained('../ckpt')\n"
            "Trainer(model=model, args=TrainingArguments(output_dir='o', fp16=True)).train()\n"),
    })
    monkeypatch.chdir(root)
    settings = load_settings(root)

    def codes(result):
        return sorted(d.code for d in result.diagnostics)

    first = lint([Path(".")], settings, jobs=1, cache=True)
    assert "TL106" in codes(first)
    assert lint([Path(".")], settings, jobs=1, cache=True).whole_run_cached
    for text in ('{"model_type": "gpt2", "torch_dtype": "float32"}', None,
                 '{"model_type": "gpt2", "torch_dtype": "float16"}'):
        cfg = tmp_path / "ckpt" / "config.json"
        if text is None:
            cfg.unlink()
        else:
            cfg.write_text(text)
        fresh = lint([Path(".")], settings, jobs=1)
        for _ in range(2):
            cached = lint([Path(".")], settings, jobs=1, cache=True)
            assert _everything(cached) == _everything(fresh), text
        if text is not None and "float16" in text:
            assert _everything(fresh) == _everything(first)
        else:
            assert _everything(fresh) != _everything(first), text


def test_the_cache_sees_a_requirements_file_appear_above_a_script(tmp_path, monkeypatch):
    """The versions a project says it supports come from the requirement files of the folders
    above a script (``_versioned.allowed_low``): one that appears there changes what a renaming
    fix may write, and the cache must see it, though the walk does not read ``.txt`` files."""
    from trainlint.config import load_settings
    from trainlint.engine import lint

    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    write_files(root, {
        ".git/HEAD": "ref: refs/heads/main\n",
        "examples/sft/train.py": (
            "from transformers import Trainer, TrainingArguments\n"
            "args = TrainingArguments(output_dir='o', evaluation_strategy='epoch')\n"
            "Trainer(model=None, args=args).train()\n"),
    })
    monkeypatch.chdir(root)
    settings = load_settings(root)
    first = lint([Path(".")], settings, jobs=1, cache=True)
    assert lint([Path(".")], settings, jobs=1, cache=True).whole_run_cached
    write_files(root, {"examples/sft/requirements.txt": "transformers==4.38.2\n"})
    fresh = lint([Path(".")], settings, jobs=1)
    assert _everything(fresh) != _everything(first)
    for _ in range(2):
        assert _everything(lint([Path(".")], settings, jobs=1, cache=True)) == _everything(fresh)


def test_a_missing_reference_is_cached_and_sees_the_file_appear(tmp_path, monkeypatch):
    """A launch script names a config that is not there (TL004). Its result is cached (the warm
    run answers from the cache), and any change the finding depends on is seen: the file
    appearing elsewhere in the repository (the "a file of that name is at" hint), then where
    the command looks for it."""
    from trainlint.config import load_settings
    from trainlint.engine import lint

    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    write_files(root, {
        ".git/HEAD": "ref: refs/heads/main\n",
        ".gitignore": "old/\n",
        "old/notes.txt": "the folder exists before the config appears in it\n",
        "scripts/run.sh": "accelerate launch --config_file configs/fsdp.yaml train.py --logging_steps 10\n",
        "scripts/train.py": TRAIN.format(extra=""),
    })
    monkeypatch.chdir(root)
    settings = load_settings(root)
    first = lint([Path(".")], settings, jobs=1, cache=True)
    assert "TL004" in {d.code for d in first.diagnostics}
    warm = lint([Path(".")], settings, jobs=1, cache=True)
    assert warm.whole_run_cached and _everything(warm) == _everything(first)
    # the file appears elsewhere (ignored by git: not walked, but named by the hint), then there
    for path in ("old/fsdp.yaml", "scripts/configs/fsdp.yaml"):
        write_files(root, {path: "distributed_type: FSDP\nnum_processes: 2\n"})
        fresh = lint([Path(".")], settings, jobs=1)
        assert _everything(fresh) != _everything(first), path
        for _ in range(2):
            assert _everything(lint([Path(".")], settings, jobs=1, cache=True)) == _everything(fresh), path
        first = fresh


def test_the_collector_runs_between_tasks_only_and_is_restored(tmp_path, monkeypatch):
    """Inside a run the cyclic collector never starts on its own (a collection inside a task
    frees nothing and walks every tree the task holds); each scheduler collects between tasks;
    at the end what the run still holds is handed to the oldest generation without being
    walked, and the thresholds are the caller's again."""
    import gc

    from trainlint.config import load_settings
    from trainlint.engine import lint

    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    corpus.generate(root, 12, seed=5)
    monkeypatch.chdir(root)
    settings = load_settings(root)
    generations: list[int] = []

    def note(phase: str, info: dict) -> None:
        if phase == "start":
            generations.append(info["generation"])

    lint([Path(".")], settings, jobs=1, cache=False)  # what a run imports, imported before
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    gc.collect()
    gc.callbacks.append(note)
    try:
        result = lint([Path(".")], settings, jobs=1, cache=False)
        after = gc.get_threshold()
        gc.collect(0)  # the youngest generation right after the run: nothing of the run's is in it
        young_after = gc.get_count()[0]
    finally:
        gc.callbacks.remove(note)
        gc.set_threshold(*before)
    assert len(result.files) == 12 and result.diagnostics
    assert generations.count(0) == 1, generations  # only the one asked for above: none while it ran
    assert generations.count(1) >= 5  # between tasks
    assert after == (700, 10, 10)
    assert young_after < 100


def test_a_check_that_ends_the_process_leaves_its_last_task_unfreed(tmp_path, monkeypatch):
    """When the process ends with the run (``check`` through the console script: ``os._exit``),
    the last task's workspace and setups are kept instead of freed one object at a time; the
    findings are the same, the run before's leftovers are let go, and any other caller (tests,
    the language server, ``fix``) frees everything."""
    from trainlint import engine
    from trainlint.config import load_settings
    from trainlint.engine import lint
    from trainlint.workspace import Workspace

    monkeypatch.setenv("TRAINLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    repository_tree(root)
    monkeypatch.chdir(root)
    settings = load_settings(root)
    freed = lint([Path(".")], settings, jobs=1, cache=False)
    assert engine._LEFT == []
    monkeypatch.setattr(engine, "ENDS_AFTER_RUN", True)
    for _ in range(2):  # the second run replaces what the first left
        left = lint([Path(".")], settings, jobs=1, cache=False)
        assert [d.to_json() for d in left.diagnostics] == [d.to_json() for d in freed.diagnostics]
        workspaces = [x for x in engine._LEFT if isinstance(x, Workspace)]
        assert len(workspaces) == 1 and len(engine._LEFT) == 2  # the workspace, then its setups
        assert workspaces[0].files  # the largest task (checked last), as read
    engine._LEFT.clear()


def test_only_the_check_command_ends_without_freeing(tmp_path):
    """The console script sets ``ENDS_AFTER_RUN`` for ``check`` (it leaves with ``os._exit``
    after its one run) and for no other command (``fix`` goes on after each run)."""
    import subprocess
    import sys

    (tmp_path / "train.py").write_text(TRAIN.format(extra=""))
    probe = ("import os, sys\nfrom trainlint import engine\nreal = os._exit\n"
             "def leave(code):\n    print('ENDS', engine.ENDS_AFTER_RUN, len(engine._LEFT) > 0, flush=True)\n"
             "    real(code)\nos._exit = leave\nsys.argv = ['trainlint'] + sys.argv[1:]\n"
             "from trainlint.cli import entry\nentry()\n")
    seen = {}
    for command in (["check", "train.py", "--no-cache"], ["fix", "train.py"]):
        out = subprocess.run([sys.executable, "-c", probe, *command], cwd=tmp_path, capture_output=True, text=True)
        seen[command[0]] = next(line for line in out.stdout.splitlines() if line.startswith("ENDS"))
    assert seen == {"check": "ENDS True True", "fix": "ENDS False False"}
