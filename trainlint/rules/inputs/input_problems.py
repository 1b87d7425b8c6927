"""TL0xx: input problems. The readers report these; they have no ``check`` of their own."""

from __future__ import annotations

from trainlint.diagnostics import Severity
from trainlint.rules._triggers import NO_NAMES
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
    - trainlint README, "Exit codes" (`2`: usage or internal error)
    """

    code = "TL000"
    name = "internal-error"
    severity = Severity.ERROR
    triggers = NO_NAMES
    summary = "trainlint failed on this file (a bug: please report it)"
    produced_by_engine = True


class SyntaxErrorRule(Rule):
    """
    ## What it does
    Reports a Python file that does not parse; in a Jupyter notebook, a code cell that does
    not parse (IPython syntax such as `!pip install`, `%time` or `%%bash` is read as IPython
    runs it, not reported), at that cell: the other cells are still checked.

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
    triggers = NO_NAMES
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
    triggers = NO_NAMES
    summary = "a file that cannot be read as text"
    produced_by_engine = True


class InvalidConfig(Rule):
    """
    ## What it does
    Reports a configuration file (DeepSpeed or HF args JSON, accelerate or args YAML, a shell
    launch script) that cannot be read as its kind: invalid JSON or YAML, nesting too deep, an
    alias bomb; a Jupyter notebook that is not valid JSON or not nbformat 4 (or a config a
    notebook's `%%writefile` cell writes that cannot be read); and problems that a lenient
    reader would hide: a key written twice in one object, `NaN`/`Infinity` in JSON.

    ## Why is this bad?
    The launcher or the library fails on it at start-up (DeepSpeed rejects duplicate keys,
    `json.load` accepts `NaN` but strict parsers do not), or, worse, silently keeps the last of
    two duplicate keys. trainlint cannot check the settings of a file it cannot read.

    A YAML key written twice with the same value is a warning, not an error: the file means
    what it says today, but an edit of one copy is silently overridden by the other. In JSON
    every duplicate is an error (DeepSpeed refuses the file).

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": 8, "train_micro_batch_size_per_gpu": 16}
    ```

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": 16}
    ```

    ## Fix safety
    No fix.

    ## References
    - https://www.json.org/ (no NaN, no Infinity)
    - DeepSpeed `runtime/config_utils.py` `dict_raise_error_on_duplicate_keys`
    - https://yaml.org/spec/1.2.2/#mapping (mapping keys are unique; PyYAML keeps the last)
    """

    code = "TL003"
    name = "invalid-config"
    severity = Severity.ERROR
    triggers = NO_NAMES
    summary = "a config file that cannot be read, or has duplicate keys or NaN"
    produced_by_engine = True
    cases = [
        Case(files={"ds_config.json": '{"zero_optimization": {"stage": 2,}, "train_batch_size": 8}\n'}),
        Case(files={"ds_config.json": '{"zero_optimization": {"stage": 2, "stage": 3}}\n'}),
        Case(files={"accelerate_config.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\nnum_processes: 4\n"},
             severity="error", note="two different values: the later one wins silently"),
        Case(files={"accelerate_config.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\nnum_processes: 2\n"},
             severity="warning", note="the same value twice"),
        Case(files={"ds_config.json": '{"zero_optimization": {"stage": 2}, "train_batch_size": 8}\n'},
             flags=False),
        Case(files={"accelerate_config.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\n"}, flags=False),
    ]


class MissingReference(Rule):
    """
    ## What it does
    Reports a file that the setup refers to but that does not exist: the script of a launch
    line, `--deepspeed ds_config.json`, `TrainingArguments(deepspeed="ds_config.json")`,
    `accelerate launch --config_file ...`, accelerate's `deepspeed_config_file`, an args file
    passed to the script. Paths are taken relative to the file that names them (in a notebook,
    its folder; a file a `%%writefile` cell wrote counts as existing, and a notebook that
    downloads, clones or `%cd`s is not asked for files on disk).

    ## Why is this bad?
    The run fails when it starts (often after the model has been downloaded and loaded), and
    trainlint cannot check the settings that file would hold.

    ## Example
    ```bash
    torchrun --nproc_per_node 2 train.py --deepspeed ds_zero2.json   # no ds_zero2.json
    ```

    ## Use instead
    Point to the file that exists, relative to where the command runs.

    ## Fix safety
    No fix.

    ## References
    - trainlint README, "30-second tour" (a launch line and the files it names are read together)
    """

    code = "TL004"
    name = "missing-reference"
    severity = Severity.ERROR
    triggers = NO_NAMES
    summary = "a launch line or config refers to a file that does not exist"
    produced_by_engine = True
    cases = [
        Case(files={"run.sh": "torchrun --nproc_per_node 2 train.py --deepspeed ds_zero2.json\n",
                    "train.py": "from transformers import TrainingArguments\n"}),
        Case(files={"run.sh": "torchrun --nproc_per_node 2 train.py --deepspeed ds.json\n",
                    "train.py": "from transformers import TrainingArguments\n",
                    "ds.json": '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 1}}\n'},
             flags=False),
    ]
