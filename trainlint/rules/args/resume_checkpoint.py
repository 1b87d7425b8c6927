"""TL231: ``trainer.train(resume_from_checkpoint=True)`` with nothing that checks for a checkpoint."""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.fixing.python_edits import ensure_import
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup
from trainlint.sources.python import PythonFile

HEAD = ("from transformers import Trainer, TrainingArguments\n"
        "training_args = TrainingArguments(output_dir='out')\n"
        "trainer = Trainer(model=model, args=training_args)\n")


class ResumeWithoutCheckpoint(Rule):
    """
    ## What it does
    Flags `trainer.train(resume_from_checkpoint=True)` in a script that does not look for a
    checkpoint first: no `get_last_checkpoint` anywhere in the file and no `if` around the call.

    ## Why is this bad?
    `True` means "the newest `checkpoint-*` folder in `output_dir`"; when there is none, which
    is the case on the first run of a job (or after `output_dir` changed), `Trainer.train`
    raises `ValueError: No valid checkpoint found in output directory` after the model and the
    data are loaded. Job scripts that are restarted by a scheduler usually want "resume if
    there is something to resume".

    ## Example
    ```python
    trainer.train(resume_from_checkpoint=True)
    ```

    ## Use instead
    ```python
    from transformers.trainer_utils import get_last_checkpoint
    trainer.train(resume_from_checkpoint=get_last_checkpoint(training_args.output_dir))
    ```

    ## Fix safety
    Safe: `get_last_checkpoint` is what `True` resolves to, except that no checkpoint gives
    `None` (train from the start) instead of the ValueError. The fix is offered when the
    Trainer's `args=` is a name or attribute the call can reuse.

    ## References
    - transformers `Trainer.train` (`resume_from_checkpoint` handling),
      `trainer_utils.get_last_checkpoint`
    """

    code = "TL231"
    name = "resume-without-checkpoint"
    severity = Severity.WARNING
    triggers = SETUP_NAMES
    fires_on = ("resume_from_checkpoint",)
    fix_safety = "safe"
    summary = "train(resume_from_checkpoint=True) with no check that a checkpoint exists"
    cases = [
        Case(HEAD + "trainer.train(resume_from_checkpoint=True)\n",
             fixed=HEAD.replace("TrainingArguments\n", "TrainingArguments\n"
                                "from transformers.trainer_utils import get_last_checkpoint\n", 1)
             + "trainer.train(resume_from_checkpoint=get_last_checkpoint(training_args.output_dir))\n"),
        Case("from transformers import Trainer\n"
             "Trainer(model=m, args=make_args()).train(resume_from_checkpoint=True)\n",
             note="args= is a call: flagged, no fix"),
        Case(HEAD + "RESUME = True\ntrainer.train(resume_from_checkpoint=RESUME)\n", note="through a constant"),
        # must not flag
        Case(HEAD + "from transformers.trainer_utils import get_last_checkpoint\n"
             "last = get_last_checkpoint(training_args.output_dir)\n"
             "trainer.train(resume_from_checkpoint=True if last else None)\n", flags=False),
        Case(HEAD + "import os\nif os.listdir(training_args.output_dir):\n"
             "    trainer.train(resume_from_checkpoint=True)\nelse:\n    trainer.train()\n", flags=False),
        Case(HEAD + "trainer.train(resume_from_checkpoint='out/checkpoint-500')\n", flags=False),
        Case(HEAD + "RESUME = False\ntrainer.train(resume_from_checkpoint=RESUME)\n", flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf in setup.scripts:
            if "resume_from_checkpoint" not in pf.text or "get_last_checkpoint" in pf.text:
                continue
            guarded = None  # the walk of every node, once a call could be flagged
            for cs in pf.calls_named("train"):
                f = cs.node.func
                if not (isinstance(f, ast.Attribute) and f.attr == "train"):
                    continue
                kw = pf.keyword(cs.node, "resume_from_checkpoint")
                if kw is None or pf.resolve(kw.value, cs.scope).value is not True:
                    continue
                if guarded is None:
                    guarded = _conditional_lines(pf)
                if any(a <= cs.stmt.lineno <= b for a, b in guarded):
                    continue
                args_text = _trainer_args_text(pf, f.value, cs)
                edits = None
                if args_text is not None:
                    edits = [pf.span(kw.value).edit(f"get_last_checkpoint({args_text}.output_dir)")]
                    imp = ensure_import(pf, "transformers.trainer_utils", "get_last_checkpoint")
                    if imp is not None:
                        edits.insert(0, imp)
                yield self.diagnostic(
                    pf.span(kw), "resume_from_checkpoint=True raises ValueError (\"No valid checkpoint found in "
                                 "output directory\") when output_dir has no checkpoint yet, as on a job's first "
                                 "run; pass get_last_checkpoint(output_dir), which is None when there is none",
                    edits=edits, fix_message="resume from get_last_checkpoint(output_dir)")


def _conditional_lines(pf: PythonFile) -> list[tuple[int, int]]:
    """Line ranges of ``if``/``try`` bodies: a call there may be the guarded branch."""
    out = []
    for node in pf.nodes:
        if isinstance(node, (ast.If, ast.Try, ast.IfExp)):
            out.append((node.lineno, node.end_lineno or node.lineno))
    return out


def _trainer_args_text(pf: PythonFile, receiver: ast.expr, cs) -> str | None:
    """The source of the ``args=`` given to the Trainer that ``receiver`` names, when it is a
    plain name or attribute (``training_args``, ``self.args``)."""
    call = receiver if isinstance(receiver, ast.Call) else None
    if isinstance(receiver, ast.Name):
        b = pf.binding_of(receiver.id, cs.scope)
        call = b.value if b is not None and isinstance(b.value, ast.Call) else None
    if call is None:
        return None
    tc = next((t for t in pf.trainer_calls if t.site.node is call), None)
    if tc is None:
        return None
    args = tc.keywords.get("args")
    if isinstance(args, (ast.Name, ast.Attribute)):
        return pf.source_of(args)
    return None
