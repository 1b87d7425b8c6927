"""TL408 fsdp-invalid-wrap-policy: invalid fsdp_auto_wrap_policy or non-integer fsdp_min_num_params"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.launch._accelerate_fsdp_common import (
    FSDP_YAML,
    _fsdp,
    fsdp_get,
)
from trainlint.setup import Setup

WRAP_POLICIES = ("TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP")



class FsdpBadWrapPolicy(Rule):
    """
    ## What it does
    Flags an `fsdp_auto_wrap_policy` that is not one of `TRANSFORMER_BASED_WRAP`,
    `SIZE_BASED_WRAP`, `NO_WRAP`, and, with `SIZE_BASED_WRAP`, an `fsdp_min_num_params` that is
    not an integer (YAML reads `1e8` as the *string* "1e8", and `1.0e+8` as a float).

    ## Why is this bad?
    The FSDP plugin raises "Invalid auto wrap policy"; the launcher passes `min_num_params` on
    as text and the plugin's `int(...)` fails on "1e8" or "100000000.0".

    ## Example
    ```yaml
    fsdp_config:
      fsdp_auto_wrap_policy: SIZE_BASED_WRAP
      fsdp_min_num_params: 1e8
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      fsdp_auto_wrap_policy: SIZE_BASED_WRAP
      fsdp_min_num_params: 100000000
    ```

    ## Fix safety
    Safe: the number is written as an integer; a policy name differing only in case or
    separators is written in the spelling accelerate lists.

    ## References
    - accelerate `utils/dataclasses.py` (`FullyShardedDataParallelPlugin.__post_init__`),
      `utils/constants.py` (`FSDP_AUTO_WRAP_POLICY`)
    """

    code = "TL408"
    name = "fsdp-invalid-wrap-policy"
    severity = Severity.ERROR
    triggers = LAUNCH_NAMES
    python_alone = False  # reads only an accelerate config, which a file gives
    fix_safety = "safe"
    summary = "invalid fsdp_auto_wrap_policy or non-integer fsdp_min_num_params"

    cases = [
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n  fsdp_min_num_params: 1e8\n"},
             fixed_path="acc.yaml",
             fixed=FSDP_YAML + "  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n  fsdp_min_num_params: 100000000\n"),
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_auto_wrap_policy: transformer-based-wrap\n"},
             fixed_path="acc.yaml", fixed=FSDP_YAML + "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"),
        # must not flag
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n  fsdp_min_num_params: 100000000\n"},
             flags=False),
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  fsdp_min_num_params: 1e8\n"},
             flags=False, note="min_num_params is only read with SIZE_BASED_WRAP"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = _fsdp(setup)
        if acc is None:
            return
        policy = fsdp_get(acc, "auto_wrap_policy")
        if policy is not None and policy.span is not None:
            text = str(policy.value)
            if text.upper() not in WRAP_POLICIES:
                canon = text.upper().replace("-", "_").replace(" ", "_")
                edits = [policy.span.edit(canon)] if canon in WRAP_POLICIES else None
                yield self.diagnostic(policy.span, f"fsdp_auto_wrap_policy {text!r} is not one of "
                                                   f"{', '.join(WRAP_POLICIES)}: the FSDP plugin raises \"Invalid auto "
                                                   f"wrap policy\"", edits=edits, fix_message=f"write {canon}")
                return
        if policy is None or str(policy.value).upper() != "SIZE_BASED_WRAP":
            return
        mnp = fsdp_get(acc, "min_num_params")
        if mnp is None or mnp.span is None:
            return
        raw = mnp.value
        if isinstance(raw, int) and not isinstance(raw, bool):
            return
        if isinstance(raw, str) and raw.strip().isdigit():
            return
        new = None
        try:
            f = float(raw)
            if f.is_integer() and f >= 0:
                new = int(f)
        except (TypeError, ValueError):
            pass
        yield self.diagnostic(mnp.span, f"fsdp_min_num_params {raw!r} "
                                        f"is not an integer (YAML reads it as {type(raw).__name__}): the FSDP plugin's "
                                        f"int() fails on it", edits=[mnp.span.edit(str(new))] if new is not None else None,
                              fix_message=f"write {new}")

