"""trainlint: a static linter and fixer for Hugging Face training setups."""

__version__ = "0.1.0"
