"""Issue 18: module lookups kept per folder give each importing folder its own module; a dataclass imported from another repository module is linked (its definition
kept, its module joined to the script's setups) only where the script can read it: a parser
of the script (``HfArgumentParser``/``TrlParser`` in its text, or an imported repository
subclass of one) or a module-level class of the script that derives from it. Each test below
is a case where the link matters, and must still give the finding; the last checks that a
script that cannot read it no longer carries its module."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import lint_folder, write_files

from trainlint.config import load_settings
from trainlint.modules import link_modules
from trainlint.resolve import build_setups, read_workspace

EXTRA = ("from dataclasses import dataclass, field\n\n\n@dataclass\nclass Extra:\n"
         "    lora_r: int = 8\n    log_every: int = field(default=1)\n")


def _found(result, code: str):
    return [d for d in result.diagnostics if d.code == code]


def test_a_parser_reads_the_imported_dataclass(tmp_path):
    # "Parser" in the script's text: the field default crosses the module (TL201 at the use)
    write_files(tmp_path, {
        ".git/HEAD": "x\n", "arguments.py": EXTRA,
        "train.py": "from transformers import HfArgumentParser, TrainingArguments, Trainer\n"
                    "from arguments import Extra\n"
                    "parser = HfArgumentParser((Extra, TrainingArguments))\n"
                    "extra, _ = parser.parse_args_into_dataclasses()\n"
                    "args = TrainingArguments(output_dir='o', logging_steps=extra.log_every)\n"
                    "Trainer(model=m, args=args).train()\n"})
    (d,) = _found(lint_folder(tmp_path), "TL201")
    assert d.path.endswith("train.py") and d.line == 5


def test_a_repository_parser_whose_name_has_no_parser_in_it(tmp_path):
    # the script's text never says "Parser": the imported parser subclass reads the dataclass,
    # whose fields make the args file's keys known, so its typo is an unknown argument
    write_files(tmp_path, {
        ".git/HEAD": "x\n", "arguments.py": EXTRA,
        "reading.py": "from transformers import HfArgumentParser\n\n\nclass ArgReader(HfArgumentParser):\n    pass\n",
        "train.py": "import sys\nfrom transformers import TrainingArguments, Trainer\n"
                    "from reading import ArgReader\nfrom arguments import Extra\n"
                    "reader = ArgReader((Extra, TrainingArguments))\n"
                    "extra, args = reader.parse_yaml_file(sys.argv[1])\n"
                    "Trainer(model=m, args=args).train()\n",
        "run.sh": "python train.py config.yaml\n",
        "config.yaml": "output_dir: o\nlora_r: 4\nlearning_rat: 0.0001\n"})
    r = lint_folder(tmp_path, options={"transformers_version": "4.57.1"})
    found = _found(r, "TL602")
    assert [d.path.endswith("config.yaml") and "learning_rat" in d.message for d in found] == [True]
    settings = load_settings(tmp_path)
    ws = read_workspace([tmp_path], settings, {})
    uses = link_modules(ws)
    assert any(p.endswith("arguments.py") for p in uses[str(tmp_path / "train.py")])


def test_a_local_subclass_of_the_imported_dataclass(tmp_path):
    # no parser: ``class MyArgs(TrainingArguments, Extra)`` takes Extra's fields, so
    # ``lora_r`` is accepted and ``lora_rr`` is not (without Extra's fields nothing is judged)
    write_files(tmp_path, {
        ".git/HEAD": "x\n", "arguments.py": EXTRA,
        "train.py": "from dataclasses import dataclass\nfrom transformers import TrainingArguments, Trainer\n"
                    "from arguments import Extra\n\n\n@dataclass\nclass MyArgs(TrainingArguments, Extra):\n"
                    "    pass\n\n\nargs = MyArgs(output_dir='o', lora_r=4, lora_rr=2)\n"
                    "Trainer(model=m, args=args).train()\n"})
    r = lint_folder(tmp_path, options={"transformers_version": "4.57.1"})
    (d,) = _found(r, "TL602")
    assert d.path.endswith("train.py") and "lora_rr" in d.message


def test_a_script_that_cannot_read_it_does_not_carry_its_module(tmp_path):
    # peft's tests build ``LoraConfig(...)`` (a dataclass of the package) beside a Trainer: no
    # parser reads it, so its module is not one of the test's setup files; with a parser it is
    write_files(tmp_path, {
        ".git/HEAD": "x\n", "arguments.py": EXTRA,
        "build.py": "from transformers import TrainingArguments, Trainer\nfrom arguments import Extra\n"
                         "cfg = Extra(lora_r=4)\n"
                         "Trainer(model=m, args=TrainingArguments(output_dir='o', logging_steps=1)).train()\n",
        "train.py": "from transformers import HfArgumentParser, TrainingArguments, Trainer\n"
                    "from arguments import Extra\n"
                    "extra, args = HfArgumentParser((Extra, TrainingArguments)).parse_args_into_dataclasses()\n"
                    "Trainer(model=m, args=args).train()\n"})
    settings = load_settings(tmp_path)
    ws = read_workspace([tmp_path], settings, {})
    setups = build_setups(ws, settings)
    by_script = {Path(s.scripts[0].path).name: s for s in setups if s.scripts}
    assert not any(p.endswith("arguments.py") for p in by_script["build.py"].files)
    assert any(p.endswith("arguments.py") for p in by_script["train.py"].files)
    r = lint_folder(tmp_path)
    assert [d.line for d in _found(r, "TL201") if d.path.endswith("build.py")] == [4]


def test_the_same_import_from_two_folders_finds_each_folders_module(tmp_path):
    # ``from config import ta`` in a/ finds a/config.py, in b/ the root's config.py: the lookup
    # of the root's folder is kept and shared, the folder's own is not
    ta = "from transformers import TrainingArguments\nta = TrainingArguments(output_dir='o', logging_steps={})\n"
    main = "from transformers import Trainer\nfrom config import ta\nTrainer(model=m, args=ta).train()\n"
    write_files(tmp_path, {".git/HEAD": "x\n", "config.py": ta.format(1), "a/config.py": ta.format(500),
                           "a/main.py": main, "b/main.py": main, "c/main.py": main})
    settings = load_settings(tmp_path)
    ws = read_workspace([tmp_path], settings, {})
    setups = build_setups(ws, settings)
    got = {}
    for s in setups:
        if s.scripts and s.scripts[0].path.endswith("main.py"):
            (site,) = [x for x in s.sites if x.path.endswith("config.py")]
            got[Path(s.scripts[0].path).parent.name] = (Path(site.path).parent.name, site.values["logging_steps"].value)
    assert got == {"a": ("a", 500), "b": (tmp_path.name, 1), "c": (tmp_path.name, 1)}


def test_a_module_found_beside_folders_listed_once(tmp_path):
    # the folder's listing rules out ``torch``/``config``-named modules that are not there, and
    # finds the one that is, whatever its case on disk is for a case-insensitive system; a
    # module that is a file of the workspace without one on disk (given as such) is found too
    from trainlint.modules import Modules
    from trainlint.sources.files import ParsedFile, TextFile
    from trainlint.sources.python import PythonFile

    write_files(tmp_path, {".git/HEAD": "x\n", "helpers.py": "X = 1\n", "pkg/__init__.py": "",
                           "pkg/sub.py": "Y = 2\n", "main.py": "import helpers\n"})
    settings = load_settings(tmp_path)
    ws = read_workspace([tmp_path], settings, {})
    main = str(tmp_path / "main.py")
    mods = Modules(ws)
    assert mods.module(main, "helpers", 0).path.endswith("helpers.py")
    assert mods.module(main, "pkg.sub", 0).path.endswith("sub.py")
    assert mods.module(main, "pkg", 0).path.endswith("__init__.py")
    assert mods.module(main, "torch", 0) is None and mods.module(main, "pkg.missing", 0) is None
    assert mods.module(main, "helpers", 0) is mods.module(main, "helpers", 0)
    # a file of the workspace that is not on disk
    ghost = str(tmp_path / "ghost" / "mod.py")
    text = "Z = 3\n"
    ws.files[ghost] = ParsedFile(path=ghost, kind="python", text=TextFile(ghost, text), explicit=True,
                                 doc=PythonFile(ghost, text, ast.parse(text)))
    assert Modules(ws).module(main, "ghost.mod", 0).path == ghost


def test_the_start_folders_are_kept_per_folder_while_setups_are_built(tmp_path, monkeypatch):
    # ``trainlint.folders``: within ``kept()`` the answer of a folder is looked up once and each
    # caller gets its own list; outside it, each ask looks again
    from trainlint import folders, workspace

    write_files(tmp_path, {".git/HEAD": "x\n", "a/b/x.sh": "", "a/b/y.sh": ""})
    x, y = str(tmp_path / "a/b/x.sh"), str(tmp_path / "a/b/y.sh")
    asked = []
    look = workspace.reference_folders
    monkeypatch.setattr(workspace, "reference_folders", lambda p: asked.append(p) or look(p))
    with folders.kept():
        first = folders.reference_folders(x)
        first.append("changed")
        second = folders.reference_folders(y)
        assert folders.repository_root(x) == folders.repository_root(y) == str(tmp_path)
    assert second == look(x) and "changed" not in second and asked == [x]
    folders.reference_folders(x)
    assert asked == [x, x]


def _linked_workspace(tmp_path, files: dict[str, str]):
    write_files(tmp_path, {".git/HEAD": "x\n", **files})
    settings = load_settings(tmp_path)
    return read_workspace([tmp_path], settings, {}), settings


def test_an_answer_that_read_a_module_is_asked_again_once_that_module_is_linked(tmp_path):
    # ``from cfg import training_args``: before cfg.py is linked its ``MyArgs(...)`` builds no
    # TrainingArguments-like object (MyArgs is a subclass in another module); once it is, it
    # does, and a script that imports the name after that gets the object
    ws, settings = _linked_workspace(tmp_path, {
        "myargs.py": "from transformers import TrainingArguments\n\n\nclass MyArgs(TrainingArguments):\n    pass\n",
        "cfg.py": "from myargs import MyArgs  # a TrainingArguments subclass\n"
                  "training_args = MyArgs(output_dir='o', logging_steps=7)\n",
        "a_first.py": "from transformers import Trainer\nfrom cfg import training_args\n"
                      "Trainer(model=m, args=training_args).train()\n",
        "z_last.py": "from transformers import Trainer\nfrom cfg import training_args\n"
                     "Trainer(model=m, args=training_args).train()\n"})
    order = [Path(p).name for p in ws.files if p.endswith(".py")]
    assert order.index("a_first.py") < order.index("cfg.py") < order.index("z_last.py")
    uses = link_modules(ws)
    last = ws.files[str(tmp_path / "z_last.py")].doc
    (tc,) = last.trainer_calls
    assert tc.args_call is not None and tc.args_call.args.path.endswith("cfg.py")
    assert tc.args_call.args.values["logging_steps"].value == 7
    assert str(tmp_path / "cfg.py") in uses[str(tmp_path / "z_last.py")]


def test_an_answer_is_kept_across_links_of_modules_it_did_not_read(tmp_path, monkeypatch):
    # three scripts import ``make`` from helpers.py; the second is linked (it imports a Trainer
    # subclass): the answer about ``make`` read nothing that linking changes, it is asked once
    from trainlint import modules

    ws, settings = _linked_workspace(tmp_path, {
        "helpers.py": "def make(x):\n    return x\n",
        "mytrainer.py": "from transformers import Trainer\n\n\nclass MyTrainer(Trainer):\n    pass\n",
        "s1.py": "from transformers import Trainer\nfrom helpers import make\nTrainer(model=make(1)).train()\n",
        "s2.py": "from helpers import make\nfrom mytrainer import MyTrainer\nMyTrainer(model=make(1)).train()\n",
        "s3.py": "from transformers import Trainer\nfrom helpers import make\nTrainer(model=make(1)).train()\n"})
    asked = []
    real = modules._what_is_named
    monkeypatch.setattr(modules, "_what_is_named", lambda mods, other, name: asked.append(name) or real(mods, other, name))
    uses = link_modules(ws)
    assert str(tmp_path / "mytrainer.py") in uses[str(tmp_path / "s2.py")]
    assert ws.files[str(tmp_path / "s2.py")].doc.trainer_calls[0].class_name == "Trainer"
    assert asked.count("make") == 1 and asked.count("MyTrainer") == 1
