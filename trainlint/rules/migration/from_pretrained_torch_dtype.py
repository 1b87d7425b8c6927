"""TL608 from-pretrained-torch-dtype: from_pretrained(torch_dtype=) is a deprecated alias of dtype= (4.56+)"""

from __future__ import annotations

from typing import Iterable

from trainlint.analysis import may_name
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._versioned import (
    older_support,
    target_text,
    transformers_at_least,
)
from trainlint.rules.base import Case, Rule
from trainlint.rules.migration._migration_common import (
    V524,
    _from_pretrained_calls,
)
from trainlint.setup import Setup

def _dtype_since() -> str | None:
    """The first release whose ``from_pretrained`` reads ``dtype`` (``knowledge/data/model_api.json``:
    the keys each released ``PreTrainedModel.from_pretrained`` reads out of ``**kwargs``)."""
    from trainlint.knowledge import model_api

    return model_api.keyword_window("PreTrainedModel.from_pretrained", "dtype")[0]



class FromPretrainedTorchDtype(Rule):
    """
    ## What it does
    Flags `from_pretrained(torch_dtype=...)` when the target transformers accepts `dtype`
    (4.56 and later).

    ## Why is this bad?
    `torch_dtype` is a deprecated alias: it logs "`torch_dtype` is deprecated! Use `dtype`
    instead!" and is kept only for backward compatibility.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
    ```

    ## Use instead
    ```python
    model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.bfloat16)
    ```

    ## Fix safety
    Safe: the same value under the new name.
    The fix is unsafe when the project declares support (its requirements or
    pyproject.toml) for a transformers older than the one that added the new name: it would
    break the project there.

    ## References
    - transformers 4.56.0 `modeling_utils.py`
    """

    code = "TL608"
    name = "from-pretrained-torch-dtype"
    severity = Severity.INFO
    triggers = ("torch_dtype",)
    fix_safety = "safe"
    summary = "from_pretrained(torch_dtype=) is a deprecated alias of dtype= (4.56+)"

    cases = [
        Case("""
            import torch
            from transformers import AutoModelForCausalLM
            m = AutoModelForCausalLM.from_pretrained("x", torch_dtype=torch.bfloat16)
            """, options=V524,
             fixed='import torch\nfrom transformers import AutoModelForCausalLM\n'
                   'm = AutoModelForCausalLM.from_pretrained("x", dtype=torch.bfloat16)\n'),
        Case("""
            import torch
            from transformers import AutoModelForCausalLM
            m = AutoModelForCausalLM.from_pretrained("x", torch_dtype=torch.bfloat16)
            """, options={"transformers_version": "4.55.4"}, flags=False),
        Case("""
            from transformers import AutoTokenizer
            t = AutoTokenizer.from_pretrained("x", torch_dtype="auto")
            """, options=V524, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        since = None
        for pf in setup.scripts:
            if not may_name(pf, "torch_dtype"):
                continue  # a keyword is written by its name: none, no call to walk for
            for call in _from_pretrained_calls(pf):
                kws = {k.arg: k for k in call.keywords if k.arg}
                kw = kws.get("torch_dtype")
                if kw is None:
                    continue
                if "dtype" in kws:
                    continue  # dtype wins; nothing to rename into
                since = since or _dtype_since()
                if since is None or not transformers_at_least(setup, since):
                    return
                applicability, note = older_support(setup, since, "dtype=", pf.path)
                yield self.diagnostic(
                    pf.keyword_name_span(kw),
                    f"torch_dtype= is a deprecated alias of dtype= ({target_text(setup)}){note}",
                    edits=[pf.keyword_name_span(kw).edit("dtype")], fix_message="rename to dtype=",
                    applicability=applicability)  # type: ignore[arg-type]

