"""TL407 fsdp-wrap-class-not-in-model: FSDP transformer layer class of another architecture than the model"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_models import (
    layer_classes,
    model_facts,
    norm_type,
    single_model,
)
from trainlint.rules._triggers import LAUNCH_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.rules.launch._accelerate_fsdp_common import (
    FSDP_YAML,
    LAUNCH,
    _fsdp,
    _launch_script,
    fsdp_get,
)
from trainlint.setup import Setup


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
    """

    code = "TL407"
    name = "fsdp-wrap-class-not-in-model"
    severity = Severity.ERROR
    triggers = LAUNCH_NAMES
    python_alone = False  # reads only an accelerate config, which a file gives
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

