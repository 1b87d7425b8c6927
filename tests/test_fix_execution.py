"""Every safe fix is proven by running what it produces on the installed libraries.

* Generic proof (``fix_proof.prove_files``), for every flagged case of every rule with a fix:
  the fixed TrainingArguments/TRL configs are constructed, args files and launch lines go
  through ``HfArgumentParser``, DeepSpeed configs through transformers'
  ``HfTrainerDeepSpeedConfig.trainer_config_process``, accelerate configs through accelerate's
  ``load_config_from_file``.
* Fixes of script code are run: the fixed script is executed with a tiny tokenizer built here
  with the ``tokenizers`` library and tiny models from a config (no download): the tokenizer
  call with the chosen collator on a small batch (and the loss compared with the original),
  the renamed method called with its keywords, the Trainer built with the renamed keyword.

``test_every_safe_fix_kind_is_proven`` fails when a rule offers a safe fix that neither path
proves: such a fix must be made unsafe or removed.
"""

from __future__ import annotations

import functools
import math
import runpy
import textwrap
import warnings
from pathlib import Path

import pytest
from fix_proof import process_deepspeed, prove_files
from helpers import fix_folder, write_files

from trainlint.rules import all_rules, get_rule

warnings.filterwarnings("ignore")

FIXING_RULES = [r for r in all_rules() if r.fix_safety != "none"]
FLAGGED = [(r, i, c) for r in FIXING_RULES for i, c in enumerate(r.cases) if c.flags]

# rules whose fixes are proven by running the fixed script below (not by the generic path)
RUN_PROOFS = {
    "TL101": "test_device_move_removal_runs_with_the_same_loss",
    "TL102": "test_padding_fix_*",
    "TL103": "test_device_map_removal_trains_under_two_processes",
    "TL110": "test_rename_and_use_reentrant_compose_and_run",
    "TL605": "test_processing_class_rename_builds_the_trainer",
    "TL606": "test_interval_strategy_import_runs",
    "TL607": "test_from_pretrained_renames_load",
    "TL608": "test_from_pretrained_renames_load",
    "TL609": "test_rename_and_use_reentrant_compose_and_run",
    "TL612": "test_hub_auth_keyword_fix_loads",
}


def _fixed_files(tmp_path: Path, rule, case) -> tuple[dict[str, str], dict[str, str]] | None:
    """(texts after the fix, texts before) of the case's files."""
    files = case.all_files()
    write_files(tmp_path, files)
    out = fix_folder(tmp_path, unsafe=True, select=[rule.code], options=case.options,
                     rule_options={rule.name: case.rule_options} if case.rule_options else None)
    if not out.fixed:
        return None
    before = {str(tmp_path / k): v for k, v in files.items()}
    return {**before, **out.fixed}, before


def _other_major(case) -> str | None:
    """The case's target transformers when it is another major release than the installed
    one: the installed library cannot construct what that target accepts (a 4.x field removed
    in 5.x), so such a fix is proven only where its target is installed."""
    from importlib.metadata import version

    target = (case.options or {}).get("transformers_version")
    installed = version("transformers")
    if target and target.split(".")[0] != installed.split(".")[0]:
        return f"the fix targets transformers {target}; {installed} is installed"
    return None


def _import_target_absent(rule, case) -> str | None:
    """TL611 moves an import to where the case's target TRL/peft release has it; when the data
    read from the released wheels says the installed release has no such module (trl 1.16 has
    no ``trl.experimental.bco``: the BCO trainer is gone), the fix is proven only where a release
    that has it is installed. The data itself is checked against the installed package below
    (``test_moved_import_data_matches_the_installed_package``)."""
    if rule.code != "TL611":
        return None
    from importlib.metadata import PackageNotFoundError, version

    from trainlint.rules.migration.removed_import import exports_at

    for pkg in ("trl", "peft"):
        target = (case.options or {}).get(f"{pkg}_version")
        if not target:
            continue
        try:
            installed = version(pkg)
        except PackageNotFoundError:
            return f"{pkg} is not installed"
        fixed = case.fixed or ""
        for line in fixed.splitlines():
            if line.startswith(f"from {pkg}") and " import " in line:
                module, _, names = line[len("from "):].partition(" import ")
                for name in (n.strip(" ()").split(" as ")[0] for n in names.split(",")):
                    if exports_at(pkg, name, module, installed) is False:
                        return (f"the fix targets {pkg} {target}, which has `from {module} import {name}`; "
                                f"installed {pkg} {installed} has no such import: proven only where it is installed")
    return None


@functools.lru_cache(maxsize=1)
def _generic_proofs() -> dict[str, list[str]]:
    import tempfile

    proved: dict[str, list[str]] = {}
    for rule, i, case in FLAGGED:
        if _other_major(case) or _import_target_absent(rule, case):
            continue
        with tempfile.TemporaryDirectory() as d:
            got = _fixed_files(Path(d), rule, case)
            if got is None:
                continue
            what = prove_files(got[0], Path(d), originals=got[1])
            if what:
                proved.setdefault(rule.code, []).extend(what)
    return proved


@pytest.mark.parametrize("rule,index,case", FLAGGED, ids=[f"{r.code}-{i}" for r, i, _ in FLAGGED])
def test_fixed_configs_are_accepted_by_the_library(rule, index, case, tmp_path):
    if _other_major(case):
        pytest.skip(_other_major(case))
    if _import_target_absent(rule, case):
        pytest.skip(_import_target_absent(rule, case))
    got = _fixed_files(tmp_path, rule, case)
    if got is None:
        pytest.skip("no fix in this case")
    prove_files(got[0], tmp_path, originals=got[1])  # raises when the library refuses the fixed text


def test_every_safe_fix_kind_is_proven():
    proved = set(_generic_proofs()) | set(RUN_PROOFS)
    unproven = [f"{r.code} {r.name}" for r in FIXING_RULES if r.fix_safety == "safe" and r.code not in proved]
    assert not unproven, f"safe fixes without a test that runs the fixed result: {unproven}"


def test_the_deepspeed_proof_can_fail(tmp_path):
    """The DeepSpeed path refuses a config that disagrees with TrainingArguments (so a wrong
    TL301 fix would fail the proof)."""
    from fix_proof import construct

    args = construct("TrainingArguments", {"per_device_train_batch_size": 8}, tmp_path / "o")
    with pytest.raises(ValueError, match="mismatch"):
        process_deepspeed({"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}, args,
                          tmp_path / "stub")
    process_deepspeed({"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}, args,
                      tmp_path / "stub")


# -- running fixed scripts ----------------------------------------------------------------------

WORDS = ("the a cat dog sat on mat ran fast slow big small red blue good bad movie film great awful "
         "was is it this").split()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A word-level tokenizer built with ``tokenizers``, a tiny GPT-2 and a tiny BERT
    classifier, saved locally so scripts load them with ``from_pretrained``."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (BertConfig, BertForSequenceClassification, GPT2Config, GPT2LMHeadModel,
                              PreTrainedTokenizerFast)

    root = tmp_path_factory.mktemp("tiny")
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[BOS]", "[EOS]", *WORDS])}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                                  sep_token="[SEP]", bos_token="[BOS]", eos_token="[EOS]")
    tok.save_pretrained(root / "tok")
    GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_embd=16, n_layer=2, n_head=2, n_positions=64,
                               pad_token_id=0, bos_token_id=4, eos_token_id=5)).save_pretrained(root / "gpt")
    BertForSequenceClassification(BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1,
                                             num_attention_heads=2, intermediate_size=32, num_labels=3,
                                             max_position_embeddings=64, pad_token_id=0)).save_pretrained(root / "bert")
    return {"TOK": str(root / "tok"), "GPT": str(root / "gpt"), "BERT": str(root / "bert"), "OUT": str(root / "out")}


DATA = '''
from datasets import Dataset
raw = Dataset.from_dict({"text": ["the cat sat", "a dog ran fast on the mat", "good movie",
                                  "the big red dog sat on a small blue mat"], "label": [0, 1, 2, 1]})
'''
LOSS = '''
model.eval()
batch = next(iter(trainer.get_train_dataloader()))
RESULT = float(trainer.compute_loss(model, batch))
'''


def _script(body: str, tiny: dict[str, str], tail: str = LOSS) -> str:
    text = textwrap.dedent(body).strip("\n") + "\n" + tail.lstrip("\n")
    for k, v in tiny.items():
        text = text.replace("{" + k + "}", v)
    return text


def _fix_and_run(tmp_path: Path, text: str, *, unsafe: bool = False, select=None) -> tuple[str, dict, dict]:
    """(fixed text, globals after running the original, globals after running the fixed)."""
    orig = tmp_path / "orig" / "train.py"
    work = tmp_path / "work" / "train.py"
    write_files(tmp_path, {"orig/train.py": text, "work/train.py": text})
    out = fix_folder(work.parent, unsafe=unsafe, select=select, options={"transformers_version": "5.24.0"})
    fixed = out.fixed.get(str(work))
    assert fixed is not None, "no fix applied"
    work.write_text(fixed)
    return fixed, runpy.run_path(str(orig)), runpy.run_path(str(work))


ARGS = 'args = TrainingArguments(output_dir="{OUT}", per_device_train_batch_size=4, report_to="none", use_cpu=True)\n'


def test_padding_fix_classifier_without_labels_keeps_the_loss(tmp_path, tiny):
    text = _script(DATA + '''
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments
tokenizer = AutoTokenizer.from_pretrained("{TOK}")
model = AutoModelForSequenceClassification.from_pretrained("{BERT}")
def tokenize(batch):
    return tokenizer(batch["text"], padding="max_length", truncation=True, max_length=16)
ds = raw.map(tokenize, batched=True)
''' + ARGS + '''
trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=default_data_collator)
'''.replace("data_collator=default_data_collator", "processing_class=tokenizer"), tiny)
    fixed, before, after = _fix_and_run(tmp_path, text, select=["TL102"])
    assert 'padding="max_length"' not in fixed and "DataCollatorForSeq2Seq" not in fixed
    batch = next(iter(after["trainer"].get_train_dataloader()))
    assert batch["input_ids"].shape[1] < 16, "padded per batch, not to max_length"
    assert math.isclose(before["RESULT"], after["RESULT"], rel_tol=1e-5)


def test_padding_fix_class_ids_written_gets_a_padding_collator_not_seq2seq(tmp_path, tiny):
    text = _script(DATA + '''
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments
from transformers import default_data_collator
tok = AutoTokenizer.from_pretrained("{TOK}")
model = AutoModelForSequenceClassification.from_pretrained("{BERT}")
def prep(batch):
    out = tok(batch["text"], padding="max_length", truncation=True, max_length=16)
    out["labels"] = [int(x) for x in batch["label"]]
    return out
ds = raw.map(prep, batched=True, remove_columns=["text", "label"])
''' + ARGS + '''
trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=default_data_collator)
''', tiny)
    fixed, before, after = _fix_and_run(tmp_path, text, select=["TL102"])
    assert "data_collator=DataCollatorWithPadding(tok)" in fixed and "Seq2Seq" not in fixed
    assert math.isclose(before["RESULT"], after["RESULT"], rel_tol=1e-5)


CAUSAL = DATA + '''
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments
tok = AutoTokenizer.from_pretrained("{TOK}")
model = AutoModelForCausalLM.from_pretrained("{GPT}")
def prep(batch):
    out = tok(batch["text"], padding="max_length", truncation=True, max_length=16)
    LABELS
    return out
ds = raw.map(prep, batched=True, remove_columns=["text", "label"])
''' + ARGS + '''
trainer = Trainer(model=model, args=args, train_dataset=ds, processing_class=tok)
'''


def test_padding_fix_copied_labels_masked_gets_seq2seq_and_keeps_the_loss(tmp_path, tiny):
    labels = 'out["labels"] = [[t if t != tok.pad_token_id else -100 for t in ids] for ids in out["input_ids"]]'
    text = _script(CAUSAL.replace("LABELS", labels), tiny)
    fixed, before, after = _fix_and_run(tmp_path, text, select=["TL102"])
    assert "data_collator=DataCollatorForSeq2Seq(tok)" in fixed
    assert math.isclose(before["RESULT"], after["RESULT"], rel_tol=1e-5)


def test_padding_fix_copied_labels_with_pads_is_unsafe_and_runs(tmp_path, tiny):
    text = _script(CAUSAL.replace("LABELS", 'out["labels"] = out["input_ids"].copy()'), tiny)
    write_files(tmp_path, {"safe/train.py": text})
    assert not fix_folder(tmp_path / "safe", select=["TL102"]).fixed, "not offered as safe"
    fixed, before, after = _fix_and_run(tmp_path, text, unsafe=True, select=["TL102"])
    assert "DataCollatorForSeq2Seq(tok)" in fixed
    # the loss changes (pad tokens no longer count): that is why the fix is unsafe
    assert not math.isclose(before["RESULT"], after["RESULT"], rel_tol=1e-3)


def test_the_default_collator_cannot_pad_copied_labels(tiny):
    """Why the choice matters (the defect this rule had): DataCollatorWithPadding on labels
    copied from unpadded inputs fails."""
    from transformers import AutoTokenizer, DataCollatorWithPadding

    tok = AutoTokenizer.from_pretrained(tiny["TOK"])
    feats = [dict(tok(t), labels=tok(t)["input_ids"]) for t in ("the cat", "a dog ran fast")]
    with pytest.raises((ValueError, RuntimeError)):
        DataCollatorWithPadding(tok)(feats)


def test_device_move_removal_runs_with_the_same_loss(tmp_path, tiny):
    text = _script(DATA + '''
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
tokenizer = AutoTokenizer.from_pretrained("{TOK}")
model = AutoModelForSequenceClassification.from_pretrained("{BERT}")
model.to(device)
ds = raw.map(lambda b: tokenizer(b["text"], truncation=True), batched=True)
''' + ARGS + '''
trainer = Trainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer)
''', tiny)
    fixed, before, after = _fix_and_run(tmp_path, text, select=["TL101"])
    assert "model.to(device)" not in fixed
    assert str(next(after["trainer"].model.parameters()).device) == str(after["args"].device)
    assert math.isclose(before["RESULT"], after["RESULT"], rel_tol=1e-5)


def test_device_move_before_generate_is_not_removed(tmp_path, tiny):
    text = _script('''
import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = AutoModelForCausalLM.from_pretrained("{GPT}")
model.to(device)
sample = model.generate(torch.tensor([[6, 7]], device=device), max_new_tokens=2)
trainer = Trainer(model=model, args=TrainingArguments(output_dir="{OUT}", report_to="none"))
''', tiny, tail="")
    write_files(tmp_path, {"train.py": text})
    out = fix_folder(tmp_path, unsafe=True, select=["TL101"])
    assert not out.fixed


def _checkpoint_kwargs(model) -> dict:
    for m in model.modules():
        fn = getattr(m, "_gradient_checkpointing_func", None)
        if fn is not None:
            return dict(getattr(fn, "keywords", {}))
    return {}


def test_rename_and_use_reentrant_compose_and_run(tmp_path, tiny):
    """TL609 (rename) and TL110 (use_reentrant) on the same call: the result must call the new
    method with the new keyword (it takes no gradient_checkpointing_kwargs)."""
    text = _script('''
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("{GPT}")
model.gradient_checkpointing_enable()
def train():
    Trainer(model=model, args=TrainingArguments(output_dir="{OUT}", report_to="none")).train()
RESULT = model.is_gradient_checkpointing
''', tiny, tail="")
    fixed, _before, after = _fix_and_run(tmp_path, text, select=["TL609", "TL110"])
    assert 'model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})' in fixed
    assert "RESULT = model.is_activation_checkpointing" in fixed
    assert after["RESULT"] is True
    assert _checkpoint_kwargs(after["model"]).get("use_reentrant") is False


def test_rename_keeps_keywords_the_new_method_takes(tmp_path, tiny):
    text = _script('''
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained("{GPT}")
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True}, every_n_layers=2)
''', tiny, tail="")
    fixed, _b, after = _fix_and_run(tmp_path, text, select=["TL609"])
    assert ('model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": True}, '
            'every_n_layers=2)') in fixed
    assert _checkpoint_kwargs(after["model"]).get("use_reentrant") is True


def test_processing_class_rename_builds_the_trainer(tmp_path, tiny):
    text = _script('''
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments
tok = AutoTokenizer.from_pretrained("{TOK}")
model = AutoModelForCausalLM.from_pretrained("{GPT}")
trainer = Trainer(model=model, args=TrainingArguments(output_dir="{OUT}", report_to="none"), tokenizer=tok)
RESULT = trainer.tokenizer is tok
''', tiny, tail="")
    try:
        fixed, _b, after = _fix_and_run(tmp_path, text, select=["TL605"])
    except TypeError:  # the original does not run on 5.x: run only the fixed one
        write_files(tmp_path, {"w2/train.py": text})
        out = fix_folder(tmp_path / "w2", select=["TL605"], options={"transformers_version": "5.24.0"})
        fixed = next(iter(out.fixed.values()))
        (tmp_path / "w2" / "train.py").write_text(fixed)
        after = runpy.run_path(str(tmp_path / "w2" / "train.py"))
    assert "processing_class=tok" in fixed and "tokenizer=tok" not in fixed
    assert after["trainer"].processing_class is after["tok"]


def test_interval_strategy_import_runs(tmp_path):
    rule = get_rule("TL606")
    for case in rule.cases:
        if not case.flags or case.fixed is None:
            continue
        ns = runpy.run_path(str(write_files(tmp_path, {"t.py": case.fixed})[0]))
        assert any(getattr(v, "__name__", "") == "IntervalStrategy" for v in ns.values())


def test_from_pretrained_renames_load(tmp_path, tiny):
    text = _script('''
import torch
from transformers import AutoModelForCausalLM
m = AutoModelForCausalLM.from_pretrained("{GPT}", torch_dtype=torch.bfloat16, use_auth_token=None)
RESULT = m.dtype
''', tiny, tail="")
    write_files(tmp_path, {"train.py": text})
    out = fix_folder(tmp_path, select=["TL607", "TL608"], options={"transformers_version": "5.24.0"})
    fixed = out.fixed[str(tmp_path / "train.py")]
    assert "dtype=torch.bfloat16" in fixed and "torch_dtype" not in fixed and "token=None" in fixed
    (tmp_path / "train.py").write_text(fixed)
    import torch

    assert runpy.run_path(str(tmp_path / "train.py"))["RESULT"] == torch.bfloat16


def test_hub_auth_keyword_fix_loads(tmp_path, tiny):
    """TL612: the fixed ``token=`` keyword is accepted by the loaders (a local folder: no hub)."""
    rule = get_rule("TL612")
    case = next(c for c in rule.cases if c.flags and c.fixed and "from_pretrained" in c.fixed)
    text = case.fixed
    for hub_id in set(__import__("re").findall(r'from_pretrained\("([^"]+)"', text)):
        text = text.replace(f'"{hub_id}"', f'"{tiny["GPT"]}"')
    text = text.replace(f'AutoTokenizer.from_pretrained("{tiny["GPT"]}"', f'AutoTokenizer.from_pretrained("{tiny["TOK"]}"')
    runpy.run_path(str(write_files(tmp_path, {"t.py": text})[0]))


# -- TL116: the argmax moved into preprocess_logits_for_metrics, run through Trainer.evaluate --

EVAL = '''
import numpy as np
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer, TrainingArguments
tok = AutoTokenizer.from_pretrained("{TOK}")
raw = Dataset.from_dict({"text": ["the cat sat", "a dog ran fast on the mat", "good movie",
                                  "the big red dog sat on a small blue mat", "it was", "this film is great"]})
ds = raw.map(lambda b: tok(b["text"]), batched=True, remove_columns=["text"])
def compute_metrics(eval_pred):
    logits, labels = eval_pred
    preds = np.argmax(logits, axis=-1)
    METRIC
model = AutoModelForCausalLM.from_pretrained("{GPT}")
args = TrainingArguments(output_dir="{OUT}", per_device_eval_batch_size=2, report_to="none", use_cpu=True)
trainer = Trainer(model=model, args=args, eval_dataset=ds, compute_metrics=compute_metrics,
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
RESULT = trainer.evaluate()["eval_acc"]
'''


def test_logits_preprocessing_fix_keeps_a_masked_metric_and_why_it_is_unsafe(tmp_path, tiny):
    """TL116's fix, run: Trainer.evaluate over batches of different lengths. A metric that drops
    the -100 label positions is unchanged; one that does not changes (the padding between
    batches was argmax 0 and is now -100), which is why the fix is unsafe."""
    masked = _script(EVAL.replace("METRIC", "m = labels != -100\n"
                                            "    return {'acc': float((preds[m] == labels[m]).mean())}"), tiny, tail="")
    write_files(tmp_path, {"safe/train.py": masked})
    assert not fix_folder(tmp_path / "safe", select=["TL116"]).fixed, "not offered as safe"
    fixed, before, after = _fix_and_run(tmp_path / "m", masked, unsafe=True, select=["TL116"])
    assert "preprocess_logits_for_metrics=lambda logits, labels: logits.argmax(-1)" in fixed
    assert "preds = logits\n" in fixed
    assert math.isclose(before["RESULT"], after["RESULT"], rel_tol=1e-9)
    plain = _script(EVAL.replace("METRIC", "return {'acc': float((preds == labels).mean())}"), tiny, tail="")
    _fixed, before, after = _fix_and_run(tmp_path / "p", plain, unsafe=True, select=["TL116"])
    assert not math.isclose(before["RESULT"], after["RESULT"], rel_tol=1e-3), \
        "batches of different lengths: the unmasked metric changes"


# -- TL103: device_map removed, the fixed script trained by two processes ---------------------

DDP_SCRIPT = '''
import os
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer, TrainingArguments
tok = AutoTokenizer.from_pretrained("{TOK}")
model = AutoModelForCausalLM.from_pretrained("{GPT}", device_map="auto")
ds = Dataset.from_dict({"text": ["the cat sat", "a dog ran fast on the mat", "good movie", "the big red dog sat"] * 2})
ds = ds.map(lambda b: tok(b["text"]), batched=True, remove_columns=["text"])
args = TrainingArguments(output_dir="{OUT}", per_device_train_batch_size=2, max_steps=1, report_to="none",
                         use_cpu=True, save_strategy="no", ddp_backend="gloo")
trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
trainer.train()
from accelerate import Accelerator
# one file per rank: the ranks share one stdout, where their writes interleave with the
# Trainer's own (its metrics dict once landed inside a rank's proof line)
proof = [os.environ["RANK"], args.world_size, type(trainer.model_wrapped).__name__,
         Accelerator().verify_device_map(trainer.model)]
with open(f"proof-{os.environ['RANK']}.txt", "w") as f:
    f.write(" ".join(map(str, proof)))
'''


@pytest.mark.slow
def test_device_map_removal_trains_under_two_processes(tmp_path, tiny):
    """TL103's fix, run: the fixed script (no device_map) is launched by torchrun with two
    processes (gloo on CPU); the Trainer places the model on each rank, accelerate prepares it
    (its verify_device_map, the check behind "You can't train a model that has been loaded with
    `device_map='auto'` in any distributed mode", is False) and a DDP step runs."""
    import shutil
    import subprocess
    import sys

    text = _script(DDP_SCRIPT, tiny, tail="")
    write_files(tmp_path, {"train.py": text})
    out = fix_folder(tmp_path, select=["TL103"], options={"gpus": 2, "transformers_version": "5.24.0"})
    fixed = out.fixed[str(tmp_path / "train.py")]
    assert 'from_pretrained("' + tiny["GPT"] + '")' in fixed and 'device_map="auto"' not in fixed
    (tmp_path / "train.py").write_text(fixed)
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent)) or shutil.which("torchrun")
    assert torchrun, "torchrun (torch) is not installed"
    run = subprocess.run([torchrun, "--standalone", "--nproc_per_node", "2", str(tmp_path / "train.py")],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    proofs = sorted(p.read_text().split() for p in tmp_path.glob("proof-*.txt"))
    assert run.returncode == 0 and proofs == [["0", "2", "DistributedDataParallel", "False"],
                                              ["1", "2", "DistributedDataParallel", "False"]], \
        run.stdout[-2000:] + run.stderr[-3000:]


def test_accelerate_refuses_a_spread_model_in_a_distributed_run(tiny):
    """What TL103 guards against, on the installed accelerate: a model whose hf_device_map
    spreads it over devices is what verify_device_map (the refusal in prepare_model) reports."""
    from accelerate import Accelerator
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny["GPT"])
    acc = Accelerator(cpu=True)
    assert acc.verify_device_map(model) is False
    model.hf_device_map = {"transformer.h.0": 0, "transformer.h.1": 1}
    assert acc.verify_device_map(model) is True


def test_moved_import_data_matches_the_installed_package():
    """The data TL611's safety rests on, executed on the installed TRL and peft: every import
    the data says the installed release offers for a name gone from its top level works, and a
    name it says is gone everywhere (BCOTrainer in trl 1.14+) does not import."""
    import importlib
    from importlib.metadata import PackageNotFoundError, version

    from trainlint.knowledge import public_names

    from trainlint.rules.migration.removed_import import exports_at

    checked = 0
    for pkg in ("trl", "peft"):
        try:
            installed = version(pkg)
        except PackageNotFoundError:
            continue
        data = public_names._removed_data()[pkg]
        for name in data["removed"]:
            module = public_names.import_path(pkg, name, installed)
            if module is not None:
                assert exports_at(pkg, name, module, installed)
                assert hasattr(importlib.import_module(module), name), f"from {module} import {name}"
                checked += 1
            elif not public_names.exists(pkg, name, installed):
                assert not hasattr(importlib.import_module(pkg), name) or name.startswith("_"), f"{pkg}.{name}"
    assert checked >= 5, checked
    if version("trl").split(".")[0] == "1" and public_names.import_path("trl", "BCOTrainer", version("trl")) is None:
        with pytest.raises(ImportError):
            importlib.import_module("trl.experimental.bco")
