"""TL228 fsdp-legacy-form: fsdp as a string/list, or FSDP1, deprecated by transformers' FSDP2 handling"""

from __future__ import annotations

from typing import Any

from trainlint.diagnostics import Severity
from trainlint.rules._versioned import (
    SiteRule,
    fsdp_enabled,
    python_keyword,
    target_text,
)
from trainlint.rules.args._args_checks_common import (
    announced_removal,
    fsdp2_handling,
    fsdp2_since,
    TA,
    V457,
    V524,
    _span,
    fsdp_options,
    fsdp_version,
)
from trainlint.rules.base import Case


def _fsdp_config_for(opts: list[str]) -> dict[str, Any] | None:
    """The fsdp_config entries transformers derives from the legacy options (first one wins,
    as its ``setdefault`` does); None for an FSDP1-only or unknown option."""
    out: dict[str, Any] = {}
    for o in opts:
        if o == "full_shard":
            out.setdefault("reshard_after_forward", True)
        elif o == "shard_grad_op":
            out.setdefault("reshard_after_forward", False)
        elif o == "offload":
            out.setdefault("cpu_offload", True)
        elif o != "auto_wrap":
            return None
    return out


def _dict_text(d: dict[str, Any]) -> str:
    return "{" + ", ".join(f'"{k}": {v!r}' for k, v in d.items()) + "}"



class FsdpLegacyForm(SiteRule):
    """
    ## What it does
    From transformers 5.10: flags `fsdp` given as a string or a list of options
    (`fsdp="full_shard auto_wrap"`, `--fsdp "full_shard offload"`), and FSDP1 chosen with
    `fsdp_config={"version": 1}`.

    ## Why is this bad?
    5.10 made FSDP2 the default and moved every FSDP setting into `fsdp_config`. The string and
    list forms are translated with a warning ("Passing `fsdp` as a string is deprecated and will
    be removed in Transformers v5.20"), and FSDP1 logs "FSDP1 ... is deprecated and will be
    removed in Transformers v5.20". A script that relies on them breaks when the translation
    goes.

    ## Example
    ```python
    TrainingArguments(output_dir="o", fsdp="full_shard offload auto_wrap")
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", fsdp=True,
                      fsdp_config={"reshard_after_forward": True, "cpu_offload": True})
    ```

    ## Fix safety
    Safe: the fix writes what transformers' own translation produces (`full_shard` ->
    `reshard_after_forward: True`, `shard_grad_op` -> `False`, `offload` -> `cpu_offload: True`,
    `auto_wrap` is the default). Only in a Python call without `fsdp_config`, and never for an
    FSDP1-only strategy (see `fsdp-invalid-options`, TL217).

    ## References
    - transformers 5.10+ `TrainingArguments._apply_legacy_fsdp_to_config`
      and `_process_fsdp_args`
    """

    code = "TL228"
    fires_on = ("fsdp",)
    name = "fsdp-legacy-form"
    severity = Severity.WARNING
    fix_safety = "safe"
    summary = "fsdp as a string/list, or FSDP1, deprecated by transformers' FSDP2 handling"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='full_shard offload auto_wrap')\n", options=V524,
             fixed=TA + "a = TrainingArguments(output_dir='o', fsdp=True, "
                        "fsdp_config={\"reshard_after_forward\": True, \"cpu_offload\": True})\n"),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp=['shard_grad_op'], fsdp_config='fsdp.json')\n",
             options=V524, note="fsdp_config is a file: no fix"),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp=True, fsdp_config={'version': 1})\n", options=V524),
        Case(files={"run.sh": "torchrun --nproc_per_node 2 train.py --output_dir o --fsdp 'full_shard auto_wrap'\n",
                    "train.py": "from transformers import HfArgumentParser, TrainingArguments\n"
                                "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"},
             options=V524, note="launch-line flag"),
        # must not flag
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp=True, fsdp_config={'reshard_after_forward': True})\n",
             options=V524, flags=False),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='full_shard auto_wrap')\n", options=V457, flags=False,
             note="the string form is the only form before 5.10"),
    ]

    def site_check(self, setup, site):
        if not fsdp2_handling(setup):
            return
        v = site.get("fsdp")
        opts = fsdp_options(v.value) if v is not None else None
        if v is not None and opts:
            form = "string" if isinstance(v.value, str) else "list"
            config = _fsdp_config_for(opts)
            shown = "fsdp=True" + (f", fsdp_config={_dict_text(config)}" if config else "")
            edits = None
            found = python_keyword(setup, site, "fsdp") if v.origin == "python" else None
            if found is not None and config is not None and site.get("fsdp_config") is None:
                pf, kw = found
                edits = [pf.span(kw).edit(shown)]
            advice = shown if config is not None else "fsdp=True and the settings in fsdp_config"
            yield self.diagnostic(_span(site, "fsdp"), f"fsdp as a {form} ({v.value!r}) is deprecated since "
                                  f"transformers {fsdp2_since()} ({announced_removal(setup, 'fsdp_legacy_form_announced_removal')}"
                                  f"{target_text(setup)}): write {advice}",
                                  edits=edits, fix_message=f"write {shown}")
        if fsdp_enabled(v) and fsdp_version(setup, site) == 1:
            removal = announced_removal(setup, "fsdp1_announced_removal").removesuffix("; ")
            yield self.diagnostic(_span(site, "fsdp_config"), "fsdp_config selects FSDP1 (version 1), deprecated "
                                  f"since transformers {fsdp2_since()}{' and ' + removal if removal else ''}: "
                                  "migrate to FSDP2 (version 2, the default)")

