"""A typical (tiny) text-classification fine-tune, with pitfalls trainlint finds.

The model path comes from --model or $TINY_MODEL (build one with make_tiny_model.py).
"""
import argparse
import os

import torch
from datasets import Dataset
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    Trainer,
    TrainingArguments,
)

parser = argparse.ArgumentParser()
parser.add_argument("--model", default=os.environ.get("TINY_MODEL", "tiny-bert"))
parser.add_argument("--epochs", type=float, default=3)
cli = parser.parse_args()

tokenizer = AutoTokenizer.from_pretrained(cli.model)
model = AutoModelForSequenceClassification.from_pretrained(cli.model, num_labels=2)

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model.to(device)  # pitfall: the Trainer places the model itself

texts = [
    "the movie was great and the actors were wonderful",
    "a terrible film with a boring story",
    "i loved every minute of this wonderful movie",
    "the plot was dull and the acting was bad",
    "an excellent and moving story",
    "worst movie i have seen this year",
]
data = Dataset.from_dict({"text": texts * 50, "label": [1, 0, 1, 0, 1, 0] * 50})
splits = data.train_test_split(test_size=0.1, seed=0)


def tokenize(batch):
    # pitfall: pads every example to 64 tokens instead of the longest in the batch
    return tokenizer(batch["text"], truncation=True, padding="max_length", max_length=64)


train_ds = splits["train"].map(tokenize, batched=True)
eval_ds = splits["test"].map(tokenize, batched=True)

args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=8,
    num_train_epochs=cli.epochs,
    learning_rate=5e-4,
    logging_steps=1,  # pitfall: a host sync and a log line every step
    eval_strategy="epoch",
    save_strategy="epoch",
)

trainer = Trainer(
    model=model,
    args=args,
    train_dataset=train_ds,
    eval_dataset=eval_ds,
    processing_class=tokenizer,
)
trainer.train()
trainer.save_model("out/final")
