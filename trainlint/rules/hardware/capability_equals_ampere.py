"""TL512 capability-equals-ampere: bf16 chosen by compute capability == 8, which excludes newer GPUs"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup
from trainlint.sources.python import PythonFile

AMPERE_MAJOR = 8  # the compute-capability major of Ampere, the first GPU generation with bf16
HEAD = "import torch\nfrom transformers import TrainingArguments\n"


def _is_capability_call(pf: PythonFile, node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return isinstance(f, ast.Attribute) and f.attr == "get_device_capability"


def _major_expr(pf: PythonFile, node: ast.AST, scope) -> bool:
    """``torch.cuda.get_device_capability()[0]``, or a name bound to it (``major``,
    ``major, minor = torch.cuda.get_device_capability()``)."""
    if isinstance(node, ast.Subscript) and _is_capability_call(pf, node.value):
        idx = node.slice
        return isinstance(idx, ast.Constant) and idx.value == 0
    if isinstance(node, ast.Name):
        for b in pf.bindings_of(node.id, scope):
            stmt = b.node
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                t, v = stmt.targets[0], stmt.value
                if isinstance(t, ast.Name) and t.id == node.id and _major_expr(pf, v, scope):
                    return True
                if isinstance(t, ast.Tuple) and t.elts and isinstance(t.elts[0], ast.Name) \
                        and t.elts[0].id == node.id and _is_capability_call(pf, v):
                    return True
    return False


class CapabilityEqualsAmpere(Rule):
    """
    ## What it does
    Flags a test of the GPU's compute capability for *equality* with Ampere's major version:
    `torch.cuda.get_device_capability()[0] == 8`, `major == 8` after `major, _ =
    torch.cuda.get_device_capability()`, or `get_device_capability() == (8, 0)`, in a training
    script (typically to choose bf16).

    ## Why is this bad?
    Hopper (9.x) and Blackwell (10.x, 12.x) GPUs also have bf16 but fail the test, so the script
    falls back to fp16 or fp32 on the newest hardware, silently: half the speed, or fp16's
    overflow risk.

    ## Example
    ```python
    use_bf16 = torch.cuda.get_device_capability()[0] == 8
    ```

    ## Use instead
    ```python
    use_bf16 = torch.cuda.is_bf16_supported()     # or get_device_capability()[0] >= 8
    ```

    ## Fix safety
    Unsafe: the fix writes `>=`, which turns bf16 on for newer GPUs (that is the point, but it
    changes the precision of those runs).

    ## References
    - https://pytorch.org/docs/stable/generated/torch.cuda.is_bf16_supported.html
    - https://developer.nvidia.com/cuda-gpus (compute capabilities per GPU)
    """

    code = "TL512"
    name = "capability-equals-ampere"
    severity = Severity.WARNING
    fix_safety = "unsafe"
    summary = "bf16 chosen by compute capability == 8, which excludes newer GPUs"
    triggers = ("get_device_capability",)
    cases = [
        Case(HEAD + "bf16 = torch.cuda.get_device_capability()[0] == 8\n"
                    "args = TrainingArguments(output_dir='o', bf16=bf16)\n", unsafe=True,
             fixed=HEAD + "bf16 = torch.cuda.get_device_capability()[0] >= 8\n"
                          "args = TrainingArguments(output_dir='o', bf16=bf16)\n"),
        Case(HEAD + "major, minor = torch.cuda.get_device_capability()\nif major == 8:\n    dtype = torch.bfloat16\n"),
        Case(HEAD + "if torch.cuda.get_device_capability() == (8, 0):\n    x = 1\n"),
        Case(HEAD + "bf16 = torch.cuda.get_device_capability()[0] >= 8\n", flags=False),
        Case(HEAD + "major = 8\nif major == 8:\n    pass\n", flags=False),
        Case(HEAD + "if torch.cuda.get_device_capability()[0] == 7:\n    pass\n", flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf in setup.scripts:
            if "get_device_capability" not in pf.text:
                continue
            for node in pf.nodes:
                if not isinstance(node, ast.Compare) or len(node.ops) != 1 or not isinstance(node.ops[0], ast.Eq):
                    continue
                left, right = node.left, node.comparators[0]
                if isinstance(left, ast.Constant):
                    left, right = right, left
                scope = pf.module_scope
                edit_text = None
                if isinstance(right, ast.Constant) and right.value == AMPERE_MAJOR and _major_expr(pf, left, scope):
                    edit_text = f"{pf.source_of(left)} >= {AMPERE_MAJOR}"
                elif _is_capability_call(pf, left) and isinstance(right, ast.Tuple) and right.elts \
                        and isinstance(right.elts[0], ast.Constant) and right.elts[0].value == AMPERE_MAJOR:
                    edit_text = f"{pf.source_of(left)} >= {pf.source_of(right)}"
                if edit_text is None:
                    continue
                sp = pf.span(node)
                yield self.diagnostic(sp, "the compute capability is compared for equality with 8 (Ampere): Hopper "
                                          "(9.x) and Blackwell (10.x, 12.x) also have bf16 but fail the test and fall "
                                          "back to fp16/fp32; use torch.cuda.is_bf16_supported() or >= 8",
                                      edits=[sp.edit(edit_text)], fix_message="compare with >=")
