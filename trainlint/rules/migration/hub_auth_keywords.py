"""TL612 hub-auth-keywords: use_auth_token= on tokenizers/configs/processors and unknown push_to_hub keywords"""

from __future__ import annotations

import ast
from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._versioned import target, target_text
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup
from trainlint.sources.python import PythonFile


def _loader_key(class_name: str) -> str | None:
    """The base class whose ``from_pretrained`` a transformers class name uses (``Auto*`` classes
    hand their keywords to the same loaders)."""
    if "Tokenizer" in class_name:
        return "PreTrainedTokenizerBase.from_pretrained"
    if class_name.endswith("Config") and "Quantization" not in class_name and "BitsAndBytes" not in class_name:
        return "PreTrainedConfig.from_pretrained"
    if "ImageProcessor" in class_name:
        return "ImageProcessingMixin.from_pretrained"
    if "FeatureExtractor" in class_name:
        return "FeatureExtractionMixin.from_pretrained"
    if class_name.endswith("Processor"):
        return "ProcessorMixin.from_pretrained"
    return None


def _accepted(key: str, version: str, depth: int = 0) -> tuple[set[str], bool] | None:
    """(keywords the method handles, whether anything else is swallowed without error) in that
    version: its parameters and the kwargs keys it reads, plus those of the methods it passes
    ``**kwargs`` on to."""
    from trainlint.knowledge import model_api  # only once a keyword of interest is found

    lo = model_api.loader(key, version)
    if lo is None:
        return None
    names = set(lo.params) | set(lo.kwargs_keys)
    if not lo.varkw:
        return names, False
    if not lo.forwards or depth > 2:
        return names, True
    cls = key.split(".", 1)[0]
    swallowed = False
    for f in lo.forwards:
        sub = _accepted(f"{cls}.{f}", version, depth + 1)
        if sub is None:
            return names, True  # passed on to something the data does not cover
        names |= sub[0]
        swallowed = swallowed or sub[1]
    return names, swallowed


class HubAuthKeywords(Rule):
    """
    ## What it does
    Flags `use_auth_token=` on the `from_pretrained` of tokenizers, configs, processors,
    feature extractors and image processors (`AutoTokenizer`, `AutoConfig`, `AutoProcessor`,
    ...; models are `from-pretrained-removed-kwargs`, TL607), and keywords of
    `trainer.push_to_hub(...)` that the target `Trainer.push_to_hub` does not take
    (`use_auth_token=`, `repo_name=`). What each method takes in each transformers release (its
    parameters and the keys it reads out of `**kwargs`, and where it passes the rest) is read
    from the released wheels.

    ## Why is this bad?
    transformers 5 no longer reads `use_auth_token`: on a loader it lands in `**kwargs`, the token
    is not used, and a private or gated repository fails to download (before, it was a
    deprecated alias of `token`). `Trainer.push_to_hub` hands unknown keywords to
    `create_model_card`, which takes no `**kwargs`: `TypeError` at the very end of the
    training, before anything is uploaded.

    ## Example
    ```python
    tok = AutoTokenizer.from_pretrained(name, use_auth_token=True)
    trainer.push_to_hub(repo_name="me/model", use_auth_token=token)
    ```

    ## Use instead
    ```python
    tok = AutoTokenizer.from_pretrained(name, token=True)
    args = TrainingArguments(..., hub_model_id="me/model")
    trainer.push_to_hub(token=token)
    ```

    ## Fix safety
    `use_auth_token=` -> `token=` is safe where the target method takes `token` (the old name
    was its alias); when both are written, `use_auth_token=` is removed. `repo_name=` has no
    automatic fix: the repository is `TrainingArguments(hub_model_id=...)`.

    ## References
    - transformers 4.57.6 `tokenization_utils_base.py` (`use_auth_token` deprecated, "will be
      removed in v5"); transformers 5.0.0 (no `use_auth_token` left outside model files)
    - transformers 5.24.0 `trainer.py` (`push_to_hub(..., **kwargs)` -> `create_model_card(**kwargs)`)
    """

    code = "TL612"
    name = "hub-auth-keywords"
    severity = Severity.WARNING
    triggers = ("use_auth_token", "repo_name")
    fix_safety = "safe"
    summary = "use_auth_token= on tokenizers/configs/processors, push_to_hub(use_auth_token=, repo_name=)"

    cases = [
        Case("""
            from transformers import AutoTokenizer, AutoConfig
            tok = AutoTokenizer.from_pretrained("meta-llama/Llama-3.1-8B", use_auth_token=True)
            cfg = AutoConfig.from_pretrained("meta-llama/Llama-3.1-8B", use_auth_token=True, token=True)
            """, options={"transformers_version": "5.24.0"},
             fixed='from transformers import AutoTokenizer, AutoConfig\n'
                   'tok = AutoTokenizer.from_pretrained("meta-llama/Llama-3.1-8B", token=True)\n'
                   'cfg = AutoConfig.from_pretrained("meta-llama/Llama-3.1-8B", token=True)\n'),
        Case("""
            from transformers import Trainer
            trainer = Trainer(model=m, args=a)
            trainer.train()
            trainer.push_to_hub(repo_name="me/model", use_auth_token=TOKEN)
            """, options={"transformers_version": "5.24.0"},
             fixed='from transformers import Trainer\ntrainer = Trainer(model=m, args=a)\ntrainer.train()\n'
                   'trainer.push_to_hub(repo_name="me/model", token=TOKEN)\n'),
        Case("""
            from transformers import AutoProcessor
            proc = AutoProcessor.from_pretrained("x", use_auth_token=True)
            """, options={"transformers_version": "4.57.6"}, note="deprecated alias: info",
             fixed='from transformers import AutoProcessor\nproc = AutoProcessor.from_pretrained("x", token=True)\n'),
        # must not flag
        Case("""
            from transformers import AutoTokenizer, Trainer
            tok = AutoTokenizer.from_pretrained("x", token=True)
            trainer = Trainer(model=m, args=a)
            trainer.push_to_hub(commit_message="done", tags=["sft"])
            """, options={"transformers_version": "5.24.0"}, flags=False),
        Case("""
            from transformers import AutoModelForCausalLM
            m = AutoModelForCausalLM.from_pretrained("x", use_auth_token=True)
            """, options={"transformers_version": "5.24.0"}, flags=False, note="models are TL607's"),
        Case("""
            from mylib import Trainer
            trainer = Trainer()
            trainer.push_to_hub(repo_name="x")
            """, options={"transformers_version": "5.24.0"}, flags=False),
        Case("""
            from trl import DPOTrainer
            trainer = DPOTrainer(model=m, args=a)
            trainer.push_to_hub(dataset_name="me/data")
            """, options={"transformers_version": "5.24.0"}, flags=False,
             note="TRL trainers have their own create_model_card(dataset_name=)"),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        tf = target(setup)[0]
        for pf in setup.scripts:
            if "use_auth_token" not in pf.text and "push_to_hub" not in pf.text:
                continue  # the cheap guard: nothing this rule reads
            trainers = self._trainer_names(pf)
            for cs in pf.calls_named("from_pretrained", "push_to_hub"):
                f = cs.node.func
                if not isinstance(f, ast.Attribute):
                    continue
                if f.attr == "from_pretrained":
                    qn = pf.qualname(f.value)
                    if not qn or not qn.startswith("transformers."):
                        continue
                    key = _loader_key(qn.rsplit(".", 1)[-1])
                    if key is not None:
                        yield from self._from_pretrained(setup, pf, cs.node, key, tf)
                elif f.attr == "push_to_hub" and isinstance(f.value, ast.Name) and f.value.id in trainers:
                    yield from self._push_to_hub(setup, pf, cs.node, tf)

    def _trainer_names(self, pf: PythonFile) -> set[str]:
        """Names bound once to a transformers ``Trainer``/``Seq2SeqTrainer`` (TRL trainers define
        their own ``create_model_card``, with other keywords; a local subclass that overrides
        either method decides itself)."""
        out = set()
        for tc in pf.trainer_calls:
            if tc.class_name not in ("Trainer", "Seq2SeqTrainer"):
                continue
            func = tc.site.node.func
            if isinstance(func, ast.Name) and func.id in pf.local_classes:
                defs = [n for n in pf.of_type(ast.ClassDef) if n.name == func.id]
                if not defs or any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                                   and s.name in ("push_to_hub", "create_model_card") for d in defs for s in d.body):
                    continue
            elif not (pf.qualname(func) or "").startswith("transformers"):
                continue
            stmt = tc.site.stmt
            if isinstance(stmt, ast.Assign) and stmt.value is tc.site.node and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name) \
                    and len(pf.bindings_of(stmt.targets[0].id, tc.site.scope)) == 1:
                out.add(stmt.targets[0].id)
        return out

    def _token_fix(self, pf: PythonFile, call: ast.Call, kw: ast.keyword):
        from trainlint.fixing.python_edits import remove_argument

        if pf.keyword(call, "token") is not None:
            return [remove_argument(pf, call, kw)], "remove use_auth_token= (token= is set)"
        return [pf.keyword_name_span(kw).edit("token")], "rename to token="

    def _from_pretrained(self, setup: Setup, pf: PythonFile, call: ast.Call, key: str, tf: str
                         ) -> Iterable[Diagnostic]:
        kw = pf.keyword(call, "use_auth_token")
        if kw is None:
            return
        got = _accepted(key, tf)
        if got is None:
            return
        names, _ = got
        if "token" not in names:
            return
        cls = key.split(".", 1)[0]
        if "use_auth_token" in names:
            message = (f"from_pretrained(use_auth_token=) is a deprecated alias of token= for {cls} "
                       f"({target_text(setup)})")
            severity = Severity.INFO
        else:
            message = (f"{cls}.from_pretrained no longer reads use_auth_token= ({target_text(setup)}): the token is "
                       f"not used, so a private or gated repository fails to download; use token=")
            severity = Severity.WARNING
        edits, fix_message = self._token_fix(pf, call, kw)
        yield self.diagnostic(pf.keyword_name_span(kw), message, edits=edits, fix_message=fix_message,
                              severity=severity)

    def _push_to_hub(self, setup: Setup, pf: PythonFile, call: ast.Call, tf: str) -> Iterable[Diagnostic]:
        got = _accepted("Trainer.push_to_hub", tf)
        if got is None:
            return
        names, swallowed = got
        if swallowed:
            return  # unknown keywords end in a **kwargs the data cannot follow: no error to promise
        for kw in call.keywords:
            if kw.arg is None or kw.arg in names:
                continue
            edits = fix_message = None
            if kw.arg == "use_auth_token" and "token" in names:
                edits, fix_message = self._token_fix(pf, call, kw)
                advice = "use token="
            elif kw.arg == "repo_name":
                advice = "set the repository with TrainingArguments(hub_model_id=...)"
            else:
                advice = "remove it"
            yield self.diagnostic(
                pf.keyword_name_span(kw),
                f"Trainer.push_to_hub() does not take {kw.arg}= ({target_text(setup)}): it is passed on to "
                f"create_model_card, which raises TypeError at the end of the training; {advice}",
                edits=edits, fix_message=fix_message or "", severity=Severity.ERROR)
