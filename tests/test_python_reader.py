"""Reading Python: import-aware names, training calls, value resolution with provenance."""

from __future__ import annotations

import textwrap

import pytest

from trainlint.setup import UNKNOWN
from trainlint.sources.python import parse_python


def read(code: str):
    return parse_python("t.py", textwrap.dedent(code))


def values(code: str, index: int = 0) -> dict:
    pf = read(code)
    return {k: v.value for k, v in pf.args_calls[index].args.values.items()}


def test_import_aliases_and_modules():
    pf = read("""
        import transformers as tf
        from transformers import TrainingArguments as TA
        from trl import SFTConfig, SFTTrainer
        import transformers.training_args
        a = tf.TrainingArguments(output_dir="a")
        b = TA(output_dir="b")
        c = SFTConfig(output_dir="c")
        d = transformers.training_args.TrainingArguments(output_dir="d")
        e = tf.Seq2SeqTrainingArguments("e")
        SFTTrainer(model=m, args=c)
    """)
    assert [c.class_name for c in pf.args_calls] == ["TrainingArguments", "TrainingArguments", "SFTConfig",
                                                    "TrainingArguments", "Seq2SeqTrainingArguments"]
    assert pf.args_calls[4].args.values["output_dir"].value == "e"
    assert pf.trainer_calls[0].class_name == "SFTTrainer"
    assert pf.trainer_calls[0].args_call is pf.args_calls[2]


def test_not_the_library_class():
    pf = read("""
        from mypkg import TrainingArguments, Trainer
        TrainingArguments(x=1); Trainer(model=1)
    """)
    assert pf.args_calls == [] and pf.trainer_calls == []


def test_subclasses_in_the_file():
    pf = read("""
        from dataclasses import dataclass
        from transformers import Seq2SeqTrainingArguments, Trainer
        @dataclass
        class Base(Seq2SeqTrainingArguments):
            extra: int = 1
        class Mine(Base):
            pass
        class MyTrainer(Trainer):
            pass
        MyTrainer(model=m, args=Mine(output_dir="o", logging_steps=3))
    """)
    assert pf.args_calls[0].class_name == "Seq2SeqTrainingArguments"
    assert pf.trainer_calls[0].class_name == "Trainer"
    assert pf.trainer_calls[0].args_call is pf.args_calls[0]


def test_constants_dicts_and_unpacking():
    v = values("""
        from transformers import TrainingArguments
        LR = 2e-5
        BS = 4 * 2
        base = dict(output_dir="o", logging_steps=10)
        extra = {"fp16": True, **{"seed": 3}}
        args = TrainingArguments(**base, **extra, learning_rate=LR, per_device_train_batch_size=BS,
                                 weight_decay=-0.1, report_to=["wandb"], num_train_epochs=not False)
    """)
    assert v == {"output_dir": "o", "logging_steps": 10, "fp16": True, "seed": 3, "learning_rate": 2e-5,
                 "per_device_train_batch_size": 8, "weight_decay": -0.1, "report_to": ["wandb"],
                 "num_train_epochs": True}


def test_unknown_is_never_guessed():
    pf = read("""
        import os
        from transformers import TrainingArguments
        steps = 1
        if os.environ.get("X"):
            steps = 100
        cfg = {"fp16": True}
        cfg["fp16"] = False
        def f(bs):
            return TrainingArguments(output_dir="o", logging_steps=steps, per_device_train_batch_size=bs,
                                     learning_rate=float(os.environ["LR"]))
        b = TrainingArguments(output_dir="o", **cfg)
        c = TrainingArguments(output_dir="o", **load())
    """)
    a, b, c = pf.args_calls
    assert a.args.values["logging_steps"].value is UNKNOWN  # bound twice
    assert a.args.values["per_device_train_batch_size"].value is UNKNOWN  # a parameter
    assert a.args.values["learning_rate"].value is UNKNOWN
    assert "fp16" not in b.args.values and b.args.open_ended  # mutated dict
    assert c.args.open_ended


def test_function_scope_resolution_and_provenance():
    pf = read("""
        from transformers import TrainingArguments
        STEPS = 50
        def main():
            STEPS = 1
            return TrainingArguments(output_dir="o", logging_steps=STEPS)
    """)
    v = pf.args_calls[0].args.values["logging_steps"]
    assert v.value == 1
    assert (v.span.line, v.span.column) == (5, 13)  # the literal inside main()
    assert (v.key_span.line, v.key_span.column) == (6, 46)
    assert (v.use_span.line, v.use_span.column) == (6, 60)


def test_shared_constants_are_marked():
    pf = read("""
        from transformers import TrainingArguments
        N = 1
        a = TrainingArguments(output_dir="a", logging_steps=N, eval_steps=N)
    """)
    assert pf.args_calls[0].args.values["logging_steps"].shared


def test_columns_count_characters_not_bytes():
    pf = read("""
        from transformers import TrainingArguments
        a = TrainingArguments(output_dir="ünïcödé", logging_steps=1)
    """)
    v = pf.args_calls[0].args.values["logging_steps"]
    line = 'a = TrainingArguments(output_dir="ünïcödé", logging_steps=1)'
    assert v.span.column == line.index("1)") + 1


def test_unbound_canonical_names_still_count():
    pf = read("args = TrainingArguments(output_dir='o', logging_steps=1)\n")
    assert pf.args_calls[0].class_name == "TrainingArguments"


_INDEX_SNIPPET = '''
import transformers, torch.nn as nn
from transformers import Trainer as T

@torch.no_grad
@deco.make(a.b)
def f(x: transformers.PreTrainedModel = np.float32, *args: t.Any, y=lambda z=q.r: z.s, **kw: m.N) -> o.P:
    class Inner(transformers.Trainer, metaclass=abc.ABCMeta):
        v: int = self.w
    try:
        import a.b as c
    except (ImportError, mod.Error) as e:
        from .x import y
    else:
        u = [i.j for i in k.l if i.m]
    finally:
        pass
    match cmd.value:
        case Color.RED:
            return {a.b: f"{c.d!r:{e.f}}"}
        case [p.q, *rest] if rest.r:
            (w := x.y)
    async def g():
        async with h.i() as j, k.l:
            await m.n
    while o.p:
        break
    return T(args=transformers.TrainingArguments("o"), model=nn.Linear(1, 1))
'''


def test_file_indexes_answer_what_a_walk_of_every_node_answers():
    """The indexes the rules ask (statements by type, every attribute, calls by name) hold
    exactly what a walk of every node holds, in the order each documents."""
    import ast

    from trainlint.sources.python import PythonFile, statement_nodes, walk_nodes

    tree = ast.parse(_INDEX_SNIPPET)
    pf = PythonFile("x.py", _INDEX_SNIPPET, tree)
    every = walk_nodes(tree)
    structural = (ast.stmt, ast.excepthandler, ast.match_case)
    assert statement_nodes(tree) == [n for n in every if n is tree or isinstance(n, structural)]
    for kind in (ast.ImportFrom, ast.Import, ast.ClassDef, ast.FunctionDef, ast.Try, ast.Attribute, ast.Name):
        assert pf.of_type(kind) == [n for n in every if type(n) is kind]
    attrs = [n for n in every if type(n) is ast.Attribute]
    assert len(attrs) > 30 and sorted(map(id, pf.attribute_nodes())) == sorted(map(id, attrs))
    assert len(pf.attribute_nodes()) == len(attrs)  # each once
    assert [n.attr for n in pf.attributes("b")] == ["b"] * sum(1 for n in attrs if n.attr == "b")
    for name in ("T", "Linear", "i", "make", "TrainingArguments"):
        assert pf.calls_named(name) == [cs for cs in pf.calls if getattr(cs.node.func, "id", None) == name
                                        or getattr(cs.node.func, "attr", None) == name]
    assert pf.calls_named("T", "Linear") == [cs for cs in pf.calls
                                             if getattr(cs.node.func, "id", getattr(cs.node.func, "attr", None))
                                             in ("T", "Linear")]
    assert pf.imports["c"] == "a.b" and pf.imports["T"] == "transformers.Trainer"


def _index_facts(pf):
    """Everything the index walk gives, by node identity and in order."""
    def scope(s):
        return (s.kind, id(s.node), id(s.parent.node) if s.parent else None, sorted(s.globals_),
                {k: [(id(b.node), id(b.value), b.kind, b.name) for b in v] for k, v in s.bindings.items()})
    return {
        "calls": [(id(c.node), id(c.scope.node), id(c.stmt), c.in_lambda, id(c.in_def)) for c in pf.calls],
        "statements": [(id(s), id(sc.node)) for s, sc in pf.statements],
        "attributes": [id(n) for n in pf.attribute_nodes()],
        "scopes": [(id(k), scope(v)) for k, v in pf.scope_of_def.items()],
        "module": scope(pf.module_scope),
        "imports": pf.imports, "local_classes": pf.local_classes,
        "args_calls": [(id(a.site.node), a.class_name, a.bound_to) for a in pf.args_calls],
        "trainer_calls": [(id(t.site.node), t.class_name, id(t.args_call.site.node) if t.args_call else None)
                          for t in pf.trainer_calls],
    }


def test_the_index_walk_gives_what_the_recursive_visit_gave():
    """The single-pass index (an explicit stack) against the recursive visit it replaced
    (``tests/index_reference.py``): the same calls with their scope, statement, function and
    lambda, statements, scopes, bindings and attributes, in the same order, on the snippet,
    this project's own modules, tests and examples and the standard library's ``ast``-heavy
    modules."""
    import ast
    import inspect
    from pathlib import Path

    from index_reference import ReferencePythonFile
    from trainlint.sources.python import PythonFile, walk_nodes

    root = Path(__file__).resolve().parent.parent
    texts = [_INDEX_SNIPPET, "f = lambda a=g(b.c), *, k=lambda: h.i: (j := a.k)(l.m)\n"
             "class C(Base.x, make(y.z), metaclass=M.n):\n    @d.e(f.g)\n    def m(self, x=(w := v.u)): return x\n",
             # what follows a body and is no statement (a handler's ``except`` expression, a
             # ``case`` pattern and guard) sits in the ``try``/``match``, not in the body's last statement
             "try:\n    a(b.c)\n    if d():\n        e()\nexcept errors(f.g) as h:\n    i()\nexcept (j(), k):\n"
             "    def l(m=n()): o()\nelse:\n    p()\nfinally:\n    q()\n"
             "def r():\n    match s(t.u):\n        case V(w=x) if y(x):\n            z()\n"
             "        case [*_] if (aa := bb()):\n            try:\n                cc()\n            finally:\n"
             "                dd()\n        case ee.ff if gg(lambda: hh()):\n            pass\n    return ii()\n"]
    texts += [p.read_text(encoding="utf-8") for d in ("trainlint", "tests", "examples") for p in sorted((root / d).rglob("*.py"))]
    texts += [inspect.getsource(m) for m in (ast, inspect)]
    compared = 0
    for i, text in enumerate(texts):
        tree = ast.parse(text)
        new, old = PythonFile(f"{i}.py", text, tree), ReferencePythonFile(f"{i}.py", text, tree)
        assert _index_facts(new) == _index_facts(old), i
        # every name once, so that ``name_uses`` counts what a walk of every node counts
        assert sorted(map(id, new._name_nodes)) == sorted(id(n) for n in walk_nodes(tree) if type(n) is ast.Name), i
        # the calls of library classes, without asking every call
        assert new._library_calls() == [(cs, lib) for cs in new.calls if (lib := new.library_class(cs.node.func))]
        compared += 1
    assert compared > 300


def test_a_file_that_names_no_library_class_is_walked_on_first_question():
    """A module that names no TrainingArguments-like or Trainer-like class (a helper linking
    reads to follow an import) is parsed but not walked: no class of it derives from one and
    no call builds one; the first question that needs the walk gets what an eager walk gives."""
    import ast

    from index_reference import ReferencePythonFile
    from trainlint.sources.python import PythonFile

    text = "import torch\nfrom .base import Base\n\nclass Head(Base):\n    def f(self, x=g(h.i)):\n" \
           "        return (y := torch.zeros(x)).sum(lambda z: z.w)\n"
    tree = ast.parse(text)
    pf = PythonFile("helpers.py", text, tree)
    assert not pf._walked and pf.args_calls == [] and pf.trainer_calls == [] and pf.local_classes == {}
    assert [n.name for n in pf.of_type(ast.ClassDef)] == ["Head"] and not pf._walked  # statements only
    assert len(pf.calls) == 2 and pf._walked  # (a default's own call is not one of them, as before)
    assert _index_facts(pf) == _index_facts(ReferencePythonFile("helpers.py", text, tree))
    for named, walked in (("from transformers import Trainer\n", False), ("x = trl.SFTConfig()\n", True),
                          ("TrainingArguments\n", False), ("class A(Trainer):\n    pass\n", True)):
        # walked only when a call or a class base may build or derive from one
        assert PythonFile("x.py", named, ast.parse(named))._walked is walked, named


def test_a_library_name_after_a_comment_mark_is_no_call_and_the_file_is_not_walked_for_it():
    """A ``SFTTrainer(`` after a ``#`` with no quote before it on its line is in a comment (or
    in a string that runs on from the lines above): no call, and the file is not walked for
    one; a ``#`` after a quote (in a string) proves nothing, and the call counts. The calls
    found are those of an eager walk either way."""
    import ast

    from trainlint.sources.python import PythonFile

    q = "'" * 3
    cases = [("from trl import SFTTrainer\n# trainer = SFTTrainer(model)\n", False, 0),
             (f"from trl import SFTTrainer\nh = {q}\n  # run SFTTrainer(model)\n{q}\n", False, 0),
             ("from trl import SFTTrainer\nx = '#'; t = SFTTrainer(m)\n", True, 1),
             ("from trl import SFTTrainer\nx = 1  # see\nt = SFTTrainer(m)  # SFTTrainer(\n", True, 1),
             (f"from trl import SFTTrainer\ns = {q}\n# a\n{q}; t = SFTTrainer(m)\n", True, 1)]
    for text, walked, calls in cases:
        pf = PythonFile("x.py", text, ast.parse(text))
        assert pf._walked is walked and len(pf.trainer_calls) == calls, text
        eager = PythonFile("x.py", text, ast.parse(text))
        eager._walk()
        eager.trainer_calls, eager.args_calls = [], []
        eager._find_training_calls()
        assert len(eager.trainer_calls) == calls, text


def test_calls_by_name_of_a_file_not_yet_walked_agree_with_its_walk():
    """``calls_named`` on a file the index has not walked answers from the text when an ASCII
    text holds none of the names (no walk); a text that holds one, or any non-ASCII text (the
    parser NFKC-normalizes identifiers: ``ｆrom_pretrained`` is ``from_pretrained``), is walked,
    and every answer is the walked file's."""
    import ast

    from trainlint.analysis import model_flows
    from trainlint.sources.python import PythonFile

    texts = ["import torch\nm = torch.nn.Linear(2, 2)\nm.to('cuda')\n",
             "from transformers import AutoModel\nm = AutoModel.from_pretrained('x')\n",
             "from transformers import AutoModel\nm = AutoModel.\uff46rom_pretrained('x')  # é\n",
             "from transformers import AutoModel\nm = AutoModel.from_config(c)\nfrom_pretrained = 1\n",
             "def from_pretrained(): pass\nfrom_pretrained()\n"]
    asked = ("from_pretrained", "from_config")
    walked = []
    for text in texts:
        lazy, eager = PythonFile("x.py", text, ast.parse(text)), PythonFile("x.py", text, ast.parse(text))
        eager._walk()
        for names in (asked[:1], asked, ("Linear", "to")):  # the last walks every file
            assert [ast.dump(cs.node) for cs in lazy.calls_named(*names)] == \
                [ast.dump(cs.node) for cs in eager.calls_named(*names)]
            if names == asked:
                walked.append(lazy._walked)
    assert walked == [False, True, True, True, True]
    assert PythonFile("x.py", texts[2], ast.parse(texts[2])).calls_named("from_pretrained")  # found, normalized
    # a file without a Trainer call has no model flow, and is not walked for it
    pf = PythonFile("x.py", texts[0], ast.parse(texts[0]))
    assert model_flows(pf) == [] and not pf._walked


_SYNTAX_CASES = [
    "x = 1\n", "await x\n", "yield 1\n", "return 1\n", "nonlocal x\n", "def f(a, a): pass\n",
    "from __future__ import braces\n", "import os\nfrom __future__ import annotations\n", "def f(x):\n  global x\n",
    "[x for x in y for x in (yield)]\n", "class A:\n  x: (yield)\n", "*a = 1\n", "a\x00b\n", "def f(:\n", "x = (1,\n",
    "f'{a['b']}'\n", "x = '\ud800'\n", "x = " + "[" * 180 + "]" * 180 + "\n", "x = " + "-" * 5000 + "1\n",
    "a" + "+a" * 5000 + "\n", "f" + "(x)" * 3000 + "\n", "a" + ".b" * 8000 + "\n", "f = " + "lambda: " * 3000 + "1\n",
    "if 1:\n pass\n  x\n", "print 'x'\n", "del f()\n", "(a) = 1\n", "def f():\n    def g():\n        nonlocal y\n",
    "import transformers\n" + "x = 1\n" * 4000,
]


@pytest.mark.parametrize("deep", [False, True])
def test_the_syntax_check_of_a_walked_script_agrees_with_the_syntax_tree(tmp_path, deep: bool):
    """A walked script only the broad pre-filter lets through is checked to parse through its
    symbol table when the text is short enough (``parses_by_table``): the same TL001 (message,
    position) as building the tree, at the default recursion limit and at the run's deep one,
    on texts that fail in the parser, in the symbol table only, or by their depth; and the
    table never says a text parses that the tree refuses."""
    import ast

    from trainlint.config import load_settings
    from trainlint.sources.python import parses_by_table
    from trainlint.stack import with_deep_stack
    from trainlint.workspace import Workspace, _parse_python

    settings = load_settings(tmp_path, {})

    def problems(text: str, table: bool) -> list:
        ws = Workspace(settings=settings, overlay={})
        if table:
            _parse_python(ws, "t.py", text, syntax_only=True)
        else:  # the tree alone, as before
            try:
                ast.parse(text, filename="t.py")
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                _parse_python(ws, "t.py", text)
        return [(d.code, d.line, d.column, d.message) for d in ws.problems]

    def compare() -> list:
        out = []
        for text in _SYNTAX_CASES:
            try:
                ast.parse(text, filename="t.py")
                tree = True
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = False
            out.append((text[:30], tree, tree or not parses_by_table(text, "t.py"),
                        problems(text, True) == problems(text, False), len(text) < __import__("sys").getrecursionlimit()))
        return out

    got = with_deep_stack(compare) if deep else compare()
    assert [g for g in got if not (g[2] and g[3])] == []
    assert {g[1] for g in got} == {True, False}  # both answers occur
    assert {g[4] for g in got} == {True, False}  # texts under and over the limit


# -- the walk spared where no call or base can name a library class --------------------------

def _training_names(pf):
    return ([c.class_name for c in pf.args_calls], [c.class_name for c in pf.trainer_calls], dict(pf.local_classes))


@pytest.mark.parametrize("src, args, trainers, local", [
    # the name followed by ``(`` across what may stand between two tokens
    ("from trl import SFTTrainer\nt = (SFTTrainer)(model=m)\n", [], ["SFTTrainer"], {}),
    ("from trl import SFTTrainer\nt = SFTTrainer  (model=m)\n", [], ["SFTTrainer"], {}),
    ("from trl import SFTTrainer\nt = [SFTTrainer  # the trainer\n     (model=m)]\n", [], ["SFTTrainer"], {}),
    ("from trl import SFTTrainer\nt = SFTTrainer \\\n    (model=m)\n", [], ["SFTTrainer"], {}),
    # a local alias, a module attribute, a compatibility character
    ("from transformers import TrainingArguments as TA\nargs = TA(output_dir='o')\n", ["TrainingArguments"], [], {}),
    ("import transformers as tf\nargs = tf.TrainingArguments(output_dir='o')\n", ["TrainingArguments"], [], {}),
    ("from transformers import TrainingArguments\nargs = Ｔraining\u0041rguments(output_dir='o')\n", ["TrainingArguments"], [], {}),
    # a class chain through an alias: B(TA) defined after A(B)
    ("from transformers import Trainer as T\nclass A(B):\n    pass\nclass B(T):\n    pass\nt = A(model=m)\n",
     [], ["Trainer"], {"A": ("trainer", "Trainer"), "B": ("trainer", "Trainer")}),
    ("import trl\nclass C(trl.SFTConfig):\n    pass\nc = C(output_dir='o')\n",
     ["SFTConfig"], [], {"C": ("args", "SFTConfig")}),
])
def test_training_calls_found_through_every_spelling_the_text_gate_allows(src, args, trainers, local):
    pf = parse_python("t.py", src)
    assert _training_names(pf) == (args, trainers, local)


@pytest.mark.parametrize("src", [
    '"""Train with SFTTrainer or TrainingArguments."""\nimport torch.nn as nn\nclass M(nn.Module):\n    pass\n',
    "# the SFTTrainer is built elsewhere\nfrom trl import SFTTrainer\nx = SFTTrainerish(1)\ny = f(SFTTrainer)\n",
    "from trl import SFTConfig\nclass C(Generic[T]):\n    pass\nname = 'SFTConfig'\n",
])
def test_no_walk_for_a_file_whose_library_names_build_nothing(src):
    pf = parse_python("t.py", src)
    assert _training_names(pf) == ([], [], {})
    assert not pf._walked


@pytest.mark.parametrize("src", [
    # a docstring's example (TRL's modules), a class statement's own name, ``__all__``, an import
    '"""Use it like this:\n\n    trainer = SFTTrainer(model, args=SFTConfig("out"))\n"""\nfrom trl import SFTTrainer\n'
    '__all__ = ["SFTTrainer"]\n',
    'class SFTTrainer(Base):\n    """SFTTrainer(model) trains."""\n\n    def train(self):\n        pass\n',
    "class  SFTConfig (object):\n    pass\nclass\tDPOTrainer(object):\n    pass\n",
    '"""é: SFTTrainer(m)"""; x = 1\n',
])
def test_no_walk_for_a_library_name_that_is_no_call(src):
    """A ``Name(`` in a string statement (a docstring) or a class statement's name is no call:
    the file is not walked for the training calls, nor for ``calls_named`` of the name."""
    pf = parse_python("t.py", src)
    assert _training_names(pf) == ([], [], {})
    assert not pf._walked
    assert pf.calls_named("SFTTrainer", "SFTConfig", "DPOTrainer") == [] and not pf._walked
    assert not pf.may_call("SFTTrainer")


@pytest.mark.parametrize("src", [
    # a call on the line of a docstring, after it, in an f-string statement (no constant)
    '"""SFTTrainer(a)"""; t = SFTTrainer(b)\n',
    '"""é SFTTrainer(a)"""; t = SFTTrainer(b)\n',
    'x = "ü"; t = SFTTrainer(b)  # SFTTrainer(c)\n',
    'f"{SFTTrainer(b)}"\n',
    '"""doc"""\nclass SFTTrainer2(object):\n    pass\nt = SFTTrainer(b)\n',
    "class C(object):\n    t = SFTTrainer(b)\n",
    "class SFTTrainer(object): pass; t = SFTTrainer(b)\n",
    # a text whose positions are not the tree's: every occurrence counts
    '"""SFTTrainer(a)"""\r\nt = SFTTrainer(b)\r\n',
    '"""Ｓ"""\nt = SFTTrainer(b)\n',
])
def test_a_call_beside_a_docstring_or_class_name_is_found(src):
    """The call is found however close a docstring or a class statement stands: only what lies
    in the string statement's constant, or is the class statement's own name, is no call."""
    text = "from trl import SFTTrainer\n" + src
    pf = parse_python("t.py", text)
    assert pf.may_call("SFTTrainer")
    fresh = parse_python("u.py", text)
    got = [cs.node.lineno for cs in fresh.calls_named("SFTTrainer")]
    assert got and got == [cs.node.lineno for cs in fresh.calls if getattr(cs.node.func, "id", None) == "SFTTrainer"]
    if "class SFTTrainer(" not in src:
        assert len(pf.trainer_calls) == 1


def test_trl_config_names_found_in_one_pass_as_by_each_name():
    """``_holds_trl_config`` is ``any(name in text for name in TRL_CONFIG_CLASSES)``."""
    from trainlint.sources.python import TRL_CONFIG_CLASSES, _holds_trl_config

    texts = ["", "Config", "LoraConfig(r=8)", "SFTConfig", "x = DPOConfig", "MySFTConfigs", "SFT Config",
             "OnlineDPOConfig" * 3, "GRPOConfi", "Config" * 50 + "KTOConfig", "PPOconfig", "IterativeSFTConfig"]
    texts += sorted(TRL_CONFIG_CLASSES) + [n[1:] for n in sorted(TRL_CONFIG_CLASSES)]
    texts += [n[:-1] for n in sorted(TRL_CONFIG_CLASSES)]
    for text in texts:
        assert _holds_trl_config(text) == any(n in text for n in TRL_CONFIG_CLASSES), text


def test_every_library_class_name_holds_a_word_the_call_scan_looks_for():
    """``_may_call_library_class`` finds the libraries' names by the words they hold: a name
    without one (a new class in the generated data) would never be found as a call."""
    from trainlint.sources.python import _CANONICAL_UNBOUND, _CANONICAL_WORDS

    assert _CANONICAL_UNBOUND
    assert all(any(w in n for w in _CANONICAL_WORDS) for n in _CANONICAL_UNBOUND)


def test_statement_nodes_keep_only_statements_of_a_body_that_holds_something_else():
    """A body list of statements is taken whole; one that holds another node (a tree built by
    hand) gives only its statements, handlers and cases, in breadth-first order."""
    import ast

    from trainlint.sources.python import statement_nodes

    inner = ast.Pass()
    handler = ast.ExceptHandler(type=None, name=None, body=[ast.Pass()])
    tree = ast.Module(body=[ast.Expr(ast.Constant(1)), ast.Constant(2),
                            ast.If(test=ast.Constant(1), body=[inner, ast.Name("x")], orelse=[]),
                            ast.Try(body=[ast.Pass()], handlers=[handler], orelse=[], finalbody=[])], type_ignores=[])
    got = statement_nodes(tree)
    assert [type(n).__name__ for n in got] == ["Module", "Expr", "If", "Try", "Pass", "Pass", "ExceptHandler", "Pass"]
    assert got[4] is inner
    parsed = ast.parse("try:\n    x = 1\nexcept E:\n    for y in z:\n        pass\nelse:\n    w = 2\n")
    assert statement_nodes(parsed) == [n for n in ast.walk(parsed)
                                       if isinstance(n, (ast.Module, ast.stmt, ast.excepthandler, ast.match_case))]


def test_a_call_before_an_earlier_words_docstring_hit_is_found():
    """The words are looked for one after another (``Trainer``, then ``Config``): a call of the
    second word that stands above the first word's docstring hit is on its own line."""
    pf = parse_python("t.py", 'from trl import SFTConfig\n\nc = SFTConfig("o")\n\n\n"""SFTTrainer(x)"""\n')
    assert [c.class_name for c in pf.args_calls] == ["SFTConfig"]
    many = "from trl import SFTTrainer\n" + "".join(f'def f{i}():\n    """SFTTrainer({i})"""\n' for i in range(300))
    assert not parse_python("m.py", many)._walked
    assert len(parse_python("n.py", many + "t = SFTTrainer(m)\n").trainer_calls) == 1


@pytest.mark.parametrize("src, local, walked", [
    # a base a top-level import, def or class binds: no library class, known without the walk
    ("from ..trainer import SFTTrainer\nclass Mine(SFTTrainer):\n    pass\n", {}, False),
    ("from . import DPOTrainer\nclass Mine(DPOTrainer):\n    pass\n", {}, False),
    ("class Trainer:\n    pass\nclass Mine(Trainer):\n    pass\n", {}, False),
    # (walked, but by the training-call scan: ``def SFTConfig(`` reads as a call)
    ("def SFTConfig():\n    pass\nclass C(SFTConfig):\n    pass\n", {}, True),
    ("import Trainer\nclass Mine(Trainer):\n    pass\n", {}, False),
    # an imported library class, a local chain: no question of the module's scope
    ("from transformers import Trainer\nclass A(Trainer):\n    pass\nclass B(A):\n    pass\n",
     {"A": ("trainer", "Trainer"), "B": ("trainer", "Trainer")}, False),
    # bound (or not) otherwise: the walk's scopes say
    ("class Mine(Trainer):\n    pass\n", {"Mine": ("trainer", "Trainer")}, True),
    ("Trainer = make()\nclass Mine(Trainer):\n    pass\n", {}, True),
    ("def f():\n    global SFTConfig\n    SFTConfig = 1\nclass C(SFTConfig):\n    pass\n", {}, True),
    ("try:\n    from .t import SFTTrainer\nexcept ImportError:\n    pass\nclass M(SFTTrainer):\n    pass\n", {}, True),
    ("from .x import *\nclass M(SFTTrainer):\n    pass\n", {"M": ("trainer", "SFTTrainer")}, True),
    ("if x:\n    class Trainer:\n        pass\nclass M(Trainer):\n    pass\n", {}, True),
])
def test_a_class_base_bound_at_the_top_is_derived_without_the_walk(src, local, walked, monkeypatch):
    """A class's library base is derived without walking the file when a top-level import,
    ``def`` or ``class`` binds the base's name; the library class is the one the walk's
    module scope gives (``library_class`` asked of the walked file)."""
    pf = parse_python("t.py", src)
    assert dict(pf.local_classes) == local
    assert pf._walked is walked
    from trainlint.sources.python import PythonFile

    def from_the_walk(self, name):
        self._walk()
        return name in self.module_scope.bindings

    monkeypatch.setattr(PythonFile, "_bound_in_module", from_the_walk)
    walked_pf = parse_python("t.py", src)  # every question of the module's scope from the walk
    assert dict(walked_pf.local_classes) == local
