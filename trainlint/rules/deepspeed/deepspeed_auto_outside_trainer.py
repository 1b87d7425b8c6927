"""TL311 deepspeed-auto-outside-trainer: "auto" DeepSpeed values with deepspeed.initialize called directly"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_models import (
    qualified_calls,
    uses_hf_trainer,
)
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.deepspeed._deepspeed_setup_common import (
    _ds,
    _trainer_script,
)
from trainlint.setup import Setup


class AutoOutsideTrainer(Rule):
    """
    ## What it does
    Flags `"auto"` values in a DeepSpeed config that a script passes to `deepspeed.initialize`
    itself, without the HF Trainer (the config is linked by `--deepspeed`/`--deepspeed_config`
    on the launch line or by `deepspeed.initialize(config="...")`). A key the script sets
    itself before the call (`ds_config["train_batch_size"] = world_size`,
    `ds_config.update(train_micro_batch_size_per_gpu=1)`, a nested
    `ds_config["zero_optimization"]["reduce_bucket_size"] = ...`) is not reported: the file's
    `"auto"` never reaches DeepSpeed.

    ## Why is this bad?
    `"auto"` is a placeholder that only the HF Trainer (and accelerate) replaces; DeepSpeed reads
    the string itself and fails on it (batch-size arithmetic, its schema's integer fields). The
    guide: without the Trainer "you can't use the auto value".

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}
    ```
    with `engine, *_ = deepspeed.initialize(model=model, config="ds.json")`.

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2}}
    ```

    ## Fix safety
    No fix: the values are the script's choice.

    ## References
    - https://huggingface.co/docs/transformers/deepspeed ("auto" values need the Trainer)
    - DeepSpeed `runtime/config.py`
    """

    code = "TL311"
    name = "deepspeed-auto-outside-trainer"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    python_alone = False  # a DeepSpeed config comes from a file (linking)
    summary = "\"auto\" DeepSpeed values with deepspeed.initialize called directly"

    SCRIPT = ("import deepspeed\nfrom transformers import AutoModelForCausalLM\n"
              "model = AutoModelForCausalLM.from_pretrained('m')\n"
              "engine, opt, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),"
              " config='ds.json')\n")
    RUN = "deepspeed --num_gpus 2 train.py --deepspeed_config ds.json\n"
    LOADED = SCRIPT.replace("config='ds.json'", "config=cfg")

    cases = [
        Case(files={"train.py": SCRIPT, "ds.json": '{"train_micro_batch_size_per_gpu": "auto",'
                                                   ' "zero_optimization": {"stage": 2}}\n'}),
        Case(files={"run.sh": "deepspeed --num_gpus 2 train.py --deepspeed_config ds.json\n",
                    "train.py": SCRIPT.replace("config='ds.json'", "args=cmd_args"),
                    "ds.json": '{"train_micro_batch_size_per_gpu": 8, "gradient_clipping": "auto",'
                               ' "zero_optimization": {"stage": 2}}\n'}),
        Case(files={"run.sh": RUN, "train.py": LOADED.replace("engine,", "cfg = json.load(open(args.deepspeed_config))\n"
                                               "cfg['train_batch_size'] = 8\nengine,"),
                    "ds.json": '{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",'
                               ' "zero_optimization": {"stage": 2}}\n'},
             note="the script fills only one of the two"),
        # must not flag
        Case(files={"run.sh": RUN, "train.py": LOADED.replace("engine,", "cfg = json.load(open(args.deepspeed_config))\n"
                                               "cfg['train_batch_size'] = 8\n"
                                               "cfg.update(train_micro_batch_size_per_gpu=1)\n"
                                               "cfg['zero_optimization']['reduce_bucket_size'] = 5e8\nengine,"),
                    "ds.json": '{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",'
                               ' "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}}\n'},
             flags=False, note="BELLE's zero_inference_backend_without_trainer.py: the script sets every auto key"),
        Case(files={"run.sh": RUN, "train.py": LOADED.replace("engine,", "cfg = json.load(open(args.deepspeed_config))\n"
                                               "cfg.update({'train_micro_batch_size_per_gpu': 1})\nengine,"),
                    "ds.json": '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}\n'},
             flags=False, note="update() with a dict"),
        Case(files={"train.py": SCRIPT, "ds.json": '{"train_micro_batch_size_per_gpu": 8,'
                                                   ' "zero_optimization": {"stage": 2}}\n'}, flags=False),
        Case(files={"train.py": _trainer_script(), "ds.json": '{"train_micro_batch_size_per_gpu": "auto",'
                                                              ' "zero_optimization": {"stage": 2}}\n'}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        cfg = _ds(setup)
        if cfg is None or uses_hf_trainer(setup) or setup.sites:
            return
        inits = qualified_calls(setup, "deepspeed.initialize")
        if not inits:
            return
        autos = cfg.auto_paths()
        if autos:
            filled = set().union(*(_filled_keys(pf) for pf in {id(pf): pf for pf, _ in inits}.values()))
            autos = [a for a in autos if not _is_filled(a, filled)]
        if not autos:
            return
        first = cfg.node(autos[0])
        pf, call = inits[0]
        shown = ", ".join(autos[:4]) + (f" and {len(autos) - 4} more" if len(autos) > 4 else "")
        yield self.diagnostic(first.span, f"\"auto\" for {shown}, but the script calls deepspeed.initialize itself: "  # type: ignore[union-attr]
                                          f"only the HF Trainer (or accelerate) fills \"auto\", DeepSpeed fails on it",
                              related=[pf.span(call).related("deepspeed.initialize is called here")])


def _is_filled(path: str, filled: set[str]) -> bool:
    """``path`` (dotted) or a section above it is set by the script."""
    parts = path.split(".")
    return any(".".join(parts[:i]) in filled for i in range(1, len(parts) + 1))


def _filled_keys(pf) -> set[str]:
    """Dotted DeepSpeed keys the script writes into a dict: ``cfg["a"]["b"] = ...``,
    ``cfg.update(a=...)`` / ``cfg.update({"a": ...})``, ``cfg.setdefault("a", ...)`` is not
    one (it keeps a value already there)."""
    out: set[str] = set()
    for node in pf.of_type(ast.Assign) + pf.of_type(ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            keys: list[str] = []
            while isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str):
                keys.append(t.slice.value)
                t = t.value
            if keys and isinstance(t, (ast.Name, ast.Attribute, ast.Subscript)):
                out.add(".".join(reversed(keys)))
    for cs in pf.calls:
        func = cs.node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "update"):
            continue
        prefix: list[str] = []
        t = func.value
        while isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str):
            prefix.append(t.slice.value)
            t = t.value
        head = ".".join(reversed(prefix))
        names = [k.arg for k in cs.node.keywords if k.arg]
        for arg in cs.node.args:
            if isinstance(arg, ast.Dict):
                names += [k.value for k in arg.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        out.update(f"{head}.{n}" if head else n for n in names)
    return out
