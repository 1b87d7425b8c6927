"""TL227: ``report_to`` left to a default that changed between transformers 4 and 5."""

from __future__ import annotations

from typing import Iterator

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.fixing.python_edits import add_keyword
from trainlint.rules._versioned import SiteRule, fields_for, python_file, target_text
from trainlint.rules.base import Case
from trainlint.setup import ArgsSite, Setup

# Modules a script imports to log somewhere -> the ``report_to`` name of the Trainer's
# integration for it (transformers ``integrations.INTEGRATION_TO_CALLBACK``).
INTEGRATIONS = {
    "wandb": "wandb",
    "mlflow": "mlflow",
    "comet_ml": "comet_ml",
    "neptune": "neptune",
    "clearml": "clearml",
    "dvclive": "dvclive",
    "swanlab": "swanlab",
    "trackio": "trackio",
    "dagshub": "dagshub",
    "torch.utils.tensorboard": "tensorboard",
    "tensorboardX": "tensorboard",
}

TA = "from transformers import TrainingArguments\n"
V4 = {"transformers_version": "4.57.1"}


class ReportToDefault(SiteRule):
    """
    ## What it does
    Flags a TrainingArguments call (or launch line, or args file) that does not set
    `report_to`, where the default does something the script likely does not expect:

    - transformers 4.x: the default `None` becomes `"all"` in `__post_init__`: every logging
      integration that happens to be installed (wandb, mlflow, comet_ml, codecarbon, ...) is
      switched on, and 5.0 changes this default to `"none"`;
    - transformers 5.x: the default is `"none"`, yet the script imports a logger the Trainer
      has an integration for (`import wandb`, `mlflow`, `torch.utils.tensorboard`, ...): the
      Trainer reports nothing to it.

    A site whose arguments an unresolved `**kwargs` may complete is not flagged.

    ## Why is this bad?
    On 4.x an installed-but-unused wandb or comet makes a job ask for an API key, hang on a
    prompt in a batch job, or upload runs to someone's account; on 5.x, experiments that relied
    on the implicit wandb logging silently stop logging. The same script behaves differently
    after an upgrade.

    ## Example
    ```python
    import wandb
    args = TrainingArguments(output_dir="out")  # transformers 5: nothing reaches wandb
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", report_to="wandb")
    ```

    ## Fix safety
    On 4.x the fix writes `report_to="all"`: what the run does today, now explicit, so an
    upgrade changes nothing (safe). On 5.x it writes the integration the script imports
    (`report_to="wandb"`): that starts reporting, which is what the import suggests but not what
    the run does now (unsafe). Only Python calls are fixed, and not when the arguments object is
    handed to a function of the project that no Trainer of the setup is seen to receive it from.

    ## References
    - transformers 4.57 `TrainingArguments.__post_init__` (the
      "will change in v5" notice), 5.0 field default `"none"`
    """

    code = "TL227"
    name = "report-to-default"
    severity = Severity.WARNING
    fix_safety = "safe"
    summary = "report_to unset where its default (all on 4.x, none on 5.x) surprises"
    cases = [
        Case(TA + "args = TrainingArguments(output_dir='o')\n", options=V4,
             fixed=TA + "args = TrainingArguments(output_dir='o', report_to=\"all\")\n"),
        Case("import wandb\n" + TA + "wandb.init(project='p')\nargs = TrainingArguments(output_dir='o')\n",
             unsafe=True, fixed="import wandb\n" + TA + "wandb.init(project='p')\n"
                                "args = TrainingArguments(output_dir='o', report_to=\"wandb\")\n",
             note="5.x: wandb is set up but nothing reports to it"),
        Case("from torch.utils.tensorboard import SummaryWriter\n" + TA + "args = TrainingArguments(output_dir='o')\n",
             note="5.x: tensorboard"),
        Case("from trl import SFTConfig\nfrom open_r1.utils.evaluation import run_benchmark_jobs\n"
             "benchmark_args = SFTConfig(output_dir='', hub_model_id='m')\nrun_benchmark_jobs(benchmark_args)\n",
             options={**V4, "trl_version": "0.18.0"}, fixable=False,
             note="open-r1: a config that carries values to the project's benchmark jobs, no Trainer: no fix"),
        # must not flag
        Case(TA + "args = TrainingArguments(output_dir='o')\n", flags=False, note="5.x without a logger"),
        Case("import wandb\n" + TA + "args = TrainingArguments(output_dir='o', report_to='none')\n", flags=False),
        Case(TA + "args = TrainingArguments(output_dir='o', report_to=['wandb'])\n", options=V4, flags=False),
        Case(TA + "kw = load()\nargs = TrainingArguments(output_dir='o', **kw)\n", options=V4, flags=False,
             note="**kw may set it"),
    ]

    def site_check(self, setup: Setup, site: ArgsSite) -> Iterator[Diagnostic]:
        if site.get("report_to") is not None or site.open_ended or site.span is None:
            return
        f = (fields_for(setup, site.class_name) or {}).get("report_to")
        if f is None or not f.default_is_literal:
            return
        pf = python_file(setup, site.path) if site.call is not None else None
        if f.default is None:  # transformers 4.x: __post_init__ turns None into "all"
            message = (f"report_to is not set: {target_text(setup)} turns it into \"all\", so every installed "
                       f"logging integration (wandb, mlflow, comet_ml, codecarbon, ...) is switched on, and "
                       f"transformers 5 changes the default to \"none\"; set report_to explicitly")
            new, applicability = "all", "safe"
        elif f.default in ("none", ["none"]):
            used = _integrations(setup)
            if not used:
                return
            name = used[0]
            message = (f"report_to is not set and defaults to \"none\" ({target_text(setup)}), but the script "
                       f"uses {name}: the Trainer reports nothing to it (on transformers 4 it reported to every "
                       f"installed integration); set report_to=\"{name}\"")
            new, applicability = name, "unsafe"
        else:
            return
        edits = None
        if pf is not None and site.call is not None and not _handed_to_project_code(setup, pf, site):
            edits = [add_keyword(pf, site.call.site.node, f'report_to="{new}"')]
        yield self.diagnostic(site.span, message, edits=edits, fix_message=f'set report_to="{new}"',
                              applicability=applicability)  # type: ignore[arg-type]


def _handed_to_project_code(setup: Setup, pf, site: ArgsSite) -> bool:
    """Whether the arguments object is passed to a function of the project that no Trainer of
    the setup is known to receive it from (open-r1's ``run_benchmark_jobs(SFTConfig(...))``
    carries values to benchmark jobs, not to a Trainer): there ``report_to`` may mean nothing,
    and the fix is not offered."""
    import ast

    from trainlint.analysis import trainer_contexts

    if any(id(s) == id(site) for c in trainer_contexts(setup) for s in c.sites or []):
        return False
    stmt = site.call.site.stmt if site.call is not None else None
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return False
    name = stmt.targets[0].id
    for cs in pf.calls:
        passed = [a for a in (*cs.node.args, *(k.value for k in cs.node.keywords))
                  if isinstance(a, ast.Name) and a.id == name]
        if passed and not any(tc.site.node is cs.node for tc in pf.trainer_calls):
            return True
    return False


def _integrations(setup: Setup) -> list[str]:
    """The report_to names of the logging libraries the setup's scripts import, in order."""
    out: list[str] = []
    for pf in setup.scripts:
        for name in _file_integrations(pf):
            if name not in out:
                out.append(name)
    return out


def _file_integrations(pf) -> list[str]:
    """The report_to names of the logging libraries ``pf`` imports, in ``INTEGRATIONS`` order:
    once per file (every site of every setup that holds it asks)."""
    found = pf.__dict__.get("_tl_integrations")
    if found is None:
        found = pf.__dict__["_tl_integrations"] = [name for module, name in INTEGRATIONS.items()
                                                   if pf.uses_module(module)]
    return found
