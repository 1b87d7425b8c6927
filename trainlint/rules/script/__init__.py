"""TL1xx: script code (device placement, tokenization, models, collators, data loading)."""
