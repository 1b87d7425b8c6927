"""TL221 headless-model-in-trainer: a base model without a task head passed to Trainer"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.knowledge.model_api import forward_names
from trainlint.rules._triggers import SETUP_NAMES
from trainlint.rules._versioned import (
    behaviour_holds,
)
from trainlint.rules.args._args_checks_common import (
    V524,
    _kw_span,
    _trainer_calls,
)
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup
from trainlint.sources.python import PythonFile

_HEADLESS_EXCLUDE = ("For", "Head", "PreTrained", "EncoderDecoder")


def _headless_class(pf: PythonFile, call: ast.Call) -> str | None:
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr in ("from_pretrained", "from_config")):
        return None
    qn = pf.qualname(f.value) or ""
    if not qn.startswith("transformers."):
        return None
    name = qn.rsplit(".", 1)[-1]
    if name == "AutoModel":
        return name
    if name.endswith("Model") and name[0].isupper() and not any(x in name for x in _HEADLESS_EXCLUDE) \
            and not name.startswith("Auto"):
        return name
    return None



def _own_compute_loss(pf: PythonFile, tc) -> bool:
    """The Trainer is a class of this file that defines ``compute_loss`` (the loss is its own)."""
    func = tc.site.node.func
    name = func.id if isinstance(func, ast.Name) else None
    if name is None:
        return False
    for node in pf.of_type(ast.ClassDef):
        if node.name == name and any(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) and b.name == "compute_loss"
                                     for b in node.body):
            return True
    return False


class HeadlessModelInTrainer(Rule):
    """
    ## What it does
    Flags a Trainer whose `model` is created with `AutoModel.from_pretrained` or a base
    `*Model` class (`BertModel`, `LlamaModel`, ...) that has no task head. Not flagged: a base
    class whose `forward` computes a loss itself (`labels=`, or `return_loss=` as `CLIPModel`,
    `ChineseCLIPModel`, `SiglipModel` take), a Trainer given `compute_loss_func=`, and a local
    Trainer subclass that defines its own `compute_loss`.

    ## Why is this bad?
    A base model returns hidden states and no loss. `Trainer.compute_loss` then raises at the
    first training step: `ValueError: The model did not return a loss from the inputs, only
    the following keys: last_hidden_state,...` (or `forward()` rejects the collator's `labels`
    with a `TypeError`). The construction-time check in `Trainer.__init__` ("cannot be used as
    is for training: it only computes hidden states") compares the class name with the
    model-type keys of `MODEL_MAPPING_NAMES` and does not catch it, so the error comes only
    after the data is loaded and the model placed.

    ## Example
    ```python
    model = AutoModel.from_pretrained("bert-base-uncased")
    Trainer(model=model, args=args)
    ```

    ## Use instead
    ```python
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
    ```

    ## Fix safety
    No automatic fix: the task head depends on the task.

    ## References
    - transformers `Trainer.compute_loss` ("The model did not return a loss from the inputs")
    - transformers `Trainer.__init__` (`MODEL_MAPPING_NAMES`, keyed by model type)
    """

    code = "TL221"
    name = "headless-model-in-trainer"
    severity = Severity.ERROR
    triggers = SETUP_NAMES
    needs_training = True
    summary = "a base model without a task head passed to Trainer"
    cases = [
        Case("from transformers import AutoModel, Trainer\nm = AutoModel.from_pretrained('bert-base-uncased')\n"
             "t = Trainer(model=m, args=a)\n", options=V524),
        Case("from transformers import BertModel, Trainer\nt = Trainer(model=BertModel.from_pretrained('b'))\n",
             options=V524),
        Case("from transformers import AutoModelForCausalLM, Trainer\nm = AutoModelForCausalLM.from_pretrained('x')\n"
             "t = Trainer(model=m, args=a)\n", options=V524, flags=False),
        Case("from transformers import GPT2LMHeadModel, Trainer\nm = GPT2LMHeadModel.from_pretrained('gpt2')\n"
             "t = Trainer(model=m)\n", options=V524, flags=False),
        Case("from transformers import ChineseCLIPModel, Trainer\n"
             "model = ChineseCLIPModel.from_pretrained('OFA-Sys/chinese-clip-vit-base-patch16')\n"
             "def collate_fn(examples):\n    return {'pixel_values': pv, 'input_ids': ids, 'return_loss': True}\n"
             "trainer = Trainer(model=model, args=a, data_collator=collate_fn)\n", options=V524, flags=False,
             note="zero_nlp's chinese_clip: CLIP models compute their contrastive loss with return_loss"),
        Case("from transformers import AutoModel, Trainer\nm = AutoModel.from_pretrained('bert-base-uncased')\n"
             "t = Trainer(model=m, args=a, compute_loss_func=my_loss)\n", options=V524, flags=False),
        Case("from transformers import AutoModel, Trainer\n"
             "class EmbeddingTrainer(Trainer):\n"
             "    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):\n"
             "        return contrastive(model(**inputs).last_hidden_state)\n"
             "m = AutoModel.from_pretrained('bert-base-uncased')\nt = EmbeddingTrainer(model=m, args=a)\n",
             options=V524, flags=False, note="a subclass with its own loss"),
        Case("from transformers import AutoModel, Trainer\n"
             "class LoggingTrainer(Trainer):\n"
             "    def log(self, logs, *args):\n        super().log(logs, *args)\n"
             "m = AutoModel.from_pretrained('bert-base-uncased')\nt = LoggingTrainer(model=m, args=a)\n",
             options=V524, note="a subclass that keeps the library's compute_loss"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        if not behaviour_holds(setup, "trainer_rejects_headless_model"):
            return
        for pf, tc in _trainer_calls(setup):
            m = tc.keywords.get("model")
            expr: ast.AST | None = m
            if isinstance(m, ast.Name):
                b = pf.binding_of(m.id, tc.site.scope)
                expr = b.value if b is not None and b.kind in ("assign", "annassign") else None
            if not isinstance(expr, ast.Call):
                continue
            cls = _headless_class(pf, expr)
            if cls is None or "compute_loss_func" in tc.keywords or _own_compute_loss(pf, tc):
                continue
            names = forward_names(cls)
            if names is not None and names & {"labels", "return_loss"}:
                continue  # the base class computes a loss itself (CLIP's contrastive loss)
            yield self.diagnostic(_kw_span(pf, tc, "model"),
                                  f"{cls} only computes hidden states and returns no loss: training fails at the first "
                                  "step (\"The model did not return a loss from the inputs\"); use an "
                                  "AutoModelFor<Task> class",
                                  related=[pf.span(expr).related(f"{cls} created here")])

