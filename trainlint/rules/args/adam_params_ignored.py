"""TL236 adam-params-ignored: adam_beta1/adam_beta2/adam_epsilon with an optimizer that does not read them"""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._spellings import spelled_cases
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import SiteRule, fields_for, is_num, strategy
from trainlint.rules.args._args_checks_common import _related, _span

ADAM_FIELDS = ("adam_beta1", "adam_beta2", "adam_epsilon")
# optim values whose optimizer transformers builds without the adam_* fields
# (trainer_optimizer.py: _get_adafactor, _get_sgd, _get_adagrad, _get_rmsprop, the bitsandbytes
# RMSprop branch (optim_args only), _get_lomo_optimizer, _get_grokadamw)
IGNORES_ALL = frozenset({"adafactor", "sgd", "adagrad", "rmsprop", "rmsprop_bnb", "rmsprop_bnb_8bit",
                         "rmsprop_bnb_32bit", "lomo", "adalomo", "grokadamw"})
# bitsandbytes Lion takes betas from adam_beta1/2 but no eps
IGNORES_EPS = frozenset({"lion_32bit", "lion_8bit", "paged_lion_32bit", "paged_lion_8bit"})


class AdamParamsIgnored(SiteRule):
    """
    ## What it does
    Flags `adam_beta1`, `adam_beta2` or `adam_epsilon` set to a non-default value with an
    `optim` whose optimizer transformers builds without them: `adafactor`, `sgd`, `adagrad`,
    `rmsprop` (and its bitsandbytes variants), `lomo`, `adalomo`, `grokadamw`; `adam_epsilon`
    with the Lion optimizers.

    ## Why is this bad?
    The values are silently unused: the tuned betas or epsilon never reach the optimizer.
    axolotl warns about it; transformers says nothing.

    ## Example
    ```python
    TrainingArguments(output_dir="o", optim="adafactor", adam_beta2=0.95)
    ```

    ## Use instead
    ```python
    TrainingArguments(output_dir="o", optim="adafactor")   # or an Adam optim with the betas
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - transformers `trainer_optimizer.py` (which handler receives `adam_kwargs`)
    - axolotl `utils/schemas/validation.py` (adam parameters with a non-Adam optimizer)
    """

    code = "TL236"
    name = "adam-params-ignored"
    severity = Severity.INFO
    summary = "adam_beta1/adam_beta2/adam_epsilon with an optimizer that does not read them"
    triggers = SETUP_NAMES
    fires_on = ("optim",)
    cases = [
        *spelled_cases({"optim": "adafactor", "adam_beta2": 0.95}),
        *spelled_cases({"optim": "lion_8bit", "adam_epsilon": 1e-6}, only=("keyword",)),
        *spelled_cases({"optim": "adamw_torch", "adam_beta2": 0.95}, flags=False, only=("keyword", "flag")),
        *spelled_cases({"optim": "lion_8bit", "adam_beta2": 0.99}, flags=False, only=("keyword",)),
        *spelled_cases({"optim": "sgd", "adam_beta2": 0.999}, flags=False, only=("keyword",),
                       note="the default value"),
    ]

    def site_check(self, setup, site):
        optim = strategy(site.known("optim"))
        if not isinstance(optim, str) or (optim not in IGNORES_ALL and optim not in IGNORES_EPS):
            return
        fields = fields_for(setup, site.class_name) or {}
        names = ADAM_FIELDS if optim in IGNORES_ALL else ("adam_epsilon",)
        for name in names:
            v = site.get(name)
            if v is None or not is_num(v.value) or name not in fields:
                continue
            if fields[name].default_is_literal and v.value == fields[name].default:
                continue
            yield self.diagnostic(_span(site, name),
                                  f'{name}={v.value!r} is ignored: optim="{optim}" builds its optimizer without it; '
                                  f"drop it (or pass the optimizer's own settings in optim_args)",
                                  related=_related(site, "optim"))
