"""TL0xx: input problems. The readers report these; they have no ``check`` of their own."""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules.base import Case, Rule


class InternalError(Rule):
    """
    ## What it does
    Reports a bug in trainlint itself: a reader or a rule raised an exception on this file.

    ## Why is this bad?
    trainlint could not finish checking the file, so findings may be missing. The other files
    are still checked. This is the only finding that makes the exit code 2.

    ## Example
    Any input that makes a rule crash.

    ## Use instead
    Nothing to change in your code. Please report the message (it names the rule and the line
    of trainlint that failed) with the input that triggered it.

    ## Fix safety
    No fix.

    ## References
    - design.md, section 2: exit codes
    """

    code = "TL000"
    name = "internal-error"
    severity = Severity.ERROR
    summary = "trainlint failed on this file (a bug: please report it)"
    produced_by_engine = True


class SyntaxErrorRule(Rule):
    """
    ## What it does
    Reports a Python file that does not parse.

    ## Why is this bad?
    The script will fail at start-up, before any training happens; and trainlint cannot read
    the TrainingArguments or Trainer calls in it. `fix` never touches a file that does not
    parse.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", learning_rate=2e-5
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", learning_rate=2e-5)
    ```

    ## Fix safety
    No fix.

    ## References
    - https://docs.python.org/3/library/ast.html#ast.parse
    """

    code = "TL001"
    name = "syntax-error"
    severity = Severity.ERROR
    summary = "a Python file that does not parse"
    produced_by_engine = True
    cases = [
        Case("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o'\n", flags=True),
        Case("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o')\n", flags=False),
    ]


class UnreadableFile(Rule):
    """
    ## What it does
    Reports a file that cannot be read as text: missing, binary, not decodable in its
    declared encoding, unreadable, or too large.

    ## Why is this bad?
    A path that was given to trainlint (or referenced by a launch line or config) cannot be
    checked.

    ## Example
    `trainlint check train.py` where `train.py` holds NUL bytes.

    ## Use instead
    Pass text files; check the path and the encoding declaration (PEP 263).

    ## Fix safety
    No fix.

    ## References
    - https://peps.python.org/pep-0263/
    """

    code = "TL002"
    name = "unreadable-file"
    severity = Severity.ERROR
    summary = "a file that cannot be read as text"
    produced_by_engine = True


class InvalidConfig(Rule):
    """
    ## What it does
    Reports a JSON or YAML training config (DeepSpeed config, accelerate config, HF args
    file, or a `.json` found in the checked folders) that cannot be read: a syntax error,
    nesting deeper than the reader allows, or YAML aliases that expand beyond a bound (an
    "alias bomb"). The finding points at the position the parser stopped at.

    ## Why is this bad?
    The launcher reads the file at start-up and stops with a parse error, after the job has
    waited in the queue and the processes have started; trainlint cannot check the values in
    it either. `fix` never edits a file that does not parse.

    ## Example
    ```json
    {
      "train_micro_batch_size_per_gpu": 8,
      "zero_optimization": {"stage": 2,}
    }
    ```

    ## Use instead
    ```json
    {
      "train_micro_batch_size_per_gpu": 8,
      "zero_optimization": {"stage": 2}
    }
    ```

    ## Fix safety
    No fix.

    ## References
    - https://www.json.org/json-en.html
    - https://yaml.org/spec/1.2.2/
    - https://en.wikipedia.org/wiki/Billion_laughs_attack
    """

    code = "TL003"
    name = "invalid-config"
    severity = Severity.ERROR
    summary = "a JSON or YAML config that cannot be read"
    produced_by_engine = True
    cases = [
        Case(files={"ds_config.json": '{\n  "train_micro_batch_size_per_gpu": 8,\n'
                                      '  "zero_optimization": {"stage": 2,}\n}\n'}, flags=True),
        Case(files={"ds_config.json": '{\n  "train_micro_batch_size_per_gpu": 8,\n'
                                      '  "zero_optimization": {"stage": 2}\n}\n'}, flags=False),
        Case(files={"accelerate_config.yaml": "distributed_type: MULTI_GPU\nnum_processes: [4\n"}, flags=True),
        Case(files={"accelerate_config.yaml": "distributed_type: MULTI_GPU\nnum_processes: 4\n"}, flags=False),
    ]


class MissingReference(Rule):
    """
    ## What it does
    Reports a launch line (in a shell script or a Markdown shell block) that runs a script, or
    passes a DeepSpeed config (`--deepspeed`) or an accelerate config (`--config_file`), that
    does not exist. The path is looked for relative to the launching file's folder and to the
    working folder; paths built from variables are not judged.

    ## Why is this bad?
    The launcher fails with "No such file or directory" once the job starts (after the queue
    wait), or, for a config, silently trains without the settings that file was meant to
    apply.

    ## Example
    ```bash
    accelerate launch --config_file accelerate.yaml train.py --deepspeed ds_zero2.json
    ```
    with no `ds_zero2.json` next to the script.

    ## Use instead
    Point at the file that exists (`--deepspeed ds_config.json`), or add the missing file.

    ## Fix safety
    No fix: trainlint cannot know which file was meant.

    ## References
    - https://huggingface.co/docs/transformers/deepspeed
    - https://huggingface.co/docs/accelerate/basic_tutorials/launch
    """

    code = "TL004"
    name = "missing-reference"
    severity = Severity.ERROR
    summary = "a launch line that refers to a script or config that does not exist"
    produced_by_engine = True
    cases = [
        Case(files={"run.sh": "torchrun --nproc_per_node 2 train.py --deepspeed ds_zero2.json\n",
                    "train.py": "print('train')\n"}, flags=True),
        Case(files={"run.sh": "torchrun --nproc_per_node 2 train.py --deepspeed ds.json\n",
                    "train.py": "print('train')\n", "ds.json": '{"zero_optimization": {"stage": 2}}\n'},
             flags=False),
        Case(files={"run.sh": "python missing_train.py --output_dir out\n"}, flags=True),
        Case(files={"run.sh": 'python "$SCRIPT" --output_dir out\n'}, flags=False),
    ]


class DuplicateKey(Rule):
    """
    ## What it does
    Reports a key written twice in the same JSON object or YAML mapping of a training config.

    ## Why is this bad?
    Python's `json` and PyYAML keep the later value without a word, so the first one, which
    is often the one being edited, has no effect. DeepSpeed refuses a config with duplicate
    keys outright ("Duplicate key in DeepSpeed config").

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 4,
     "train_micro_batch_size_per_gpu": 16}
    ```

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": 16, "gradient_accumulation_steps": 4}
    ```

    ## Fix safety
    No fix: which of the two values was meant is for the author to say.

    ## References
    - https://github.com/microsoft/DeepSpeed/blob/master/deepspeed/runtime/config_utils.py (`dict_raise_error_on_duplicate_keys`)
    - https://docs.python.org/3/library/json.html#repeated-names-within-an-object
    """

    code = "TL005"
    name = "duplicate-key"
    severity = Severity.WARNING
    summary = "a key written twice in a JSON or YAML config (the last one wins)"
    produced_by_engine = True
    cases = [
        Case(files={"ds_config.json": '{"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2},\n'
                                      ' "train_micro_batch_size_per_gpu": 16}\n'}, flags=True),
        Case(files={"ds_config.json": '{"train_micro_batch_size_per_gpu": 16, "zero_optimization": {"stage": 2}}\n'},
             flags=False),
        Case(files={"accelerate_config.yaml": "distributed_type: MULTI_GPU\nnum_processes: 4\nnum_processes: 8\n"},
             flags=True),
    ]


class NonStandardJsonNumber(Rule):
    """
    ## What it does
    Reports `NaN`, `Infinity` or `-Infinity` in a JSON training config.

    ## Why is this bad?
    They are not JSON: Python's `json` reads them, but `jq`, JavaScript, most editors' JSON
    modes and JSON schema validators reject the file. As a config value a NaN or infinite
    number is almost always a mistake (a NaN learning rate or clipping value trains on NaNs).

    ## Example
    ```json
    {"zero_optimization": {"stage": 2}, "gradient_clipping": NaN}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 2}, "gradient_clipping": 1.0}
    ```

    ## Fix safety
    No fix: the intended number is unknown.

    ## References
    - https://www.rfc-editor.org/rfc/rfc8259#section-6
    - https://docs.python.org/3/library/json.html#infinite-and-nan-number-values
    """

    code = "TL006"
    name = "non-standard-json-number"
    severity = Severity.WARNING
    summary = "NaN or Infinity in a JSON config (not valid JSON)"
    produced_by_engine = True
    cases = [
        Case(files={"ds_config.json": '{"zero_optimization": {"stage": 2}, "gradient_clipping": NaN}\n'}, flags=True),
        Case(files={"ds_config.json": '{"zero_optimization": {"stage": 2}, "gradient_clipping": 1.0}\n'}, flags=False),
    ]
