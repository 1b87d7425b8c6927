"""Write trainlint/rules/index.json (and trigger_words.json) from the rule classes (found recursively in trainlint/rules/).

Run: python scripts/gen_rule_index.py   (tests/test_pipeline.py fails when the index is stale)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trainlint.rule_index import INDEX_PATH, WORDS_PATH  # noqa: E402
from trainlint.rules import discover_rules  # noqa: E402


def index_text() -> str:
    rules = [{"code": r.code, "name": r.name, "module": r.__module__, "class": r.__qualname__,
              "engine": r.produced_by_engine,
              "triggers": None if r.triggers is None else sorted(set(r.triggers)),
              "words": True if r.index_words() is not None else None,
              "fires_on": None if r.fires_on is None else sorted(set(r.fires_on)), "python_alone": r.python_alone,
              "needs": sorted(r.needs)}
             for r in discover_rules()]
    return json.dumps({"generated_by": "scripts/gen_rule_index.py", "rules": rules}, indent=1) + "\n"


def words_text() -> str:
    """The rules' ``index_words()`` (long lists, read only when a file needs the test): one
    line per rule and trigger."""
    rules = []
    for r in discover_rules():
        words = r.index_words()
        if words is not None:
            lines = [f"  {json.dumps(t)}: {json.dumps(sorted(set(ns)))}" for t, ns in sorted(words.items())]
            rules.append(f" {json.dumps(r.code)}: {{\n" + ",\n".join(lines) + "\n }")
    return '{"generated_by": "scripts/gen_rule_index.py", "words": {\n' + ",\n".join(rules) + "\n}}\n"


def main() -> None:
    INDEX_PATH.write_text(index_text(), encoding="utf-8")
    WORDS_PATH.write_text(words_text(), encoding="utf-8")
    print(f"wrote {INDEX_PATH.relative_to(ROOT)}, {WORDS_PATH.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
