"""TL2xx: TrainingArguments values and the Trainer call."""
