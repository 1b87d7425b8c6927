"""TL4xx: accelerate configs, FSDP and launch lines."""
