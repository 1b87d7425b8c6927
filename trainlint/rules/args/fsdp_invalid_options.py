"""TL217 fsdp-invalid-options: fsdp options the target version rejects"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._versioned import (
    SiteRule,
    target_text,
)
from trainlint.rules.args._args_checks_common import (
    fsdp2_handling,
    TA,
    V457,
    V524,
    _span,
    fsdp_options,
    fsdp_version,
)
from trainlint.rules.base import Case

FSDP1_ONLY = ("hybrid_shard", "hybrid_shard_zero2", "no_shard")



class FsdpInvalidOptions(SiteRule):
    """
    ## What it does
    Flags `fsdp` options (its string or list form) that `TrainingArguments` rejects in the
    target version:

    - before transformers 5.10: `"offload"` alone, or both `"full_shard"` and
      `"shard_grad_op"`;
    - from 5.10 (FSDP2 by default): a sharding strategy only FSDP1 has (`"hybrid_shard"`,
      `"hybrid_shard_zero2"`, `"no_shard"`) without `fsdp_config={"version": 1}`.

    ## Why is this bad?
    `ValueError: --fsdp offload can't work on its own` / `--fsdp full_shard is not compatible
    with --fsdp shard_grad_op` (4.40 to 5.9), and ``ValueError: `fsdp=hybrid_shard` is only
    available with FSDP1`` (5.10 and later) at construction.

    ## Example
    ```python
    TrainingArguments(output_dir="o", fsdp="offload")  # transformers 4.x
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", fsdp="full_shard offload")
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `TrainingArguments.__post_init__` (4.x),
      `TrainingArguments._apply_legacy_fsdp_to_config` (5.10+)
    """

    code = "TL217"
    fires_on = ("fsdp",)
    name = "fsdp-invalid-options"
    severity = Severity.ERROR
    summary = "fsdp options the target version rejects"
    cases = [
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='offload')\n", options={"transformers_version": "5.9.0"}),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='full_shard shard_grad_op')\n", options=V457),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='hybrid_shard auto_wrap')\n", options=V524),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp=['no_shard'], fsdp_config={'version': 2})\n",
             options=V524),
        # must not flag
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='full_shard offload auto_wrap')\n", flags=False,
             options=V457),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='offload')\n", flags=False, options=V524,
             note="5.10+ turns it into cpu_offload"),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='hybrid_shard', fsdp_config={'version': 1})\n",
             flags=False, options=V524),
        Case(TA + "a = TrainingArguments(output_dir='o', fsdp='hybrid_shard')\n", flags=False, options=V457),
    ]

    def site_check(self, setup, site):
        opts = fsdp_options(site.known("fsdp"))
        if opts is None:
            return
        if fsdp2_handling(setup):
            only1 = [o for o in opts if o in FSDP1_ONLY]
            if only1 and fsdp_version(setup, site) == 2:
                yield self.diagnostic(_span(site, "fsdp"), f"fsdp={only1[0]!r} is a sharding strategy only FSDP1 has, "
                                      f"and {target_text(setup)} uses FSDP2 unless fsdp_config sets version 1: "
                                      f"TrainingArguments raises ValueError (use full_shard or shard_grad_op)")
            return
        if opts == ["offload"]:
            yield self.diagnostic(_span(site, "fsdp"), 'fsdp="offload" cannot work on its own (use "full_shard '
                                  'offload" or "shard_grad_op offload"): TrainingArguments raises ValueError')
        elif "full_shard" in opts and "shard_grad_op" in opts:
            yield self.diagnostic(_span(site, "fsdp"), "fsdp full_shard is not compatible with shard_grad_op: "
                                  "TrainingArguments raises ValueError")

