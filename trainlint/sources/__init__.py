"""One reader per file kind: Python scripts, shell launch lines, HF args files, DeepSpeed JSON,
accelerate YAML. Each gives exact positions for what it reads."""
