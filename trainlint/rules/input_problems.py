"""TL0xx: input problems. The readers report these; they have no ``check`` of their own."""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules.base import Case, Rule


class InternalError(Rule):
    """
    ## What it does
    Reports a bug in trainlint itself: a reader or a rule raised an exception on this file.

    ## Why is this bad?
    trainlint could not finish checking the file, so findings may be missing. The other files
    are still checked. This is the only finding that makes the exit code 2.

    ## Example
    Any input that makes a rule crash.

    ## Use instead
    Nothing to change in your code. Please report the message (it names the rule and the line
    of trainlint that failed) with the input that triggered it.

    ## Fix safety
    No fix.

    ## References
    - design.md, section 2: exit codes
    """

    code = "TL000"
    name = "internal-error"
    severity = Severity.ERROR
    summary = "trainlint failed on this file (a bug: please report it)"
    produced_by_engine = True


class SyntaxErrorRule(Rule):
    """
    ## What it does
    Reports a Python file that does not parse.

    ## Why is this bad?
    The script will fail at start-up, before any training happens; and trainlint cannot read
    the TrainingArguments or Trainer calls in it. `fix` never touches a file that does not
    parse.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", learning_rate=2e-5
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", learning_rate=2e-5)
    ```

    ## Fix safety
    No fix.

    ## References
    - https://docs.python.org/3/library/ast.html#ast.parse
    """

    code = "TL001"
    name = "syntax-error"
    severity = Severity.ERROR
    summary = "a Python file that does not parse"
    produced_by_engine = True
    cases = [
        Case("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o'\n", flags=True),
        Case("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o')\n", flags=False),
    ]


class UnreadableFile(Rule):
    """
    ## What it does
    Reports a file that cannot be read as text: missing, binary, not decodable in its
    declared encoding, unreadable, or too large.

    ## Why is this bad?
    A path that was given to trainlint (or referenced by a launch line or config) cannot be
    checked.

    ## Example
    `trainlint check train.py` where `train.py` holds NUL bytes.

    ## Use instead
    Pass text files; check the path and the encoding declaration (PEP 263).

    ## Fix safety
    No fix.

    ## References
    - https://peps.python.org/pep-0263/
    """

    code = "TL002"
    name = "unreadable-file"
    severity = Severity.ERROR
    summary = "a file that cannot be read as text"
    produced_by_engine = True
