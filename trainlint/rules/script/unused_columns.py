"""TL115 column-dropped-by-remove-unused-columns."""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import (
    TrainerContext,
    base_trainer_class,
    class_method,
    collator_call,
    local_trainer_class,
    site_is_closed,
    trainer_contexts,
)
from trainlint.diagnostics import Diagnostic, Edit, Severity
from trainlint.fixing.python_edits import add_keyword
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import PYTHON, Setup
from trainlint.sources.python import PythonFile

# Forward parameters of transformers heads (text, vision, audio, multimodal): a column with one
# of these names may be a forward argument of some model, so it is never reported for a
# transformers model. Names that merely look like tensors (``*_ids``, ``*_mask``, ...) are
# skipped too: the rule reports only columns no transformers head takes.
HF_FORWARD = {
    "input_ids", "attention_mask", "token_type_ids", "position_ids", "head_mask", "inputs_embeds", "labels",
    "past_key_values", "use_cache", "output_attentions", "output_hidden_states", "return_dict", "cache_position",
    "logits_to_keep", "num_logits_to_keep", "decoder_input_ids", "decoder_attention_mask", "decoder_head_mask",
    "cross_attn_head_mask", "encoder_outputs", "decoder_inputs_embeds", "decoder_position_ids", "pixel_values",
    "pixel_mask", "image_sizes", "image_grid_thw", "pixel_values_videos", "video_grid_thw", "input_features",
    "input_values", "bbox", "start_positions", "end_positions", "mask_labels", "class_labels", "bool_masked_pos",
    "interpolate_pos_encoding", "global_attention_mask", "langs", "lengths", "token_type", "second_per_grid_ts",
    "rope_deltas", "image", "images", "spatial_shapes", "aspect_ratio_ids", "aspect_ratio_mask", "cross_attention_mask",
    "feature_attention_mask", "input_features_mask", "return_loss", "mems", "perm_mask", "target_mapping",
    "encoder_hidden_states", "encoder_attention_mask", "visual_feats", "visual_pos", "bbox_mask", "pixel_attention_mask",
}
TENSORISH = ("_ids", "_mask", "_values", "_positions", "_embeds", "labels", "_features", "_sizes", "_thw", "_len",
             "_lengths", "_states", "_outputs")
KEPT = {"label", "label_ids"}
HF_COLLATOR_PREFIX = "DataCollator"
INPUT_OVERRIDES = ("_remove_unused_columns", "_set_signature_columns_if_needed", "_prepare_inputs", "training_step",
                   "_get_collator_with_removed_columns", "get_train_dataloader")


def _string_key(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def keys_read(root: ast.AST, holders: set[str], rows_of: set[str] = frozenset()) -> list[tuple[str, ast.AST]]:  # type: ignore[assignment]
    """String keys read from dicts named ``holders`` (``x["k"]``, ``x.get("k")``, ``x.pop("k")``)
    and from the rows of the lists named ``rows_of`` (``rows[0]["k"]``)."""
    out: list[tuple[str, ast.AST]] = []
    for n in ast.walk(root):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
            key = _string_key(n.slice)
            if key is None:
                continue
            base = n.value
            if isinstance(base, ast.Name) and base.id in holders:
                out.append((key, n))
            elif isinstance(base, ast.Subscript) and isinstance(base.value, ast.Name) and base.value.id in rows_of \
                    and _string_key(base.slice) is None:
                out.append((key, n))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("get", "pop") \
                and isinstance(n.func.value, ast.Name) and n.func.value.id in holders and n.args:
            key = _string_key(n.args[0])
            if key is not None:
                out.append((key, n))
    return out


def collator_reads(fn: ast.FunctionDef | ast.Lambda, skip_self: bool = False) -> list[tuple[str, ast.AST]]:
    """Keys a collator reads from the features it is given: ``for f in features: f["text"]``,
    ``[f["text"] for f in features]``, ``features[0]["text"]``."""
    params = fn.args.args[1:] if skip_self else fn.args.args
    if not params:
        return []
    feats = params[0].arg
    rows: set[str] = set()
    for n in ast.walk(fn):
        if isinstance(n, (ast.For, ast.comprehension)) and isinstance(n.iter, ast.Name) and n.iter.id == feats \
                and isinstance(n.target, ast.Name):
            rows.add(n.target.id)
    return keys_read(fn, rows, {feats})


def forward_params(ctx: TrainerContext) -> tuple[set[str] | None, str]:
    """(the forward's parameter names, what the model is) for the model reaching the Trainer;
    None when not known. For a transformers model: None as the set and "transformers"."""
    flow = ctx.flow
    if flow is None or flow.unknown_origin:
        return None, ""
    if flow.custom_classes and not flow.loads:
        names: set[str] = set()
        for cls in flow.custom_classes:
            fwd = class_method(ctx.pf, cls, "forward")
            if fwd is None:
                return None, ""
            a = fwd.args
            names |= {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
            if a.vararg is not None:
                names.add(a.vararg.arg)
            if a.kwarg is not None:
                names.add(a.kwarg.arg)
        names.discard("self")
        return names, f"{flow.custom_classes[0].name}.forward"
    if flow.loads and not flow.custom_classes:
        # a concrete class (``SpeechT5ForTextToSpeech.from_pretrained``): what its forward takes
        # in any covered version is kept too (``speaker_embeddings``), from the wheels' data
        from trainlint.knowledge.model_api import forward_names

        known: set[str] = set()
        for ld in flow.loads:
            names = forward_names(ld.cls)
            if names is not None:
                known |= names
        return known or None, "transformers"
    return None, ""


def _dropped(col: str, params: set[str] | None, model: str, label_names: set[str]) -> bool:
    if col in KEPT or col in label_names:
        return False
    if model == "transformers":
        return col not in HF_FORWARD and not col.endswith(TENSORISH) and "label" not in col \
            and (params is None or col not in params)
    return params is not None and col not in params


def _hf_collator(pf: PythonFile, ctx: TrainerContext) -> bool:
    """No collator (the default one), or one of transformers' collators: they pass the
    dataset's keys through, so what the dataset loses the batch lacks."""
    expr = ctx.trainer.keywords.get("data_collator")
    if expr is None or (isinstance(expr, ast.Constant) and expr.value is None):
        return True
    if isinstance(expr, ast.Name) and (pf.qualname(expr) or "").endswith("default_data_collator"):
        return True
    found = collator_call(pf, ctx.trainer)
    if found is None:
        return False
    qn = pf.qualname(found[0].func) or ""
    return qn.startswith("transformers.") and qn.rsplit(".", 1)[-1].startswith(HF_COLLATOR_PREFIX)


def _local_collator(pf: PythonFile, ctx: TrainerContext) -> tuple[ast.FunctionDef | ast.Lambda, bool] | None:
    expr = ctx.trainer.keywords.get("data_collator")
    scope = ctx.trainer.site.scope
    if isinstance(expr, ast.Lambda):
        return expr, False
    if isinstance(expr, ast.Name):
        b = pf.binding_of(expr.id, scope)
        if b is not None and b.kind == "def" and isinstance(b.node, ast.FunctionDef):
            return b.node, False
    found = collator_call(pf, ctx.trainer)
    if found is not None and isinstance(found[0].func, ast.Name):
        b = pf.binding_of(found[0].func.id, pf.module_scope)
        if b is not None and isinstance(b.node, ast.ClassDef) and b.node.name not in pf.imports:
            call = class_method(pf, b.node, "__call__")
            if call is not None:
                return call, True
    return None


class ColumnDroppedByRemoveUnusedColumns(Rule):
    """
    ## What it does
    Flags a dataset column that the script reads after the Trainer has removed it:
    `remove_unused_columns` is `True` (the default) and

    * a data collator of the file (a function, a lambda, or a class with `__call__`) reads a
      key of its features (`f["text"]`, `features[0]["image_path"]`), or
    * a `compute_loss` override of a `Trainer` subclass reads a key of `inputs`
      (`inputs["weights"]`, `inputs.pop("weights")`) while the collator is transformers' own
      (or the default), which only passes the dataset's keys through,

    and that key is not a parameter of the model's `forward` (nor `label`, `label_ids` or a
    `label_names` entry). The forward is known exactly for an `nn.Module` class of the file;
    for a transformers model only keys that no transformers head takes are reported (not
    `input_ids`, `pixel_values`, nor any `*_ids` / `*_mask` / `*_values` name).

    ## Why is this bad?
    Before batching, the Trainer keeps only the columns named in the model's forward signature
    (plus `label`, `label_ids` and `label_names`). The collator or the loss then fails with a
    `KeyError` for the column it needs, or, when no column is left, with "No columns in the
    dataset match the model's forward method signature ... You may need to set
    remove_unused_columns=False".

    ## Example
    ```python
    def collate(features):
        texts = [f["text"] for f in features]
        return tokenizer(texts, padding=True, return_tensors="pt")

    Trainer(model=model, args=TrainingArguments(output_dir="out"), data_collator=collate)
    ```

    ## Use instead
    ```python
    Trainer(model=model, args=TrainingArguments(output_dir="out", remove_unused_columns=False),
            data_collator=collate)
    ```

    ## Fix safety
    Safe: with `remove_unused_columns=False` the collator and the loss see every column; the
    model still gets only what the collator returns. The fix writes it in the
    TrainingArguments call when there is one.

    ## References
    - transformers 5.24 `Trainer._remove_unused_columns`, `Trainer._set_signature_columns_if_needed`,
      `RemoveColumnsCollator`
    - the 5.24 error: "No columns in the dataset match the model's forward method signature ... You may need
      to set remove_unused_columns=False" (`Trainer._remove_unused_columns`)
    """

    code = "TL115"
    name = "column-dropped-by-remove-unused-columns"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    fix_safety = "safe"
    summary = "a dataset column read by the collator or compute_loss that remove_unused_columns drops"

    cases = [
        Case(
            """
            from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments
            tok = AutoTokenizer.from_pretrained("bert-base-uncased")
            def collate(features):
                batch = tok([f["text"] for f in features], padding=True, return_tensors="pt")
                batch["labels"] = [f["label"] for f in features]
                return batch
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
            args = TrainingArguments(output_dir="o")
            Trainer(model=model, args=args, train_dataset=ds, data_collator=collate)
            """,
            fixed=(
                "from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments\n"
                'tok = AutoTokenizer.from_pretrained("bert-base-uncased")\n'
                "def collate(features):\n"
                '    batch = tok([f["text"] for f in features], padding=True, return_tensors="pt")\n'
                '    batch["labels"] = [f["label"] for f in features]\n'
                "    return batch\n"
                'model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")\n'
                'args = TrainingArguments(output_dir="o", remove_unused_columns=False)\n'
                "Trainer(model=model, args=args, train_dataset=ds, data_collator=collate)\n"
            ),
        ),
        Case(
            """
            import torch.nn as nn
            from transformers import Trainer, TrainingArguments
            class Net(nn.Module):
                def forward(self, input_ids, labels=None):
                    return {"loss": self.lin(input_ids).mean()}
            class WeightedTrainer(Trainer):
                def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
                    w = inputs.pop("sample_weight")
                    out = model(**inputs)
                    return (out["loss"] * w).mean()
            args = TrainingArguments(output_dir="o", remove_unused_columns=True)
            WeightedTrainer(model=Net(), args=args, train_dataset=ds)
            """,
            note="a local module; the default collator",
        ),
        # must not flag
        Case(
            """
            from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments
            tok = AutoTokenizer.from_pretrained("bert-base-uncased")
            def collate(features):
                return tok([f["text"] for f in features], padding=True, return_tensors="pt")
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
            args = TrainingArguments(output_dir="o", remove_unused_columns=False)
            Trainer(model=model, args=args, train_dataset=ds, data_collator=collate)
            """,
            flags=False,
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, DataCollatorForLanguageModeling, Trainer, TrainingArguments
            class MyTrainer(Trainer):
                def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
                    labels = inputs.pop("labels")
                    mask = inputs["attention_mask"]
                    out = model(**inputs)
                    return out.loss
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            MyTrainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds,
                      data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
            """,
            flags=False, note="forward arguments of every causal LM",
        ),
        Case(
            """
            import torch.nn as nn
            from transformers import Trainer, TrainingArguments
            class Net(nn.Module):
                def forward(self, text_ids, sample_weight, labels=None):
                    return {"loss": self.lin(text_ids).mean()}
            class WeightedTrainer(Trainer):
                def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
                    w = inputs["sample_weight"]
                    return model(**inputs)["loss"]
            WeightedTrainer(model=Net(), args=TrainingArguments(output_dir="o"), train_dataset=ds)
            """,
            flags=False, note="the column is a forward parameter",
        ),
        Case(
            """
            from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
            class MyTrainer(Trainer):
                def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
                    w = inputs.pop("weight")
                    return model(**inputs).loss * w
            def collate(features):
                return {"input_ids": stack(features), "weight": compute_weight(features)}
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
            MyTrainer(model=model, args=TrainingArguments(output_dir="o"), train_dataset=ds, data_collator=collate)
            """,
            flags=False, note="the key is made by a custom collator after the columns are removed",
        ),
        Case(
            """
            import torch
            from torch.utils.data import DataLoader
            from transformers import AutoModelForSequenceClassification
            def collate(features):
                return tok([f["text"] for f in features], padding=True, return_tensors="pt")
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
            for batch in DataLoader(ds, collate_fn=collate):
                model(**batch).loss.backward()
            """,
            flags=False, note="a custom loop: no Trainer removes anything",
        ),
        Case(
            """
            from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments, SpeechT5ForTextToSpeech
            def collate(features):
                batch = processor.pad(input_ids=[{"input_ids": f["input_ids"]} for f in features], return_tensors="pt")
                batch["speaker_embeddings"] = torch.tensor([f["speaker_embeddings"] for f in features])
                return batch
            model = SpeechT5ForTextToSpeech.from_pretrained("microsoft/speecht5_tts")
            args = Seq2SeqTrainingArguments(output_dir="o")
            Seq2SeqTrainer(model=model, args=args, train_dataset=ds, data_collator=collate)
            """,
            flags=False, note="a forward argument of the loaded class (SpeechT5ForTextToSpeech, from the wheels)",
        ),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for ctx in trainer_contexts(setup):
            pf, tc = ctx.pf, ctx.trainer
            if base_trainer_class(pf, tc) not in ("Trainer", "Seq2SeqTrainer") or ctx.sites is None:
                continue
            if "model_init" in tc.keywords or any(k.arg is None for k in tc.site.node.keywords):
                continue
            if not all(self._removes(pf, s) for s in ctx.sites):
                continue
            label_names: set[str] = set()
            known_labels = True
            for s in ctx.sites:
                ln = s.get("label_names")
                if ln is None:
                    continue
                if isinstance(ln.value, (list, tuple)) and all(isinstance(x, str) for x in ln.value):
                    label_names |= set(ln.value)
                else:
                    known_labels = False
            if not known_labels:
                continue
            params, model = forward_params(ctx)
            if params is None and model != "transformers":
                continue
            cls = local_trainer_class(pf, tc)
            if cls is not None and any(class_method(pf, cls, m) is not None for m in INPUT_OVERRIDES):
                continue
            reads: list[tuple[str, ast.AST, str]] = []
            coll = _local_collator(pf, ctx)
            if coll is not None:
                reads += [(k, n, "the data collator") for k, n in collator_reads(coll[0], skip_self=coll[1])]
            if cls is not None and _hf_collator(pf, ctx):
                fn = class_method(pf, cls, "compute_loss")
                if fn is not None and len(fn.args.args) >= 3:
                    inputs = fn.args.args[2].arg
                    reads += [(k, n, "compute_loss") for k, n in keys_read(fn, {inputs})]
            for col, node, who in reads:
                if not _dropped(col, params, model, label_names):
                    continue
                forward = model if model != "transformers" else "the model's forward"
                yield self.diagnostic(
                    pf.span(node),
                    f"{who} reads the column {col!r}, which is not a parameter of {forward}: with "
                    f"remove_unused_columns=True (the default) the Trainer drops it before batching, so this fails "
                    f"with a KeyError (or \"No columns in the dataset match the model's forward method signature\"); "
                    f"set remove_unused_columns=False",
                    edits=self._fix(pf, ctx), fix_message="set remove_unused_columns=False",
                    related=[pf.span(tc.site.node.func).related(f"{tc.class_name} is built here")])
                break

    @staticmethod
    def _removes(pf: PythonFile, site) -> bool:
        v = site.get("remove_unused_columns")
        if v is None:
            return site_is_closed(pf, site)
        return v.value is True

    @staticmethod
    def _fix(pf: PythonFile, ctx: TrainerContext) -> list[Edit] | None:
        sites = ctx.sites or []
        if len(sites) != 1 or sites[0].call is None:
            return None
        site = sites[0]
        v = site.get("remove_unused_columns")
        if v is None:
            return [add_keyword(pf, site.call.site.node, "remove_unused_columns=False")]
        span = v.edit_span()
        if v.origin != PYTHON or span is None or v.shared:
            return None
        return [span.edit("False")]
