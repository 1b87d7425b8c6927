"""The rules' hot spots answer as the plain computations they replace."""

from __future__ import annotations

import ast
from pathlib import Path

from trainlint.rules.migration.removed_import import _ancestors, _parents

ROOT = Path(__file__).resolve().parent.parent

_TRICKY = '''
import transformers
@transformers.utils.deprecated(f"{transformers.__version__}")
@decorate
def f(a=transformers.AdamW, *, b: transformers.X = None) -> transformers.Y:
    try:
        from transformers import AdamW
    except ImportError:
        from torch.optim import AdamW
    if transformers.__version__ >= "4.0":
        x = [transformers.Z for _ in range(3) if transformers.W]
    with open(transformers.path) as fh, other(transformers.q):
        lambda: transformers.L
    match transformers.M:
        case transformers.N(): pass
        case {"k": transformers.O}: pass
    print(f"{transformers.P!r:>{transformers.Q}}")
class C(transformers.Base, metaclass=transformers.Meta):
    attr: transformers.T = transformers.U
'''


def _chain(parents: dict, node: ast.AST) -> list[ast.AST]:
    out = []
    while id(node) in parents:
        node = parents[id(node)]
        out.append(node)
    return out[::-1]


def test_ancestors_by_position_are_the_parents():
    """Every node of this project's modules, its tests and a snippet of decorators, defaults,
    annotations, comprehensions, ``with``, ``match`` and f-strings: the path found by position
    is the one the full parent map gives (or None, where the map is used)."""
    texts = [_TRICKY] + [p.read_text(encoding="utf-8") for p in sorted((ROOT / "trainlint").rglob("*.py"))[:30]]
    checked = 0
    for text in texts:
        tree = ast.parse(text)

        class File:
            pass

        pf = File()
        pf.tree, pf.nodes = tree, list(ast.walk(tree))
        parents = _parents(pf)
        for node in pf.nodes:
            got = _ancestors(pf, node)
            if got is None:
                assert getattr(node, "end_lineno", None) is None or node is tree or isinstance(
                    node, ast.expr), type(node)
                continue
            want = _chain(parents, node)
            assert len(got) == len(want) and all(a is b for a, b in zip(got, want))
            checked += 1
    assert checked > 10_000


def test_version_index_remembered_is_the_scan():
    from trainlint.knowledge import training_args as ta

    versions = ["4.40.0", "4.41.0", "4.46.0", "5.0.0", "5.24.0"]
    for v in ("4.0", "4.41.0", "4.45.9", "5.0.0rc1", "5.0.0", "9.0", None):
        for _ in range(2):
            best = len(versions) - 1 if v is None else max(
                [i for i, x in enumerate(versions) if ta.vkey(x) <= ta.vkey(v)] or [0])
            assert ta.version_index(versions, v) == best
    other = list(versions[:2])  # another list: not the answer of the first
    assert ta.version_index(other, "5.24.0") == 1


def test_major_minor_and_test_paths_remembered():
    import os

    from trainlint.rules._context import is_test_path
    from trainlint.setup import _major_minor

    assert _major_minor("4.46.0") == (4, 46) == _major_minor("4.46.0")
    assert _major_minor("5") == (5, 0) and _major_minor("5.0.0rc1") == (5, 0)
    for _ in range(2):
        assert is_test_path("tests/train.py") and not is_test_path("examples/train.py")
        assert is_test_path(os.path.join(os.getcwd(), "tests", "train.py"))


_FLOWS = '''
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
from peft import get_peft_model

model = AutoModelForCausalLM.from_pretrained("m")
model.to("cuda")
model.config.use_cache = False

def one():
    model = AutoModelForCausalLM.from_pretrained("a")
    model.gradient_checkpointing_enable()
    model = get_peft_model(model, cfg)
    model = model.cuda()
    Trainer(model=model, args=TrainingArguments("o")).train()

def two(model):
    other = model
    model.enable_input_require_grads()
    trainer = Trainer(model=other)
    def inner():
        model.to("cpu")
        Trainer(model=model)
    return trainer

class T:
    def m(self):
        self.model.to("cuda")
        Trainer(model=self.model)

Trainer(model=model)
prepare(model)
'''


def _flows_summary(pf):
    from trainlint.analysis import model_flows

    return [(id(f.trainer), [(c.name, id(c.site.node)) for c in f.calls], [id(m.call) for m in f.moves],
             [id(a[0]) for a in f.attr_sets], sorted(f.names)) for f in model_flows(pf)]


def _fresh(pf):
    for key in ("_model_flows", "_model_flow_of", "_flow_bound", "_flow_by_trainer"):
        pf.__dict__.pop(key, None)


def test_model_flows_by_bound_names_are_those_of_every_call(monkeypatch):
    """``model_flows`` looks only at calls whose names are bound where the model's are: the
    same flows as looking at every call of the file (the snippet, every rule case's script)."""
    import trainlint.analysis as an
    from trainlint.rules import all_rules
    from trainlint.sources.python import parse_python

    texts = [_FLOWS] + [c.all_files()["train.py"] for r in all_rules() for c in r.cases
                        if "train.py" in c.all_files() and "Trainer" in c.all_files()["train.py"]]
    compared = 0
    for text in texts:
        try:
            pf = parse_python("train.py", text)
        except Exception:  # noqa: BLE001 - a case that is not Python
            continue
        if not getattr(pf, "trainer_calls", None):
            continue
        got = _flows_summary(pf)
        _fresh(pf)
        with monkeypatch.context() as m:
            m.setattr(an, "_bound_index", lambda pf, by_name, names: _Every(len(pf.calls)))
            assert _flows_summary(pf) == got
            if text is _FLOWS:  # the control: an index that misses the calls misses the flows' calls
                _fresh(pf)
                m.setattr(an, "_bound_index", lambda pf, by_name, names: {})
                assert _flows_summary(pf) != got
        _fresh(pf)
        compared += 1
    assert compared > 50


class _Every(dict):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def get(self, key, default=None):
        return list(range(self.n))
