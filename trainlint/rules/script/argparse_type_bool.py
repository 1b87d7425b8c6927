"""TL124 argparse-type-bool: argparse type=bool, which reads "False" as True"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import may_name
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup

FALSY = ("false", "0", "no", "n", "off", "f")
HEAD = "import argparse\nfrom transformers import Trainer\nparser = argparse.ArgumentParser()\n"


class ArgparseTypeBool(Rule):
    """
    ## What it does
    Flags `parser.add_argument(..., type=bool)` on an `argparse.ArgumentParser`, and says so
    louder when a launch line of the setup passes a false-looking value to that option
    (`--fp16 False`).

    ## Why is this bad?
    argparse calls `bool("False")`, and any non-empty string is true: `--fp16 False`,
    `--gradient_checkpointing 0` or `--use_lora no` all turn the switch **on**. Precision and
    training switches then do the opposite of what the launch line says, silently.

    ## Example
    ```python
    parser.add_argument("--fp16", type=bool, default=False)
    ```

    ## Use instead
    ```python
    parser.add_argument("--fp16", action="store_true")
    # or, to keep "--fp16 true/false":
    from transformers.hf_argparser import string_to_bool
    parser.add_argument("--fp16", type=string_to_bool, default=False)
    ```

    ## Fix safety
    No automatic fix: `store_true` changes the command-line syntax.

    ## References
    - https://docs.python.org/3/library/argparse.html#type ("bool() ... any non-empty string is True")
    """

    code = "TL124"
    name = "argparse-type-bool"
    severity = Severity.WARNING
    summary = 'argparse type=bool, which reads "False" as True'
    triggers = SETUP_NAMES
    fires_on = ("bool",)
    cases = [
        Case(HEAD + "parser.add_argument('--fp16', type=bool, default=False)\nargs = parser.parse_args()\n"),
        Case(files={"train.py": HEAD + "parser.add_argument('--gradient_checkpointing', type=bool, default=True)\n"
                                       "args = parser.parse_args()\n",
                    "run.sh": "python train.py --gradient_checkpointing False\n"}, note="the launch line says False"),
        Case(HEAD + "parser.add_argument('--fp16', action='store_true')\nargs = parser.parse_args()\n", flags=False),
        Case(HEAD + "parser.add_argument('--lr', type=float, default=1e-5)\nargs = parser.parse_args()\n", flags=False),
        Case("import argparse as ap\nfrom transformers import Trainer\ndef options():\n    p = ap.ArgumentParser()\n"
             "    p.add_argument('--fp16', type=bool)\n    return p.parse_args()\n",
             note="through a module alias, in a function"),
        Case("import argparse\nfrom transformers import Trainer\nbool = lambda s: s == 'true'\nparser = argparse.ArgumentParser()\n"
             "parser.add_argument('--fp16', type=bool)\n", flags=False, note="a local bool"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        launch = setup.extra.get("launch")
        for pf in setup.scripts:
            # an option comes from ``<argparse.ArgumentParser>.add_argument(..., type=bool)``: the
            # parser's class through the file's imports, the method and ``bool`` by name
            if not pf.uses_module("argparse") or not may_name(pf, "add_argument") or not may_name(pf, "bool"):
                continue
            if "bool" in pf.module_scope.bindings:
                continue
            for dest, opt in pf.argparse_options().items():
                kw = pf.keyword(opt.call, "type")
                if kw is None or not (isinstance(kw.value, ast.Name) and kw.value.id == "bool"):
                    continue
                passed = None
                if launch is not None and launch.script is not None:
                    for name in opt.names:
                        f = launch.flag(name)
                        if f is not None and f.value is not None and f.value.strip().lower() in FALSY:
                            passed = f
                            break
                if passed is not None:
                    msg = (f"{opt.names[0]} is parsed with type=bool, so {passed.raw or passed.name} on the launch line "
                           f"turns it on (bool of any non-empty string is True); use action='store_true' or a "
                           f"string-to-bool type")
                    related = [passed.name_span.related("the false value is passed here")]
                else:
                    msg = (f"{opt.names[0]} is parsed with type=bool: any non-empty value, \"False\" and \"0\" "
                           f"included, turns it on; use action='store_true' or a string-to-bool type")
                    related = []
                yield self.diagnostic(pf.span(kw.value), msg, related=related)
