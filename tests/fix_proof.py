"""Proving fixes by running what they produce on the installed libraries.

``prove_files`` takes the files a fix wrote and hands each to the library that reads it:

* Python: every ``TrainingArguments``-like call (transformers' and TRL's config classes) whose
  keywords are literals (or module constants) is constructed.
* HF args files (JSON/YAML): ``HfArgumentParser(TrainingArguments).parse_dict``.
* shell launch lines: the ``--flag value`` words after the script go through
  ``HfArgumentParser(TrainingArguments).parse_args_into_dataclasses`` (other flags of the
  script are allowed to remain).
* DeepSpeed JSON: transformers' own ``HfTrainerDeepSpeedConfig`` (``trainer_config_process``
  and ``trainer_config_finalize``, which refuse values that disagree with TrainingArguments). deepspeed is not
  installed, and transformers only builds that class on top of accelerate's
  ``HfDeepSpeedConfig`` when it finds the package, so the module is loaded a second time with a
  stub ``deepspeed`` distribution on the path; no deepspeed code runs, only transformers' and
  accelerate's config code.
* accelerate YAML: ``accelerate.commands.config.config_args.load_config_from_file``.

Hardware probes that TrainingArguments makes (bf16 / tf32 support) are answered as on an
Ampere-or-newer GPU: the cases target one, and the machine running the tests has no GPU.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import shlex
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TRANSFORMERS_ARGS = ("TrainingArguments", "Seq2SeqTrainingArguments")


@contextmanager
def gpu_probes():
    import transformers.training_args as ta

    saved = (ta.is_torch_bf16_gpu_available, ta.is_torch_tf32_available)
    ta.is_torch_bf16_gpu_available = lambda *a, **k: True
    ta.is_torch_tf32_available = lambda *a, **k: True
    try:
        yield
    finally:
        ta.is_torch_bf16_gpu_available, ta.is_torch_tf32_available = saved


def args_class(name: str):
    import transformers

    if name in TRANSFORMERS_ARGS:
        return getattr(transformers, name)
    if name.endswith("Config"):
        try:
            import trl
        except ImportError:
            return None
        cls = getattr(trl, name, None)
        if cls is not None and hasattr(cls, "__dataclass_fields__") and "output_dir" in cls.__dataclass_fields__:
            return cls
    return None


def _constants(tree: ast.Module) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                out[stmt.targets[0].id] = ast.literal_eval(stmt.value)
            except (ValueError, SyntaxError, TypeError):
                pass
    return out


def _value(node: ast.AST, consts: dict[str, Any]) -> tuple[bool, Any]:
    if isinstance(node, ast.Name) and node.id in consts:
        return True, consts[node.id]
    try:
        return True, ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return False, None


def python_args_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(class name, literal keywords) of every TrainingArguments-like call in ``text``."""
    tree = ast.parse(text)
    consts = _constants(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else \
            node.func.attr if isinstance(node.func, ast.Attribute) else ""
        if args_class(name) is None:
            continue
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                continue
            ok, v = _value(kw.value, consts)
            if ok:
                kwargs[kw.arg] = v
        out.append((name, kwargs))
    return out


def construct(cls_name: str, kwargs: dict[str, Any], out_dir: Path):
    """Build the arguments object on the installed library. The ``deepspeed`` value is left
    out (proved through the DeepSpeed config path: TrainingArguments would import deepspeed)."""
    cls = args_class(cls_name)
    kwargs = {k: v for k, v in kwargs.items() if k != "deepspeed"}
    kwargs["output_dir"] = str(out_dir)
    kwargs.setdefault("report_to", "none")
    with gpu_probes():
        return cls(**kwargs)


def _hf_parser(cls_name: str = "TrainingArguments"):
    from transformers import HfArgumentParser

    return HfArgumentParser(args_class(cls_name))


def parse_args_dict(data: dict, out_dir: Path):
    data = {k: v for k, v in data.items() if k != "deepspeed"}
    data["output_dir"] = str(out_dir)
    with gpu_probes():
        return _hf_parser().parse_dict(data, allow_extra_keys=False)[0]


def shell_training_flags(text: str) -> list[list[str]]:
    """The ``--flag value`` words after the ``.py`` script of each launch line."""
    joined = text.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        idx = next((i for i, w in enumerate(words) if w.endswith(".py")), None)
        if idx is None:
            continue
        out.append(words[idx + 1:])
    return out


def parse_flags(flags: list[str], out_dir: Path):
    cleaned = []
    skip = False
    for i, w in enumerate(flags):
        if skip:
            skip = False
            continue
        if w in ("--deepspeed", "--output_dir"):
            skip = True
            continue
        if w.startswith(("--deepspeed=", "--output_dir=")) or w.startswith("$"):
            continue
        cleaned.append(w)
    with gpu_probes():
        return _hf_parser().parse_args_into_dataclasses(args=[*cleaned, "--output_dir", str(out_dir)],
                                                        return_remaining_strings=True)[0]


_DS_MODULE = None


def hf_deepspeed_module(stub_root: Path):
    """transformers.integrations.deepspeed loaded again with a stub ``deepspeed``
    distribution visible, so ``HfTrainerDeepSpeedConfig`` is built on accelerate's
    ``HfDeepSpeedConfig`` (the real class hierarchy it has when deepspeed is installed)."""
    global _DS_MODULE
    if _DS_MODULE is not None:
        return _DS_MODULE
    import transformers.integrations.deepspeed as real

    pkg = stub_root / "deepspeed"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("__version__ = '0.16.0'\n")
    info = stub_root / "deepspeed-0.16.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: deepspeed\nVersion: 0.16.0\n")
    sys.path.insert(0, str(stub_root))
    try:
        importlib.invalidate_caches()
        spec = importlib.util.spec_from_file_location("transformers.integrations._deepspeed_proof", real.__file__)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
    finally:
        sys.path.remove(str(stub_root))
        sys.modules.pop("deepspeed", None)
        importlib.invalidate_caches()
    assert mod.HfTrainerDeepSpeedConfig.__mro__[2].__module__.startswith("accelerate"), mod.HfTrainerDeepSpeedConfig.__mro__
    # the private copy's check of the installed deepspeed version (there is only the stub)
    mod.dep_version_check = lambda *a, **k: None
    _DS_MODULE = mod
    return mod


def process_deepspeed(config: dict, args, stub_root: Path, hidden_size: int = 64, num_training_steps: int = 100):
    """What the Trainer does with the config: ``HfTrainerDeepSpeedConfig(config)``, then
    ``trainer_config_process(args)`` (fills ``auto`` from TrainingArguments, records
    mismatches) and ``trainer_config_finalize(args, model, steps)`` (hidden-size buckets,
    scheduler steps; raises ValueError listing the values that disagree)."""
    from types import SimpleNamespace

    mod = hf_deepspeed_module(stub_root)
    ds = mod.HfTrainerDeepSpeedConfig(config)
    ds.trainer_config_process(args)
    ds.trainer_config_finalize(args, SimpleNamespace(config=SimpleNamespace(hidden_size=hidden_size)),
                               num_training_steps)
    return ds


def load_accelerate_yaml(path: Path):
    from accelerate.commands.config.config_args import load_config_from_file

    return load_config_from_file(str(path))


def kind_of(path: Path, text: str) -> str:
    if path.suffix == ".py":
        return "python"
    if path.suffix in (".sh", ".bash"):
        return "shell"
    if path.suffix in (".yaml", ".yml"):
        return "accelerate" if ("distributed_type" in text or "compute_environment" in text) else "hf_args"
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError:
            return "json"
        ds_keys = {"zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size", "fp16", "bf16",
                   "gradient_accumulation_steps", "optimizer", "scheduler", "zero_allow_untested_optimizer",
                   "gradient_clipping", "steps_per_print", "wall_clock_breakdown", "activation_checkpointing",
                   "tensor_parallel", "communication_data_type"}
        if isinstance(data, dict) and set(data) & ds_keys and not {"output_dir", "learning_rate"} & set(data):
            return "deepspeed"
        return "hf_args"
    return "other"


def ds_mismatches(config: dict, args, stub_root: Path) -> set[str]:
    """The keys transformers finds in disagreement with ``args`` (empty: accepted)."""
    try:
        process_deepspeed(config, args, stub_root)
    except ValueError as e:
        lines = {ln.split("=", 1)[0] for ln in str(e).splitlines() if ln.startswith("- ds ")}
        if not lines:
            raise
        return lines
    return set()


def prove_files(files: dict[str, str], root: Path, originals: dict[str, str] | None = None) -> list[str]:
    """Hand every fixed file to the library that reads it; returns what was proved (raises
    on a failure). A DeepSpeed config without TrainingArguments in the files is checked
    against the defaults: it must not disagree with them on more keys than the original did
    (``originals``: the texts before the fix)."""
    proved = []
    changed = {p for p, t in files.items() if originals is None or originals.get(p) != t}
    out_dir = root / "_out"
    args_for_ds = None
    texts = dict(files)
    py_calls = []
    for p, t in texts.items():
        if kind_of(Path(p), t) == "python":
            for name, kwargs in python_args_calls(t):
                py_calls.append((p, name, kwargs))
    for p, t in texts.items():
        if kind_of(Path(p), t) == "python" and p in changed:
            n = run_imports(t, (originals or {}).get(p))
            if n:
                proved.append(f"{Path(p).name}: {n} import statement(s) executed")
    for p, name, kwargs in py_calls:
        obj = construct(name, kwargs, out_dir)
        args_for_ds = args_for_ds or obj
        proved.append(f"{Path(p).name}: {name}(...) constructed")
    for p, t in texts.items():
        kind = kind_of(Path(p), t)
        if kind == "hf_args":
            if Path(p).suffix == ".json":
                data = json.loads(t)
            else:
                import yaml

                data = yaml.safe_load(t)
            obj = parse_args_dict(data, out_dir)
            args_for_ds = args_for_ds or obj
            proved.append(f"{Path(p).name}: HfArgumentParser.parse_dict")
        elif kind == "shell":
            for flags in shell_training_flags(t):
                obj = parse_flags(flags, out_dir)
                args_for_ds = args_for_ds or obj
                proved.append(f"{Path(p).name}: HfArgumentParser.parse_args_into_dataclasses")
        elif kind == "accelerate":
            load_accelerate_yaml(Path(p) if Path(p).exists() else _write(root / "_acc.yaml", t))
            proved.append(f"{Path(p).name}: accelerate load_config_from_file")
    for p, t in texts.items():
        if kind_of(Path(p), t) == "deepspeed":
            with gpu_probes():
                from transformers import TrainingArguments

                args = args_for_ds or TrainingArguments(output_dir=str(out_dir), report_to="none")
            new = ds_mismatches(json.loads(t), args, root / "_stub")
            if new and args_for_ds is None and originals is not None and p in originals:
                old = ds_mismatches(json.loads(originals[p]), args, root / "_stub")
                assert new <= old, f"the fix adds DeepSpeed/TrainingArguments mismatches: {sorted(new - old)}"
            elif new:
                raise AssertionError(f"transformers refuses the fixed DeepSpeed config: {sorted(new)}")
            proved.append(f"{Path(p).name}: HfTrainerDeepSpeedConfig.trainer_config_process/finalize")
    return proved


def run_imports(text: str, original: str | None = None) -> int:
    """Execute the top-level import statements of ``text`` that the fix wrote (not found as
    they are in ``original``) and whose package is installed: a renamed or moved import must
    resolve on the installed library. Returns how many ran."""
    n = 0
    for stmt in ast.parse(text).body:
        seg = ast.get_source_segment(text, stmt) or ""
        if original is not None and seg and seg in original:
            continue
        if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
            top = stmt.module.split(".")[0]
        elif isinstance(stmt, ast.Import):
            top = stmt.names[0].name.split(".")[0]
        else:
            continue
        if importlib.util.find_spec(top) is None:
            continue
        exec(compile(ast.Module(body=[stmt], type_ignores=[]), "<fixed>", "exec"), {})
        n += 1
    return n


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
