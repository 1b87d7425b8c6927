"""TL606 evaluation-strategy-enum: EvaluationStrategy was removed in transformers 5.0 (use IntervalStrategy)"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity, replace
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    target_text,
    behaviour_holds,
)
from trainlint.rules.base import Case, Rule
from trainlint.rules.migration._migration_common import (
    V50,
    V457,
    V524,
)
from trainlint.setup import Setup

# Which releases define the enum: the behaviour marker "evaluation_strategy_enum_exists"
# (``class EvaluationStrategy(`` in trainer_utils.py of every release).
MARKER = "evaluation_strategy_enum_exists"



class EvaluationStrategyEnum(Rule):
    """
    ## What it does
    Flags imports of `EvaluationStrategy` from transformers when the target is 5.0 or newer.

    ## Why is this bad?
    The enum was removed in 5.0 (it had been a deprecated alias of `IntervalStrategy`): the
    import raises `ImportError` before anything runs.

    ## Example
    ```python
    from transformers.trainer_utils import EvaluationStrategy
    args = TrainingArguments(output_dir="out", eval_strategy=EvaluationStrategy.EPOCH)
    ```

    ## Use instead
    ```python
    from transformers.trainer_utils import IntervalStrategy
    args = TrainingArguments(output_dir="out", eval_strategy=IntervalStrategy.EPOCH)
    ```

    ## Fix safety
    Safe: `IntervalStrategy` has the same members. The import is renamed, and so is every use
    of the name when it was imported without an alias.

    ## References
    - huggingface/transformers#41131
    """

    code = "TL606"
    name = "evaluation-strategy-enum"
    severity = Severity.ERROR
    triggers = SETUP_NAMES + ("EvaluationStrategy", "IntervalStrategy")
    fires_on = ("EvaluationStrategy",)
    fix_safety = "safe"
    summary = "EvaluationStrategy was removed in transformers 5.0 (use IntervalStrategy)"

    cases = [
        Case("""
            from transformers.trainer_utils import EvaluationStrategy
            s = EvaluationStrategy.EPOCH
            """, options=V50,
             fixed="from transformers.trainer_utils import IntervalStrategy\ns = IntervalStrategy.EPOCH\n"),
        Case("""
            from transformers import EvaluationStrategy as ES
            s = ES.STEPS
            """, options=V524,
             fixed="from transformers import IntervalStrategy as ES\ns = ES.STEPS\n"),
        Case("""
            from transformers.trainer_utils import EvaluationStrategy
            """, options=V457, flags=False),
        Case("""
            from transformers.trainer_utils import IntervalStrategy
            """, options=V524, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        if not any(any(a.name == "EvaluationStrategy" for a in n.names)
                   for pf in setup.scripts if "EvaluationStrategy" in pf.text for n in pf.of_type(ast.ImportFrom)):
            return
        from trainlint.knowledge import behaviour

        removed = behaviour.removed_in(MARKER)
        if behaviour_holds(setup, MARKER) or removed is None:
            return
        for pf in setup.scripts:
            for node in pf.of_type(ast.ImportFrom):
                if not node.module or node.level:
                    continue
                if node.module.split(".")[0] != "transformers":
                    continue
                for alias in node.names:
                    if alias.name != "EvaluationStrategy":
                        continue
                    sp = pf.span(alias)
                    name_span = replace(sp, end_line=sp.line, end_column=sp.column + len("EvaluationStrategy"))
                    edits = [name_span.edit("IntervalStrategy")]
                    if alias.asname is None:
                        if len(pf.module_scope.bindings.get("EvaluationStrategy", [])) > 1:
                            edits = []
                        else:
                            for n in pf.of_type(ast.Name):
                                if n.id == "EvaluationStrategy":
                                    edits.append(pf.span(n).edit("IntervalStrategy"))
                    yield self.diagnostic(
                        name_span,
                        f"EvaluationStrategy was removed in transformers {removed} "
                        f"({target_text(setup)}): use IntervalStrategy",
                        edits=edits or None, fix_message="use IntervalStrategy")

