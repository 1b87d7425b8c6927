"""TL119 zero3-model-before-config."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, Iterable

from trainlint import reads
from trainlint.analysis import LOAD_METHODS, _dotted, may_name, site_node
from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Facts, ScriptRule
from trainlint.setup import PYTHON, ArgsSite, Setup
from trainlint.sources.python import CallSite, PythonFile, Scope

PARSE_METHODS = {"parse_args_into_dataclasses", "parse_json_file", "parse_yaml_file", "parse_dict"}  # HfArgumentParser
NOT_MODELS = ("Tokenizer", "Processor", "Config", "FeatureExtractor", "ImageProcessor", "GenerationConfig")


def _stage_of_mapping(cfg: Any) -> int | None:
    if not isinstance(cfg, dict):
        return None
    zo = cfg.get("zero_optimization")
    if not isinstance(zo, dict):
        return None
    stage = zo.get("stage")
    if isinstance(stage, int) and not isinstance(stage, bool):
        return stage
    if isinstance(stage, str) and stage.isdigit():
        return int(stage)
    return None


def _stage_of_linked(setup: Setup) -> int | None:
    """The stage of a DeepSpeed config another reader linked to the setup, if any."""
    linked = setup.extra.get("deepspeed") if isinstance(setup.extra, dict) else None
    if linked is None:
        return None
    for attr in ("zero_stage", "stage"):
        v = getattr(linked, attr, None)
        v = getattr(v, "value", v)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    for attr in ("data", "config", "raw"):
        found = _stage_of_mapping(getattr(linked, attr, None))
        if found is not None:
            return found
    return _stage_of_mapping(linked)


def _dict_stage(pf: PythonFile, node: ast.AST, scope: Scope) -> int | None:
    entries = pf.resolve_dict(node, scope)
    if entries is None:
        return None
    for key, _kn, vn, _s in entries:
        if key != "zero_optimization" or vn is None:
            continue
        for k2, _k2n, v2, _s2 in pf.resolve_dict(vn, scope) or []:
            if k2 == "stage":
                v = pf.resolve(v2, scope).value
                return v if isinstance(v, int) and not isinstance(v, bool) else None
    return None


def _file_stage(pf: PythonFile, path: str) -> int | None:
    candidates = [Path(pf.path).parent / path] if not Path(path).is_absolute() else [Path(path)]
    for c in candidates:
        reads.note(c)  # the result depends on it, there or not (the cache)
        try:
            return _stage_of_mapping(json.loads(c.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return None


def zero_stage(setup: Setup, pf: PythonFile, site: ArgsSite) -> tuple[int | None, str]:
    """(stage, where) of the DeepSpeed config given to ``site``; stage None when not known."""
    v = site.get("deepspeed")
    if v is None:
        return None, ""
    if v.origin == PYTHON and site.call is not None:
        node = site_node(pf, site, "deepspeed")
        if node is not None and not isinstance(v.value, str):
            stage = _dict_stage(pf, node, site.call.site.scope)
            if stage is not None:
                return stage, f"the dict at line {node.lineno}"
    if isinstance(v.value, str) and v.value:
        stage = _file_stage(pf, v.value)
        if stage is not None:
            return stage, v.value
    stage = _stage_of_linked(setup)
    return stage, "the linked DeepSpeed config" if stage is not None else ""


def _judges(setup: Setup, site: ArgsSite) -> bool:
    return setup.judges(site)


def _launch_stages(setup: Setup, pf: PythonFile) -> tuple[tuple[int | None, str], ...]:
    """(stage, where) of the DeepSpeed config of each launch-line or args-file site of the
    setup (a site that ``pf`` parses) that names one."""
    return tuple(zero_stage(setup, pf, s) for s in setup.sites if s.call is None and s.get("deepspeed") is not None)


def _is_model_load(pf: PythonFile, cs: CallSite) -> bool:
    func = cs.node.func
    if not isinstance(func, ast.Attribute) or func.attr not in LOAD_METHODS:
        return False
    owner = _dotted(func.value).split(".")[-1]
    if not owner or any(t in owner for t in NOT_MODELS) or "Peft" in owner:
        return False
    return owner.startswith("Auto") or "For" in owner or owner.endswith(("Model", "LMHeadModel"))


def _before(a: CallSite, b: CallSite) -> bool:
    """``a`` runs before ``b``: both in the same scope (straight-line order), ``a`` earlier."""
    return a.scope is b.scope and (a.stmt.lineno, a.stmt.col_offset) < (b.stmt.lineno, b.stmt.col_offset) \
        and a.stmt is not b.stmt


class Zero3ModelBeforeConfig(ScriptRule):
    """
    ## What it does
    Flags a model built with `from_pretrained` / `from_config` before the DeepSpeed ZeRO-3
    configuration is registered:

    * before the `TrainingArguments(deepspeed=...)` call (or the `HfArgumentParser` parse that
      builds the arguments from a `--deepspeed` flag) in the same function, when the config is
      provably stage 3: a dict written in the script, a JSON file named by a literal path
      (relative to the script), or a linked DeepSpeed config;
    * before `HfDeepSpeedConfig(...)` (the non-Trainer path), or with `HfDeepSpeedConfig(...)`
      not bound to a variable (it is kept only through a weak reference, so it is gone at once).

    Loads in different functions are not compared (the call order is not known statically).

    ## Why is this bad?
    `from_pretrained` partitions the weights while loading (`deepspeed.zero.Init`) only if
    ZeRO-3 is already registered: the TrainingArguments object (or a live `HfDeepSpeedConfig`)
    does that. Built earlier, every rank materialises the full model in CPU memory and then on
    its GPU before DeepSpeed shards it: CPU or GPU out-of-memory for the models ZeRO-3 is
    meant for.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-70B")
    args = TrainingArguments(output_dir="out", deepspeed="ds_zero3.json")
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", deepspeed="ds_zero3.json")
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-70B")
    ```

    ## Fix safety
    No automatic fix: moving statements past others can change what they read.

    ## References
    - transformers DeepSpeed guide, "Non-Trainer DeepSpeed integration" and "ZeRO-3":
      "The TrainingArguments object must be created before calling from_pretrained";
      "you must instantiate the HfDeepSpeedConfig object before the model and keep that object alive"
    - transformers `integrations/deepspeed.py` (`HfDeepSpeedConfig` kept by `weakref`, `is_deepspeed_zero3_enabled`)
    """

    code = "TL119"
    name = "zero3-model-before-config"
    severity = Severity.WARNING
    triggers = DEEPSPEED_NAMES
    fires_on = ("deepspeed", "HfDeepSpeedConfig")
    fix_safety = "none"
    summary = "a model built before the ZeRO-3 config is registered loads unpartitioned on every rank"

    cases = [
        Case(
            files={
                "ds_zero3.json": '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}\n',
                "train.py": 'from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n'
                            'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-70B")\n'
                            'args = TrainingArguments(output_dir="o", deepspeed="ds_zero3.json")\n'
                            'Trainer(model=model, args=args)\n',
            },
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            DS = {"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}}
            def main():
                model = AutoModelForCausalLM.from_pretrained("big")
                args = TrainingArguments(output_dir="o", deepspeed=DS)
                Trainer(model=model, args=args).train()
            """,
            note="a dict config, inside a function",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM
            from transformers.integrations import HfDeepSpeedConfig
            ds_config = {"zero_optimization": {"stage": 3}}
            HfDeepSpeedConfig(ds_config)
            model = AutoModelForCausalLM.from_pretrained("big")
            """,
            note="HfDeepSpeedConfig not kept alive",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM
            from transformers.integrations import HfDeepSpeedConfig
            model = AutoModelForCausalLM.from_pretrained("big")
            dschf = HfDeepSpeedConfig("ds_config_zero3.json")
            """,
            note="HfDeepSpeedConfig after the model",
        ),
        Case(
            """
            import transformers.integrations as ti
            from transformers import AutoModelForCausalLM
            def build(cfg):
                model = AutoModelForCausalLM.from_config(cfg)
                keep = ti.HfDeepSpeedConfig({"zero_optimization": {"stage": 3}})
                return model, keep
            """,
            note="through a module alias, in a file without TrainingArguments",
        ),
        Case(
            files={
                "run.sh": "torchrun --nproc_per_node 8 train.py --output_dir o --deepspeed ds.json\n",
                "ds.json": '{"zero_optimization": {"stage": 3}}\n',
                "train.py": "from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments\n"
                            "model = AutoModelForCausalLM.from_pretrained('big')\n"
                            "parser = HfArgumentParser(TrainingArguments)\n"
                            "(args,) = parser.parse_args_into_dataclasses()\n"
                            "Trainer(model=model, args=args)\n",
            },
            note="the arguments come from a launch line",
        ),
        # must not flag
        Case(
            files={
                "ds_zero3.json": '{"zero_optimization": {"stage": 3}}\n',
                "train.py": 'from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n'
                            'args = TrainingArguments(output_dir="o", deepspeed="ds_zero3.json")\n'
                            'model = AutoModelForCausalLM.from_pretrained("big")\n'
                            'Trainer(model=model, args=args)\n',
            },
            flags=False, note="the right order",
        ),
        Case(
            files={
                "ds.json": '{"zero_optimization": {"stage": 2}}\n',
                "train.py": 'from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments\n'
                            'model = AutoModelForCausalLM.from_pretrained("big")\n'
                            'args = TrainingArguments(output_dir="o", deepspeed="ds.json")\n'
                            'Trainer(model=model, args=args)\n',
            },
            flags=False, note="ZeRO-2 does not partition at load time",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
            import sys
            model = AutoModelForCausalLM.from_pretrained("big")
            args = TrainingArguments(output_dir="o", deepspeed=sys.argv[1])
            Trainer(model=model, args=args)
            """,
            flags=False, note="the stage is not known",
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM
            from transformers.integrations import HfDeepSpeedConfig
            dschf = HfDeepSpeedConfig({"zero_optimization": {"stage": 3}})  # keep this object alive
            model = AutoModelForCausalLM.from_pretrained("big")
            """,
            flags=False,
        ),
    ]

    def check_script(self, pf: PythonFile, facts: Facts) -> Iterable[Diagnostic]:
        if not pf.args_calls and not may_name(pf, "HfDeepSpeedConfig", *PARSE_METHODS):
            # nothing registers ZeRO-3 after a load: no TrainingArguments call, no
            # HfDeepSpeedConfig, no argument parse (a file of model loads alone is not walked)
            return
        loads = [cs for cs in pf.calls_named(*LOAD_METHODS) if _is_model_load(pf, cs)]
        if not loads:
            return
        yield from self._trainer_path(facts, pf, loads)
        yield from self._hf_config_path(pf, loads)

    def _trainer_path(self, facts: Facts, pf: PythonFile, loads: list[CallSite]) -> Iterable[Diagnostic]:
        for tac in pf.args_calls:
            if not facts.ask(_judges, tac.args):
                continue
            stage, where = facts.ask(zero_stage, pf, tac.args)
            if stage != 3:
                continue
            for ld in loads:
                if _before(ld, tac.site):
                    yield self._report(pf, ld, tac.site, f"TrainingArguments(deepspeed=...) (ZeRO-3, {where})")
                    break
        if pf.args_calls:
            return
        for stage, where in facts.ask(_launch_stages, pf):
            if stage != 3:
                continue
            parses = [cs for cs in pf.calls if isinstance(cs.node.func, ast.Attribute)
                      and cs.node.func.attr in PARSE_METHODS]
            for parse in parses:
                ld = next((ld for ld in loads if _before(ld, parse)), None)
                if ld is not None:
                    yield self._report(pf, ld, parse, f"the argument parse that builds TrainingArguments (ZeRO-3, {where})")
                    return

    def _hf_config_path(self, pf: PythonFile, loads: list[CallSite]) -> Iterable[Diagnostic]:
        for cs in pf.calls_named("HfDeepSpeedConfig"):
            if _dotted(cs.node.func).split(".")[-1] != "HfDeepSpeedConfig":
                continue
            arg = cs.node.args[0] if cs.node.args else next(
                (k.value for k in cs.node.keywords if k.arg == "config_file_or_dict"), None)
            stage = None
            if arg is not None:
                stage = _dict_stage(pf, arg, cs.scope)
                if stage is None:
                    path = pf.resolve(arg, cs.scope).value
                    if isinstance(path, str):
                        stage = _file_stage(pf, path)
            if stage is not None and stage != 3:
                continue
            if isinstance(cs.stmt, ast.Expr) and cs.stmt.value is cs.node:
                yield self.diagnostic(
                    pf.span(cs.node),
                    "HfDeepSpeedConfig(...) is not kept in a variable: transformers holds it only through a weak "
                    "reference, so it is gone at once and from_pretrained loads the full model on every rank "
                    "instead of partitioning it with ZeRO-3; bind it (dschf = HfDeepSpeedConfig(...)) before "
                    "loading the model and keep it alive")
                continue
            ld = next((ld for ld in loads if _before(ld, cs)), None)
            if ld is not None:
                yield self._report(pf, ld, cs, "HfDeepSpeedConfig(...)")

    def _report(self, pf: PythonFile, load: CallSite, later: CallSite, what: str) -> Diagnostic:
        return self.diagnostic(
            pf.span(load.node),
            f"the model is built before {what} registers ZeRO-3: from_pretrained cannot partition it while "
            f"loading, so every rank materialises the full model in CPU and GPU memory first; create the "
            f"DeepSpeed configuration before loading the model",
            related=[pf.span(later.node).related("ZeRO-3 is registered only here")])
