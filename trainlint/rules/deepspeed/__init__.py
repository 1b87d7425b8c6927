"""TL3xx: DeepSpeed configs and how they meet the script."""
