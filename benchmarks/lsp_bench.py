"""Language-server figures: start-up and diagnostics latency after a change.

    python benchmarks/lsp_bench.py [--rounds 15] [--lines 500]

* start-up: from spawning `trainlint server` to the answer of `initialize` (fresh process each
  round), against `python -c pass` in the same rounds.
* latency: a generated training script of about ``--lines`` lines is opened; then each round
  sends one `didChange` (the whole text, a different logging_steps each time) and waits for
  the `publishDiagnostics` of that version. The time includes the server's debounce
  (trainlint.server.protocol.DEBOUNCE_S).

Medians of interleaved rounds; compare with the goals in benchmarks/README.md, not across
machines.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from lsp_client import TrainlintClient  # noqa: E402

HEAD = '''\
import os

import numpy as np
from datasets import Dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments)

MODEL = os.environ.get("MODEL", "Qwen/Qwen2.5-0.5B")
tokenizer = AutoTokenizer.from_pretrained(MODEL)
model = AutoModelForCausalLM.from_pretrained(MODEL)

'''
HELPER = '''
def helper_{i}(batch, scale={i}):
    """Preprocessing step {i}."""
    out = []
    for text in batch["text"]:
        text = text.strip()
        if len(text) > scale:
            text = text[: scale * 10]
        out.append(text)
    return {{"text": out}}

'''
TAIL = '''
def tokenize(batch):
    return tokenizer(batch["text"], truncation=True, max_length=512)

data = Dataset.from_dict({{"text": ["hello world"] * 64}}).map(tokenize, batched=True)
args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=8,
    learning_rate=2e-5,
    logging_steps={logging},
    max_steps=10000,
)
trainer = Trainer(model=model, args=args, train_dataset=data,
                  data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
trainer.train()
'''


def script(lines: int, logging: int) -> str:
    body = HEAD
    i = 0
    while body.count("\n") + TAIL.count("\n") < lines:
        body += HELPER.format(i=i)
        i += 1
    return body + TAIL.format(logging=logging)


async def startup_once(root: Path) -> float:
    c = TrainlintClient()
    t = time.perf_counter()
    await c.start(root)
    dt = time.perf_counter() - t
    await c.stop()
    return dt


async def latency(root: Path, rounds: int, lines: int) -> list[float]:
    c = TrainlintClient()
    await c.start(root)
    path = root / "train.py"
    path.write_text(script(lines, 1))
    uri = c.open(path)
    await c.wait_for(uri, lambda d: True)
    out = []
    for r in range(rounds):
        version = r + 2
        text = script(lines, 1 + (r % 2) * 9)
        t = time.perf_counter()
        c.change_full(uri, text, version)
        await c.wait_for(uri, lambda d: c.versions.get(uri) == version)
        out.append(time.perf_counter() - t)
    await c.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--lines", type=int, default=500)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[project]\nname='bench'\n")
        starts, floors = [], []
        for _ in range(a.rounds):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            floors.append(time.perf_counter() - t)
            starts.append(asyncio.run(startup_once(root)))
        lat = asyncio.run(latency(root, a.rounds, a.lines))
    n = script(a.lines, 1).count("\n")
    print(f"start-up (spawn -> initialize answered): median {statistics.median(starts) * 1000:.0f} ms "
          f"(python -c pass: {statistics.median(floors) * 1000:.0f} ms); goal < 1000 ms: "
          f"{'met' if statistics.median(starts) < 1.0 else 'NOT met'}")
    print(f"didChange -> publishDiagnostics, {n}-line script, {a.rounds} rounds: median "
          f"{statistics.median(lat) * 1000:.0f} ms, min {min(lat) * 1000:.0f}, max {max(lat) * 1000:.0f}; "
          f"goal <= 150 ms: {'met' if statistics.median(lat) <= 0.150 else 'NOT met'}")


if __name__ == "__main__":
    main()
