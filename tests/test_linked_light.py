"""Issue 18: a repository module that linking only follows names through (a package's
``__init__.py`` re-exporting ``LoraConfig``, a module of dataclasses) and that no selected rule
can report on is read and parsed, and nothing more (``workspace.read_linked_module``,
``modules._Light``): no ``PythonFile``, no setup of its own, no rules. It becomes a file of the
workspace only when a script uses one of its definitions (``Modules.full``). The findings are
those of the full read (each layout below is checked both ways), and a result still depends on
the module's text (the cache)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import lint_folder, write_files

from trainlint import reads, workspace
from trainlint.config import load_settings
from trainlint.modules import _Light, link_modules
from trainlint.resolve import read_workspace
from trainlint.sources.python import PythonFile

EXTRA = ("from dataclasses import dataclass, field\n\n\n@dataclass\nclass Extra:\n"
         "    lora_r: int = 8\n    log_every: int = field(default=1)\n")
TRAIN = ("from transformers import HfArgumentParser, TrainingArguments, Trainer\n"
         "from pkg import Extra\n"
         "parser = HfArgumentParser((Extra, TrainingArguments))\n"
         "extra, _ = parser.parse_args_into_dataclasses()\n"
         "args = TrainingArguments(output_dir='o', logging_steps=extra.log_every)\n"
         "Trainer(model=m, args=args).train()\n")

LAYOUTS = {
    # a re-export through a package, the dataclass used: TL201 crosses two modules
    "reexport": {".git/HEAD": "x\n", "pkg/__init__.py": "from .args import Extra\n", "pkg/args.py": EXTRA,
                 "train.py": TRAIN},
    # a chain of re-exports, one of them a relative import from the package's own folder
    "chain": {".git/HEAD": "x\n", "pkg/__init__.py": "from .inner import Extra\n",
              "pkg/inner/__init__.py": "from .deep import Extra  # re-exported\n",
              "pkg/inner/deep.py": EXTRA, "train.py": TRAIN},
    # a Trainer subclass whose module names no library class: its base is in another module
    "subclass": {".git/HEAD": "x\n",
                 "pkg/__init__.py": "",
                 "pkg/base.py": "from transformers import Trainer\n\n\nclass Base(Trainer):\n    pass\n",
                 "pkg/custom.py": "from .base import Base\n\n\nclass Custom(Base):\n    pass\n",
                 "train.py": "from transformers import TrainingArguments\nfrom pkg.custom import Custom\n"
                             "args = TrainingArguments(output_dir='o', learning_rate=1e-4, warmup_ratio=2.0)\n"
                             "Custom(model=m, args=args).train()\n"},
    # ``import pkg.helpers``: the module's classes by qualified name
    "qualified": {".git/HEAD": "x\n", "pkg/__init__.py": "",
                  "pkg/base.py": "from transformers import Trainer\n\n\nclass Base(Trainer):\n    pass\n",
                  "pkg/helpers.py": "from .base import Base\n\n\nclass Custom(Base):\n    pass\n\n\n"
                                    "class Plain:\n    pass\n",
                  "train.py": "from transformers import TrainingArguments\nfrom pkg import helpers\n"
                              "args = TrainingArguments(output_dir='o', warmup_ratio=2.0)\n"
                              "helpers.Custom(model=m, args=args).train()\n"},
    # an imported module that does not parse: TL001 as before
    "broken": {".git/HEAD": "x\n", "pkg/__init__.py": "from .args import Extra\n",
               "pkg/args.py": "def broken(:\n    pass\n", "train.py": TRAIN},
    # a module that is a file and a package's __init__ at once, the file broken: Python's
    # lookup order (``a/b.py``, then ``a/b/__init__.py``) as before
    "shadowed": {".git/HEAD": "x\n", "pkg/__init__.py": "from .args import Extra\n",
                 "pkg/args.py": "def broken(:\n", "pkg/args/__init__.py": EXTRA, "train.py": TRAIN},
    # strings and comments that hold what a lookup asks: only the tree answers
    "strings": {".git/HEAD": "x\n",
                "pkg/__init__.py": "'''from .args import Extra\nclass Extra: pass'''\n# from .args import Extra\n"
                                   "from .args import Extra\n",
                "pkg/args.py": "\ufeff" + EXTRA.replace("    ", "\t"), "train.py": TRAIN},
    # imports under ``if TYPE_CHECKING:`` / ``try:`` are no top-level imports (not followed)
    "guarded": {".git/HEAD": "x\n",
                "pkg/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .args import Extra\n"
                                   "try:\n    from .args import Extra as E2\nexcept ImportError:\n    E2 = None\n",
                "pkg/args.py": EXTRA, "train.py": TRAIN},
}


def _json(result):
    return [d.to_json() for d in result.diagnostics]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_findings_are_those_of_a_full_read(tmp_path, monkeypatch, layout):
    write_files(tmp_path, LAYOUTS[layout])
    light = lint_folder(tmp_path)
    monkeypatch.setattr(workspace, "read_linked_module", lambda ws, path: None)  # every module read in full
    full = lint_folder(tmp_path)
    assert _json(light) == _json(full)
    if layout in ("reexport", "chain", "strings"):
        assert any(d.code == "TL201" and d.path.endswith("train.py") for d in light.diagnostics)
    if layout in ("broken", "shadowed"):
        assert any(d.code == "TL001" and d.path.endswith("args.py") for d in light.diagnostics)


def _linked(root: Path):
    ws = read_workspace([root], load_settings(root), {})
    uses = link_modules(ws)
    return ws, uses


def test_a_module_only_followed_is_no_file_of_the_workspace(tmp_path):
    write_files(tmp_path, LAYOUTS["chain"])
    ws, uses = _linked(tmp_path)
    files = {Path(p).relative_to(tmp_path).as_posix() for p in ws.files}
    # the two ``__init__.py`` only re-export; the dataclass's module is used, so it is a file
    assert files == {"train.py", "pkg/inner/deep.py"}
    train = ws.files[str(tmp_path / "train.py")].doc
    owner, cd = train.external_defs["Extra"]
    deep = ws.files[str(tmp_path / "pkg/inner/deep.py")].doc
    assert owner is deep and isinstance(deep, PythonFile) and cd in deep.tree.body  # the same tree
    assert uses[str(tmp_path / "train.py")] == [str(tmp_path / "pkg/inner/deep.py")]


def test_a_module_whose_class_derives_from_a_library_class_elsewhere_becomes_a_file(tmp_path):
    write_files(tmp_path, LAYOUTS["subclass"])
    ws, uses = _linked(tmp_path)
    custom = str(tmp_path / "pkg/custom.py")
    assert isinstance(ws.files[custom].doc, PythonFile) and custom in uses[str(tmp_path / "train.py")]
    train = ws.files[str(tmp_path / "train.py")].doc
    assert train.local_classes["Custom"] == ("trainer", "Trainer") and len(train.trainer_calls) == 1
    assert train.trainer_calls[0].args_call is not None
    assert str(tmp_path / "pkg/__init__.py") not in ws.files


@pytest.mark.parametrize("text", [
    "from .lora import LoraConfig\n",
    "class Foo:\n    '''class Extra: pass'''\n",
    "import os\nx = 1\n",
    "\ufeffimport os\r\nif True:\r\n\tx = (1 +\r\n\t     2)\r\n",
    "from .a import (b,\n    c as d)\nclass E(b, d.F, metaclass=G):\n    pass\n",
])
def test_a_light_module_answers_as_its_python_file(tmp_path, text):
    # what ``_Light`` answers without a PythonFile is what one of the same text answers
    path = str(tmp_path / "m.py")
    Path(path).write_text(text, encoding="utf-8")
    ws = workspace.Workspace(settings=load_settings(tmp_path), overlay={})
    read = workspace.read_linked_module(ws, path)
    assert read is not None
    tf, tree = read
    light, pf = _Light(path, tf, tree), PythonFile(path, tf.text, ast.parse(tf.text))
    assert light.text == pf.text and pf.args_calls == [] and pf.trainer_calls == [] and not pf.local_classes
    for node in ast.walk(pf.tree):
        if isinstance(node, (ast.Name, ast.Attribute)):
            assert pf.library_class(node) is None and light.library_class(node) is None
            assert (pf.qualname(node) or "").rpartition(".")[2] not in ("HfArgumentParser", "TrlParser")


@pytest.mark.parametrize("text", [
    "from transformers import Trainer\n",  # a library class's name (and a rule's trigger)
    "x = 'TrainingArguments'\n",
    "from trl import DPOConfig as C\n",
    "from .parsing import TrlParser\n",
    "class A(HfArgumentParser):\n    pass\n",
    "def broken(:\n",  # read in full: TL001 as before
    "model.gradient_checkpointing_enable()\n",  # a trigger: a rule may report on it
])
def test_what_is_read_in_full(tmp_path, text):
    path = str(tmp_path / "m.py")
    Path(path).write_text(text, encoding="utf-8")
    ws = workspace.Workspace(settings=load_settings(tmp_path), overlay={})
    assert workspace.read_linked_module(ws, path) is None


def test_a_light_read_is_a_dependency_and_ends_its_wait_for_a_syntax_check(tmp_path):
    # a walked module that only the broad pre-filter lets through: its syntax check waits
    path = str(tmp_path / "m.py")
    Path(path).write_text("from .a import b  # for transformers\n", encoding="utf-8")
    ws = workspace.Workspace(settings=load_settings(tmp_path), overlay={})
    workspace.defer_syntax_checks(ws)
    workspace.read_entry(ws, path, False)
    assert path in ws.pending_syntax and path not in ws.files
    with reads.recording() as seen:
        assert workspace.read_linked_module(ws, path) is not None
    assert path in seen and path not in ws.pending_syntax and path not in ws.files


def test_a_cached_result_follows_a_change_of_a_module_only_followed(tmp_path, monkeypatch):
    # first the package re-exports a plain class; then the class derives from a Trainer
    # subclass, and the script's Trainer call is seen: the cached result is not reused
    files = dict(LAYOUTS["subclass"])
    files["pkg/custom.py"] = "class Custom:\n    pass\n"
    write_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache"))
    from trainlint.engine import lint
    from helpers import settings_for

    settings = settings_for(tmp_path)
    first = lint([Path(".")], settings, cache=True)
    write_files(tmp_path, {"pkg/custom.py": LAYOUTS["subclass"]["pkg/custom.py"]})
    second = lint([Path(".")], settings, cache=True)
    fresh = lint([Path(".")], settings)
    assert _json(second) == _json(fresh) and _json(first) != _json(fresh)


def test_an_imported_module_that_does_not_parse_is_parsed_once(tmp_path, monkeypatch):
    # its TL001 comes from the one parse linking made (no second one by a full read)
    write_files(tmp_path, LAYOUTS["broken"])
    counted: list[str] = []
    real = ast.parse

    def parse(source, filename="<unknown>", *a, **k):
        counted.append(str(filename).replace("\\", "/"))
        return real(source, filename, *a, **k)

    monkeypatch.setattr(ast, "parse", parse)
    result = lint_folder(tmp_path)
    (d,) = [d for d in result.diagnostics if d.code == "TL001"]
    assert d.path.endswith("args.py") and "cannot parse Python" in d.message
    assert [p for p in counted if p.endswith("pkg/args.py")] == [str(tmp_path / "pkg/args.py")]
