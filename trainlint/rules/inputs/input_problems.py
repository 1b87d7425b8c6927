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
    runs it, not reported), at that cell: the other cells are still checked. Code that only a
    newer Python than the one running trainlint parses (Python 3.12 f-strings, PEP 701:
    `f"{row["question"]}"`, on Python 3.11) is not broken: it is reported as info (not
    checked; run trainlint on Python 3.12 or newer). So is a notebook cell of terminal
    commands pasted without `!` (`gcloud compute tpus tpu-vm create ...`, `curl ... | bash`,
    `swift sft ...`: a known command followed by an argument, or an upper-case environment
    variable set before one, `CUDA_VISIBLE_DEVICES=0 \\`), which a tutorial means for a
    terminal: info, with how to run it in the notebook.

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
    r"""
    ## What it does
    Reports a configuration file (DeepSpeed or HF args JSON, accelerate or args YAML, a shell
    launch script) that cannot be read as its kind: invalid JSON or YAML, nesting too deep, an
    alias bomb; a Jupyter notebook that is not valid JSON or not nbformat 4 (or a config a
    notebook's `%%writefile` cell writes that cannot be read); problems that a lenient reader
    would hide: a key written twice in one object, `NaN`/`Infinity` in JSON; and shell the
    shell itself reads differently from how it is written: an unterminated quote, `$(`, or
    here-document, and a launch line whose backslash continuation is broken (a space or a
    comment after the backslash, a comment line in the middle), so that its last flags run as
    a command of their own.

    A JSON or YAML file found by walking a folder that is not recognisably a training config
    (JSON Lines data, a `trainer_state.json` or metrics dump with `NaN`, a dataset card, a
    schema, another tool's settings in JSON with comments) is not judged, unless a launch line
    or script refers to it as a config; a walked file broken in no known dialect still is. In
    Markdown, shell problems are warnings, and only in code blocks that hold a launch line; in a
    notebook, only when its shell lines (`!` lines, `%%bash` cells) hold one.

    ## Why is this bad?
    The launcher or the library fails on it at start-up (DeepSpeed rejects duplicate keys,
    `json.load` accepts `NaN` but strict parsers do not), or, worse, silently keeps the last of
    two duplicate keys. A broken continuation starts the training without the flags below it
    (then fails with "command not found"). trainlint cannot check the settings of a file it
    cannot read.

    A YAML key written twice with the same value is a warning, not an error: the file means
    what it says today, but an edit of one copy is silently overridden by the other. In JSON
    every duplicate is an error (DeepSpeed refuses the file).

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": 8, "train_micro_batch_size_per_gpu": 16}
    ```
    ```bash
    torchrun --nproc_per_node 8 train.py \
        --per_device_train_batch_size 8 \  # per GPU
        --bf16
    ```

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": 16}
    ```
    ```bash
    # per GPU batch size below
    torchrun --nproc_per_node 8 train.py \
        --per_device_train_batch_size 8 \
        --bf16
    ```

    ## Fix safety
    No fix.

    ## References
    - https://www.json.org/ (no NaN, no Infinity)
    - DeepSpeed `runtime/config_utils.py` `dict_raise_error_on_duplicate_keys`
    - https://yaml.org/spec/1.2.2/#mapping (mapping keys are unique; PyYAML keeps the last)
    - https://www.gnu.org/software/bash/manual/bash.html#Escape-Character (a backslash
      continues the line only when the newline follows it directly)
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
        Case(files={"run.sh": "torchrun train.py \\\n  --logging_steps 5 \\  # every 5\n  --bf16\n",
                    "train.py": "from transformers import TrainingArguments\n"},
             note="a comment after the backslash ends the command"),
        Case(files={"run.sh": "python train.py --run_name 'exp 1 --bf16\n",
                    "train.py": "from transformers import TrainingArguments\n"}),
        Case(files={"run.sh": "torchrun train.py \\\n  --logging_steps 5 \\\n  --bf16  # bf16 on A100\n",
                    "train.py": "from transformers import TrainingArguments\n"}, flags=False),
        Case(files={"data/train.json": '{"text": "a"}\n{"text": "b"}\n',
                    "out/trainer_state.json": '{"global_step": 5, "log_history": [{"loss": NaN}]}\n',
                    "schema.json": '{"$schema": "x", "type": "object", "properties": {"zero_optimization": {}}}\n'},
             flags=False, note="data, a state dump, a schema: not configs"),
    ]


class MissingReference(Rule):
    """
    ## What it does
    Reports a file that the setup refers to but that does not exist: the script of a launch
    line (or the module of `python -m`), `--deepspeed ds_config.json`,
    `TrainingArguments(deepspeed="ds_config.json")`, `accelerate launch --config_file ...`,
    accelerate's `deepspeed_config_file`, an args file passed to the script, a framework CLI's
    recipe (`trl sft --config x.yaml`, `llamafactory-cli train x.yaml`). Paths are taken
    relative to the file that names them (and to the folders above it, up to the repository
    root), after the `cd` commands that come before the launch line (in a notebook, its
    folder, then its `%cd`/`os.chdir` calls; a file a `%%writefile` cell wrote counts as
    existing, and a notebook that downloads or clones is not asked for files on disk); the
    message names the places looked.

    The severity is how likely it is that the repository should contain the file:

    - **error**: its folder is in the repository (or it is a bare name, or the package of a
      `python -m` module is here), so the file should be too;
    - **warning**: its folder is not in the repository either (or the command is in a
      Markdown file: documentation);
    - **info**: it is clearly run from elsewhere: a Hugging Face example run from a
      transformers checkout (`examples/pytorch/...`), an absolute path or a path leading
      outside the repository, a folder the script clones with `git clone`, a `cd` to a
      folder that cannot be resolved, a path under an unset `$VAR`, an installed package.

    A launch line whose script is not in the repository is still checked: flags that are
    `TrainingArguments` fields are read as `HfArgumentParser(TrainingArguments)` would read
    them, and findings say so. Files the script writes itself (`cat > ds.json <<EOF`) and
    DeepSpeed preset names (`--deepspeed zero2`) are not missing.

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
    - https://docs.python.org/3/using/cmdline.html#cmdoption-m (how `python -m` finds a module)
    - https://github.com/huggingface/transformers/tree/main/examples/pytorch (example scripts,
      run from a transformers checkout)
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
        Case(files={"scripts/run.sh": "python src/train.py --per_device_train_batch_size 4 --bf16\n",
                    "src/data.py": "x = 1\n"}, note="its folder is here: error"),
        Case(files={"run.sh": "torchrun --nproc_per_node 2 train.py --deepspeed ds.json\n",
                    "train.py": "from transformers import TrainingArguments\n",
                    "ds.json": '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 1}}\n'},
             flags=False),
        Case(files={"run.sh": "cat > ds.json <<EOF\n{\"zero_optimization\": {\"stage\": 2}}\nEOF\n"
                              "deepspeed train.py --deepspeed ds.json\n",
                    "train.py": "from transformers import TrainingArguments\n"},
             flags=False, note="the script writes it itself"),
        Case(files={"run.sh": "swift sft --deepspeed zero2 --model x\ndeepspeed train.py --deepspeed zero3\n",
                    "train.py": "from transformers import TrainingArguments\n"},
             flags=False, note="a preset name, not a file"),
    ]
