"""TL221 headless-model-in-trainer: a base model without a task head passed to Trainer"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    behaviour_holds,
)
from trainlint.rules.args._args_checks_common import (
    V524,
    _kw_span,
    _trainer_calls,
)
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup
from trainlint.sources.python import PythonFile

_HEADLESS_EXCLUDE = ("For", "Head", "PreTrained", "EncoderDecoder")


def _headless_class(pf: PythonFile, call: ast.Call) -> str | None:
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr in ("from_pretrained", "from_config")):
        return None
    qn = pf.qualname(f.value) or ""
    if not qn.startswith("transformers."):
        return None
    name = qn.rsplit(".", 1)[-1]
    if name == "AutoModel":
        return name
    if name.endswith("Model") and name[0].isupper() and not any(x in name for x in _HEADLESS_EXCLUDE) \
            and not name.startswith("Auto"):
        return name
    return None



class HeadlessModelInTrainer(Rule):
    """
    ## What it does
    Flags a Trainer whose `model` is created with `AutoModel.from_pretrained` or a base
    `*Model` class (`BertModel`, `LlamaModel`, ...) that has no task head (transformers 4.57
    and later).

    ## Why is this bad?
    The Trainer refuses it: `ValueError: The model you have picked (...) cannot be used as is
    for training: it only computes hidden states and does not accept any labels`.

    ## Example
    ```python
    model = AutoModel.from_pretrained("bert-base-uncased")
    Trainer(model=model, args=args)
    ```

    ## Use instead
    ```python
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
    ```

    ## Fix safety
    No automatic fix: the task head depends on the task.

    ## References
    - transformers 4.57.1 / 5.24 `Trainer.__init__` (`MODEL_MAPPING_NAMES`)
    """

    code = "TL221"
    name = "headless-model-in-trainer"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    summary = "a base model without a task head passed to Trainer"
    cases = [
        Case("from transformers import AutoModel, Trainer\nm = AutoModel.from_pretrained('bert-base-uncased')\n"
             "t = Trainer(model=m, args=a)\n", options=V524),
        Case("from transformers import BertModel, Trainer\nt = Trainer(model=BertModel.from_pretrained('b'))\n",
             options=V524),
        Case("from transformers import AutoModelForCausalLM, Trainer\nm = AutoModelForCausalLM.from_pretrained('x')\n"
             "t = Trainer(model=m, args=a)\n", options=V524, flags=False),
        Case("from transformers import GPT2LMHeadModel, Trainer\nm = GPT2LMHeadModel.from_pretrained('gpt2')\n"
             "t = Trainer(model=m)\n", options=V524, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        if not behaviour_holds(setup, "trainer_rejects_headless_model"):
            return
        for pf, tc in _trainer_calls(setup):
            m = tc.keywords.get("model")
            expr: ast.AST | None = m
            if isinstance(m, ast.Name):
                b = pf.binding_of(m.id, tc.site.scope)
                expr = b.value if b is not None and b.kind in ("assign", "annassign") else None
            if not isinstance(expr, ast.Call):
                continue
            cls = _headless_class(pf, expr)
            if cls is None:
                continue
            yield self.diagnostic(_kw_span(pf, tc, "model"),
                                  f"{cls} only computes hidden states and takes no labels: Trainer raises ValueError; "
                                  "use an AutoModelFor<Task> class",
                                  related=[pf.span(expr).related(f"{cls} created here")])

