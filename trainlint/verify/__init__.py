"""trainlint verify: smoke runs of the real training script (never imported by `check`)."""
