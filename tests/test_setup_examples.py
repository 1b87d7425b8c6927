"""The shipped multi-file examples (glue_cli, flan_t5_multigpu) as linked setups: what is
found, with both locations, and what ``fix --apply`` changes (only the flagged lines)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import fix_folder, lint_folder, write_files

from trainlint.engine import lint
from trainlint.resolve import build_setups, read_workspace
from trainlint.setup import ARGSFILE, FLAG

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
A100 = {"gpu": "A100"}


@pytest.fixture
def glue(tmp_path):
    dst = tmp_path / "glue_cli"
    shutil.copytree(EXAMPLES / "glue_cli", dst)
    return dst


@pytest.fixture
def flan(tmp_path):
    dst = tmp_path / "flan_t5_multigpu"
    shutil.copytree(EXAMPLES / "flan_t5_multigpu", dst)
    return dst


def _by(result, code, name):
    return [d for d in result.diagnostics if d.code == code and Path(d.path).name == name]


def test_glue_launch_line_is_one_setup_with_flag_site(glue):
    from helpers import settings_for

    settings = settings_for(glue, options=A100)
    ws = read_workspace([glue], settings, {})
    setups = build_setups(ws, settings)
    launch = next(s for s in setups if "launch" in s.extra)
    assert [Path(p).name for p in launch.files] == ["run.sh", "run_glue.py", "ds_zero1.json"]
    assert launch.world_size.value == 2 and launch.world_size.span.line == 3
    (site,) = launch.sites
    assert site.class_name == "TrainingArguments"
    bs = site.get("per_device_train_batch_size")
    assert (bs.value, bs.origin, bs.span.line) == (8, FLAG, 8)
    assert site.get("fp16").value is True and site.get("load_best_model_at_end").value is True
    args = next(s for s in setups if "args_file" in s.extra)
    assert args.sites[0].get("logging_steps").origin == ARGSFILE
    # the script linked by the launch line gets no single-file setup of its own
    assert sum(1 for s in setups for pf in s.scripts if pf.path.endswith("run_glue.py")) == 1


def test_glue_findings(glue):
    r = lint_folder(glue, options=A100)
    (fp16,) = _by(r, "TL501", "run.sh")
    assert fp16.line == 15 and "--fp16" in fp16.message
    (logging,) = _by(r, "TL201", "run.sh")
    assert logging.line == 14
    (mismatch,) = _by(r, "TL301", "ds_zero1.json")
    assert mismatch.line == 4
    assert mismatch.message.startswith(
        "micro batch 16 in ds_zero1.json:4 disagrees with --per_device_train_batch_size 8 in run.sh:8")
    assert [(Path(x.path).name, x.line) for x in mismatch.related] == [("run.sh", 8)]
    assert mismatch.fix is not None and mismatch.fix.applicability == "safe"
    (best,) = _by(r, "TL505", "run.sh")
    assert "--evaluation_strategy epoch in run.sh:11" in best.message and "--save_strategy steps in run.sh:12" in best.message
    (both,) = _by(r, "TL507", "args.json")
    assert both.severity.value == "error" and both.line == 11
    (args_logging,) = _by(r, "TL201", "args.json")
    assert args_logging.line == 10
    assert not [d for d in r.diagnostics if d.code == "TL000"]


def test_flan_findings(flan):
    r = lint_folder(flan, options=A100)
    (evalb,) = _by(r, "TL202", "train.py")
    assert evalb.line == 42 and "per_device_eval_batch_size=50" in evalb.message
    (overlap,) = _by(r, "TL304", "ds_config.json")
    assert overlap.line == 30 and "3.6 GB" in overlap.message and "4.5 x (2e8 + 2e8) x 2 bytes" in overlap.message
    (logging,) = _by(r, "TL201", "train.py")
    assert "4 GPUs" in logging.message  # world size from the accelerate config's num_processes
    (offload,) = _by(r, "TL308", "ds_config.json")
    assert offload.line == 25 and "google/flan-t5-large" in offload.message and "ZeRO-2 on 4 GPUs" in offload.message
    assert [(Path(x.path).name, x.line) for x in offload.related] == [("train.py", 20)]
    assert offload.severity.value == "info" and offload.fix.applicability == "unsafe"
    # bf16 "auto" with the default accumulation 1: no TL315; no other D/C rule applies
    assert not [d for d in r.diagnostics if d.code in ("TL000", "TL004", "TL301") or
                ("TL309" <= d.code <= "TL349") or ("TL407" <= d.code <= "TL449")]


def _changed_lines(before: str, after: str) -> dict[int, str]:
    a, b = before.splitlines(), after.splitlines()
    assert len(a) == len(b), "fixes in these examples keep the line count"
    return {i + 1: y for i, (x, y) in enumerate(zip(a, b)) if x != y}


def test_glue_fix_changes_only_flagged_spans(glue):
    originals = {p.name: p.read_text() for p in glue.iterdir()}
    outcome = fix_folder(glue, unsafe=True, options=A100)
    changed = {Path(p).name: _changed_lines(originals[Path(p).name], t) for p, t in outcome.fixed.items()}
    assert changed == {
        "run.sh": {11: "  --eval_strategy epoch \\",  # TL601 (target: the installed transformers 5.x)
                   12: "  --save_strategy epoch --save_steps 500 \\", 15: "  --bf16 \\"},
        "ds_zero1.json": {4: '  "train_micro_batch_size_per_gpu": "auto",'},
        "args.json": {11: '  "fp16": false,'},
    }


def test_flan_fix_changes_only_flagged_spans(flan):
    originals = {p.name: p.read_text() for p in flan.iterdir()}
    # TL6 migration fixes delete overwrite_output_dir (a line): checked in test_migration_examples
    outcome = fix_folder(flan, unsafe=True, options={**A100, "ignore": ["TL6"]})
    changed = {Path(p).name: _changed_lines(originals[Path(p).name], t) for p, t in outcome.fixed.items()}
    assert 39 not in changed["train.py"], "TL201: no fix (per-step logs may be the author's choice)"
    assert changed["train.py"][42] == "    per_device_eval_batch_size=8,"
    # TL308 (unsafe): flan-t5-large's model states fit on an A100-80GB without the CPU offload
    assert changed["ds_config.json"] == {25: '        "device": "none",'}
    assert "accelerate_config.yaml" not in changed


def test_fp16_fix_switches_flag_and_deepspeed_together(tmp_path):
    write_files(tmp_path, {
        "run.sh": "torchrun --nproc_per_node 2 run.py \\\n  --output_dir out \\\n  --fp16 \\\n  --deepspeed ds.json\n",
        "run.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                  "parser = HfArgumentParser((TrainingArguments,))\n",
        "ds.json": '{\n  "fp16": {"enabled": true},\n  "train_micro_batch_size_per_gpu": "auto"\n}\n',
    })
    outcome = fix_folder(tmp_path, unsafe=True, select=["TL501"], options=A100)
    assert outcome.fixed[str(tmp_path / "run.sh")].splitlines()[2] == "  --bf16 \\"
    assert outcome.fixed[str(tmp_path / "ds.json")] == \
        '{\n  "bf16": {"enabled": true},\n  "train_micro_batch_size_per_gpu": "auto"\n}\n'


def test_argparse_default_links_deepspeed_and_flag_overrides(tmp_path):
    script = ("import argparse\nfrom transformers import TrainingArguments\n"
              "parser = argparse.ArgumentParser()\n"
              "parser.add_argument('--deepspeed', default='ds_default.json')\n"
              "args = parser.parse_args()\n"
              "targs = TrainingArguments(output_dir='o', per_device_train_batch_size=8, deepspeed=args.deepspeed)\n")
    ds = '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 1}}\n'
    write_files(tmp_path, {"train.py": script, "ds_default.json": ds})
    r = lint_folder(tmp_path)
    (d,) = [d for d in r.diagnostics if d.code == "TL301"]
    assert "ds_default.json:1" in d.message and "per_device_train_batch_size=8 in train.py:6" in d.message
    # a launch line overriding --deepspeed with a missing file: TL004 at the flag
    write_files(tmp_path, {"run.sh": "torchrun --nproc_per_node 2 train.py --deepspeed other.json\n"})
    r = lint_folder(tmp_path)
    missing = [d for d in r.diagnostics if d.code == "TL004"]
    assert [(Path(d.path).name, d.line, d.column) for d in missing] == [("run.sh", 1, 50)]


def test_args_file_as_only_argument(tmp_path):
    write_files(tmp_path, {
        "run.sh": "python run.py cfg/args.json\n",
        "run.py": "from transformers import HfArgumentParser, Seq2SeqTrainingArguments\n"
                  "parser = HfArgumentParser((Seq2SeqTrainingArguments,))\n",
        "cfg/args.json": '{"output_dir": "o", "logging_steps": 1, "predict_with_generate": true,'
                         ' "per_device_eval_batch_size": 64}\n',
    })
    r = lint_folder(tmp_path)
    codes = {(d.code, Path(d.path).name) for d in r.diagnostics}
    assert ("TL201", "args.json") in codes and ("TL202", "args.json") in codes


def test_invalid_config_and_duplicate_key_are_findings(tmp_path):
    write_files(tmp_path, {"ds.json": '{"zero_optimization": {"stage": 2,, "x": 1}}\n',
                           "ds2.json": '{"train_micro_batch_size_per_gpu": 8,\n "train_micro_batch_size_per_gpu": 16,'
                                       ' "zero_optimization": {"stage": 1}}\n'})
    r = lint_folder(tmp_path)
    found = sorted((Path(d.path).name, d.line) for d in r.diagnostics if d.code == "TL003")
    assert found == [("ds.json", 1), ("ds2.json", 2)]
    dup = next(d for d in r.diagnostics if d.code == "TL003" and d.path.endswith("ds2.json"))
    assert dup.related and dup.related[0].line == 1


def test_markdown_only_when_explicit(tmp_path):
    md = "# Train\n```bash\nCUDA_VISIBLE_DEVICES=0,1 python train.py --output_dir o\n```\n"
    write_files(tmp_path, {"README.md": md, "train.py": "from transformers import Trainer\n"})
    assert not [d for d in lint_folder(tmp_path).diagnostics if d.code == "TL406"]
    from helpers import settings_for

    r = lint([tmp_path / "README.md"], settings_for(tmp_path))
    (d,) = [d for d in r.diagnostics if d.code == "TL406"]
    assert Path(d.path).name == "README.md" and d.line == 3


def test_negated_bool_flags_become_false_values(tmp_path):
    """HfArgumentParser adds --no_X for bool fields whose default is True; --no_cuda is a
    field of its own (4.x) and stays as written."""
    from trainlint.config import load_settings
    from trainlint.resolve import build_setups, read_workspace

    (tmp_path / "run.sh").write_text("torchrun --nproc_per_node 2 train.py --output_dir o "
                                     "--no_dataloader_pin_memory --no_cuda --no_such_flag\n")
    (tmp_path / "train.py").write_text("from transformers import HfArgumentParser, TrainingArguments\n"
                                       "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n")
    settings = load_settings(tmp_path)
    ws = read_workspace([tmp_path], settings, {})
    [site] = [s for setup in build_setups(ws, settings) for s in setup.sites]
    pin = site.get("dataloader_pin_memory")
    assert pin is not None and pin.value is False and pin.key_text == "--no_dataloader_pin_memory"
    assert site.get("no_dataloader_pin_memory") is None
    assert site.get("no_cuda") is not None and site.get("no_cuda").value is True
    assert site.get("no_such_flag") is not None  # not a negated field: kept for unknown-argument


def test_launch_script_paths_resolve_from_the_repository_root(tmp_path):
    """`bash scripts/train.sh` run from the repository root names `src/train.py`: found in the
    folder above the script (up to the folder with .git); a path found nowhere is TL004 with
    the places looked in."""
    from trainlint.config import load_settings
    from trainlint.engine import lint

    (tmp_path / ".git").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "scripts" / "train.sh").write_text(
        "torchrun --nproc_per_node 4 src/train.py --output_dir o --logging_steps 1\n"
        "python src/missing.py\n")
    (tmp_path / "src" / "train.py").write_text(
        "from transformers import HfArgumentParser, TrainingArguments\n"
        "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n")
    result = lint([tmp_path / "scripts"], load_settings(tmp_path), jobs=1, cache=False)
    by_code = {}
    for d in result.diagnostics:
        by_code.setdefault(d.code, []).append(d)
    assert "TL201" in by_code and by_code["TL201"][0].path.endswith("train.sh")  # linked to src/train.py
    [missing] = by_code["TL004"]
    assert "'src/missing.py'" in missing.message and "1 folder above" in missing.message


def test_without_git_paths_resolve_up_to_the_working_directory(tmp_path, monkeypatch):
    """A tree exported without ``.git`` (``git archive``, a downloaded release): a launch script
    two folders below the project names ``pkg/train/t.py`` and ``ds.json`` of the project's
    folder. They are found by climbing to the working directory, not reported missing; nothing
    above the working directory is searched."""
    from trainlint.config import load_settings
    from trainlint.engine import lint

    launch = ("torchrun --nproc_per_node 8 pkg/train/t.py \\\n  --output_dir out \\\n  --logging_steps 1 \\\n"
              "  --deepspeed ds.json\n")
    write_files(tmp_path, {
        "proj/shell/grp/run.sh": launch,
        "proj/ds.json": '{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": "auto"}\n',
        "proj/pkg/train/t.py": ("from transformers import HfArgumentParser, TrainingArguments\n"
                                "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"),
        "elsewhere.py": "",
    })
    monkeypatch.chdir(tmp_path)
    result = lint([Path("proj")], load_settings(tmp_path), jobs=1, cache=False)
    codes = [d.code for d in result.diagnostics]
    assert "TL004" not in codes, [d.message for d in result.diagnostics if d.code == "TL004"]
    assert "proj/ds.json" in result.files and "proj/pkg/train/t.py" in result.files
    assert any(d.code == "TL201" and "through HfArgumentParser in t.py" in d.message for d in result.diagnostics)
    # run from inside the project: the folder above it is not searched
    (tmp_path / "proj" / "ds.json").rename(tmp_path / "ds.json")
    monkeypatch.chdir(tmp_path / "proj")
    result = lint([Path(".")], load_settings(tmp_path / "proj"), jobs=1, cache=False)
    assert any(d.code == "TL004" and "'ds.json'" in d.message for d in result.diagnostics)
