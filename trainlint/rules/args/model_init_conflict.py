"""TL219 model-init-conflict: model_init with optimizers=, or with model="""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    target_text,
    behaviour_holds,
)
from trainlint.rules.args._args_checks_common import (
    V524,
    _kw_span,
    _trainer_calls,
)
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup


class ModelInitConflict(Rule):
    """
    ## What it does
    Flags `Trainer(model_init=..., optimizers=...)` (all versions), and `Trainer(model=...,
    model_init=...)` (an error from 5.24, a warning before).

    ## Why is this bad?
    `RuntimeError: Passing a model_init is incompatible with providing the optimizers
    argument` (the optimizer would hold the parameters of a model that is re-created);
    passing both a model and `model_init` raises `ValueError` in 5.24 (4.x warned that the
    model is ignored).

    ## Example
    ```python
    Trainer(model_init=make_model, args=args, optimizers=(opt, sched))
    ```

    ## Use instead
    ```python
    Trainer(model_init=make_model, args=args)  # override create_optimizer_and_scheduler
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers 4.40 and 5.24 `Trainer.__init__`
    """

    code = "TL219"
    name = "model-init-conflict"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fires_on = ("model_init",)
    summary = "model_init with optimizers=, or with model="
    cases = [
        Case("from transformers import Trainer\nt = Trainer(model_init=f, args=a, optimizers=(o, s))\n"),
        Case("from transformers import Trainer\nt = Trainer(model=m, model_init=f, args=a)\n", options=V524),
        Case("from transformers import Trainer\nt = Trainer(model_init=f, args=a)\n", flags=False),
        Case("from transformers import Trainer\nt = Trainer(model_init=f, args=a, optimizers=(None, None))\n",
             flags=False, note="the default value"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf, tc in _trainer_calls(setup):
            kws = tc.keywords
            if "model_init" not in kws or isinstance(kws["model_init"], ast.Constant):
                continue
            opt = kws.get("optimizers")
            if opt is not None:
                default = isinstance(opt, ast.Tuple) and all(
                    isinstance(e, ast.Constant) and e.value is None for e in opt.elts)
                if not default:
                    yield self.diagnostic(_kw_span(pf, tc, "optimizers"),
                                          "model_init= with optimizers=: the optimizer would hold the parameters of a "
                                          "model that model_init re-creates; Trainer raises RuntimeError")
            model = kws.get("model")
            if model is not None and not (isinstance(model, ast.Constant) and model.value is None):
                raises = behaviour_holds(setup, "trainer_rejects_model_and_model_init")
                yield self.diagnostic(
                    _kw_span(pf, tc, "model_init"),
                    "model= and model_init= together: " + ("Trainer raises ValueError" if raises else
                                                           "model_init overrides the model (a warning)")
                    + f" ({target_text(setup)})",
                    severity=Severity.ERROR if raises else Severity.WARNING)

