"""TL407-TL414: accelerate configs with FSDP, parallelism and precision settings, alone and
against the model, the script and the target GPU (catalog section 4, C07-C14)."""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_models import layer_classes, model_facts, norm_type, single_model, uses_hf_trainer
from trainlint.rules._setup_util import located, set_edit, where
from trainlint.rules.base import Case, Rule
from trainlint.setup import FLAG, Setup, Value

FSDP_YAML = "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n"
WRAP_POLICIES = ("TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP")


def _acc(setup: Setup):
    acc = setup.extra.get("accelerate")
    if acc is None:
        return None
    return acc


def _fsdp(setup: Setup):
    """The accelerate config when it selects FSDP and has an ``fsdp_config`` mapping."""
    acc = _acc(setup)
    if acc is None or acc.fsdp_config is None:
        return None
    dt = acc.distributed_type
    if dt is None or dt.value != "FSDP":
        return None
    return acc


def fsdp_get(acc, key: str) -> Value | None:
    """``fsdp_config.fsdp_<key>`` or ``fsdp_config.<key>`` (the launcher adds the prefix)."""
    return acc.fsdp_value(f"fsdp_{key}") or acc.fsdp_value(key)


def fsdp_version(acc) -> int | None:
    v = fsdp_get(acc, "version")
    if v is None:
        return 1  # accelerate launch's default (--fsdp_version "1")
    try:
        return int(v.value)
    except (TypeError, ValueError):
        return None


def _truthy(v: Value | None) -> bool | None:
    """A YAML value as the launcher passes it on (``str(value).lower()``) and the plugin reads
    it (``str_to_bool``); None when absent or not a truth value."""
    if v is None:
        return None
    text = str(v.value).lower()
    if text in ("y", "yes", "t", "true", "on", "1"):
        return True
    if text in ("n", "no", "f", "false", "off", "0"):
        return False
    return None


def _launch_script(extra: str = "") -> str:
    return ("from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
            "model = AutoModelForCausalLM.from_pretrained('Qwen/Qwen2.5-0.5B')\n"
            f"args = TrainingArguments(output_dir='o'{extra})\n"
            "Trainer(model=model, args=args).train()\n")


LAUNCH = "accelerate launch --config_file acc.yaml train.py\n"


# --------------------------------------------------------------------------------------- C07


class FsdpWrapClassNotInModel(Rule):
    """
    ## What it does
    Flags `fsdp_transformer_layer_cls_to_wrap` naming the layer class of another architecture
    than the model the script loads (`LlamaDecoderLayer` for a Qwen2 model), with
    `fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP`. Both the model (model table or local
    `config.json`) and the class name must be known: the table of layer classes comes from
    `_no_split_modules` in transformers 5.24's modeling files (`scripts/gen_model_facts.py`);
    other names stay silent.

    ## Why is this bad?
    accelerate's `FullyShardedDataParallelPlugin.set_auto_wrap_policy` raises "Could not find
    the transformer layer class LlamaDecoderLayer in the model." when the model is prepared.

    ## Example
    ```yaml
    fsdp_config:
      fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
      fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer   # model: Qwen/Qwen2.5-0.5B
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
      fsdp_transformer_layer_cls_to_wrap: Qwen2DecoderLayer
    ```
    (or leave it out: accelerate then wraps the model's `_no_split_modules`).

    ## Fix safety
    Safe: the name is replaced by the model's own layer class, which is what accelerate uses
    when the key is left out.

    ## References
    - accelerate `utils/dataclasses.py` (`set_auto_wrap_policy`)
    - transformers `models/*/modeling_*.py` (`_no_split_modules`)
    - pitfalls catalog C07
    """

    code = "TL407"
    name = "fsdp-wrap-class-not-in-model"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "FSDP transformer layer class of another architecture than the model"

    YAML = FSDP_YAML + "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  fsdp_transformer_layer_cls_to_wrap: {cls}\n"
    cases = [
        Case(files={"run.sh": LAUNCH, "train.py": _launch_script(), "acc.yaml": YAML.format(cls="LlamaDecoderLayer")},
             fixed_path="acc.yaml", fixed=YAML.format(cls="Qwen2DecoderLayer")),
        # must not flag
        Case(files={"run.sh": LAUNCH, "train.py": _launch_script(), "acc.yaml": YAML.format(cls="Qwen2DecoderLayer")},
             flags=False),
        Case(files={"run.sh": LAUNCH, "train.py": _launch_script(), "acc.yaml": YAML.format(cls="MyCustomBlock")},
             flags=False, note="a name the table does not know"),
        Case(files={"acc.yaml": YAML.format(cls="LlamaDecoderLayer")}, flags=False, note="model unknown"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = _fsdp(setup)
        if acc is None:
            return
        policy = fsdp_get(acc, "auto_wrap_policy")
        cls = fsdp_get(acc, "transformer_layer_cls_to_wrap")
        if policy is None or str(policy.value).upper() != "TRANSFORMER_BASED_WRAP" or cls is None \
                or not isinstance(cls.value, str) or cls.span is None:
            return
        model = single_model(setup)
        if model is None:
            return
        own = layer_classes(model.info.model_type)
        if not own:
            return
        known = {name: mt for mt, names in model_facts()["layer_classes"].items() for name in names}
        names = [n for n in cls.value.split(",")]
        wrong = [n for n in names if n in known and n not in own and norm_type(known[n]) != norm_type(model.info.model_type)]
        if not wrong:
            return
        layer = [n for n in own if "Embeddings" not in n]
        edits = None
        if len(names) == 1 and len(layer) == 1:
            edits = [cls.span.edit(layer[0])]
        yield self.diagnostic(cls.span, f"fsdp_transformer_layer_cls_to_wrap {', '.join(wrong)} is a "
                                        f"{known[wrong[0]]} layer, but the script trains {model.model_id} "
                                        f"({model.info.model_type}, layers {', '.join(layer)}): accelerate raises "
                                        f"\"Could not find the transformer layer class\"", edits=edits,
                              fix_message=f"wrap {', '.join(layer)}",
                              related=[model.span.related(f"{model.model_id} is loaded here")])


# --------------------------------------------------------------------------------------- C08


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
    - pitfalls catalog C08
    """

    code = "TL408"
    name = "fsdp-invalid-wrap-policy"
    severity = Severity.ERROR
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


# --------------------------------------------------------------------------------------- C09


class Fsdp1PeftOrigParams(Rule):
    """
    ## What it does
    Flags FSDP version 1 with `fsdp_use_orig_params: false` when the script trains a PEFT model
    (`get_peft_model`) in its own loop, without the HF Trainer.

    ## Why is this bad?
    FSDP1 flattens each wrapped unit into one tensor, which must have a uniform `requires_grad`;
    a decoder layer wrapped with `TRANSFORMER_BASED_WRAP` holds frozen base weights and
    trainable LoRA weights together: "Must flatten tensors with uniform requires_grad when
    use_orig_params=False". The HF Trainer avoids it by switching to PEFT's own wrap policy
    (which wraps the LoRA layers separately), a plain accelerate loop does not.

    ## Example
    ```yaml
    distributed_type: FSDP
    fsdp_config:
      fsdp_use_orig_params: false
    ```
    with `model = get_peft_model(model, LoraConfig(...))` and `accelerator.prepare(model, ...)`.

    ## Use instead
    ```yaml
    fsdp_config:
      fsdp_use_orig_params: true
    ```

    ## Fix safety
    Safe: the same parameters are trained; `use_orig_params` only changes how FSDP exposes them.

    ## References
    - https://github.com/huggingface/peft/issues/1702
    - https://github.com/pytorch/pytorch/issues/100945
    - transformers `distributed/fsdp.py` (`update_fsdp_plugin_peft`)
    - pitfalls catalog C09
    """

    code = "TL409"
    name = "fsdp1-peft-without-orig-params"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "FSDP1 with use_orig_params false for a PEFT model trained without the Trainer"

    SCRIPT = ("from accelerate import Accelerator\nfrom peft import LoraConfig, get_peft_model\n"
              "from transformers import AutoModelForCausalLM\n"
              "model = get_peft_model(AutoModelForCausalLM.from_pretrained('m'), LoraConfig())\n"
              "accelerator = Accelerator()\nmodel = accelerator.prepare(model)\n")
    YAML = FSDP_YAML + "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  fsdp_use_orig_params: false\n"
    cases = [
        Case(files={"run.sh": LAUNCH, "train.py": SCRIPT, "acc.yaml": YAML}, fixed_path="acc.yaml",
             fixed=YAML.replace("fsdp_use_orig_params: false", "fsdp_use_orig_params: true")),
        # must not flag
        Case(files={"run.sh": LAUNCH, "train.py": SCRIPT,
                    "acc.yaml": YAML.replace("fsdp_use_orig_params: false", "fsdp_use_orig_params: true")}, flags=False),
        Case(files={"run.sh": LAUNCH, "acc.yaml": YAML,
                    "train.py": SCRIPT + "from transformers import Trainer\nTrainer(model=model).train()\n"},
             flags=False, note="the Trainer switches to PEFT's wrap policy"),
        Case(files={"run.sh": LAUNCH, "train.py": SCRIPT, "acc.yaml": YAML + "  fsdp_version: 2\n"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = _fsdp(setup)
        if acc is None or fsdp_version(acc) != 1 or uses_hf_trainer(setup):
            return
        uop = fsdp_get(acc, "use_orig_params")
        if _truthy(uop) is not False or uop.span is None:  # type: ignore[union-attr]
            return
        peft = [(pf, cs) for pf in setup.scripts for cs in pf.calls
                if pf.qualname(cs.node.func) in ("peft.get_peft_model", "peft.PeftModel.from_pretrained")]
        if not peft:
            return
        pf, cs = peft[0]
        yield self.diagnostic(uop.span, "FSDP1 with use_orig_params false and a PEFT model trained without the "  # type: ignore[union-attr]
                                        "Trainer: frozen and LoRA weights share wrapped units, FSDP raises \"Must "
                                        "flatten tensors with uniform requires_grad\"", edits=[uop.span.edit("true")],  # type: ignore[union-attr]
                              fix_message="set fsdp_use_orig_params to true",
                              related=[pf.span(cs.node).related("the PEFT model is built here")])


# --------------------------------------------------------------------------------------- C10

SHARDING_TO_RESHARD = {"FULL_SHARD": "true", "SHARD_GRAD_OP": "false", "HYBRID_SHARD": "true",
                       "_HYBRID_SHARD_ZERO2": "false", "NO_SHARD": None}
FSDP1_ONLY = ("forward_prefetch", "backward_prefetch", "use_orig_params", "sync_module_states", "sharding_strategy")


class FsdpVersionSettings(Rule):
    """
    ## What it does
    Checks an accelerate config with `fsdp_version: 2` for FSDP1 settings:
    `fsdp_reshard_after_forward` written as a sharding strategy (`FULL_SHARD`, ...) is an
    error; `fsdp_forward_prefetch`, `fsdp_backward_prefetch`, `fsdp_use_orig_params`,
    `fsdp_sync_module_states` and `fsdp_sharding_strategy` have no effect (info).

    ## Why is this bad?
    Under FSDP2 the plugin reads `reshard_after_forward` as a boolean (`str_to_bool`, "invalid
    truth value full_shard"); it never reads the FSDP1-only settings from the launcher (or
    warns "backward_prefetch is not supported in FSDP2" and drops it), so a config migrated
    from FSDP1 silently loses them.

    ## Example
    ```yaml
    fsdp_config:
      fsdp_version: 2
      fsdp_reshard_after_forward: FULL_SHARD
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      fsdp_version: 2
      fsdp_reshard_after_forward: true   # SHARD_GRAD_OP -> false
    ```

    ## Fix safety
    Safe: `FULL_SHARD`/`HYBRID_SHARD` become `true`, `SHARD_GRAD_OP` `false`, the FSDP2 meaning
    of the same strategy.

    ## References
    - accelerate `utils/dataclasses.py` (`FullyShardedDataParallelPlugin.__post_init__`),
      `utils/launch.py` (`prepare_multi_gpu_env`)
    - pitfalls catalog C10
    """

    code = "TL410"
    name = "fsdp2-with-fsdp1-settings"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "FSDP2 config with FSDP1 settings (sharding-strategy reshard_after_forward, ignored keys)"

    YAML = FSDP_YAML + "  fsdp_version: 2\n"
    cases = [
        Case(files={"acc.yaml": YAML + "  fsdp_reshard_after_forward: SHARD_GRAD_OP\n"}, fixed_path="acc.yaml",
             fixed=YAML + "  fsdp_reshard_after_forward: false\n"),
        Case(files={"acc.yaml": YAML + "  fsdp_reshard_after_forward: true\n  fsdp_use_orig_params: true\n"},
             note="info: ignored under FSDP2"),
        # must not flag
        Case(files={"acc.yaml": YAML + "  fsdp_reshard_after_forward: true\n"}, flags=False),
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_reshard_after_forward: FULL_SHARD\n  fsdp_use_orig_params: true\n"},
             flags=False, note="FSDP1"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = _fsdp(setup)
        if acc is None or fsdp_version(acc) != 2:
            return
        raf = fsdp_get(acc, "reshard_after_forward")
        if raf is not None and raf.span is not None and _truthy(raf) is None:
            new = SHARDING_TO_RESHARD.get(str(raf.value).upper())
            yield self.diagnostic(raf.span, f"fsdp_reshard_after_forward {raf.value!r} is an FSDP1 sharding strategy: "
                                            f"FSDP2 reads it as a boolean and raises (\"invalid truth value\")",
                                  edits=[raf.span.edit(new)] if new else None,
                                  fix_message=f"write {new}")
        for key in FSDP1_ONLY:
            v = fsdp_get(acc, key)
            if v is None or v.key_span is None:
                continue
            if key == "forward_prefetch" and _truthy(v) is not True:
                continue
            if key == "backward_prefetch" and str(v.value).upper() == "NO_PREFETCH":
                continue
            yield self.diagnostic(v.key_span, f"{v.name.split('.')[-1]} is an FSDP1 setting: with fsdp_version 2 "
                                              f"accelerate does not use it", severity=Severity.INFO)


# --------------------------------------------------------------------------------------- C11


class FsdpActivationCheckpointingTwice(Rule):
    """
    ## What it does
    Flags FSDP's own activation checkpointing (`fsdp_activation_checkpointing: true` in the
    accelerate config) together with the Trainer's `gradient_checkpointing` /
    `activation_checkpointing` argument (catalog A18 seen from the accelerate config).

    ## Why is this bad?
    The Trainer raises when it builds the accelerator ("The activation_checkpointing in FSDP
    config and the gradient_checkpointing in training arg can't be set to True simultaneously",
    transformers 4.40 to 4.57; "can't both be set to True" in 5.x). The Trainer flag would add a
    redundant AllGather in the backward pass under FULL_SHARD (huggingface/transformers#30404).

    ## Example
    ```yaml
    fsdp_config:
      fsdp_activation_checkpointing: true
    ```
    with `--gradient_checkpointing` on the launch line.

    ## Use instead
    Keep FSDP's activation checkpointing and drop the Trainer flag.

    ## Fix safety
    Safe: FSDP still checkpoints the activations; the fix sets the TrainingArguments flag to
    false where it is written as a value (a script keyword or an args-file key).

    ## References
    - transformers `trainer.py` (4.57 `create_accelerator_and_postprocess`; 5.24 `__init__`)
    - https://github.com/huggingface/transformers/issues/30404
    - pitfalls catalog C11 / A18
    """

    code = "TL411"
    name = "fsdp-activation-checkpointing-twice"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "FSDP activation checkpointing plus the Trainer's gradient checkpointing"

    YAML = FSDP_YAML + "  fsdp_activation_checkpointing: true\n"
    cases = [
        Case(files={"run.sh": LAUNCH, "train.py": _launch_script(", gradient_checkpointing=True"), "acc.yaml": YAML},
             fixed=_launch_script(", gradient_checkpointing=False")),
        # must not flag
        Case(files={"run.sh": LAUNCH, "train.py": _launch_script(), "acc.yaml": YAML}, flags=False),
        Case(files={"run.sh": LAUNCH, "train.py": _launch_script(", gradient_checkpointing=True"),
                    "acc.yaml": YAML.replace("true", "false")}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = _fsdp(setup)
        if acc is None:
            return
        ac = fsdp_get(acc, "activation_checkpointing")
        if _truthy(ac) is not True:
            return
        for site in setup.sites:
            for name in ("activation_checkpointing", "gradient_checkpointing"):
                v = site.get(name)
                if v is None or v.value is not True:
                    continue
                edit = set_edit(v, False) if v.origin != FLAG and v.span is not None and v.span != v.key_span else None
                yield self.diagnostic(v.key_span or v.span, f"{located(v)} together with fsdp_activation_checkpointing "  # type: ignore[arg-type]
                                                            f"in {where(ac)}: the Trainer raises, use FSDP's activation "  # type: ignore[arg-type]
                                                            f"checkpointing only", edits=[edit] if edit else None,
                                      fix_message=f"set {name} to False",
                                      related=[ac.span.related("FSDP activation checkpointing")] if ac.span else [])  # type: ignore[union-attr]
                break


# --------------------------------------------------------------------------------------- C12


class CpuRamEfficientWithoutSync(Rule):
    """
    ## What it does
    Flags an FSDP accelerate config with `fsdp_sync_module_states: false` while
    `fsdp_cpu_ram_efficient_loading` is true (which is the launcher's default when it is left
    out).

    ## Why is this bad?
    With CPU-RAM-efficient loading only rank 0 loads the weights; the others must receive them
    through `sync_module_states`, or they train random weights. `accelerate launch` refuses
    ("When using `--fsdp_cpu_ram_efficient_loading` set `--fsdp_sync_module_states` to
    `True`"), and transformers 4.x raised the same in TrainingArguments (A19).

    ## Example
    ```yaml
    fsdp_config:
      fsdp_cpu_ram_efficient_loading: true
      fsdp_sync_module_states: false
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      fsdp_cpu_ram_efficient_loading: true
      fsdp_sync_module_states: true
    ```

    ## Fix safety
    Safe: the weights are broadcast from rank 0, which is what the loading mode needs.

    ## References
    - accelerate `utils/launch.py` (`prepare_multi_gpu_env`), `utils/dataclasses.py`
    - pitfalls catalog C12 / A19
    """

    code = "TL412"
    name = "fsdp-cpu-ram-efficient-loading-without-sync"
    severity = Severity.ERROR
    fix_safety = "safe"
    summary = "FSDP cpu_ram_efficient_loading with sync_module_states false"

    cases = [
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_cpu_ram_efficient_loading: true\n  fsdp_sync_module_states: false\n"},
             fixed_path="acc.yaml",
             fixed=FSDP_YAML + "  fsdp_cpu_ram_efficient_loading: true\n  fsdp_sync_module_states: true\n"),
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_sync_module_states: false\n"}, note="loading defaults to true"),
        # must not flag
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_cpu_ram_efficient_loading: false\n  fsdp_sync_module_states: false\n"},
             flags=False),
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_cpu_ram_efficient_loading: true\n"}, flags=False),
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_sync_module_states: 'false'\n"}, flags=False,
             note="a quoted string is truthy for the launcher; the plugin then forces sync on with a warning"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        acc = _fsdp(setup)
        if acc is None:
            return
        # the launcher's own test: ``if args.fsdp_cpu_ram_efficient_loading and not
        # args.fsdp_sync_module_states`` on the values as YAML gives them (a quoted "false" is truthy)
        sync = fsdp_get(acc, "sync_module_states")
        if sync is None or sync.span is None or bool(sync.value):
            return
        load = fsdp_get(acc, "cpu_ram_efficient_loading")
        if load is not None and not load.value:
            return
        how = f"cpu_ram_efficient_loading in {where(load)}" if load is not None else \
            "cpu_ram_efficient_loading (on by default in accelerate launch)"
        yield self.diagnostic(sync.span, f"fsdp_sync_module_states false with {how}: accelerate launch refuses, "  # type: ignore[union-attr]
                                         f"the other ranks would train random weights",
                              edits=[sync.span.edit("true")], fix_message="set fsdp_sync_module_states to true")  # type: ignore[union-attr]


# --------------------------------------------------------------------------------------- C13

PC_SIZES = ("dp_replicate_size", "dp_shard_size", "tp_size", "cp_size", "sp_size")


class ParallelismConfigWithoutFsdp2(Rule):
    """
    ## What it does
    Flags `accelerate launch --use_parallelism_config` without `--use_fsdp` on the same command
    line, and an accelerate config whose `parallelism_config` spans more than one process
    (product of its sizes) with FSDP version 1.

    ## Why is this bad?
    The launcher checks its flags before reading the config file and raises "You cannot use
    `--use_parallelism_config` without `--use_fsdp` and `--fsdp_version=2`"; at run time
    `ParallelismConfig` raises "ParallelismConfig is only compatible DistributedType.FSDP
    (version 2) or DistributedType.Multi{Device} or DistributedType.DEEPSPEED" under FSDP1.

    ## Example
    ```bash
    accelerate launch --use_parallelism_config --parallelism_config_dp_shard_size 4 train.py
    ```

    ## Use instead
    ```bash
    accelerate launch --use_fsdp --fsdp_version 2 --use_parallelism_config --parallelism_config_dp_shard_size 4 train.py
    ```

    ## Fix safety
    No fix.

    ## References
    - accelerate `commands/launch.py` (`_validate_launch_command`), `parallelism_config.py`
    - pitfalls catalog C13
    """

    code = "TL413"
    name = "parallelism-config-without-fsdp2"
    severity = Severity.ERROR
    summary = "parallelism config without FSDP2"

    cases = [
        Case(files={"run.sh": "accelerate launch --use_parallelism_config --parallelism_config_dp_shard_size 2 train.py\n",
                    "train.py": "import accelerate\n"}),
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_version: 1\nparallelism_config:\n"
                                "  parallelism_config_dp_shard_size: 2\n"}),
        # must not flag
        Case(files={"run.sh": "accelerate launch --use_fsdp --use_parallelism_config train.py\n",
                    "train.py": "import accelerate\n"}, flags=False),
        Case(files={"acc.yaml": FSDP_YAML + "  fsdp_version: 2\nparallelism_config:\n"
                                "  parallelism_config_dp_shard_size: 2\n"}, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        launch = setup.extra.get("launch")
        if launch is not None and launch.launcher == "accelerate":
            upc = launch.launcher_arg("use_parallelism_config")
            if upc is not None and launch.launcher_arg("use_fsdp") is None:
                yield self.diagnostic(upc.name_span, "--use_parallelism_config without --use_fsdp on the command line: "
                                                     "accelerate launch checks the flags before reading the config "
                                                     "file and refuses")
                return
        acc = _fsdp(setup)
        if acc is None or fsdp_version(acc) != 1:
            return
        pc = acc.node("parallelism_config")
        if pc is None or not pc.is_mapping:
            return
        total = 1
        for size in PC_SIZES:
            n = acc.value(f"parallelism_config.parallelism_config_{size}") or acc.value(f"parallelism_config.{size}")
            if n is not None and isinstance(n.value, int) and not isinstance(n.value, bool) and n.value > 0:
                total *= n.value
        if total <= 1 or pc.key_span is None:
            return
        yield self.diagnostic(pc.key_span, f"parallelism_config over {total} processes with FSDP version 1: "
                                           f"accelerate raises (ParallelismConfig needs FSDP2, multi-GPU or DeepSpeed)")


# --------------------------------------------------------------------------------------- C14


class AccelerateBf16WithoutBf16Gpu(Rule):
    """
    ## What it does
    Flags `mixed_precision: bf16` in an accelerate config (or `--mixed_precision bf16` on an
    `accelerate launch` line) when the target GPU (`--gpu`) has no native bf16 (pre-Ampere
    NVIDIA GPUs such as V100 and T4).

    ## Why is this bad?
    accelerate raises "bf16 mixed precision requires PyTorch >= 1.10 and a supported device"
    only when PyTorch reports no bf16 at all; current PyTorch reports emulated support on
    pre-Ampere GPUs (`torch.cuda.is_bf16_supported(including_emulation=True)`), so the run starts
    and computes bf16 without bf16 tensor cores: slower than fp16, often slower than fp32.

    ## Example
    ```yaml
    mixed_precision: bf16   # on a V100
    ```

    ## Use instead
    ```yaml
    mixed_precision: fp16
    ```

    ## Fix safety
    Unsafe: fp16 has a smaller range than bf16 (loss scaling takes care of gradients, but
    bf16-pretrained models can overflow).

    ## References
    - accelerate `accelerator.py`, `commands/launch.py` (bf16 check), `utils/imports.py`
      (`is_bf16_available`)
    - torch `cuda/__init__.py` (`is_bf16_supported`)
    - pitfalls catalog C14 / A07
    """

    code = "TL414"
    name = "accelerate-bf16-without-bf16-gpu"
    severity = Severity.WARNING
    fix_safety = "unsafe"
    summary = "accelerate mixed_precision bf16 on a GPU without native bf16"

    cases = [
        Case(files={"acc.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: bf16\n"},
             options={"gpu": "V100"}, unsafe=True, fixed_path="acc.yaml",
             fixed="distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: fp16\n"),
        # must not flag
        Case(files={"acc.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: bf16\n"},
             options={"gpu": "A100"}, flags=False),
        Case(files={"acc.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: bf16\n"},
             flags=False, note="no target GPU"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        gpu = setup.gpu
        if gpu is None or gpu.bf16 or gpu.vendor != "nvidia":
            return
        launch = setup.extra.get("launch")
        v = None
        if launch is not None and launch.launcher == "accelerate":
            f = launch.launcher_arg("mixed_precision")
            if f is not None and f.value == "bf16" and f.value_span is not None:
                v = Value(value="bf16", origin=FLAG, span=f.value_span, key_span=f.name_span, name="mixed_precision")
        acc = _acc(setup)
        if v is None and acc is not None:
            mp = acc.mixed_precision
            if mp is not None and mp.value == "bf16" and mp.span is not None:
                v = mp
        if v is None:
            return
        yield self.diagnostic(v.span, f"mixed_precision bf16 ({where(v)}) on {gpu.describe()}, which has no bf16 "  # type: ignore[arg-type]
                                      f"tensor cores: PyTorch emulates bf16 there, the run is slower than with fp16",
                              edits=[v.span.edit("fp16")], fix_message="use fp16")  # type: ignore[union-attr]


__all__ = [
    "AccelerateBf16WithoutBf16Gpu", "CpuRamEfficientWithoutSync", "FsdpActivationCheckpointingTwice",
    "FsdpBadWrapPolicy", "FsdpVersionSettings", "FsdpWrapClassNotInModel", "Fsdp1PeftOrigParams",
    "ParallelismConfigWithoutFsdp2",
]
