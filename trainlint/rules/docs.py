"""A rule's documentation page, rendered from the rule class itself.

The pages in ``rules/`` at the repository root are this function's output
(``python scripts/gen_rule_docs.py``); a test keeps them, the registry and ``trainlint rule``
in step.
"""

from __future__ import annotations

from trainlint.rules.base import Rule

FIX_TEXT = {
    "safe": "Fix is available where *Fix safety* says (safe: training computes the same thing).",
    "unsafe": "Fix is available where *Fix safety* says (unsafe: changes training numerics or behaviour; needs "
              "`--unsafe-fixes`).",
    "none": "No fix.",
}


def render_markdown(rule: type[Rule]) -> str:
    lines = [
        f"# {rule.name} ({rule.code})",
        "",
        f"Severity: **{rule.severity.value}**. {FIX_TEXT[rule.fix_safety]}",
        "",
        f"In one line: {rule.summary}.",
        "",
        rule.doc(),
    ]
    opts = rule.options_doc()
    if opts and "## Options" not in rule.doc():
        lines += ["", "## Options", "", "| option | default | meaning |", "| --- | --- | --- |"]
        for name, desc, default in opts:
            lines.append(f"| `{name}` | `{default!r}` | {desc} |")
        lines += ["", f"Set them in `[tool.trainlint.{rule.name}]` in pyproject.toml."]
    elif opts:
        lines += ["", "| option | default | meaning |", "| --- | --- | --- |"]
        for name, desc, default in opts:
            lines.append(f"| `{name}` | `{default!r}` | {desc} |")
    return "\n".join(lines).rstrip() + "\n"
