"""Jupyter notebooks: read like scripts (IPython syntax included), located by cell, fixed in
the cell sources only."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import fix_folder, lint_folder, trainlint_cmd
from trainlint.config import load_settings
from trainlint.engine import fix_outcome, lint
from trainlint.sources.notebook import read_notebook


def notebook(cells: list[tuple[str, str]], *, as_string: bool = False, language: str = "python") -> str:
    """A notebook as Jupyter saves it: indent 1, sorted keys, ids, outputs, execution counts."""
    out = []
    for i, (kind, src) in enumerate(cells):
        lines = src.splitlines(keepends=True)
        cell: dict = {"cell_type": kind, "id": f"c{i:02d}", "metadata": {"tags": []},
                      "source": src if as_string else lines}
        if kind == "code":
            cell["execution_count"] = i + 1
            cell["outputs"] = [{"name": "stdout", "output_type": "stream", "text": [f"out {i} é\n"]},
                               {"data": {"image/png": "iVBORw0KGgo=\n", "text/plain": ["<Figure>"]},
                                "metadata": {}, "output_type": "display_data"}]
        out.append(cell)
    doc = {"cells": out,
           "metadata": {"accelerator": "GPU", "colab": {"provenance": []},
                        "kernelspec": {"display_name": "Python 3", "language": language, "name": "python3"},
                        "language_info": {"name": language}},
           "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


COLAB = [
    ("markdown", "# Fine-tune BERT on IMDb\nRun on a Colab A100. Uses `Trainer`."),
    ("code", "!pip install -q transformers datasets evaluate\n%matplotlib inline\n%load_ext autoreload"),
    ("code", "import torch\nfrom datasets import load_dataset\n"
             "from transformers import AutoTokenizer, AutoModelForSequenceClassification, TrainingArguments, Trainer\n"
             "device = torch.device('cuda')\n"
             "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')\n"
             "model = AutoModelForSequenceClassification.from_pretrained('bert-base-uncased', num_labels=2)\n"
             "model.to(device)"),
    ("code", "ds = load_dataset('imdb')\n"
             "def tokenize(batch):\n"
             "    return tokenizer(batch['text'], padding='max_length', truncation=True)\n"
             "ds = ds.map(tokenize, batched=True)\n"
             "TrainingArguments?"),
    ("markdown", "## Training"),
    ("code", "EPOCHS = 3\nargs = TrainingArguments(\n    output_dir='out',\n    evaluation_strategy='epoch',\n"
             "    save_total_limit=2,\n    num_train_epochs=EPOCHS,\n    logging_steps=1,\n    fp16=True,\n)"),
    ("code", "%%time\ntrainer = Trainer(model=model, args=args, train_dataset=ds['train'],\n"
             "                  eval_dataset=ds['test'], tokenizer=tokenizer)\ntrainer.train()"),
]

# (code, cell, line, column) of what the Colab notebook must give on an A100
COLAB_EXPECTED = {
    ("TL101", 3, 7, 1),   # script code: model.to(device) (cell 3, line 7)
    ("TL102", 4, 3, 45),  # tokenizer padding in a function defined in cell 4
    ("TL601", 6, 4, 5),   # migration: evaluation_strategy
    ("TL201", 6, 7, 19),  # TrainingArguments value: logging_steps=1
    ("TL501", 6, 8, 5),   # hardware: fp16 on an A100
    ("TL605", 7, 3, 44),  # migration: Trainer(tokenizer=), the Trainer built across cells
}


def _found(result) -> set[tuple]:
    return {(d.code, d.cell, d.line, d.column) for d in result.diagnostics}


def _codes(result, path: str | None = None) -> set[str]:
    return {d.code for d in result.diagnostics if path is None or d.path == path}


@pytest.mark.parametrize("as_string", [False, True], ids=["list-of-lines", "one-string"])
def test_colab_notebook_each_family_at_its_cell_and_line(tmp_path: Path, as_string: bool):
    (tmp_path / "nb.ipynb").write_text(notebook(COLAB, as_string=as_string), encoding="utf-8")
    result = lint_folder(tmp_path, options={"gpu": "A100"})
    found = _found(result)
    assert COLAB_EXPECTED <= found, found
    assert not {d for d in result.diagnostics if d.code in ("TL000", "TL001", "TL003")}
    assert all(d.cell is not None and d.path.endswith("nb.ipynb") for d in result.diagnostics)
    # the related place (where the model reaches the Trainer) is located by cell too
    tl101 = next(d for d in result.diagnostics if d.code == "TL101")
    assert [(r.cell, r.line) for r in tl101.related] == [(7, 2)]  # after the %%time line


def test_ipython_syntax_is_not_a_syntax_error():
    src = ("files = !ls -la\n%time x = 1\nTrainer?\n??Trainer\n!!ls\nfor i in range(3):\n    !echo {i}\n"
           "s = '''\n!not a command\n'''\nawait asyncio.sleep(0)\n%timeit -n 10 f(1)\n%env WANDB_MODE=offline\n"
           "%pip install -q x\nout = %sx ls\n/print 1\n")
    cells = [("code", src), ("code", "%%capture log\nimport os\n!pip install x"),
             ("code", "%%bash\nexport A=1\necho $A"), ("code", "%%html\n<b>not python</b>"),
             ("raw", "def broken(:"), ("markdown", "```python\ndef broken(:\n```")]
    nb = read_notebook("x.ipynb", notebook(cells))
    assert nb.findings == [] and not nb.broken
    assert nb.python is not None
    lines = nb.python_text.splitlines()
    assert lines[1] == "if 1: x = 1"  # %time's statement stays Python, in its place
    assert lines[8] == "!not a command"  # inside a string: not a shell line
    assert "import os" in lines
    assert "<b>" not in nb.python_text
    shell = nb.shell_text.splitlines()
    assert shell[0] == "         ls -la" and shell[6] == "     echo $__"
    assert "WANDB_MODE=offline;export WANDB_MODE" in nb.shell_text


def test_writefile_script_launched_by_later_cells(tmp_path: Path):
    cells = [
        ("code", "!pip install transformers accelerate deepspeed"),
        ("code", "%%writefile train.py\n"
                 "from transformers import AutoModelForCausalLM, TrainingArguments, Trainer, HfArgumentParser\n"
                 "parser = HfArgumentParser((TrainingArguments,))\n"
                 "(args,) = parser.parse_args_into_dataclasses()\n"
                 "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
                 "model.cuda()\n"
                 "Trainer(model=model, args=args).train()\n"),
        ("code", '%%writefile ds_config.json\n{\n  "train_micro_batch_size_per_gpu": 16,\n'
                 '  "zero_optimization": {"stage": 2}\n}\n'),
        ("code", "%env CUDA_VISIBLE_DEVICES=0,1\nlr = 3e-5\n"
                 "!torchrun --nproc_per_node 2 train.py --output_dir out --save_total_limit 2 \\\n"
                 "    --per_device_train_batch_size 8 --logging_steps 1 --fp16 \\\n"
                 "    --deepspeed ds_config.json --learning_rate {lr}"),
        ("code", "%run train.py --output_dir o3 --save_total_limit 1"),
    ]
    (tmp_path / "nb.ipynb").write_text(notebook(cells), encoding="utf-8")
    result = lint_folder(tmp_path, options={"gpu": "A100"})
    found = _found(result)
    assert ("TL301", 3, 3, 37) in found  # DeepSpeed JSON written by cell 3 vs the launch flag
    tl301 = next(d for d in result.diagnostics if d.code == "TL301")
    assert "nb.ipynb:cell 3:3" in tl301.message and "nb.ipynb:cell 4:4" in tl301.message
    assert ("TL201", 4, 4, 53) in found  # the flag on the continuation line of the ! launch
    assert ("TL501", 4, 4, 55) in found
    assert ("TL101", 2, 6, 1) in found  # the written script's own code, at the writefile cell
    # %env CUDA_VISIBLE_DEVICES=0,1 reaches %run (one in-process python with 2 GPUs)
    assert ("TL406", 5, 1, 1) in found
    # {lr} is a Python value: unknown, never judged as text
    assert not any("{lr}" in d.message or "$__" in d.message for d in result.diagnostics)
    assert not (tmp_path / "train.py").exists()
    assert not _codes(result) & {"TL000", "TL001", "TL003", "TL004"}


def test_missing_script_named_in_notebook(tmp_path: Path):
    (tmp_path / "nb.ipynb").write_text(notebook([("code", "!python run.py --output_dir o --logging_steps 1")]),
                                       encoding="utf-8")
    result = lint_folder(tmp_path)
    assert ("TL004", 1, 1, 9) in _found(result)
    # a notebook that downloads or clones first: the script may come from there
    (tmp_path / "nb.ipynb").write_text(notebook([
        ("code", "!wget https://example.com/run.py"), ("code", "!python run.py --output_dir o")]), encoding="utf-8")
    assert "TL004" not in _codes(lint_folder(tmp_path))


def test_suppression_comments_in_cells(tmp_path: Path):
    cells = [("code", "from transformers import TrainingArguments\n"
                      "a = TrainingArguments('o', logging_steps=1, save_total_limit=1)  # trainlint: disable=TL201\n"
                      "b = TrainingArguments('p', logging_steps=1, save_total_limit=1)\n"
                      "c = TrainingArguments('q', logging_steps=1, save_total_limit=1, fp16=True)"),
             ("code", "# trainlint: disable-file=fp16-on-bf16-hardware\n"
                      "!python x.py --logging_steps 1  # noqa: TL004")]
    (tmp_path / "nb.ipynb").write_text(notebook(cells), encoding="utf-8")
    result = lint_folder(tmp_path, options={"gpu": "A100"})
    tl201 = sorted((d.cell, d.line) for d in result.diagnostics if d.code == "TL201")
    assert tl201 == [(1, 3), (1, 4)]
    assert "TL501" not in _codes(result) and "TL004" not in _codes(result)


def test_broken_notebooks(tmp_path: Path):
    good = notebook(COLAB)
    (tmp_path / "bad_json.ipynb").write_text(good[:400] + "\n oops", encoding="utf-8")
    v3 = {"metadata": {}, "nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": []}]}
    (tmp_path / "v3.ipynb").write_text(json.dumps(v3), encoding="utf-8")
    (tmp_path / "not_nb.ipynb").write_text('{"a": 1}', encoding="utf-8")
    cells = list(COLAB)
    cells[3] = ("code", "def tokenize(batch:\n    return batch")  # a cell that does not parse
    (tmp_path / "cell.ipynb").write_text(notebook(cells), encoding="utf-8")
    result = lint([tmp_path / p for p in ("bad_json.ipynb", "v3.ipynb", "not_nb.ipynb", "cell.ipynb")],
                  load_settings(tmp_path, {"gpu": "A100"}))
    by_path = {}
    for d in result.diagnostics:
        by_path.setdefault(Path(d.path).name, []).append(d)
    bad = by_path["bad_json.ipynb"]
    assert [(d.code, d.cell) for d in bad] == [("TL003", None)]
    assert "not valid JSON" in bad[0].message and bad[0].line > 1
    assert [d.code for d in by_path["v3.ipynb"]] == ["TL003"] and "nbformat 3" in by_path["v3.ipynb"][0].message
    assert "not a Jupyter notebook" in by_path["not_nb.ipynb"][0].message
    cell_findings = by_path["cell.ipynb"]
    assert ("TL001", 4, 1) in {(d.code, d.cell, d.line) for d in cell_findings}
    # the other cells are still checked
    assert {"TL101", "TL201", "TL501"} <= {d.code for d in cell_findings}
    # and a notebook with a broken cell is never edited
    outcome = fix_outcome([tmp_path / "cell.ipynb"], load_settings(tmp_path, {"gpu": "A100"}))
    assert outcome.fixed == {}


def test_non_python_kernel_is_skipped(tmp_path: Path):
    (tmp_path / "r.ipynb").write_text(notebook([("code", "library(dplyr)\nx <- 1 %>% f()")], language="R"),
                                      encoding="utf-8")
    assert lint_folder(tmp_path).diagnostics == []


def _strip_sources(text: str) -> str:
    data = json.loads(text)
    for c in data["cells"]:
        c["source"] = None
    return json.dumps(data, sort_keys=True)


@pytest.mark.parametrize("as_string", [False, True], ids=["list-of-lines", "one-string"])
def test_fix_edits_only_cell_sources_and_is_idempotent(tmp_path: Path, as_string: bool):
    path = tmp_path / "nb.ipynb"
    original = notebook(COLAB, as_string=as_string)
    path.write_text(original, encoding="utf-8")
    outcome = fix_folder(tmp_path, unsafe=True, options={"gpu": "A100"})
    new = outcome.fixed[str(path)]
    fixed_codes = {d.code for d in outcome.applied}
    assert {"TL101", "TL102", "TL501", "TL601", "TL605"} <= fixed_codes
    assert "TL201" not in fixed_codes  # logging every step by choice: reported, no fix
    # outputs, execution counts, ids, metadata, key order and indentation untouched
    assert _strip_sources(new) == _strip_sources(original)
    old_lines, new_lines = original.splitlines(), new.splitlines()
    changed = [ln for ln in new_lines if ln not in old_lines]
    assert all(ln.lstrip().startswith('"') for ln in changed)  # only source strings changed
    data = json.loads(new)
    shapes = {type(c["source"]) for c in data["cells"]}
    assert shapes == ({str} if as_string else {list})
    if not as_string:
        assert all(s.endswith("\n") for c in data["cells"] for s in c["source"][:-1])
    src = {i + 1: "".join(c["source"]) for i, c in enumerate(data["cells"])}
    assert "model.to(device)" not in src[3]
    assert "padding='max_length'" not in src[4]
    assert "eval_strategy='epoch'" in src[6] and "bf16=True" in src[6] and "logging_steps=1," in src[6]
    assert "processing_class=tokenizer" in src[7] and src[7].startswith("%%time\n")
    assert src[2].startswith("!pip install")  # IPython lines kept as written
    # the fixed cells still compile (IPython syntax transformed as the reader does)
    nb = read_notebook(str(path), new)
    assert nb.findings == [] and nb.python is not None
    # a second fix changes nothing
    path.write_text(new, encoding="utf-8")
    again = fix_folder(tmp_path, unsafe=True, options={"gpu": "A100"})
    assert again.fixed == {}


def test_fix_in_launch_line_and_written_script(tmp_path: Path):
    cells = [("code", "%%writefile train.py\nfrom transformers import TrainingArguments, HfArgumentParser\n"
                      "(args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()\n"),
             ("code", "!python train.py --output_dir o --save_total_limit 1 --evaluation_strategy no  # go")]
    path = tmp_path / "nb.ipynb"
    path.write_text(notebook(cells), encoding="utf-8")
    outcome = fix_folder(tmp_path)
    src = "".join(json.loads(outcome.fixed[str(path)])["cells"][1]["source"])
    assert src == "!python train.py --output_dir o --save_total_limit 1 --eval_strategy no  # go"


def test_walk_includes_notebooks_respecting_gitignore_and_exclude(tmp_path: Path):
    nb = notebook([("code", "from transformers import TrainingArguments\n"
                            "TrainingArguments('o', logging_steps=1, save_total_limit=1)")])
    (tmp_path / "a.ipynb").write_text(nb, encoding="utf-8")
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "b.ipynb").write_text(nb, encoding="utf-8")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "a-checkpoint.ipynb").write_text(nb, encoding="utf-8")
    (tmp_path / ".gitignore").write_text("ignored/\n.ipynb_checkpoints/\n", encoding="utf-8")
    # no training marker in any code cell: never parsed (even though it is broken Python)
    (tmp_path / "plain.ipynb").write_text(notebook([("code", "def f(:\n")]), encoding="utf-8")
    result = lint_folder(tmp_path)
    assert {Path(d.path).name for d in result.diagnostics} == {"a.ipynb"}
    assert str(tmp_path / "plain.ipynb") not in result.files
    result = lint([tmp_path], load_settings(tmp_path, {"exclude": ["*.ipynb"]}))
    assert result.diagnostics == []


@pytest.mark.parametrize("select", [None, ["TL611"], ["TL6"]])
def test_walked_notebook_prefiltered_as_the_same_script(tmp_path: Path, select):
    # a rule whose trigger has words (TL611: a removed name beside its package) reads a walked
    # notebook as it reads the same code in a walked script, with or without --select
    code = "from transformers import AdamW\nopt = AdamW([])\n"
    (tmp_path / "nb").mkdir()
    (tmp_path / "py").mkdir()
    (tmp_path / "nb" / "t.ipynb").write_text(notebook([("code", "!pip install transformers"), ("code", code)]),
                                             encoding="utf-8")
    (tmp_path / "py" / "t.py").write_text(code, encoding="utf-8")
    # the package without a removed name: neither is read on TL611's account
    (tmp_path / "nb" / "plain.ipynb").write_text(notebook([("code", "import transformers\nx = 1\n")]),
                                                 encoding="utf-8")
    (tmp_path / "py" / "plain.py").write_text("import transformers\nx = 1\n", encoding="utf-8")
    kw = {} if select is None else {"select": select}
    found = {}
    for kind in ("nb", "py"):
        result = lint([tmp_path / kind], load_settings(tmp_path / kind, kw))
        found[kind] = sorted((Path(d.path).stem, d.code) for d in result.diagnostics)
    assert found["nb"] == found["py"] == [("t", "TL611")]


def test_parallel_path_gives_the_same_result(tmp_path: Path):
    for i in range(4):
        (tmp_path / f"n{i}.ipynb").write_text(notebook(COLAB[:4] + [COLAB[5]]), encoding="utf-8")
    (tmp_path / "launch.ipynb").write_text(notebook([("code", "!python t.py --logging_steps 1 --output_dir o")]),
                                           encoding="utf-8")
    (tmp_path / "t.py").write_text("from transformers import TrainingArguments, HfArgumentParser\n"
                                   "HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()\n",
                                   encoding="utf-8")
    settings = load_settings(tmp_path, {"gpu": "A100"})
    plain = lint([tmp_path], settings)
    split = lint([tmp_path], settings, jobs=2, min_files=0)  # the pool
    key = [(d.path, d.cell, d.line, d.column, d.code, d.message) for d in plain.diagnostics]
    assert key == [(d.path, d.cell, d.line, d.column, d.code, d.message) for d in split.diagnostics]
    assert any(d.path.endswith("launch.ipynb") and d.code == "TL201" for d in plain.diagnostics)


def test_reporters_name_the_cell(tmp_path: Path):
    import io

    from trainlint.report import render

    path = tmp_path / "nb.ipynb"
    path.write_text(notebook(COLAB), encoding="utf-8")
    result = lint_folder(tmp_path, options={"gpu": "A100"}, select=["TL101"])
    (d,) = result.diagnostics

    def out(fmt: str) -> str:
        buf = io.StringIO()
        render(fmt, result.diagnostics, result.texts, buf, color=False)
        return buf.getvalue()

    assert out("concise").startswith(f"{path}:cell 3:7:1: TL101 [manual-device-placement] ")
    text = out("text")
    assert f"{path}:cell 3:7:1:" in text and " 7 | model.to(device)" in text
    assert f"= note: {path}:cell 7:2: " in text
    (j,) = json.loads(out("json"))
    assert (j["cell"], j["line"], j["column"]) == (3, 7, 1)
    assert j["related"][0]["cell"] == 7 and j["fix"]["edits"][0]["cell"] == 3
    raw_lines = path.read_text(encoding="utf-8").splitlines()
    gh = out("github")
    line_no = int(gh.split("line=")[1].split(",")[0])
    col = int(gh.split(",col=")[1].split(",")[0])
    assert raw_lines[line_no - 1][col - 1:].startswith("model.to(device)")
    assert "::cell 3, line 7: `model.to(device)`" in gh
    sarif = json.loads(out("sarif"))["runs"][0]["results"][0]
    region = sarif["locations"][0]["physicalLocation"]["region"]
    assert raw_lines[region["startLine"] - 1][region["startColumn"] - 1:].startswith("model.to(device)")
    assert sarif["message"]["text"].startswith("cell 3, line 7: ")
    assert sarif["properties"]["cell"] == 3 and sarif["properties"]["cellLine"] == 7
    # the SARIF fix is a replacement of the notebook's JSON text that removes the line
    rep = sarif["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert rep["insertedContent"]["text"] == ""
    # the language server shows the .ipynb text: the finding at the JSON line, fix edits of the JSON
    from trainlint.report.cells import as_raw

    r = as_raw(d, result.texts)
    assert r.cell is None and raw_lines[r.line - 1][r.column - 1:].startswith("model.to(device)")
    assert r.message.startswith("cell 3, line 7: ") and r.fix is not None and r.fix.edits[0].cell is None


def test_precommit_hooks_run_on_notebooks():
    text = (Path(__file__).parent.parent / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    hooks = [ln for ln in text.splitlines() if ln.strip().startswith("types_or:")]
    assert len(hooks) == 2 and all("jupyter" in ln for ln in hooks)


# -- the installed command ------------------------------------------------------------------------


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([trainlint_cmd(), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_cli_check_fix_diff_and_apply(tmp_path: Path):
    path = tmp_path / "nb.ipynb"
    original = notebook(COLAB)
    path.write_text(original, encoding="utf-8")
    r = _run("check", "nb.ipynb", "--gpu", "A100", "--format", "concise", "--no-cache", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "nb.ipynb:cell 3:7:1: TL101 [manual-device-placement]" in r.stdout
    r = _run("fix", "nb.ipynb", "--gpu", "A100", cwd=tmp_path)
    assert "--- a/nb.ipynb:cell 3\n+++ b/nb.ipynb:cell 3\n" in r.stdout
    assert "\n-model.to(device)\n" in r.stdout and '\\n"' not in r.stdout  # cell lines, not JSON
    assert path.read_text(encoding="utf-8") == original  # nothing written without --apply
    r = _run("fix", "nb.ipynb", "--gpu", "A100", "--apply", cwd=tmp_path)
    fixed = path.read_text(encoding="utf-8")
    assert fixed != original and _strip_sources(fixed) == _strip_sources(original)
    assert "model.to(device)" not in fixed
    r = _run("fix", "nb.ipynb", "--gpu", "A100", "--apply", cwd=tmp_path)
    assert path.read_text(encoding="utf-8") == fixed and "Fixed 0 findings" in r.stderr


def test_cli_exclude_verify_refused_and_estimate(tmp_path: Path):
    (tmp_path / "nb.ipynb").write_text(notebook(COLAB), encoding="utf-8")
    r = _run("check", ".", "--exclude", "*.ipynb", "--no-cache", "--format", "concise", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == ""
    r = _run("verify", "nb.ipynb", cwd=tmp_path)
    assert r.returncode == 2
    assert "jupyter nbconvert --to script nb.ipynb" in r.stderr and "Traceback" not in r.stderr
    r = _run("estimate", "nb.ipynb", "--gpu", "A100-80GB", "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["model"]["name"].endswith("bert-base-uncased") and doc["per_gpu"]["total"] > 0
    assert doc["script"].endswith("nb.ipynb")


def test_automagic_and_doctest_prompts(tmp_path: Path):
    cells = [("code", "pip install -q transformers\ncd /content\nls -la"),  # automagic: IPython runs these
             ("code", ">>> from transformers import TrainingArguments\n"
                      ">>> args = TrainingArguments('o', save_total_limit=1, eval_strategy='steps',\n"
                      "...                          logging_steps=1)\n"),
             ("code", "time = 3\nls = [time]\ncd = ls  # Python that starts like a magic stays Python")]
    (tmp_path / "nb.ipynb").write_text(notebook(cells), encoding="utf-8")
    result = lint_folder(tmp_path)
    assert not _codes(result) & {"TL000", "TL001"}
    # the position is the cell's, prompt included
    assert ("TL201", 2, 3, 44) in _found(result)
    nb = read_notebook("nb.ipynb", notebook(cells))
    assert "cd = ls" in nb.python_text and "pip install" not in nb.python_text
    # a fix in a prompted line lands on the cell's own columns
    outcome = fix_folder(tmp_path)
    src = "".join(json.loads(outcome.fixed[str(tmp_path / "nb.ipynb")])["cells"][1]["source"])
    assert src.splitlines()[2] == "...                          logging_steps=10)"


@pytest.mark.parametrize("as_string", [False, True], ids=["list-of-lines", "one-string"])
def test_a_cell_pasted_indented_is_read_as_ipython_reads_it(tmp_path: Path, as_string: bool):
    """IPython removes the first line's indentation from every line that starts with it (after
    dropping blank lines above): a cell pasted from inside a function runs, so it is no syntax
    error; findings and fixes land on the cell's own columns, indentation kept."""
    cells = [("code", "!pip install -q transformers"),
             ("code", "\n    from transformers import TrainingArguments\n"
                      "    args = TrainingArguments(\n"
                      "        output_dir='o', save_total_limit=1,\n"
                      "        evaluation_strategy='steps', logging_steps=1)\n"),
             ("code", "\t%%time\n\tfrom transformers import TrainingArguments\n"
                      "\ta = TrainingArguments('o', save_total_limit=1, logging_steps=1)")]
    path = tmp_path / "nb.ipynb"
    path.write_text(notebook(cells, as_string=as_string), encoding="utf-8")
    found = _found(lint_folder(tmp_path))
    assert ("TL601", 2, 5, 9) in found and ("TL201", 2, 5, 52) in found
    assert ("TL201", 3, 3, 63) in found  # a cell magic after the indent
    assert not any(f[0] in ("TL000", "TL001") for f in found)
    outcome = fix_folder(tmp_path)
    new = outcome.fixed[str(path)]
    assert _strip_sources(new) == _strip_sources(path.read_text(encoding="utf-8"))
    src = "".join(json.loads(new)["cells"][1]["source"])
    assert src.splitlines()[4] == "        eval_strategy='steps', logging_steps=10)"
    path.write_text(new, encoding="utf-8")
    assert fix_folder(tmp_path).fixed == {}
    # a later line less indented than the first: IPython fails too; the same answer for a
    # notebook walked with nothing to report but its syntax (no training marker) and for one
    # read in full
    for name, first in (("plain", "  import transformers\n  print(transformers.__version__)"),
                        ("training", "  from transformers import Trainer\n  Trainer")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "p.ipynb").write_text(notebook([("code", first), ("code", "    x = 1\n  y = 2\n")]),
                                        encoding="utf-8")
        assert {f for f in _found(lint_folder(folder)) if f[0] == "TL001"} == {("TL001", 2, 2, 2)}, name


# -- what Python cells pass on to shell lines (issue 16 §2) -------------------------------------

TRAIN_PY = ("from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
            "(args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()\n"
            "Trainer(model=None, args=args).train()\n")
LAUNCH4 = "!torchrun --nproc_per_node 4 train.py --output_dir out"  # the 4 at column 28


def _lint_cells(tmp_path: Path, cells, **kw):
    (tmp_path / "train.py").write_text(TRAIN_PY, encoding="utf-8")
    (tmp_path / "nb.ipynb").write_text(notebook(cells), encoding="utf-8")
    return lint_folder(tmp_path, **kw)


@pytest.mark.parametrize("setting", [
    'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0,1"',
    "import os\nos.environ['WANDB_PROJECT'] = 'bert-imdb'\nos.environ.setdefault('CUDA_VISIBLE_DEVICES', '0,1')",
    'from os import environ\nenviron.update({"CUDA_VISIBLE_DEVICES": "0,1"})',
    # an alias whose lines do not say environ (the shell flow looks for the alias too)
    'from os import environ as E\nE["CUDA_VISIBLE_DEVICES"] = "0,1"',
    'import os\ngpus = "0,1"\nos.environ["CUDA_VISIBLE_DEVICES"] = gpus',
    "import os\nos.environ.update(CUDA_VISIBLE_DEVICES='0,1', WANDB_MODE='offline')",
])
def test_python_environ_reaches_later_shell_lines(tmp_path: Path, setting: str):
    result = _lint_cells(tmp_path, [("markdown", "# DDP"), ("code", setting), ("code", LAUNCH4)])
    assert ("TL403", 3, 1, 28) in _found(result)
    nb = read_notebook("nb.ipynb", (tmp_path / "nb.ipynb").read_text(encoding="utf-8"))
    assert nb.launches[0].env["CUDA_VISIBLE_DEVICES"].value == "0,1"


def test_python_environ_and_bash_cells(tmp_path: Path):
    cells = [("code", "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0,1'\nos.environ['ACCELERATE_MIXED_PRECISION'] = 'bf16'"),
             ("code", "%%bash\necho start\ntorchrun --nproc_per_node 4 train.py --output_dir out")]
    assert ("TL403", 2, 3, 27) in _found(_lint_cells(tmp_path, cells))
    nb = read_notebook("nb.ipynb", (tmp_path / "nb.ipynb").read_text(encoding="utf-8"))
    assert nb.launches[0].env["ACCELERATE_MIXED_PRECISION"].value == "bf16"


@pytest.mark.parametrize("setting", [
    'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0,1,2,3"',
    # set only on one branch, or to a value only the kernel knows: unknown
    'import os, torch\nif torch.cuda.device_count() > 2:\n    os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"',
    'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(2))',
    # setdefault keeps what %env set
    '%env CUDA_VISIBLE_DEVICES=0,1,2,3\nimport os\nos.environ.setdefault("CUDA_VISIBLE_DEVICES", "0")',
    # a later %env wins; os.environ.pop makes it unknown
    'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0,1"\n%env CUDA_VISIBLE_DEVICES=0,1,2,3',
    'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0,1"\nos.environ.pop("CUDA_VISIBLE_DEVICES")',
    # inside a function: runs only when called
    'import os\ndef use_two():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"',
])
def test_python_environ_no_false_positive(tmp_path: Path, setting: str):
    assert "TL403" not in _codes(_lint_cells(tmp_path, [("code", setting), ("code", LAUNCH4)]))


def test_environ_set_after_the_launch_does_not_reach_it(tmp_path: Path):
    cells = [("code", LAUNCH4), ("code", 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0,1"')]
    assert "TL403" not in _codes(_lint_cells(tmp_path, cells))


def test_environ_line_keeps_its_python_fixes(tmp_path: Path):
    # the shell text a Python line carries lies past the cell's columns: fixes on it still apply
    nb = read_notebook("nb.ipynb", notebook([("code", 'import os\nos.environ["X"] = "1"')]))
    assert nb.editable(2, 1, 2, 4) and not nb.editable(2, 22, 2, 30)


@pytest.mark.parametrize("move", ["%cd examples", "cd examples", "import os\nos.chdir('examples')",
                                  "import os\nfolder = 'examples'\nos.chdir(folder)"])
def test_cd_and_chdir_move_where_launch_lines_resolve(tmp_path: Path, move: str):
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "train.py").write_text(TRAIN_PY, encoding="utf-8")
    cells = [("code", move), ("code", "!python train.py --output_dir out --logging_steps 1")]
    (tmp_path / "nb.ipynb").write_text(notebook(cells), encoding="utf-8")
    result = lint_folder(tmp_path)
    assert "TL004" not in _codes(result)
    nb = read_notebook(str(tmp_path / "nb.ipynb"), (tmp_path / "nb.ipynb").read_text(encoding="utf-8"))
    assert nb.launches[0].cwd == "examples"
    # the script resolved in examples/ is the one whose setup is checked
    assert result.files and str(tmp_path / "examples" / "train.py") in {str(p) for p in result.files}


def test_cd_into_a_folder_without_the_script(tmp_path: Path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.txt").write_text("x", encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN_PY, encoding="utf-8")
    cells = [("code", "%cd data"), ("code", "!python run.py --output_dir out")]
    (tmp_path / "nb.ipynb").write_text(notebook(cells), encoding="utf-8")
    assert ("TL004", 2, 1, 9) in _found(lint_folder(tmp_path))


def test_cd_in_a_bang_line_ends_with_it(tmp_path: Path):
    # each ! line is its own shell: `!cd examples` does not move the next one
    nb = read_notebook("nb.ipynb", notebook([("code", "!cd examples\n!python train.py --output_dir o"),
                                             ("code", "!cd examples && python train.py --output_dir p")]))
    assert [launch.cwd for launch in nb.launches] == [None, "examples"]


def test_python_values_expand_in_shell_lines(tmp_path: Path):
    cells = [("code", "steps = 1\nout = 'bert-imdb-finetuned'\nlr = 3e-5"),
             ("code", "!torchrun --nproc_per_node 2 train.py --output_dir $out --learning_rate {lr} "
                      "--logging_steps {steps} --save_total_limit 1"),
             ("code", "!torchrun --nproc_per_node 2 train.py --output_dir {out} --logging_steps 1 --save_total_limit 1")]
    result = _lint_cells(tmp_path, cells, options={"gpu": "A100"})
    found = _found(result)
    line2 = cells[1][1]
    assert ("TL201", 2, 1, line2.index("{steps}") + 1) in found  # at the field, in the cell's columns
    line3 = cells[2][1]
    assert ("TL201", 3, 1, line3.index("1 --save") + 1) in found  # after a longer expansion
    nb = read_notebook("nb.ipynb", (tmp_path / "nb.ipynb").read_text(encoding="utf-8"))
    flags = {f.key: f.value for f in nb.launches[0].script_args}
    assert flags == {"output_dir": "bert-imdb-finetuned", "learning_rate": "3e-05", "logging_steps": "1",
                     "save_total_limit": "1"}
    assert not any("$__" in d.message or "{" in d.message for d in result.diagnostics)


@pytest.mark.parametrize("cells", [
    # a value only the kernel knows
    [("code", "import argparse\nargs = argparse.Namespace(steps=1)"),
     ("code", "!torchrun --nproc_per_node 2 train.py --output_dir o --logging_steps {args.steps}")],
    # bound in a loop: a different value each time
    [("code", "for steps in [1, 10]:\n    !torchrun --nproc_per_node 2 train.py --output_dir o --logging_steps {steps}")],
    # a name Python never bound: IPython passes the line on as written ({steps} is no number)
    [("code", "steps = 1"),
     ("code", "!torchrun --nproc_per_node 2 train.py --output_dir $undefined_dir --logging_steps {steps}")],
    # $steps inside single quotes is the shell's own (unset) variable
    [("code", "steps = 1"),
     ("code", "!torchrun --nproc_per_node 2 train.py --output_dir o --logging_steps '$steps'")],
    # reassigned by a call after the literal
    [("code", "steps = 1\nsteps = int('10')"),
     ("code", "!torchrun --nproc_per_node 2 train.py --output_dir o --logging_steps $steps")],
])
def test_unknown_expansions_make_no_findings(tmp_path: Path, cells):
    result = _lint_cells(tmp_path, cells, options={"gpu": "A100"})
    assert "TL201" not in _codes(result)
    assert not any("$__" in d.message or "{" in d.message for d in result.diagnostics)
    assert not _codes(result) & {"TL000", "TL001", "TL003"}


# -- pre-filter and partition read the code cells only (issue 16 §1) ----------------------------

def test_prefilter_reads_code_cells_not_outputs_or_markdown():
    from trainlint.sources.notebook import code_text, prefilter
    from trainlint.workspace import PY_PREFILTER

    outputs_only = notebook([("markdown", "We fine-tune with the `Trainer` and `TrainingArguments`."),
                             ("code", "import pandas as pd\ndf = pd.read_csv('x.csv')\nprint(df)")])
    outputs_only = outputs_only.replace("out 1 é", "Some weights of BertModel (transformers) were not initialized")
    assert "Trainer" in outputs_only and not prefilter(outputs_only, PY_PREFILTER)
    assert "Trainer" not in code_text(outputs_only)
    # a name right after a JSON escape (a new line, a tab) is still found in the raw text
    escaped = notebook([("code", "x = 1\n\ttokenizer = None", )], as_string=True)
    assert "\\n\\ttokenizer" in escaped and prefilter(escaped, PY_PREFILTER)
    # launch lines and written files count even without a library name
    assert prefilter(notebook([("code", "!python run.py --output_dir o")]), PY_PREFILTER)
    # ``!pip install transformers`` alone is no training code
    assert not prefilter(notebook([("code", "!pip install -q transformers\n%pip install trl")]), ("transformers", "trl"))


def _escape_names(text: str, names: tuple[str, ...]) -> str:
    """The JSON text with the first letter of each of ``names`` written as a ``\\uXXXX``
    escape (legal JSON, the same notebook once decoded)."""
    for n in names:
        text = text.replace(n, f"\\u{ord(n[0]):04x}{n[1:]}")
    return text


def test_prefilter_decodes_a_notebook_whose_names_are_unicode_escapes(tmp_path: Path):
    from trainlint.sources.notebook import decoded_cells, prefilter
    from trainlint.workspace import PY_PREFILTER

    code = ("from transformers import TrainingArguments, AdamW\n"
            "args = TrainingArguments(output_dir='o', evaluation_strategy='steps')\nopt = AdamW([])\n")
    plain = notebook([("code", code)])
    escaped = _escape_names(plain, ("transformers", "TrainingArguments", "AdamW", "evaluation_strategy"))
    assert "transformers" not in escaped and "TrainingArguments" not in escaped and "\\u0074ransformers" in escaped
    assert decoded_cells(escaped) == decoded_cells(plain)
    assert prefilter(escaped, PY_PREFILTER) and prefilter(escaped, ("TrainingArguments",))
    # no escape and no name anywhere: dropped without decoding
    assert not prefilter(notebook([("code", "x = 1")]), PY_PREFILTER)
    # walked: the escaped notebook is read, and finds what the plain one finds
    found = {}
    for name, text in (("plain", plain), ("escaped", escaped)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "t.ipynb").write_text(text, encoding="utf-8")
        for select in (None, ["TL611"]):
            kw = {} if select is None else {"select": select}
            result = lint([tmp_path / name], load_settings(tmp_path / name, kw))
            found[name, bool(select)] = sorted((d.code, d.line, d.column) for d in result.diagnostics)
    assert found["plain", False] and found["plain", True]
    assert found["escaped", False] == found["plain", False]
    assert found["escaped", True] == found["plain", True]


def test_notebook_that_only_mentions_training_in_outputs_is_not_read(tmp_path: Path):
    nb = notebook([("code", "import numpy as np\nprint(np.ones(3))")]).replace("out 0 é", "TrainingArguments(...)")
    (tmp_path / "a.ipynb").write_text(nb, encoding="utf-8")
    (tmp_path / "b.ipynb").write_text(notebook(COLAB), encoding="utf-8")
    result = lint_folder(tmp_path, options={"gpu": "A100"})
    assert str(tmp_path / "a.ipynb") not in {str(p) for p in result.files}
    assert COLAB_EXPECTED <= _found(result)


def test_names_a_notebook_mentions():
    from trainlint.partition import _mentioned_names

    text = ("!python run_glue.py --config cfg.yaml --deepspeed ds_config.json\n"
            "%run -m pkg.train_mod\n!bash ./scripts/launch.sh\nimg = 'aGVsbG8' * 10000 + 'x.png'\n")
    assert {"run_glue.py", "cfg.yaml", "ds_config.json", "train_mod", "launch.sh"} <= _mentioned_names(text)
    assert _mentioned_names("x" * 200_000 + ".pyc") == set()


# -- the reader's fast paths give what their plain versions give (issue 16 §1) ------------------

# the one-alternation forms the fast searches replace (kept here as the reference)
_MAYBE_IPYTHON_REF = r"^[ \t]*[!%?/,;]|\?[ \t]*$|=[ \t]*[!%]|^[ \t]*(?:pip3?|conda|mamba|cd|pwd|ls|mkdir|" \
                     r"cat|cp|mv|rm|rmdir|load_ext|matplotlib|env|run|time|timeit|pushd|popd|wget)[ \t]"
_INSTALL_REF = r"^[ \t]*(?:!|%{0,2}(?:pip3?|conda|mamba|uv)[ \t]).*$"


def test_fast_ipython_and_install_searches_match_their_reference():
    import random
    import re

    from trainlint.sources.notebook import _INSTALL_OR_SHELL, _maybe_ipython

    maybe, install = re.compile(_MAYBE_IPYTHON_REF, re.M), re.compile(_INSTALL_REF, re.M)
    pieces = ["\n", " ", "\t", "!", "%", "%%", "?", "??", "/", ",", ";", "=", "x", "pip", "pip3", "uv", "cd",
              "conda", "env", "run", "time", "timeit", "ls", "#", "'", "a = ", "\r", "print(1)", "\n\n"]
    rng = random.Random(16)
    texts = ["", "\n", "?", "x?", "x?\n", "a = !ls", "a=%time", "\n!x", "pip install x", " pip\tx", "%%bash\n"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(20_000)]
    for text in texts:
        assert _maybe_ipython(text) == bool(maybe.search(text)), repr(text)
        assert _INSTALL_OR_SHELL.sub("\n", "\n" + text)[1:] == install.sub("", text), repr(text)


def test_install_lines_the_same_from_the_reader_and_from_json(tmp_path: Path):
    import sys

    from trainlint.knowledge import versions

    cells = [("markdown", "%pip install nothing"), ("code", '%pip install -q "transformers==4.44.2" trl\n!pip install \\\n  peft'),
             ("code", "%%bash\npip install accelerate==1.0.0")]
    for i, text in enumerate([notebook(cells), notebook(cells, as_string=True), "\ufeff" + notebook(cells),
                              '{"cells": [{"cell_type": "code", "source": 3}], "nbformat": 4}  install',
                              '{"worksheets": [], "nbformat": 3} install', "not json install"]):
        path = tmp_path / f"n{i}.ipynb"
        path.write_text(text, encoding="utf-8")
        with_reader = versions._install_lines(path)
        reader = sys.modules.pop("trainlint.sources.notebook")
        try:
            assert versions._install_lines(path) == with_reader
        finally:
            sys.modules["trainlint.sources.notebook"] = reader
        if i < 2:
            assert [w for _, w in with_reader] == [f"n{i}.ipynb:cell 2", f"n{i}.ipynb:cell 2", f"n{i}.ipynb:cell 3"]



def test_install_lines_of_crlf_files_as_of_lf_ones_and_no_second_decoding(tmp_path: Path, monkeypatch):
    """A notebook or shell script saved with CRLF (or CR) line ends runs the same install
    lines as with LF; a notebook the reader decoded in this process is not decoded again."""
    from trainlint.knowledge import versions
    from trainlint.sources import notebook as reader

    shell = "pip install 'peft==0.2.0' \\\n  deepspeed\npython train.py\n"
    for k, end in enumerate(("\r\n", "\r")):
        cells = [("markdown", f"variant {k}"), ("code", '%pip install -q "transformers==4.44.2" trl\n!pip install \\\n  peft'),
                 ("code", "%%bash\npip install accelerate==1.0.0")]
        for suffix, text in (("ipynb", notebook(cells)), ("sh", shell)):
            path = tmp_path / f"x{k}.{suffix}"
            data = text.replace("\n", end).encode()
            path.write_bytes(data)
            if suffix == "ipynb":
                reader.decoded_cells(data.decode())  # what the run's reading decoded
            decodes: list = []
            monkeypatch.setattr(reader, "_decode", lambda *a, real=reader._decode: decodes.append(a) or real(*a))
            got = versions._install_lines(path)
            monkeypatch.undo()
            assert not decodes, "the cells the reader decoded are used"
            same = tmp_path / f"lf{k}.{suffix}"
            same.write_text(text, encoding="utf-8")
            want = [(line, where.replace("lf", "x")) for line, where in versions._install_lines(same)]
            assert got == want and len(got) == (3 if suffix == "ipynb" else 1), (end, suffix, got, want)



def test_install_lines_from_the_text_the_run_read_without_reading_the_file_again(tmp_path: Path, monkeypatch):
    """Inside a run (``reads.files_already_read``) a notebook's or shell script's install lines
    come from the text its split read, the same lines as from the file's bytes; a text that
    starts with a byte order mark, a path of the overlay and a path the run did not read are
    read from the file, as outside a run."""
    from trainlint import reads
    from trainlint.knowledge import versions
    from trainlint.sources.files import read_text

    cells = [("markdown", "%pip install nothing"), ("code", '%pip install -q "transformers==4.44.2" trl\n!pip install \\\n  peft'),
             ("code", "%%bash\npip install accelerate==1.0.0"), ("code", "print('\U0001f600')")]
    shell = "pip install 'peft==0.2.0' \\\n  deepspeed\npython train.py\n"
    files = {"nb.ipynb": notebook(cells), "bom.ipynb": "\ufeff" + notebook(cells), "run.sh": shell,
             "crlf.sh": shell.replace("\n", "\r\n"), "none.ipynb": notebook([("code", "print(1)")])}
    for name, text in files.items():
        (tmp_path / name).write_bytes(text.encode("utf-8"))
    want = {name: versions._install_lines(tmp_path / name) for name in files}
    assert len(want["nb.ipynb"]) == 3 and len(want["run.sh"]) == 1 and want["bom.ipynb"] == [] and not want["none.ipynb"]
    read = {str(tmp_path / name): read_text(str(tmp_path / name)) for name in files}
    disk: list[str] = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: disk.append(self.name) or real(self))
    with reads.files_already_read(read):
        assert {name: versions._install_lines(tmp_path / name) for name in files} == want
    assert disk == ["bom.ipynb"], "only the text with a byte order mark is read again"
    disk.clear()
    with reads.files_already_read(read, {str(tmp_path / "nb.ipynb"): "{}"}):
        assert versions._install_lines(tmp_path / "nb.ipynb") == want["nb.ipynb"]
    with reads.files_already_read({}):
        assert versions._install_lines(tmp_path / "run.sh") == want["run.sh"]
    assert disk == ["nb.ipynb", "run.sh"]
    assert reads.already_read(str(tmp_path / "nb.ipynb")) is None  # outside a run

# -- shell processes and %env as IPython runs them (issue 16 §2) --------------------------------

def _launches(cells):
    nb = read_notebook("nb.ipynb", notebook(cells))
    return [(launch.cwd, {k: v.value for k, v in launch.env.items()}) for launch in nb.launches]


def test_a_bash_cell_is_a_process_of_its_own():
    # its cd and exports apply to its later lines, never to later cells
    for magic in ("%%bash", "%%sh", "%%script bash"):
        cells = [("code", f"{magic}\ncd examples\nexport WANDB_MODE=offline\npython train.py --output_dir o"),
                 ("code", "!python train.py --output_dir p"),
                 ("code", "%%bash\npython train.py --output_dir q")]
        assert _launches(cells) == [("examples", {"WANDB_MODE": "offline"}), (None, {}), (None, {})], magic
    # %cd and %env are the kernel's: they reach later cells
    cells = [("code", "%cd examples\n%env WANDB_MODE=offline"), ("code", "%%bash\npython train.py --output_dir o")]
    assert _launches(cells) == [("examples", {"WANDB_MODE": "offline"})]


def test_each_bang_line_is_a_shell_of_its_own():
    cells = [("code", "!export CUDA_VISIBLE_DEVICES=0,1 && cd examples  # set up\n"
                      "!cd examples && CUDA_VISIBLE_DEVICES=0 python train.py --output_dir o  # run it\n"
                      "files = !cd examples; ls\n"
                      "!python train.py --output_dir p")]
    # the first line's export and cd end with it; the prefix assignment is the launch's own
    assert _launches(cells) == [("examples", {"CUDA_VISIBLE_DEVICES": "0"}), (None, {})]
    # a trailing comment is the shell's: no argument of the launch
    first = read_notebook("nb.ipynb", notebook(cells)).launches[0]
    assert [f.raw for f in first.script_args] == ["--output_dir o"]


def test_bang_line_continuation_and_comment_as_ipython_joins_them(tmp_path: Path):
    # IPython joins the lines of a continued ! command with a space (assemble_continued_line),
    # so a comment runs to the end of the command: --save_total_limit is commented out
    cells = [("code", "!torchrun --nproc_per_node 2 train.py --output_dir o \\\n"
                      "    --logging_steps 1 # log often \\\n"
                      "    --save_total_limit 1\n"
                      "!torchrun --nproc_per_node 2 train.py --output_dir o --logging_steps\\\n1")]
    nb = read_notebook("nb.ipynb", notebook(cells))
    first, second = nb.launches
    assert {f.key: f.value for f in first.script_args} == {"output_dir": "o", "logging_steps": "1"}
    assert {f.key: f.value for f in second.script_args} == {"output_dir": "o", "logging_steps": "1"}
    result = _lint_cells(tmp_path, cells, options={"gpu": "A100"})
    assert ("TL201", 1, 2, 21) in _found(result)  # logging_steps 1, on its own line of the cell
    assert not any(d.code == "TL002" or d.code == "TL003" for d in result.diagnostics)


@pytest.mark.parametrize(("line", "env"), [
    ("%env CUDA_VISIBLE_DEVICES=0,1", {"CUDA_VISIBLE_DEVICES": "0,1"}),
    ("%env CUDA_VISIBLE_DEVICES 0,1", {"CUDA_VISIBLE_DEVICES": "0,1"}),
    ("%env CUDA_VISIBLE_DEVICES = 0,1", {"CUDA_VISIBLE_DEVICES": "0,1"}),
    ("%set_env CUDA_VISIBLE_DEVICES=0,1", {"CUDA_VISIBLE_DEVICES": "0,1"}),
    ("%env WANDB_NOTES a b", {"WANDB_NOTES": "a b"}),
    ("%env X=a=b", {"X": "a=b"}),
    ("%env X=", {"X": ""}),
    # a query, the listing, a name with a space (IPython refuses it): nothing is set
    ("%env CUDA_VISIBLE_DEVICES", {}), ("%env", {}), ("%env CMD_ARGS A=B", {}),
    # IPython expands the line from Python values first
    ("gpus = '0,1'\n%env CUDA_VISIBLE_DEVICES=$gpus", {"CUDA_VISIBLE_DEVICES": "0,1"}),
    ("n = 2\n%env CUDA_VISIBLE_DEVICES={','.join(str(i) for i in range(n))}", {"CUDA_VISIBLE_DEVICES": None}),
    ("gpus = '0,1'\n%env CUDA_VISIBLE_DEVICES {gpus}", {"CUDA_VISIBLE_DEVICES": "0,1"}),
    ("import torch\n%env CUDA_VISIBLE_DEVICES={torch.cuda.device_count()}", {"CUDA_VISIBLE_DEVICES": None}),
    # an undefined name: IPython sets the text as written
    ("%env X=$undefined_name", {"X": "$undefined_name"}),
    ("key = 'CUDA_VISIBLE_DEVICES'\n%env {key}=0", {"CUDA_VISIBLE_DEVICES": "0"}),
    ("import os\n%env {os.getenv('K')}=0", {}),
])
def test_env_magic_as_ipython_parses_and_expands_it(line: str, env: dict):
    assert _launches([("code", line), ("code", "!python train.py --output_dir o")]) == [(None, env)]


def test_env_values_from_python_make_findings_at_the_field(tmp_path: Path):
    cells = [("code", "gpus = '0,1'\n%env CUDA_VISIBLE_DEVICES={gpus}"), ("code", LAUNCH4)]
    assert ("TL403", 2, 1, 28) in _found(_lint_cells(tmp_path, cells))
    # a value only the kernel knows: no finding about a placeholder
    cells = [("code", "import torch\n%env CUDA_VISIBLE_DEVICES={torch.cuda.device_count()}"), ("code", LAUNCH4)]
    result = _lint_cells(tmp_path, cells)
    assert "TL403" not in _codes(result) and not any("$__" in d.message for d in result.diagnostics)


def test_estimate_names_the_launch_line_by_cell(tmp_path: Path):
    from trainlint.estimate import _launch_line

    cells = [("markdown", "# Train"), ("code", "!pip install -q transformers"),
             ("code", "%%writefile train.py\n" + TRAIN_PY),
             ("code", "lr = 3e-5\n!python train.py --output_dir out --learning_rate {lr}")]
    (tmp_path / "nb.ipynb").write_text(notebook(cells), encoding="utf-8")
    assert _launch_line(str(tmp_path / "nb.ipynb"), 7) == "cell 4:2"  # markdown takes no virtual line
    assert _launch_line(str(tmp_path / "run.sh"), 7) == "7"


_PARSE_CASES = [
    "x = 1\n", "await x\n", "async for x in y: pass\n", "yield 1\n", "return 1\n", "nonlocal x\n",
    "def f(a, a): pass\n", "from __future__ import braces\n", "import os\nfrom __future__ import annotations\n",
    "def f(x):\n  global x\n", "[x for x in y for x in (yield)]\n", "class A:\n  x: (yield)\n", "*a = 1\n",
    "a\x00b\n", "def f(:\n", "x = (1,\n", "f'{a['b']}'\n", "x = " + "[" * 180 + "]" * 180 + "\n",
    "x = " + "-" * 5000 + "1\n", "a" + "+a" * 5000 + "\n", "f" + "(x)" * 3000 + "\n", "a" + ".b" * 8000 + "\n",
    "f = " + "lambda: " * 3000 + "1\n", "if 1:\n pass\n  x\n", "print 'x'\n", "del f()\n", "(a) = 1\n",
    "def f():\n    x = 1\n    def g():\n        nonlocal y\n",
]


@pytest.mark.parametrize("deep", [False, True])
def test_fast_parse_check_agrees_with_the_syntax_tree(deep: bool):
    # a program's parse is checked through its symbol table when the text is short enough
    # (``_parses_program``): it must say exactly what building the tree says, at the default
    # recursion limit and at the run's deep one, on texts that fail in the parser, in the
    # symbol table only, or by their depth
    from trainlint.sources.notebook import _parses_program, compile_program
    from trainlint.stack import with_deep_stack

    def compare() -> list[tuple[str, bool, bool]]:
        out = []
        for text in _PARSE_CASES:
            try:
                compile_program(text, "nb.ipynb")
                tree = True
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = False
            out.append((text[:30], tree, _parses_program(text, "nb.ipynb")))
        return out

    got = with_deep_stack(compare) if deep else compare()
    assert [g for g in got if g[1] != g[2]] == []
    assert {g[1] for g in got} == {True, False}  # both answers occur


def test_walked_notebook_without_triggers_is_read_only_when_it_does_not_parse(tmp_path: Path):
    # a notebook whose code names only the broad pre-filter's words (``transformers``) is read
    # for TL001 alone, as a script with that code is syntax-checked: one that parses gives
    # nothing (even with a top-level ``await``, which IPython runs), one that does not gives
    # TL001 at its cell
    (tmp_path / "ok.ipynb").write_text(notebook([("code", "import transformers\nawait main()\n")]),
                                       encoding="utf-8")
    (tmp_path / "bad.ipynb").write_text(notebook([("markdown", "# x"), ("code", "import transformers\n"),
                                                  ("code", "def f(:\n    pass\n")]), encoding="utf-8")
    result = lint([tmp_path], load_settings(tmp_path, {}))
    assert sorted((Path(d.path).name, d.code, d.cell) for d in result.diagnostics) == [("bad.ipynb", "TL001", 3)]


@pytest.mark.parametrize("cells", [
    COLAB,
    [("code", "import transformers\nx = 1\n"), ("markdown", "# m"), ("code", "\n\ny = 2"), ("code", "")],
    [("code", "  %%time\nx = 1\n")], [("code", "\n>>> x = 1\n")], [("code", "x = 1\n!ls\n")],
    [("code", "x = !ls\n")], [("code", "x?\n")], [("raw", "%%bash\n"), ("code", "x = 1")],
])
def test_program_without_layout_is_the_laid_out_program(cells):
    # a walked notebook read only for TL001 is compiled from its program made without the
    # layout when every code cell is plain Python: the same text as the layout's
    from trainlint.sources.notebook import Cell, _decoded, _program_of, layout

    text = notebook(cells)
    got = _decoded("nb.ipynb", text)
    assert not isinstance(got, Exception)
    laid = layout("nb.ipynb", [Cell(number=i, cell_type=k, source=s) for i, (k, s) in enumerate(got[1], start=1)])
    assert _program_of("nb.ipynb", got[1]) == laid.python_text


# -- framework command lines in notebooks ----------------------------------------------------

_CLI_LINE = ("sft --model_name_or_path m --dataset_name d --output_dir o "
             "--optim adamw_bnb_8bit --fsdp full_shard")


@pytest.mark.parametrize("line", [f"!trl {_CLI_LINE}", f"!llamafactory-cli train --stage {_CLI_LINE[4:]}",
                                  f"%%bash\ntrl {_CLI_LINE}"])
def test_a_framework_cli_line_in_a_notebook_is_read_as_in_a_script(tmp_path: Path, line: str):
    """A notebook whose only launch is ``!trl sft ...`` or ``!llamafactory-cli train ...`` (no
    python/torchrun/accelerate/deepspeed word anywhere) gets what the same line gets in a shell
    script: the notebook is read and its shell lines parsed."""
    (tmp_path / "nb.ipynb").write_text(notebook([("markdown", "# fine-tune"), ("code", line)]))
    (tmp_path / "run.sh").write_text(line.split("\n")[-1].lstrip("!") + "\n")
    found = {(d.path.rsplit("/", 1)[-1], d.code) for d in lint_folder(tmp_path).diagnostics}
    assert ("run.sh", "TL243") in found, found
    assert ("nb.ipynb", "TL243") in found, found


def test_the_notebook_launch_gate_knows_every_framework_cli():
    from trainlint.sources import notebook as nbmod
    from trainlint.sources import shell

    for cli in shell._CLIS:
        assert nbmod._LAUNCH_WORD.search(f"{cli} train x.yaml"), cli
        assert f"!{cli}" in nbmod.NOTEBOOK_MARKERS, cli
        assert cli in nbmod._TERMINAL_COMMANDS, cli  # a cell of ``trl sft ...`` without ``!``


def test_a_cell_of_terminal_commands_is_an_info_not_a_broken_program(tmp_path: Path):
    """Instructions that paste terminal commands into code cells (``gcloud compute ...``,
    ``curl ... | bash``, without ``!``) fail in the notebook, but the notebook is no broken
    training program: TL001 as info, saying how to run them there. A cell of broken Python
    stays an error, and the other cells are still read."""
    cells = [("code", "gcloud compute tpus tpu-vm create bert \\\n--zone=europe-west4-a"),
             ("code", "# set up\ncurl https://sdk.cloud.google.com | bash\nexec zsh -l"),
             ("code", "python3 -m notebook --allow-root --port=8080"),
             ("code", "from transformers import TrainingArguments\n"
                      "args = TrainingArguments(output_dir='o', torch.dtype=1)"),
             ("code", "python = 3 +"),  # a Python name, no command line
             ("code", "pip install transformers"),  # IPython's automagic: runs as is
             ("code", "# 24 GiB\nCUDA_VISIBLE_DEVICES=0 \\\nMAX_PIXELS=1003520 \\\nswift sft \\\n    --model m"),
             ("code", "NPROC_PER_NODE=4 swift sft --model m"),
             ("code", "swift export \\\n    --adapters out/ckpt"),
             ("code", "LR=1e-4 +")]  # Python: an upper-case name, then no command
    (tmp_path / "nb.ipynb").write_text(notebook(cells), encoding="utf-8")
    found = {d.cell: d for d in lint_folder(tmp_path).diagnostics if d.code == "TL001"}
    assert sorted(found) == [1, 2, 3, 4, 5, 7, 8, 9, 10], found
    for cell in (1, 2, 3, 7, 8, 9):
        assert found[cell].severity.value == "info" and "terminal commands" in found[cell].message, found[cell]
        assert "prefix its lines with `!`" in found[cell].message
    assert "`curl https://sdk.cloud.google.com | bash`" in found[2].message  # the comment skipped
    assert "`CUDA_VISIBLE_DEVICES=0 \\`" in found[7].message
    for cell in (4, 5, 10):
        assert found[cell].severity.value == "error" and found[cell].message.startswith("cannot parse Python"), found[cell]


def test_shell_lines_that_cannot_launch_are_not_parsed_and_the_notebook_is_the_same(monkeypatch):
    """A notebook's shell lines are parsed only when they may hold a launch (``shell.may_launch``)
    and their problems count only beside one: notebooks of install lines, launches (plain,
    wrapped, through a variable), ``python -m pip``, ``python -c`` and broken quoting read the
    same launches and problems as parsing every notebook's shell text."""
    import random

    from trainlint.sources import notebook as nbmod
    from trainlint.sources import shell

    lines = ["!pip install -q accelerate peft trl", "!python -m pip install -U deepspeed", "!python train.py --lr 1",
             "!accelerate launch --num_processes 2 train.py", "!accelerate config default", "!torchrun t.py",
             "%%bash\nPY=python3\n$PY t.py", "%%bash\nexport X=1\npip install trl", "!echo 'unterminated",
             "!git clone https://github.com/huggingface/trl", "!uv pip install --system trl", "!nohup python t.py &",
             "!python -c 'import trl; print(trl.__version__)'", "import trl\nprint(1)", "!trl sft --model_name_or_path m"]
    rng = random.Random(184)
    notebooks = [notebook([("code", "\n".join(rng.choice(lines) for _ in range(rng.randint(1, 3))))
                           for _ in range(rng.randint(1, 4))]) for _ in range(300)]

    def read(text):
        nb = nbmod.read_notebook("nb.ipynb", text)
        return repr(nb.launches), repr(nb.problems)

    gated = [read(t) for t in notebooks]
    skipped = sum(nbmod.read_notebook("nb.ipynb", t).shell is None for t in notebooks)
    parse_all = shell.parse_shell
    monkeypatch.setattr(shell, "may_launch", lambda text: True)
    monkeypatch.setattr(shell, "parse_shell", parse_all)
    assert [read(t) for t in notebooks] == gated
    assert skipped > 30 and sum(g[0] != "[]" for g in gated) > 150, skipped
