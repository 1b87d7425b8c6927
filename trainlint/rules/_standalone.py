"""Whether a TrainingArguments-like site is read by a known Hugging Face consumer.

An args file (JSON/YAML) that no script of its setup reads may belong to a framework with its
own schema (axolotl, LLaMA-Factory, a project's config): its keys look like TrainingArguments
fields but another program decides what they mean (axolotl, for instance, turns on
``eval_strategy="steps"`` itself when ``eval_steps`` is set). The catalog-2 rules judge such a
file only when a script in the setup parses it.
"""

from __future__ import annotations

from trainlint.setup import ARGSFILE, ArgsSite, Setup


def unread_args_file(setup: Setup, site: ArgsSite) -> bool:
    """True for an args-file site whose setup holds no script that could read it."""
    if site.call is not None or setup.scripts:
        return False
    return any(v.origin == ARGSFILE for v in site.values.values())
