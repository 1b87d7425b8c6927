"""Issue 15 through the installed command: severity from the run's context, and a CLI that
never passes silently (usage errors with hints, empty runs said, pipes, colours, verify)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import commit_base, run_cli, trainlint_cmd, write_files

BERT = ("from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments\n"
        "model = AutoModelForSequenceClassification.from_pretrained('bert-base-uncased')\n")
LLAMA = ("from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
         "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n")


def _concise(tmp_path: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return run_cli("check", str(tmp_path), "--format", "concise", "--no-cache", *args, **kw)


def _codes(out: subprocess.CompletedProcess) -> list[str]:
    return [line.split(": ", 2)[1].split()[0] for line in out.stdout.splitlines() if ": TL" in line]


# -- 1. severity from context ------------------------------------------------------------------


def test_logging_steps_severity_follows_step_cost_and_is_silent_in_tests_and_smoke_runs(tmp_path):
    write_files(tmp_path, {"bert/train.py": BERT + "args = TrainingArguments(output_dir='o', logging_steps=1, "
                                                   "save_total_limit=2)\n",
                           "llama/train.py": LLAMA + "args = TrainingArguments(output_dir='o', logging_steps=1, "
                                                     "save_total_limit=2, bf16=True)\n"})
    bert = run_cli("check", str(tmp_path / "bert"), "--format", "json", "--select", "TL201", "--no-cache")
    [d] = json.loads(bert.stdout)
    assert bert.returncode == 1 and d["severity"] == "warning" and "109M-parameter model" in d["message"]
    llama = run_cli("check", str(tmp_path / "llama"), "--format", "json", "--select", "TL201", "--no-cache")
    [d] = json.loads(llama.stdout)
    assert llama.returncode == 0 and d["severity"] == "info" and "6.7B-parameter model" in d["message"]

    write_files(tmp_path, {"tests/test_train.py": BERT + "def test_it(tmp_path):\n"
                                                         "    TrainingArguments(output_dir='o', logging_steps=1)\n",
                           "smoke/train.py": BERT + "args = TrainingArguments(output_dir='o', logging_steps=1, "
                                                    "max_steps=3)\n"})
    for folder in ("tests", "smoke"):
        out = run_cli("check", str(tmp_path / folder), "--format", "concise", "--select", "TL201,TL224", "--no-cache")
        assert out.returncode == 0 and out.stdout == "", out.stdout


def test_save_total_limit_only_for_long_runs(tmp_path):
    write_files(tmp_path, {
        "long.py": "from transformers import Trainer, TrainingArguments\n"
                   "args = TrainingArguments(output_dir='o', max_steps=50000, save_steps=1000)\n"
                   "Trainer(model=model, args=args).train()\n",
        "loop.py": "from transformers import TrainingArguments\n"
                   "args = TrainingArguments(output_dir='o', max_steps=50000, save_steps=1000)\n"
                   "my_loop(model, args)\n",
        "short.py": "from transformers import Trainer, TrainingArguments\n"
                    "args = TrainingArguments(output_dir='o', max_steps=1000, save_steps=500)\n"
                    "Trainer(model=model, args=args).train()\n",
        "tests/test_ckpt.py": "from transformers import Trainer, TrainingArguments\n"
                              "args = TrainingArguments(output_dir='o', save_steps=1, num_train_epochs=9)\n"
                              "Trainer(model=model, args=args).train()\n"})
    out = _concise(tmp_path, "--select", "TL224")
    assert [Path(line.split(":")[0]).name for line in out.stdout.splitlines()] == ["long.py"], out.stdout
    assert "50 checkpoints" in out.stdout and out.returncode == 0  # info: advice, not failing


def test_overlap_comm_is_a_warning_only_when_memory_is_tight(tmp_path):
    write_files(tmp_path, {"ds.json": '{"train_micro_batch_size_per_gpu": 8, '
                                      '"zero_optimization": {"stage": 2, "overlap_comm": true}}\n'})
    for gpu, severity in ((None, "info"), ("RTX 4090", "warning"), ("H100", "info")):
        extra = ("--gpu", gpu) if gpu else ()
        out = run_cli("check", str(tmp_path), "--format", "json", "--select", "TL304", "--no-cache", *extra)
        [d] = json.loads(out.stdout)
        assert d["severity"] == severity and "9.0 GB" in d["message"], (gpu, d)


def test_same_value_yaml_duplicate_is_a_warning(tmp_path):
    write_files(tmp_path, {"same/accelerate.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\nnum_processes: 2\n",
                           "diff/accelerate.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\nnum_processes: 4\n"})
    same = json.loads(run_cli("check", str(tmp_path / "same"), "--format", "json", "--select", "TL003").stdout)
    diff = json.loads(run_cli("check", str(tmp_path / "diff"), "--format", "json", "--select", "TL003").stdout)
    assert [d["severity"] for d in same] == ["warning"] and [d["severity"] for d in diff] == ["error"]


def test_padding_max_length_only_on_training_tokenization(tmp_path):
    write_files(tmp_path, {"train.py": (
        "from transformers import AutoTokenizer, Trainer\n"
        "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')\n"
        "ds = ds.map(lambda b: tokenizer(b['text'], padding='max_length'), batched=True)\n"
        "trainer = Trainer(model=model, train_dataset=ds, processing_class=tokenizer)\n"
        "trainer.train()\n"
        "inputs = tokenizer(['a test'], padding='max_length', return_tensors='pt')\n")})
    out = _concise(tmp_path, "--select", "TL102")
    assert [line.split(":")[1] for line in out.stdout.splitlines()] == ["3"], out.stdout


def test_use_reentrant_advice_is_true_for_peft_under_zero3(tmp_path):
    write_files(tmp_path, {"ds.json": '{"zero_optimization": {"stage": 3}}\n', "train.py": (
        "from peft import LoraConfig, get_peft_model\n"
        "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
        "model = get_peft_model(AutoModelForCausalLM.from_pretrained('m'), LoraConfig(r=8))\n"
        "args = TrainingArguments(output_dir='o', gradient_checkpointing=True, deepspeed='ds.json')\n"
        "Trainer(model=model, args=args).train()\n")})
    out = run_cli("check", str(tmp_path), "--format", "json", "--select", "TL110", "--no-cache")
    [d] = json.loads(out.stdout)
    assert '"use_reentrant": True' in d["message"] and "False}" not in d["message"]
    assert d["fix"]["edits"][0]["content"].endswith('{"use_reentrant": True}')


# -- 2. nothing passes silently ----------------------------------------------------------------


def test_unknown_selectors_are_usage_errors_with_a_hint(tmp_path):
    write_files(tmp_path, {"train.py": BERT})
    for args, hint in ((("--select", "padding-maxlength"), "did you mean 'padding-max-length'"),
                       (("--ignore", "TL2O1"), "did you mean 'TL201'"),
                       (("--extend-select", "TL9"), "unknown rule code")):
        out = run_cli("check", str(tmp_path), *args)
        assert out.returncode == 2 and hint in out.stderr and "Traceback" not in out.stderr, out.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nselect = ["logging-steps-to-low"]\n')
    out = run_cli("check", str(tmp_path))
    assert out.returncode == 2 and "pyproject.toml" in out.stderr and "logging-steps-too-low" in out.stderr


def test_versions_invalid_is_a_usage_error_and_unknown_says_which_is_used(tmp_path):
    write_files(tmp_path, {"train.py": BERT})
    bad = run_cli("check", str(tmp_path), "--transformers-version", "banana")
    assert bad.returncode == 2 and "'banana' is not a version" in bad.stderr and "TL000" not in bad.stdout
    unknown = run_cli("check", str(tmp_path), "--transformers-version", "4.99.1", "--format", "concise")
    assert unknown.returncode in (0, 1) and "transformers 4.99.1 is not in trainlint's data" in unknown.stderr
    assert "checking against 4." in unknown.stderr and "TL000" not in unknown.stdout


def test_base_revision_must_exist(tmp_path):
    commit_base(tmp_path, {"train.py": BERT})
    out = run_cli("check", str(tmp_path), "--base", "nosuchrev")
    assert out.returncode == 2 and "--base nosuchrev: no such revision" in out.stderr
    assert run_cli("check", str(tmp_path), "--base", "HEAD", "--format", "concise").returncode in (0, 1)
    plain = tmp_path.parent / f"{tmp_path.name}-nogit"
    plain.mkdir()
    (plain / "train.py").write_text(BERT)
    out = run_cli("check", str(plain), "--base", "main")
    assert out.returncode == 2 and "not in a git work tree" in out.stderr


def test_runs_that_check_nothing_say_so(tmp_path):
    write_files(tmp_path, {"notes/readme.txt": "hello\n", "plain/util.py": "import os\n",
                           "venv/.venv/lib/site.py": "from transformers import TrainingArguments\n"})
    (tmp_path / "empty").mkdir()
    cases = {"empty": "no Python, shell, JSON or YAML files", "notes": "1 file skipped, not a kind trainlint reads",
             "notes/readme.txt": "1 file skipped", "plain": "1 file read, none holds TrainingArguments",
             "venv": "1 file skipped by .gitignore, `exclude` or a virtualenv"}
    for rel, why in cases.items():
        target = str(tmp_path / rel)
        text = run_cli("check", target, "--format", "text")
        assert text.returncode == 0 and "0 files checked" in text.stdout and why in text.stdout, text.stdout
        assert "All checks passed" not in text.stdout
        if rel in ("empty", "notes/readme.txt"):
            concise = run_cli("check", target)  # piped: concise; stdout stays findings only
            assert concise.returncode == 0 and concise.stdout == "" and why in concise.stderr
            as_json = run_cli("check", target, "--format", "json")
            assert as_json.returncode == 0 and json.loads(as_json.stdout) == []


def test_fix_on_folders_with_nothing_to_check_says_so_as_check_does(tmp_path):
    """`fix` prints the same "0 files checked: ..." reason as `check`, not "Fixed 0 findings in
    0 files", and writes nothing."""
    write_files(tmp_path, {"notes/readme.txt": "hello\n", "plain/util.py": "import os\n"})
    (tmp_path / "empty").mkdir()
    cases = {"empty": "no Python, shell, JSON or YAML files", "notes": "1 file skipped, not a kind trainlint reads",
             "plain": "1 file read, none holds TrainingArguments"}
    for rel, why in cases.items():
        target = str(tmp_path / rel)
        checked = run_cli("check", target)
        for args in (("fix", target), ("fix", "--apply", target), ("fix", "--diff", target)):
            out = run_cli(*args)
            assert out.returncode == 0 and out.stdout == "", (args, out.stdout, out.stderr)
            assert "0 files checked" in out.stderr and why in out.stderr, (args, out.stderr)
            assert out.stderr == checked.stderr, (args, out.stderr, checked.stderr)
            assert "Fixed 0" not in out.stderr and "Would fix 0" not in out.stderr
    assert (tmp_path / "plain/util.py").read_text() == "import os\n"
    # a folder that holds a training file keeps the usual summary
    write_files(tmp_path, {"real/train.py": BERT})
    out = run_cli("fix", str(tmp_path / "real"))
    assert "0 files checked" not in out.stderr and "fix" in out.stderr.lower(), out.stderr


def test_fix_explains_stdin_and_missing_files(tmp_path):
    src = BERT + "args = TrainingArguments(output_dir='o', eval_strategy='steps', logging_steps=1, save_total_limit=2)\n"
    out = run_cli("fix", "-", "--stdin-filename", "train.py", "--no-cache", input=src, cwd=tmp_path)
    assert out.returncode == 1 and out.stdout == src.replace("logging_steps=1", "logging_steps=10")
    assert "Would fix 1 finding" in out.stderr
    diff = run_cli("fix", "-", "--stdin-filename", "train.py", "--diff", input=src, cwd=tmp_path)
    assert diff.stdout.startswith("--- a/train.py")
    missing = run_cli("fix", str(tmp_path / "missing.py"))
    assert missing.returncode == 1 and "TL002 [unreadable-file] no such file or directory" in missing.stderr
    assert run_cli("fix", "-", "--apply", input=src, cwd=tmp_path).returncode == 2


def test_exit_code_does_not_depend_on_a_closed_pipe(tmp_path):
    for i in range(40):
        (tmp_path / f"train_{i}.py").write_text(BERT + "args = TrainingArguments(output_dir='o', logging_steps=1)\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    codes = set()
    for _ in range(3):
        res = subprocess.run(["bash", "-c", f'"{trainlint_cmd()}" check "{tmp_path}" --no-cache | head -1 >/dev/null; '
                                            'exit ${PIPESTATUS[0]}'], env=env, capture_output=True, text=True)
        codes.add(res.returncode)
    assert codes == {1}, codes


def test_statistics_marks_safe_and_unsafe_like_the_findings(tmp_path):
    write_files(tmp_path, {"train.py": BERT + "args = TrainingArguments(output_dir='o', eval_strategy='steps', "
                                              "logging_steps=1, max_steps=90000)\n"
                                              "Trainer(model=model, args=args).train()\n"})
    out = run_cli("check", str(tmp_path), "--statistics", "--no-cache")
    lines = {line.split("\t")[1]: line for line in out.stdout.splitlines()}
    assert "[*] logging-steps-too-low" in lines["TL201"]  # a safe fix
    assert "[-] save-total-limit-missing" in lines["TL224"]  # unsafe only: needs --unsafe-fixes
    text = run_cli("check", str(tmp_path), "--statistics", "--format", "text", "--no-cache").stdout
    assert "[-] save-total-limit-missing" in text and "[*] logging-steps-too-low" in text
    stats = {s["code"]: s for s in json.loads(run_cli("check", str(tmp_path), "--statistics", "--format", "json",
                                                       "--no-cache").stdout)}
    assert (stats["TL201"]["safe_fixes"], stats["TL201"]["unsafe_fixes"]) == (1, 0)
    assert (stats["TL224"]["safe_fixes"], stats["TL224"]["unsafe_fixes"]) == (0, 1)


def test_no_color_and_force_color(tmp_path):
    write_files(tmp_path, {"train.py": BERT + "args = TrainingArguments(output_dir='o', logging_steps=1)\n"})
    forced = run_cli("check", str(tmp_path), "--format", "text", env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert "\x1b[" in forced.stdout
    plain = run_cli("check", str(tmp_path), "--format", "text", env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[" not in plain.stdout and "TL201" in plain.stdout


def test_gpu_auto_without_nvidia_smi_says_hardware_rules_are_off(tmp_path):
    write_files(tmp_path, {"train.py": BERT + "args = TrainingArguments(output_dir='o', fp16=True)\n"})
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("git", "bash", "sh"):
        if shutil.which(tool):
            os.symlink(shutil.which(tool), bindir / tool)
    out = run_cli("check", str(tmp_path / "train.py"), "--gpu", "auto", env={"PATH": str(bindir)})
    assert "--gpu auto: nvidia-smi is not on PATH" in out.stderr and "hardware rules are off" in out.stderr


def test_unknown_gpu_suggests_the_nearest_names(tmp_path):
    write_files(tmp_path, {"train.py": BERT})
    out = run_cli("check", str(tmp_path), "--gpu", "A10O")
    assert out.returncode == 2 and "did you mean 'A100-80GB'" in out.stderr


@pytest.mark.smoke
def test_verify_when_the_original_already_fails(tmp_path):
    (tmp_path / "train.py").write_text(
        "from transformers import TrainingArguments\n"
        # an evaluation every step (eval_steps falls back to logging_steps): TL201 has a fix
        "args = TrainingArguments(output_dir='o', logging_steps=1, eval_strategy='steps')\n"
        "raise OSError(\"We couldn't connect to 'https://huggingface.co' to load the files\")\n")
    out = run_cli("verify", str(tmp_path / "train.py"), "--cpu", "--json", str(tmp_path / "r.json"),
                  env={"TMPDIR": str(tmp_path)})
    assert out.returncode == 2, out.stdout + out.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"] == "original-fails"
    assert "verdict: original-fails" in out.stdout and "the original run already fails" in out.stdout
    finite = next(line for line in out.stdout.splitlines() if "loss finite" in line)
    assert "True" not in finite
    assert out.stdout.count("We couldn't connect") + out.stderr.count("We couldn't connect") == 2  # once a run


# -- 3. output people can read -----------------------------------------------------------------


def test_rules_listing_is_one_line_per_rule_when_piped_and_json_always():
    from trainlint.rules import all_rules

    out = run_cli("rules")
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) == len(all_rules())
    assert all(line.startswith("TL") for line in lines) and not any(ch in out.stdout for ch in "┃│━")
    assert "padding-max-length" in next(line for line in lines if line.startswith("TL102"))
    data = json.loads(run_cli("rules", "--format", "json").stdout)
    assert {d["code"] for d in data} == {r.code for r in all_rules()}
    hint = run_cli("rule", "padding-maxlength")
    assert hint.returncode == 2 and "did you mean 'padding-max-length'" in hint.stderr


def test_gpus_lists_memory_and_compute_capability():
    out = run_cli("gpus")
    row = next(line for line in out.stdout.splitlines() if line.startswith("A100-80GB "))
    assert out.returncode == 0 and "80 GiB" in row and "8.0" in row and "bf16" in row
    data = {g["name"]: g for g in json.loads(run_cli("gpus", "--format", "json").stdout)}
    assert data["H100-SXM"]["compute_capability"] == "9.0" and data["T4"]["bf16"] is False


def test_gpu_family_name_says_which_memory_it_assumed(tmp_path):
    write_files(tmp_path, {"run.sh": "#!/bin/bash\n#SBATCH --gres=gpu:a100_40gb:2\ntorchrun --nproc_per_node 2 "
                                     "train.py --output_dir o\n",
                           "train.py": BERT + "from transformers import HfArgumentParser\n"
                                              "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"})
    out = run_cli("check", str(tmp_path), "--gpu", "A100", "--no-cache")
    assert "--gpu A100 was taken as A100-80GB (80 GiB" in out.stderr and "names A100-40GB" in out.stderr
    exact = run_cli("check", str(tmp_path), "--gpu", "A100-40GB", "--no-cache")
    assert "was taken as" not in exact.stderr


def test_estimate_and_the_oom_rule_share_one_source(tmp_path):
    write_files(tmp_path, {
        "run.sh": "torchrun --nproc_per_node 2 train.py --per_device_train_batch_size 1\n"
                  "torchrun --nproc_per_node 4 train.py --per_device_train_batch_size 1\n",
        "train.py": LLAMA + "from transformers import HfArgumentParser\n"
                            "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
                            "model.gradient_checkpointing_enable()\n"})
    est = json.loads(run_cli("estimate", str(tmp_path), "--gpu", "A100-40GB", "--format", "json",
                             "--transformers-version", "4.57.1").stdout)
    launches = [e["launch"] for e in est["estimates"]]
    assert launches == ["run.sh:1: torchrun --nproc_per_node 2 train.py --per_device_train_batch_size 1",
                        "run.sh:2: torchrun --nproc_per_node 4 train.py --per_device_train_batch_size 1"]
    findings = json.loads(run_cli("check", str(tmp_path), "--gpu", "A100-40GB", "--select", "TL550", "--format",
                                  "json", "--transformers-version", "4.57.1", "--no-cache").stdout)
    totals = sorted(round((e["per_gpu"]["total"] + e["cuda_context"]) / 2**30, 1) for e in est["estimates"])
    said = sorted(float(d["message"].split("estimated ")[1].split(" GiB")[0]) for d in findings)
    assert said and set(said) <= set(totals), (said, totals)
    v4 = json.loads(run_cli("estimate", str(tmp_path), "--format", "json", "--transformers-version", "4.57.1").stdout)
    v5 = json.loads(run_cli("estimate", str(tmp_path), "--format", "json", "--transformers-version", "5.24.0").stdout)
    assert any("defaults to float32 in transformers 4" in n for n in v4["estimates"][0]["provenance"])
    assert any("dtype='auto' in transformers 5" in n for n in v5["estimates"][0]["provenance"])
    assert v5["estimates"][0]["per_gpu"]["weights"] < v4["estimates"][0]["per_gpu"]["weights"]
    text = " ".join(run_cli("estimate", str(tmp_path)).stdout.split())  # the text report wraps long lines
    assert "launched by run.sh:1:" in text and "launched by run.sh:2:" in text


def test_user_facing_docs_cite_public_sources_only():
    root = Path(__file__).resolve().parents[1]
    pages = list((root / "rules").glob("*.md"))
    assert len(pages) > 100
    for page in [*pages, root / "README.md"]:
        text = page.read_text(encoding="utf-8")
        for internal in ("pitfalls catalog", "design.md", "../seeds/", "Fix is always available"):
            assert internal not in text, (page.name, internal)
    shown = run_cli("rule", "TL201").stdout
    assert "## References" in shown and "catalog" not in shown


def test_disable_next_silences_one_command_of_a_multiline_launch(tmp_path):
    write_files(tmp_path, {
        "run.sh": "#!/bin/bash\n# trainlint: disable-next=TL201\ntorchrun --nproc_per_node 2 train.py \\\n"
                  "  --output_dir a \\\n  --logging_steps 1\n\ntorchrun --nproc_per_node 2 train.py \\\n"
                  "  --output_dir b \\\n  --logging_steps 1\n",
        "train.py": BERT + "from transformers import HfArgumentParser\n"
                           "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n",
        "accelerate.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\n# trainlint: disable-next=TL003\n"
                           "num_processes: 2\n"})
    out = _concise(tmp_path, "--select", "TL201,TL003")
    assert [line.split(":")[0:2] for line in out.stdout.splitlines()] == [[str(tmp_path / "run.sh"), "9"]], out.stdout
