"""TL101 manual-device-placement."""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import _is_self_assign, model_flows
from trainlint.diagnostics import Diagnostic, Edit, Severity
from trainlint.fixing.python_edits import delete_statement
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Facts, ScriptRule
from trainlint.setup import Setup
from trainlint.sources.python import PythonFile


def _test_file(setup: Setup) -> str | None:
    from trainlint.rules._context import run_context

    return run_context(setup).test_file


def _shown(pf: PythonFile, mv) -> str:
    """The move as the message quotes it: the call itself when short, else its receiver cut
    (``Idefics3ForConditionalGeneration.from_pretrained(...).to(DEVICE)``), never a phrase
    inside the backquotes."""
    call = pf.source_of(mv.call)
    if len(call) <= 60:
        return call
    args = ", ".join(pf.source_of(a) for a in mv.call.args)
    args = args if len(args) <= 20 else "..."
    receiver = pf.source_of(mv.receiver)
    if len(receiver) > 40:
        r = mv.receiver
        func = pf.source_of(r.func) if isinstance(r, ast.Call) else ""
        receiver = f"{func}(...)" if func and len(func) <= 50 else "..."
    return f"{receiver}.{mv.how}({args})"


class ManualDevicePlacement(ScriptRule):
    """
    ## What it does
    Flags `model.to(device)`, `model.to("cuda")`, `model.cuda()`, `model = model.to(...)` and
    `from_pretrained(...).to(...)` on a model that is later passed to a `Trainer` (or
    `Seq2SeqTrainer`, or a TRL trainer), following the model through reassignments, PEFT
    wrappers (`get_peft_model`, `prepare_model_for_kbit_training`) and helper functions that
    return it. Moves to a dtype (`.to(torch.bfloat16)`), models used in a custom training
    loop without a Trainer, and test files (pytest files, files under `tests/`, modules that
    import pytest/unittest and define tests) are not flagged.

    ## Why is this bad?
    The Trainer places the model itself, at the right time: on the right local GPU for each
    rank under torchrun/accelerate, and deliberately *not* at construction under DeepSpeed,
    FSDP, model parallelism or 8/4-bit quantization. A manual move before it loads the whole
    model onto GPU 0 of every rank (an OOM before ZeRO-3/FSDP can shard it), breaks
    bitsandbytes models (".to is not supported for 4-bit or 8-bit models"), and is at best a
    wasted copy.

    ## Example
    ```python
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
    model.to(device)
    trainer = Trainer(model=model, args=args)
    ```

    ## Use instead
    ```python
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
    trainer = Trainer(model=model, args=args)
    ```

    ## Fix safety
    Safe when the data flow shows that nothing uses the model on the device between the move
    and the Trainer: the Trainer then moves it to the same device before training. When the
    model runs before the Trainer gets it (a forward/backward pass, `generate`, a
    `DistributedDataParallel` wrap) there is no fix; when it is handed to a function the
    analysis does not know, the fix is unsafe. Calls that also change the dtype
    (`.to("cuda", torch.float16)`) are reported without a fix.

    ## References
    - transformers `Trainer.__init__`: `place_model_on_device` and `_move_model_to_device`
    """

    code = "TL101"
    name = "manual-device-placement"
    severity = Severity.WARNING
    triggers = SETUP_NAMES
    needs_training = True
    fix_safety = "safe"
    summary = "the model is moved to a device by hand before the Trainer places it"

    cases = [
        Case(
            """
            import torch
            from transformers import AutoModel, Trainer
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = AutoModel.from_pretrained("bert-base-uncased")
            model.to(device)  # put it on the GPU
            trainer = Trainer(model=model)
            """,
            fixed=(
                "import torch\nfrom transformers import AutoModel, Trainer\n"
                'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
                'model = AutoModel.from_pretrained("bert-base-uncased")\n'
                "trainer = Trainer(model=model)\n"
            ),
        ),
        Case(
            """
            from transformers import AutoModel, Trainer
            model = AutoModel.from_pretrained("bert-base-uncased").to("cuda")
            trainer = Trainer(model=model)
            """,
            fixed=(
                "from transformers import AutoModel, Trainer\n"
                'model = AutoModel.from_pretrained("bert-base-uncased")\n'
                "trainer = Trainer(model=model)\n"
            ),
        ),
        Case(
            """
            from transformers import AutoModel, Trainer
            from peft import get_peft_model
            model = AutoModel.from_pretrained("m")
            model = model.cuda()
            model = get_peft_model(model, cfg)
            trainer = Trainer(model, args)
            """,
        ),
        Case(
            """
            from transformers import AutoModel
            from trl import SFTTrainer
            def load():
                m = AutoModel.from_pretrained("m")
                m.to(0)
                return m
            def main():
                model = load()
                SFTTrainer(model=model).train()
            """,
        ),
        Case(
            """
            import transformers as tf
            model = tf.AutoModel.from_pretrained("m")
            model.to(device=accelerator.device)
            tf.Trainer(model=model.to("cuda:0"))
            """,
        ),
        Case(
            """
            from transformers import AutoModelForCausalLM, Trainer
            model = AutoModelForCausalLM.from_pretrained("gpt2")
            model.to("cuda")
            sample = model.generate(prompt_ids.to("cuda"), max_new_tokens=8)
            trainer = Trainer(model=model, args=args)
            """,
            note="flagged, no fix: generate runs on the device before the Trainer",
        ),
        Case(
            """
            import torch
            from transformers import AutoModel, Trainer
            model = AutoModel.from_pretrained("m")
            model = model.to("cuda")
            loss = model(**batch).loss
            loss.backward()
            trainer = Trainer(model=model)
            """,
            note="flagged, no fix: a forward/backward pass before the Trainer",
        ),
        Case(
            """
            from torch.nn.parallel import DistributedDataParallel as DDP
            from transformers import AutoModel, Trainer
            model = AutoModel.from_pretrained("m")
            model.cuda()
            wrapped = DDP(model, device_ids=[0])
            trainer = Trainer(model=model)
            """,
            note="flagged, no fix: a DDP wrap takes the device of the parameters",
        ),
        Case(
            "import torch\n"
            "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
            "device = torch.device('cuda')\n"
            "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
            "if not hasattr(model, 'device') or model.device.type != device.type:\n"
            "    model = model.to(device)\n"
            "Trainer(model=model, args=TrainingArguments(output_dir='o')).train()\n",
            fixed="import torch\n"
                  "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
                  "device = torch.device('cuda')\n"
                  "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
                  "Trainer(model=model, args=TrainingArguments(output_dir='o')).train()\n",
            note="a move guarded by its own test (peft's qalora example): the test goes too, not `if ...: pass`"),
        # must not flag
        Case(files={"tests/test_trainer.py": (
            "import torch\n"
            "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
            "def test_train(tmp_path):\n"
            "    device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
            "    model = AutoModelForCausalLM.from_pretrained('tiny', dtype=torch.float32).to(device)\n"
            "    Trainer(model=model, args=TrainingArguments(output_dir=str(tmp_path))).train()\n")},
             flags=False, note="a test (trl's tests): it places its tiny model itself"),
        Case(
            """
            import torch
            from transformers import AutoModel
            device = torch.device("cuda")
            model = AutoModel.from_pretrained("m").to(device)
            for batch in loader:
                loss = model(**batch).loss
                loss.backward()
            """,
            flags=False, note="a custom loop without a Trainer needs the move",
        ),
        Case(
            """
            import torch
            from transformers import AutoModel, Trainer
            model = AutoModel.from_pretrained("m")
            model.to(torch.bfloat16)
            trainer = Trainer(model=model)
            """,
            flags=False, note="a dtype cast, not a device move",
        ),
        Case(
            """
            from transformers import AutoModel, Trainer
            model = AutoModel.from_pretrained("m")
            trainer = Trainer(model=model)
            trainer.train()
            model.to("cuda")
            model.generate(inputs)
            """,
            flags=False, note="inference after training",
        ),
        Case(
            """
            from transformers import AutoModel, Trainer
            teacher = AutoModel.from_pretrained("t").to("cuda")
            student = AutoModel.from_pretrained("s")
            trainer = Trainer(model=student)
            """,
            flags=False, note="the moved model never reaches the Trainer",
        ),
    ]

    def check_script(self, pf: PythonFile, facts: Facts) -> Iterable[Diagnostic]:
        flows = model_flows(pf)
        if not any(flow.moves for flow in flows):
            return
        if facts.ask(_test_file) is not None:
            return  # a test places its model where it checks it; no multi-GPU launch to spare
        for flow in flows:
            for mv in flow.moves:
                where = pf.span(mv.call)
                message = (f"`{_shown(pf, mv)}` moves the model by hand before {flow.trainer.class_name} places it: under "
                           f"torchrun/DeepSpeed/FSDP every rank copies the full model to one GPU first; "
                           f"remove it, the Trainer moves the model itself")
                edits = self._fix(pf, mv) if mv.only_device else None
                applicability = "safe"
                if edits:
                    use, known = device_use_before_trainer(pf, flow, mv)
                    if use is not None and known:
                        message += f" (no fix: `{use}` uses the model on the device before the Trainer)"
                        edits = None
                    elif use is not None:
                        message += (f" (the fix is unsafe: `{use}` gets the model before the Trainer and "
                                    f"may run it on the device)")
                        applicability = "unsafe"
                yield self.diagnostic(where, message, edits=edits, fix_message="remove the device move",
                                      applicability=applicability,  # type: ignore[arg-type]
                                      related=[pf.span(flow.trainer.site.node.func).related(
                                          f"the model is passed to {flow.trainer.class_name} here")])

    @staticmethod
    def _fix(pf: PythonFile, mv) -> list[Edit] | None:
        stmt = mv.stmt
        if (isinstance(stmt, ast.Expr) and stmt.value is mv.call) or _is_self_assign(stmt, mv.call):
            guard = _sole_guard(pf, stmt)
            if guard is False:
                return None  # the only statement of a block whose test may do something: no fix
            # a move guarded by a test of its own (`if model.device.type != device.type:`) goes
            # with its test, rather than leaving `if ...: pass` (peft's qalora example)
            return [delete_statement(pf, guard if guard is not None else stmt)]
        # ``x = receiver.to(device)`` or a chained call: keep just the receiver
        call_sp = pf.span(mv.call)
        recv_sp = pf.span(mv.receiver)
        return [Edit(path=pf.path, line=recv_sp.end_line, column=recv_sp.end_column,
                     end_line=call_sp.end_line, end_column=call_sp.end_column, content="")]


_PURE_CALLS = {"hasattr", "isinstance", "getattr", "callable", "len", "str", "type"}


def _sole_guard(pf: PythonFile, stmt: ast.stmt) -> ast.If | bool | None:
    """The ``if`` (without ``else``) whose whole body is ``stmt`` and whose test only reads
    (names, attributes, comparisons, ``hasattr``/``isinstance``...): it can go with the move.
    False when ``stmt`` is the only statement of another block (a loop, a ``try``, an ``if``
    whose test calls something); None when it is not alone in its block."""
    for node in ast.walk(pf.tree):
        for fname in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, fname, None)
            if not isinstance(block, list) or not any(s is stmt for s in block):
                continue
            if len(block) != 1 or isinstance(node, ast.Module):
                return None
            if isinstance(node, ast.If) and fname == "body" and not node.orelse and _pure(node.test):
                return node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return None  # a function that only moves: `pass` keeps it valid
            return False
    return None


def _pure(expr: ast.expr) -> bool:
    for n in ast.walk(expr):
        if isinstance(n, ast.Call):
            if not (isinstance(n.func, ast.Name) and n.func.id in _PURE_CALLS):
                return False
        elif not isinstance(n, (ast.Name, ast.Attribute, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Constant,
                                ast.Load, ast.cmpop, ast.boolop, ast.unaryop, ast.keyword)):
            return False
    return True


# What needs the model on its device: a forward pass (``model(...)``, ``forward``), generation,
# a DDP/DataParallel wrap (it takes the device of the parameters), compilation.
DEVICE_USES = {"generate", "forward", "__call__", "DistributedDataParallel", "DDP", "DataParallel",
               "FullyShardedDataParallel", "FSDP", "compile", "prepare", "prepare_model", "pipeline",
               "evaluate", "predict", "sample", "beam_search", "chat", "backward"}
# Calls that do not care where the model is (configuration, adapters, checkpointing, dtype).
DEVICE_FREE = {
    "train", "eval", "gradient_checkpointing_enable", "gradient_checkpointing_disable",
    "activation_checkpointing_enable", "activation_checkpointing_disable", "enable_input_require_grads",
    "resize_token_embeddings", "print_trainable_parameters", "requires_grad_", "tie_weights", "parameters",
    "named_parameters", "named_modules", "modules", "children", "named_children", "get_input_embeddings",
    "get_output_embeddings", "save_pretrained", "push_to_hub", "get_peft_model", "prepare_model_for_kbit_training",
    "prepare_model_for_int8_training", "print", "len", "add_adapter", "load_adapter", "set_adapter",
    "num_parameters", "get_nb_trainable_parameters", "state_dict", "isinstance", "getattr", "hasattr",
    "setattr", "type", "str", "repr", "id", "vars", "dir", "half", "float", "bfloat16", "to", "cuda",
    "apply", "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook", "freeze",
    "add_module", "get_submodule", "set_input_embeddings", "set_output_embeddings", "enable_adapters",
    "disable_adapters", "merge_and_unload", "unload", "info", "debug", "warning", "log", "format", "append",
    "from_pretrained", "update", "config_class", "to_dict", "to_json_string", "requires_grad",
    "count_parameters", "sum", "numel", "list", "dict", "deepcopy", "copy",
}


def _names_index(pf: PythonFile) -> dict[str, list]:
    """Calls of each plain name (``model(...)``) and calls passing a name as a keyword value
    (``pipeline(model=model)``): per file, once."""
    cached = getattr(pf, "_device_use_index", None)
    if cached is not None:
        return cached
    index: dict[str, list] = {}
    for cs in pf.calls:
        if isinstance(cs.node.func, ast.Name):
            index.setdefault(cs.node.func.id, []).append((cs, cs.node.func.id + "(...)"))
        for k in cs.node.keywords:
            if isinstance(k.value, ast.Name):
                index.setdefault(k.value.id, []).append((cs, f"{pf.source_of(cs.node.func)}({k.arg}=...)"))
    pf._device_use_index = index  # type: ignore[attr-defined]
    return index


def device_use_before_trainer(pf: PythonFile, flow, mv) -> tuple[str | None, bool]:
    """The first use of the model after the move ``mv`` and before the Trainer that may need it
    on the device: (text, True) for a known device use (a forward pass, ``generate``, a DDP
    wrap), (text, False) for a call the analysis does not know, (None, False) for none."""
    from trainlint.analysis import _pos

    def after_move(cs) -> bool:
        return cs.scope is not mv.scope or _pos(cs.stmt) > _pos(mv.stmt) or cs.stmt is mv.stmt \
            and cs.node is not mv.call and _pos(cs.node) > _pos(mv.call)

    trainer = flow.trainer
    tpos = _pos(trainer.site.stmt)

    def before_trainer(cs) -> bool:
        return cs.scope is not trainer.site.scope or _pos(cs.stmt) <= tpos

    unknown: str | None = None
    for c in flow.calls:
        cs = c.site
        if cs.node is mv.call or not after_move(cs) or cs.node is trainer.site.node:
            continue
        text = f"{c.receiver + '.' if c.receiver else ''}{c.name}(...)"
        if c.name in DEVICE_USES:
            return text, True
        if c.name not in DEVICE_FREE and unknown is None:
            unknown = text
    names = {n for _sid, n in flow.names}
    for n in names:
        for cs, text in _names_index(pf).get(n, ()):
            if cs.node is trainer.site.node or cs.node is mv.call:
                continue
            found = cs.scope.lookup(n)
            if found is None or (id(found[0]), n) not in flow.names or not after_move(cs) or not before_trainer(cs):
                continue
            if text == f"{n}(...)":
                return text, True  # a forward pass
            callee = text.split("(", 1)[0].split(".")[-1]
            if callee in DEVICE_USES:
                return text, True
            if callee not in DEVICE_FREE and unknown is None and not callee.endswith("Trainer"):
                unknown = text
    return unknown, False
