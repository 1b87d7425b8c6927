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


# -- layering ----------------------------------------------------------------------------------

import ast  # noqa: E402
from pathlib import Path  # noqa: E402

PACKAGE = Path(__file__).resolve().parent.parent / "trainlint"

# Each stage imports only the ones before it (or modules of its own stage, without a circle).
LAYERS = [
    ("model", ["trainlint", "trainlint.diagnostics", "trainlint.config", "trainlint.rule_index",
               "trainlint.knowledge", "trainlint.setup", "trainlint.vcs", "trainlint.stack"]),
    ("readers", ["trainlint.sources"]),
    ("workspace", ["trainlint.workspace"]),
    ("linking", ["trainlint.linking"]),
    ("setups", ["trainlint.resolve"]),
    ("rules", ["trainlint.analysis", "trainlint.memory", "trainlint.estimate", "trainlint.fixing.python_edits",
               "trainlint.rules"]),
    ("checking", ["trainlint.suppression", "trainlint.checking", "trainlint.partition"]),
    ("schedulers", ["trainlint.parallel", "trainlint.cache"]),
    ("pipeline", ["trainlint.engine", "trainlint.fixing"]),
    ("report", ["trainlint.report"]),
    ("cli", ["trainlint.cli", "trainlint.__main__", "trainlint.estimate_command", "trainlint.verify"]),
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


def test_no_import_cycles():
    graph = {m: {t for _, t in imps if t != m} for m, imps in _graph().items()}
    # a package's __init__ may be imported by its own modules' absolute imports: not a cycle of code
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
