"""TL607 from-pretrained-removed-kwargs: from_pretrained(use_auth_token=, load_in_8bit/4bit=) no longer handled in transformers 5"""

from __future__ import annotations

from typing import Iterable

from trainlint.analysis import may_name
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._versioned import (
    target_text,
    transformers_at_least,
)
from trainlint.rules.base import Case, Rule
from trainlint.rules.migration._migration_common import (
    V524,
    _from_pretrained_calls,
)
from trainlint.setup import Setup

LOADER = "PreTrainedModel.from_pretrained"
_KEYWORDS = ("use_auth_token", "load_in_8bit", "load_in_4bit")


def _state(setup: Setup, keyword: str) -> tuple[Severity, str]:
    """(severity, wording) of ``keyword`` for the target's ``from_pretrained``: the release that
    stopped reading it comes from ``knowledge/data/model_api.json`` (the keys each released
    ``from_pretrained`` reads out of ``**kwargs``)."""
    from trainlint.knowledge import model_api

    removed = model_api.keyword_window(LOADER, keyword)[1]
    if removed is not None and transformers_at_least(setup, removed):
        return Severity.ERROR, f"no longer handled since transformers {removed}"
    return Severity.WARNING, "deprecated"



class FromPretrainedRemovedKwargs(Rule):
    """
    ## What it does
    Flags `from_pretrained(use_auth_token=...)` and `from_pretrained(load_in_8bit=True)` /
    `load_in_4bit=True` on a transformers model class when the target is 5.0 or newer (a
    warning on 4.x, where they are deprecated).

    ## Why is this bad?
    transformers 5 no longer handles these keywords: `use_auth_token` is not read (a gated or
    private model then fails to download), and `load_in_8bit`/`load_in_4bit` are passed on to
    the model's config instead of quantizing: the model loads in full precision and runs out of
    memory, or fails.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, use_auth_token=True, load_in_4bit=True)
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained(
        name, token=True, quantization_config=BitsAndBytesConfig(load_in_4bit=True))
    ```

    ## Fix safety
    `use_auth_token` -> `token` is safe. `load_in_*` has no automatic fix (it needs an import
    and a `BitsAndBytesConfig`).

    ## References
    - transformers 4.57.1 and 5.0.0 `modeling_utils.py` (`PreTrainedModel.from_pretrained`)
    """

    code = "TL607"
    name = "from-pretrained-removed-kwargs"
    severity = Severity.ERROR
    triggers = ("use_auth_token", "load_in_8bit", "load_in_4bit")
    fix_safety = "safe"
    summary = "from_pretrained(use_auth_token=, load_in_8bit/4bit=) no longer handled in transformers 5"

    cases = [
        Case("""
            from transformers import AutoModelForCausalLM
            m = AutoModelForCausalLM.from_pretrained("x", use_auth_token=True)
            """, options=V524,
             fixed='from transformers import AutoModelForCausalLM\n'
                   'm = AutoModelForCausalLM.from_pretrained("x", token=True)\n'),
        Case("""
            from transformers import AutoModelForCausalLM
            m = AutoModelForCausalLM.from_pretrained("x", load_in_4bit=True)
            """, options=V524),
        Case("""
            import transformers as tf
            def load(name):
                return tf.AutoModelForCausalLM.from_pretrained(name, load_in_8bit=True)
            """, options=V524, note="through a module alias, in a function"),
        Case(files={"run.sh": "python train.py\n",
                    "train.py": "from transformers import AutoModelForCausalLM\n"
                                "m = AutoModelForCausalLM.from_pretrained('x', \uff4coad_in_4bit=True)\n"},
             options=V524, note="a keyword spelled with a compatibility character (NFKC: load_in_4bit)"),
        Case("""
            from transformers import AutoModelForCausalLM
            m = AutoModelForCausalLM.from_pretrained("x", token=True)
            """, options=V524, flags=False),
        Case("""
            from transformers import AutoModelForCausalLM
            m = AutoModelForCausalLM.from_pretrained("x", load_in_4bit=False)
            """, options=V524, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf in setup.scripts:
            if not may_name(pf, *_KEYWORDS):
                continue  # a keyword is written by its name: none of them, no call to walk for
            for call in _from_pretrained_calls(pf):
                kws = {k.arg: k for k in call.keywords if k.arg}
                if "use_auth_token" in kws:
                    kw = kws["use_auth_token"]
                    severity, state = _state(setup, "use_auth_token")
                    from trainlint.fixing.python_edits import remove_argument

                    if "token" in kws:
                        edits = [remove_argument(pf, call, kw)]
                    else:
                        edits = [pf.keyword_name_span(kw).edit("token")]
                    yield self.diagnostic(pf.keyword_name_span(kw),
                                          f"from_pretrained(use_auth_token=) is {state} ({target_text(setup)}): "
                                          f"use token=", edits=edits, fix_message="use token=", severity=severity)
                for name in ("load_in_8bit", "load_in_4bit"):
                    kw = kws.get(name)
                    if kw is None:
                        continue
                    scope = next((cs.scope for cs in pf.calls if cs.node is call), pf.module_scope)
                    v = pf.resolve(kw.value, scope).value
                    if v is False:
                        continue
                    severity, state = _state(setup, name)
                    yield self.diagnostic(
                        pf.keyword_name_span(kw),
                        f"from_pretrained({name}=) is {state} ({target_text(setup)}): pass "
                        f"quantization_config=BitsAndBytesConfig({name}=True)", severity=severity)

