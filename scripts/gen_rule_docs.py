"""Write one Markdown page per rule into rules/ from the rule classes' documentation.

Run: python scripts/gen_rule_docs.py   (tests/test_rule_docs.py fails when the pages are stale)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trainlint.rules import all_rules  # noqa: E402
from trainlint.rules.docs import render_markdown  # noqa: E402


def main() -> None:
    out = ROOT / "rules"
    out.mkdir(exist_ok=True)
    wanted = {f"{r.name}.md": render_markdown(r) for r in all_rules()}
    for stale in out.glob("*.md"):
        if stale.name not in wanted and stale.name != "README.md":
            stale.unlink()
    for name, text in wanted.items():
        (out / name).write_text(text, encoding="utf-8")
    index = ["# Rules", "", "| code | name | severity | fix |", "| --- | --- | --- | --- |"]
    for r in all_rules():
        index.append(f"| {r.code} | [{r.name}]({r.name}.md) | {r.severity.value} | {r.fix_safety} |")
    (out / "README.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    print(f"wrote {len(wanted)} rule pages to {out}")


if __name__ == "__main__":
    main()
