"""TL507 fp16-and-bf16: fp16 and bf16 both enabled in TrainingArguments"""

from __future__ import annotations

from typing import Iterable

from trainlint.diagnostics import Diagnostic, Severity
from trainlint.rules._setup_util import located, set_edit
from trainlint.rules._triggers import DEEPSPEED_NAMES
from trainlint.rules.base import Case, Rule
from trainlint.setup import Setup


class Fp16AndBf16(Rule):
    """
    ## What it does
    Flags `fp16` and `bf16` both true (or `fp16_full_eval` and `bf16_full_eval`) in one set of
    TrainingArguments, wherever they are written: script, launch flags or args file.

    ## Why is this bad?
    `TrainingArguments.__post_init__` raises "At most one of fp16 and bf16 can be True, but not
    both" before training starts.

    ## Example
    ```json
    {"output_dir": "out", "fp16": true, "bf16": true}
    ```

    ## Use instead
    ```json
    {"output_dir": "out", "fp16": false, "bf16": true}
    ```

    ## Fix safety
    Unsafe (it chooses the numerics), and offered only with a target GPU (`--gpu`): bf16 is kept
    on GPUs that support it, fp16 otherwise.

    ## References
    - transformers `training_args.py` (`__post_init__`)
    """

    code = "TL507"
    name = "fp16-and-bf16"
    severity = Severity.ERROR
    triggers = DEEPSPEED_NAMES
    needs_training = True
    fires_on = ("fp16", "fp16_full_eval")
    fix_safety = "unsafe"
    summary = "fp16 and bf16 both enabled in TrainingArguments"

    cases = [
        Case(files={"args.json": '{\n  "output_dir": "out",\n  "fp16": true,\n  "bf16": true\n}\n',
                    "train.py": "import sys\nfrom transformers import HfArgumentParser, TrainingArguments\n"
                                "(args,) = HfArgumentParser(TrainingArguments).parse_json_file(sys.argv[1])\n"},
             options={"gpu": "A100"}, unsafe=True,
             fixed='{\n  "output_dir": "out",\n  "fp16": false,\n  "bf16": true\n}\n', fixed_path="args.json"),
        Case("""
             from transformers import TrainingArguments
             args = TrainingArguments(output_dir="o", fp16=True, bf16=True)
             """),
        # must not flag
        Case("""
             from transformers import TrainingArguments
             args = TrainingArguments(output_dir="o", fp16=False, bf16=True)
             """, flags=False),
    ]

    def check(self, setup: Setup) -> Iterable[Diagnostic]:
        gpu = setup.gpu
        for site in setup.sites:
            for a, b in (("fp16", "bf16"), ("fp16_full_eval", "bf16_full_eval")):
                fp, bf = site.get(a), site.get(b)
                if fp is None or bf is None or fp.value is not True or bf.value is not True:
                    continue
                edits = None
                if gpu is not None:
                    drop = fp if gpu.bf16 else bf
                    e = set_edit(drop, False)
                    edits = [e] if e else None
                yield self.diagnostic(fp.key_span or fp.span,  # type: ignore[arg-type]
                                      f"{a} and {b} are both true ({located(fp)}, {located(bf)}): TrainingArguments "
                                      f"raises \"At most one of fp16 and bf16 can be True\"", edits=edits,
                                      related=[bf.span.related(f"{b} is set here")] if bf.span else [],
                                      fix_message=f"keep {'bf16' if gpu is not None and gpu.bf16 else 'fp16'}")

