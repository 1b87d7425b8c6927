"""Generate a corpus of realistic Hugging Face training scripts (deterministic for a seed).

Each script has imports, argument parsing, helper functions (metrics, seeding, logging),
tokenizer map functions, data collators, a ``TrainingArguments`` (or ``Seq2SeqTrainingArguments``)
call with varied keywords (literals, module constants, ``**dict`` unpacking), a Trainer, and
100-400 lines in all. About a third carry one or more pitfalls (``padding="max_length"``,
``logging_steps=1``, ``model.to(device)``, ``fp16=True``, a large eval batch with
``predict_with_generate``).

usage: python benchmarks/corpus.py OUT_DIR [N] [SEED]
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

MODELS = ["bert-base-uncased", "roberta-base", "distilbert-base-uncased", "google/flan-t5-base",
          "t5-small", "gpt2", "meta-llama/Llama-3.2-1B", "Qwen/Qwen2.5-0.5B", "microsoft/deberta-v3-base",
          "facebook/bart-base"]
DATASETS = ["imdb", "glue", "squad", "cnn_dailymail", "samsum", "yelp_review_full", "ag_news", "xsum"]

HELPERS = [
    '''
def set_seed_everywhere(seed{n}: int) -> None:
    """Seed python, numpy and torch."""
    import random as _random
    import numpy as np
    _random.seed(seed{n})
    np.random.seed(seed{n})
    torch.manual_seed(seed{n})
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed{n})
''',
    '''
def compute_metrics_{n}(eval_pred):
    logits, labels = eval_pred
    predictions = np.argmax(logits, axis=-1)
    correct = (predictions == labels).sum()
    total = len(labels)
    accuracy = correct / max(total, 1)
    return {{"accuracy": float(accuracy), "n": int(total)}}
''',
    '''
def count_parameters_{n}(model, trainable_only=True):
    total = 0
    for name, param in model.named_parameters():
        if trainable_only and not param.requires_grad:
            continue
        total += param.numel()
    logger.info("parameters (%s): %d", "trainable" if trainable_only else "all", total)
    return total
''',
    '''
class Timer{n}:
    """Context manager that logs how long a block took."""

    def __init__(self, label):
        self.label = label
        self.start = None

    def __enter__(self):
        import time
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        import time
        elapsed = time.perf_counter() - self.start
        logger.info("%s took %.2fs", self.label, elapsed)
        return False
''',
    '''
def filter_long_examples_{n}(example, max_chars={max_chars}):
    text = example.get("text") or example.get("document") or ""
    if not text:
        return False
    return len(text) <= max_chars
''',
    '''
def group_texts_{n}(examples, block_size={block}):
    concatenated = {{k: sum(examples[k], []) for k in examples.keys()}}
    total_length = len(concatenated[list(examples.keys())[0]])
    total_length = (total_length // block_size) * block_size
    result = {{
        k: [t[i: i + block_size] for i in range(0, total_length, block_size)]
        for k, t in concatenated.items()
    }}
    result["labels"] = result["input_ids"].copy()
    return result
''',
    '''
def save_config_{n}(args, path):
    import json
    payload = {{k: v for k, v in vars(args).items() if not k.startswith("_")}}
    with open(path, "w") as f:
        json.dump(payload, f, indent=2, default=str)
    logger.info("saved run config to %s", path)
''',
    '''
def log_dataset_stats_{n}(dataset, split="train"):
    lengths = [len(x) for x in dataset[split]["input_ids"][:1000]]
    if not lengths:
        logger.warning("empty split %s", split)
        return
    mean = sum(lengths) / len(lengths)
    logger.info("%s: %d examples, mean length %.1f, max %d", split, len(dataset[split]), mean, max(lengths))
''',
]


def _tokenize_fn(rng: random.Random, n: int, pitfall: bool) -> str:
    field = rng.choice(["text", "sentence", "document", "question", "review"])
    max_len = rng.choice([128, 256, 384, 512, 1024])
    if pitfall:
        padding = 'padding="max_length", '
    else:
        padding = rng.choice(["", "", 'padding=False, ', 'padding="longest", '])
    style = rng.randrange(3)
    if style == 0:
        return f'''
def preprocess_function_{n}(examples):
    inputs = [str(x).strip() for x in examples["{field}"]]
    model_inputs = tokenizer(inputs, {padding}truncation=True, max_length={max_len})
    if "label" in examples:
        model_inputs["labels"] = examples["label"]
    return model_inputs
'''
    if style == 1:
        return f'''
def tokenize_{n}(batch):
    return tokenizer(batch["{field}"], {padding}truncation=True, max_length={max_len})
'''
    return f'''
MAX_LEN_{n} = {max_len}


def encode_{n}(examples, tok=None):
    tok = tok or tokenizer
    out = tok(
        examples["{field}"],
        {padding}truncation=True,
        max_length=MAX_LEN_{n},
    )
    return out
'''


def _training_args(rng: random.Random, pitfalls: set[str], seq2seq: bool) -> tuple[str, str]:
    cls = "Seq2SeqTrainingArguments" if seq2seq else "TrainingArguments"
    kw: list[str] = [
        f'output_dir="{rng.choice(["./out", "./results", "outputs/run", "/tmp/ckpt"])}"',
        f"learning_rate={rng.choice(['2e-5', '3e-5', '5e-5', '1e-4', 'LEARNING_RATE'])}",
        f"per_device_train_batch_size={rng.choice([4, 8, 16, 32, 'BATCH_SIZE'])}",
        f"num_train_epochs={rng.choice([1, 2, 3, 5])}",
    ]
    optional = [
        f"weight_decay={rng.choice(['0.0', '0.01', '0.1'])}",
        f"warmup_ratio={rng.choice(['0.03', '0.06', '0.1'])}",
        f'lr_scheduler_type="{rng.choice(["linear", "cosine", "constant_with_warmup"])}"',
        f"gradient_accumulation_steps={rng.choice([1, 2, 4, 8])}",
        f'eval_strategy="{rng.choice(["steps", "epoch", "no"])}"',
        f'save_strategy="{rng.choice(["steps", "epoch"])}"',
        f"save_total_limit={rng.choice([1, 2, 3])}",
        f"seed={rng.choice([0, 42, 1234])}",
        "load_best_model_at_end=True",
        f'report_to={rng.choice(["[]", repr("none"), repr(["tensorboard"])])}',
        f"dataloader_num_workers={rng.choice([0, 2, 4])}",
        "gradient_checkpointing=True",
        "remove_unused_columns=False",
    ]
    rng.shuffle(optional)
    kw += optional[: rng.randrange(3, len(optional))]
    kw.append(f"logging_steps={1 if 'logging' in pitfalls else rng.choice([10, 25, 50, 100, 500])}")
    if "fp16" in pitfalls:
        kw.append("fp16=True")
    elif rng.random() < 0.4:
        kw.append("bf16=True")
    if seq2seq:
        kw.append("predict_with_generate=True")
        kw.append(f"per_device_eval_batch_size={64 if 'eval' in pitfalls else rng.choice([4, 8])}")
        kw.append(f"generation_max_length={rng.choice([64, 128, 256])}")
    else:
        kw.append(f"per_device_eval_batch_size={rng.choice([8, 16, 32, 64])}")
    use_dict = rng.random() < 0.3
    if use_dict:
        half = len(kw) // 2
        extra = ",\n    ".join(f'"{k.split("=", 1)[0]}": {k.split("=", 1)[1]}' for k in kw[half:])
        head = ",\n    ".join(kw[:half])
        return cls, (f"EXTRA_ARGS = {{\n    {extra},\n}}\n\n"
                     f"training_args = {cls}(\n    {head},\n    **EXTRA_ARGS,\n)\n")
    body = ",\n    ".join(kw)
    return cls, f"training_args = {cls}(\n    {body},\n)\n"


def script(rng: random.Random, index: int) -> str:
    seq2seq = rng.random() < 0.3
    pitfalls: set[str] = set()
    if rng.random() < 0.35:
        pitfalls = set(rng.sample(["padding", "logging", "device", "fp16", "eval"], rng.randint(1, 3)))
    model_name = rng.choice(MODELS)
    dataset = rng.choice(DATASETS)
    auto = "AutoModelForSeq2SeqLM" if seq2seq else rng.choice(
        ["AutoModelForSequenceClassification", "AutoModelForCausalLM", "AutoModelForTokenClassification"])
    cls, args_block = _training_args(rng, pitfalls, seq2seq)
    trainer_cls = "Seq2SeqTrainer" if seq2seq else "Trainer"
    parts = [f'"""Training script {index}: {auto} on {dataset} ({model_name})."""\n',
             "import argparse\nimport logging\nimport os\n\nimport numpy as np\nimport torch\n"
             "from datasets import load_dataset\n"
             f"from transformers import (\n    {auto},\n    AutoTokenizer,\n    DataCollatorWithPadding,\n"
             f"    {cls},\n    {trainer_cls},\n)\n\n"
             "logger = logging.getLogger(__name__)\n\n"
             f"MODEL_NAME = {model_name!r}\nLEARNING_RATE = {rng.choice(['2e-5', '3e-5', '1e-4'])}\n"
             f"BATCH_SIZE = {rng.choice([8, 16, 32])}\n"]
    target_lines = rng.randint(100, 400)
    helpers = list(range(len(HELPERS)))
    rng.shuffle(helpers)
    n_map = rng.randint(1, 3)
    maps = [_tokenize_fn(rng, i, "padding" in pitfalls and i == 0) for i in range(n_map)]
    body: list[str] = []
    for h in helpers:
        body.append(HELPERS[h].format(n=h, max_chars=rng.choice([2000, 5000, 10000]),
                                      block=rng.choice([128, 512, 1024])))
    body.extend(maps)
    main = [
        "\n\ndef parse_args():",
        "    parser = argparse.ArgumentParser()",
        f'    parser.add_argument("--model_name", default=MODEL_NAME)',
        f'    parser.add_argument("--max_samples", type=int, default={rng.choice([1000, 5000, None])})',
        '    parser.add_argument("--output_dir", default="./out")',
        "    return parser.parse_args()",
        "",
        "",
        f"cli = parse_args()",
        f"tokenizer = AutoTokenizer.from_pretrained(cli.model_name)",
        f"model = {auto}.from_pretrained(cli.model_name)",
    ]
    if "device" in pitfalls:
        main += ['device = torch.device("cuda" if torch.cuda.is_available() else "cpu")', "model.to(device)"]
    main += [f"raw = load_dataset({dataset!r})"]
    map_name = maps[0].split("def ", 1)[1].split("(", 1)[0]
    main += [f"tokenized = raw.map({map_name}, batched=True, remove_columns=raw['train'].column_names)",
             "collator = DataCollatorWithPadding(tokenizer=tokenizer)", "", args_block,
             f"trainer = {trainer_cls}(",
             "    model=model,", "    args=training_args,", '    train_dataset=tokenized["train"],',
             f'    eval_dataset=tokenized[{rng.choice(["test", "validation"])!r}],',
             "    processing_class=tokenizer,", "    data_collator=collator,", ")", "",
             'if __name__ == "__main__":', "    trainer.train()", "    trainer.save_model(cli.output_dir)", ""]
    text = "".join(parts)
    for chunk in body:
        if text.count("\n") + chunk.count("\n") + len(main) > target_lines:
            break
        text += chunk
    # pad with small documented helpers up to the target length
    k = 0
    while text.count("\n") + len(main) < target_lines - 6:
        text += (f"\n\ndef _unused_helper_{k}(values):\n    \"\"\"Running mean of a list of floats.\"\"\"\n"
                 f"    total = 0.0\n    for i, v in enumerate(values, start=1):\n        total += v\n"
                 f"    return total / max(len(values), 1)\n")
        k += 1
    return text + "\n".join(main)


def generate(out: Path, n: int = 2000, seed: int = 0) -> list[Path]:
    rng = random.Random(seed)
    paths = []
    for i in range(n):
        sub = out / f"project_{i // 100:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        p = sub / f"train_{i:04d}.py"
        p.write_text(script(rng, i), encoding="utf-8")
        paths.append(p)
    return paths


if __name__ == "__main__":
    target = Path(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    files = generate(target, count, seed)
    total = sum(p.stat().st_size for p in files)
    lines = sum(p.read_text().count("\n") for p in files)
    print(f"{len(files)} files, {total} bytes, {lines} lines in {target}")
