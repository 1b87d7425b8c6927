"""TL101 manual-device-placement."""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.analysis import _is_self_assign, model_flows
from trainlint.diagnostics import Diagnostic, Edit, Severity
from trainlint.fixing.python_edits import delete_statement
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup
from trainlint.sources.python import PythonFile


class ManualDevicePlacement(Rule):
    """
    ## What it does
    Flags `model.to(device)`, `model.to("cuda")`, `model.cuda()`, `model = model.to(...)` and
    `from_pretrained(...).to(...)` on a model that is later passed to a `Trainer` (or
    `Seq2SeqTrainer`, or a TRL trainer), following the model through reassignments, PEFT
    wrappers (`get_peft_model`, `prepare_model_for_kbit_training`) and helper functions that
    return it. Moves to a dtype (`.to(torch.bfloat16)`) and models used in a custom training
    loop without a Trainer are not flagged.

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
    Safe: the Trainer moves the model to the same device before training. Calls that also
    change the dtype (`.to("cuda", torch.float16)`) are reported without a fix.

    ## References
    - transformers `Trainer.__init__`: `place_model_on_device` and `_move_model_to_device`
    - pitfalls catalog P01, P03
    """

    code = "TL101"
    name = "manual-device-placement"
    severity = Severity.WARNING
    triggers = SETUP_NAMES
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
        # must not flag
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

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        for pf in setup.scripts:
            for flow in model_flows(pf):
                for mv in flow.moves:
                    where = pf.span(mv.call)
                    name = pf.source_of(mv.receiver) if len(pf.source_of(mv.receiver)) <= 40 else "the model"
                    message = (f"`{pf.source_of(mv.call) if len(pf.source_of(mv.call)) <= 60 else name + '.' + mv.how + '(...)'}` "
                               f"moves the model by hand before {flow.trainer.class_name} places it: under "
                               f"torchrun/DeepSpeed/FSDP every rank copies the full model to one GPU first; "
                               f"remove it, the Trainer moves the model itself")
                    edits = self._fix(pf, mv) if mv.only_device else None
                    yield self.diagnostic(where, message, edits=edits, fix_message="remove the device move",
                                          related=[pf.span(flow.trainer.site.node.func).related(
                                              f"the model is passed to {flow.trainer.class_name} here")])

    @staticmethod
    def _fix(pf: PythonFile, mv) -> list[Edit]:
        stmt = mv.stmt
        if isinstance(stmt, ast.Expr) and stmt.value is mv.call:
            return [delete_statement(pf, stmt)]
        if _is_self_assign(stmt, mv.call):
            return [delete_statement(pf, stmt)]
        # ``x = receiver.to(device)`` or a chained call: keep just the receiver
        call_sp = pf.span(mv.call)
        recv_sp = pf.span(mv.receiver)
        return [Edit(path=pf.path, line=recv_sp.end_line, column=recv_sp.end_column,
                     end_line=call_sp.end_line, end_column=call_sp.end_column, content="")]
