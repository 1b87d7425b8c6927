from pathlib import Path

import pytest

from trainlint.sources.errors import LineIndex
from trainlint.sources.shell import (
    extract_shell_blocks,
    markdown_launches,
    parse_shell,
    remove_flag_edit,
    rename_flag_edit,
    replace_flag_value_edit,
)

EX = Path(__file__).resolve().parent.parent / "examples"
RUN = (EX / "glue_cli/run.sh").read_text()
LAUNCH = (EX / "flan_t5_multigpu/launch.sh").read_text()


def apply(text, edit):
    idx = LineIndex(text)
    a = idx.offset(edit.line, edit.column)
    b = idx.offset(edit.end_line, edit.end_column)
    return text[:a] + edit.content + text[b:]


def one(text, path="run.sh"):
    (launch,) = parse_shell(text, path).launches
    return launch


def test_run_sh_flags_and_positions():
    launch = one(RUN)
    assert launch.launcher == "torchrun"
    assert launch.script[0] == "run_glue.py" and launch.script[1].line == 3
    assert launch.world_size() == 2
    fp16 = launch.flag("fp16")
    assert fp16.value is None and fp16.name_span.line == 15
    assert (fp16.name_span.column, fp16.name_span.end_column) == (3, 9)
    bs = launch.flag("per_device_train_batch_size")
    assert bs.value == "8" and bs.literal() == 8
    assert (bs.value_span.line, bs.value_span.column, bs.value_span.end_column) == (8, 33, 34)
    assert launch.flag("do_eval").name_span.column == 14
    assert launch.flag("save_steps").value == "500"
    assert launch.flag("deepspeed").value == "ds_zero1.json"
    ws = launch.world_size_value()
    assert ws.value == 2 and ws.span.line == 3 and ws.name == "nproc_per_node"


def test_launch_sh_accelerate_and_export():
    launch = one(LAUNCH, "launch.sh")
    assert launch.launcher == "accelerate"
    assert launch.config_file.value == "accelerate_config.yaml"
    assert launch.script[0] == "train.py"
    assert launch.env["WANDB_PROJECT"].value == "flan-t5-large"
    assert launch.world_size() is None  # comes from the config file
    assert [f.name for f in launch.script_args] == ["output_dir", "deepspeed"]


def test_variables_env_prefix_and_provenance():
    text = (
        'MODEL=roberta-base\n'
        'export LR="3e-5"\n'
        'BS=${BS:-16}\n'
        'CUDA_VISIBLE_DEVICES=0,1,2 torchrun --nproc-per-node=gpu train.py \\\n'
        '    --model_name_or_path $MODEL --learning_rate=${LR} \\\n'
        '    --per_device_train_batch_size "$BS" --seed $SEED\n'
    )
    script = parse_shell(text, "t.sh")
    (launch,) = script.launches
    assert launch.world_size() == 3
    assert launch.env["CUDA_VISIBLE_DEVICES"].value == "0,1,2"
    assert launch.env["LR"].value == "3e-5"
    model = launch.flag("model_name_or_path")
    assert model.value == "roberta-base"
    assert model.value_span.line == 5 and model.value_span.column == 26  # the use site
    assert model.definitions[0].name_span.line == 1
    lr = launch.flag("learning_rate")
    assert lr.value == "3e-5" and lr.inline and lr.value_span.column == 49
    assert launch.flag("per_device_train_batch_size").value == "16"
    seed = launch.flag("seed")
    assert seed.unresolved and seed.value == "$SEED"
    assert [p.kind for p in script.problems] == ["unresolved-variable"]


def test_launchers_and_world_sizes():
    cases = [
        ("python train.py --x 1", "python", 1),
        ("python3 -u train.py", "python", 1),
        ("python -m torch.distributed.run --nproc_per_node=4 --nnodes 2 train.py", "torchrun", 8),
        ("python -m torch.distributed.launch --use_env --nproc_per_node 2 train.py",
         "torch.distributed.launch", 2),
        ("torchrun --standalone --nnodes=1 --nproc_per_node=8 train.py", "torchrun", 8),
        ("torchrun --nnodes 1:4 --nproc_per_node 8 train.py", "torchrun", None),
        ("torchrun train.py", "torchrun", 1),
        ("accelerate launch --multi_gpu --num_processes 2 train.py", "accelerate", 2),
        ("deepspeed --num_gpus 4 train.py --deepspeed ds.json", "deepspeed", 4),
        ("deepspeed --num_gpus=2 --num_nodes=2 --hostfile h train.py", "deepspeed", 4),
        ("deepspeed --include localhost:0,1,3 train.py", "deepspeed", 3),
        ("deepspeed train.py", "deepspeed", None),
        ("CUDA_VISIBLE_DEVICES=0,1 deepspeed train.py", "deepspeed", 2),
        ("nohup python train.py > log.txt 2>&1 &", "python", 1),
        ("srun --gpus 8 torchrun --nproc_per_node 8 train.py", "torchrun", 8),
    ]
    for line, launcher, ws in cases:
        launch = one(line)
        assert launch.launcher == launcher, line
        assert launch.script[0] == "train.py", line
        assert launch.world_size() == ws, line


def test_module_scripts_and_python_dash_m():
    launch = one("python -m my_pkg.train --bf16")
    assert launch.module == "my_pkg.train" and launch.script is None
    assert launch.flag("bf16").value is None
    launch = one("torchrun --nproc_per_node 2 -m my_pkg.train --bf16 True")
    assert launch.module == "my_pkg.train" and launch.flag("bf16").value == "True"
    launch = one("accelerate launch -m pkg.mod --fp16")
    assert launch.module == "pkg.mod"


def test_several_commands_and_operators():
    text = (
        "set -e\n"
        "pip install -r requirements.txt && python prepare.py --n 3; echo done\n"
        "for lr in 1e-5 2e-5; do\n"
        "  torchrun --nproc_per_node 2 train.py --learning_rate $lr\n"
        "done\n"
        "cat > ds.json <<EOF\n"
        "{\"python\": \"not a command\", \"torchrun\": 1}\n"
        "EOF\n"
        "python eval.py args.json  # the args file\n"
    )
    script = parse_shell(text, "multi.sh")
    assert [launch.script[0] for launch in script.launches] == ["prepare.py", "train.py", "eval.py"]
    loop = script.launches[1]
    assert loop.flag("learning_rate").unresolved
    assert script.launches[2].positionals[0][0] == "args.json"
    assert script.launches[0].flag("n").value == "3"


def test_repeated_and_multi_value_and_negative():
    launch = one("python t.py --lr 1 --report_to wandb tensorboard --lr 2 --warmup -1 --x=")
    assert launch.flag("lr").value == "2"
    assert list(launch.repeated_flags()) == ["lr"]
    rep = launch.flag("report_to")
    assert rep.values == ["wandb", "tensorboard"]
    assert launch.flag("warmup").value == "-1"
    assert launch.flag("x").value == ""
    dash = one("python t.py --per-device-train-batch-size 4")
    assert dash.flag("per_device_train_batch_size").value == "4"


def test_quotes_and_split_expansion():
    text = "ARGS=\"--fp16 --seed 1\"\npython t.py --run_name 'my run' $ARGS\n"
    launch = one(text)
    assert launch.flag("run_name").value == "my run"
    assert launch.flag("run_name").value_span.end_column == 32
    fp16 = launch.flag("fp16")
    assert fp16.from_expansion and fp16.name_span.column == 33
    with pytest.raises(ValueError):
        remove_flag_edit(fp16)


def test_remove_flag_alone_on_continuation_line():
    flag = one(RUN).flag("fp16")
    out = apply(RUN, remove_flag_edit(flag))
    assert "--fp16" not in out
    assert "  --logging_steps 1 \\\n  --deepspeed ds_zero1.json\n" in out
    assert out.count("\n") == RUN.count("\n") - 1


def test_remove_last_flag_takes_previous_backslash():
    flag = one(RUN).flag("deepspeed")
    out = apply(RUN, remove_flag_edit(flag))
    assert out.endswith("  --logging_steps 1 \\\n  --fp16\n")
    assert one(out).flag("fp16") is not None and one(out).flag("deepspeed") is None


def test_remove_flag_sharing_a_line():
    launch = one(RUN)
    out = apply(RUN, remove_flag_edit(launch.flag("save_steps")))
    assert "  --save_strategy steps \\\n" in out
    out = apply(RUN, remove_flag_edit(launch.flag("do_train")))
    assert "  --do_eval \\\n" in out
    out = apply(RUN, remove_flag_edit(launch.flag("do_eval")))
    assert "  --do_train \\\n" in out
    inline = "python t.py --a 1 --b 2 --c\n"
    assert apply(inline, remove_flag_edit(one(inline).flag("b"))) == "python t.py --a 1 --c\n"
    assert apply(inline, remove_flag_edit(one(inline).flag("c"))) == "python t.py --a 1 --b 2\n"
    # every remaining flag still parses and the command still ends where it did
    for name in ["model_name_or_path", "fp16", "deepspeed", "logging_steps", "save_steps"]:
        edited = apply(RUN, remove_flag_edit(one(RUN).flag(name)))
        left = one(edited)
        assert left.flag(name) is None
        assert len(left.script_args) == len(launch.script_args) - 1


def test_replace_and_rename_flag():
    launch = one(RUN)
    out = apply(RUN, replace_flag_value_edit(launch.flag("logging_steps"), "50"))
    assert "  --logging_steps 50 \\\n" in out
    out = apply(RUN, rename_flag_edit(launch.flag("evaluation_strategy"), "eval_strategy"))
    assert "  --eval_strategy epoch \\\n" in out
    out = apply(RUN, rename_flag_edit(launch.flag("fp16"), "--bf16"))
    assert "  --bf16 \\\n" in out
    eq = "python t.py --run_name=a\n"
    assert apply(eq, replace_flag_value_edit(one(eq).flag("run_name"), "my run")) == \
        "python t.py --run_name='my run'\n"
    bare = "python t.py --fp16\n"
    assert apply(bare, replace_flag_value_edit(one(bare).flag("fp16"), "false")) == \
        "python t.py --fp16 false\n"


MD = """# Training

Run it:

```bash
$ torchrun --nproc_per_node 4 train.py \\
    --fp16
```

```console
$ python train.py --bf16
some output
```

```python
python notreal.py
```
"""


def test_markdown_blocks_keep_positions():
    blocks = extract_shell_blocks(MD)
    assert [offset for _, offset in blocks] == [5, 10]
    assert blocks[1][0].split("\n")[1] == ""  # output blanked
    launches = markdown_launches(MD, "README.md")
    assert [launch.launcher for launch in launches] == ["torchrun", "python"]
    fp16 = launches[0].flag("fp16")
    assert fp16.name_span.line == 7 and fp16.name_span.column == 5
    assert launches[0].world_size() == 4
    bf16 = launches[1].flag("bf16")
    assert (bf16.name_span.line, bf16.name_span.column) == (11, 19)
    assert MD.split("\n")[10][18:24] == "--bf16"
    out = apply(MD, rename_flag_edit(bf16, "fp16"))
    assert "$ python train.py --fp16\n" in out


def test_crlf_and_comments_after_continuation():
    text = "torchrun --nproc_per_node 2 t.py \\\r\n  --fp16 \\\r\n  --seed 3 # note\r\n"
    launch = one(text)
    assert launch.flag("seed").value == "3"
    assert launch.flag("fp16").name_span.line == 2


# -- the lexer takes runs of plain characters and blanks at once, and asks for an operator only at
# a character one starts with: the tokens of one character at a time

_LEX_PIECES = ["python", " ", "\t", "\n", "\r\n", "'", '"', "\\", "\\\n", "$", "${A:-x}", "$(pwd)", "`ls`", "$'a\\tb'",
               "<model_path>", "<", ">", ">>", "2>&1", "<<EOF\nbody\nEOF\n", "<<-X\n\tb\n\tX\n", "#c", ";", "&&", "|",
               "(", ")", "&", "é", "--lr=3e-5", "x=1", "a.py", "{", "}", "*", "?", "~", "\"$HOME/x\"", "\\$",
               '"a\\"b"', '"\\x"', '"$"', '"$1"', "=", ",", "\u2026", "\x0b"]


def _lexed(text: str):
    from trainlint.sources.shell import LineIndex, _Lexer

    lexer = _Lexer(text, LineIndex(text))
    return lexer.tokens(), lexer.problems, lexer.heredocs


def test_the_lexers_runs_and_operator_starts_give_the_tokens_of_one_character_at_a_time(monkeypatch):
    import random
    import re as re_

    from trainlint.sources import shell

    rng = random.Random(1810)
    texts = ["".join(rng.choice(_LEX_PIECES) for _ in range(rng.randrange(1, 40))) for _ in range(1500)]
    root = Path(__file__).resolve().parent.parent
    texts += [p.read_text(encoding="utf-8") for p in sorted(root.glob("examples/**/*.sh"))]
    fast = [_lexed(t) for t in texts]
    # an empty match: each character is taken by the last case alone, as before the runs
    monkeypatch.setattr(shell, "_PLAIN_RUN", re_.compile(""))
    monkeypatch.setattr(shell, "_PLAIN_IN_DOUBLE", re_.compile(""))
    monkeypatch.setattr(shell, "_BLANKS", re_.compile(r"[ \t\r]"))  # one blank at a time
    monkeypatch.setattr(shell, "_OP_STARTS", type("Every", (), {"__contains__": lambda self, c: True})())
    slow = [_lexed(t) for t in texts]
    for text, a, b in zip(texts, fast, slow):
        assert a == b, text
    assert sum(len(a[0]) for a in fast) > 10_000 and any(a[1] for a in fast) and any(a[2] for a in fast)



def test_shell_blocks_of_a_text_are_found_once_and_given_as_a_new_list():
    """The partition and the Markdown reader both ask for a README's shell blocks: a text asked
    again (the same object) is answered from what was found, as a new list equal to a fresh
    search; an equal text that is another object is searched again (the same blocks)."""
    from trainlint.sources import shell
    from trainlint.sources.shell import extract_shell_blocks

    text = MD + "\n```bash\npython other.py --lr 2\n```\n"
    first = extract_shell_blocks(text)
    assert first == shell._extract_shell_blocks(text) and len(first) >= 2
    first.append(("changed by a caller", 0))
    again = extract_shell_blocks(text)
    assert again == shell._extract_shell_blocks(text) and again is not first
    twin = "".join(list(text))  # equal, another object
    assert twin is not text and extract_shell_blocks(twin) == again


def test_markdown_blocks_that_cannot_launch_are_not_parsed_and_the_document_is_the_same(monkeypatch):
    """A Markdown shell block is parsed only when it may hold a launch line (``registry._may_launch``:
    an expansion, or a launcher's name once quotes, backslashes and continuations are out): the
    document of random READMEs (launches written plainly, through quotes, escapes, continuations
    and variables, commands that launch nothing, broken quoting) is the one of parsing every block."""
    import random

    from trainlint.sources import registry

    pieces = ["python train.py --lr 1", 'py"th"on train.py', "pyt\\\nhon train.py", "p\\ython a.py", "trl ''",
              'trl "" sft', "torchrun --nproc_per_node 2 t.py", "accelerate launch t.py", "deepspeed t.py",
              "lmf train x.yaml", "llamafactory-cli train x.yaml", "P=python; $P t.py", "pip install trl",
              "git clone https://x/y", "swift sft --model m", "echo 'unterminated", "cd src && ls", "x=1 \\",
              "  --epochs 2", "nohup python t.py &", "uv run python t.py", "CUDA_VISIBLE_DEVICES=0 python t.py"]
    rng = random.Random(18)
    texts = []
    for _ in range(400):
        blocks = ["```bash\n" + "\n".join(rng.choice(pieces) for _ in range(rng.randint(1, 4))) + "\n```"
                  for _ in range(rng.randint(1, 4))]
        texts.append("# Readme\n\n" + "\n\ntext\n\n".join(blocks) + "\n")

    def doc(text):
        d = registry._markdown("README.md", text)
        return repr(d.launches), repr(d.problems)

    from trainlint.sources.shell import extract_shell_blocks

    skipped = sum(not registry._may_launch(b) for t in texts for b, _ in extract_shell_blocks(t))
    gated = [doc(t) for t in texts]
    monkeypatch.setattr(registry, "_may_launch", lambda block: True)
    assert [doc(t) for t in texts] == gated
    assert skipped > 50 and sum(d[0] != "[]" for d in gated) > 200 and any(d[1] != "[]" for d in gated)


def test_package_commands_are_no_launches():
    """A command that installs packages names launcher words as packages: ``python -m pip``,
    a package manager's subcommand other than ``run`` (``uv pip install trl`` is no ``trl``
    command line), a package tool under a wrapper (``sudo pip install deepspeed``). A manager's
    ``run`` and a wrapper's launcher still launch."""
    for line in ["python -m pip install -U accelerate deepspeed", "python3 -mpip install trl",
                 "python -m uv pip install trl", "python -m venv .venv",
                 "uv pip install trl transformers==5.11.0", "uv add trl deepspeed",
                 "conda install -c conda-forge deepspeed", "poetry add accelerate",
                 "pipenv install trl", "sudo pip install deepspeed", "timeout 600 pip3 install deepspeed",
                 "nohup pip install accelerate", "env X=1 pip install deepspeed"]:
        assert parse_shell(line).launches == [], line
    for line, launcher in [("uv run python train.py", "python"), ("uv run --with x torchrun train.py", "torchrun"),
                           ("conda run -n env python train.py", "python"), ("poetry run deepspeed train.py", "deepspeed"),
                           ("pipenv run accelerate launch train.py", "accelerate"), ("sudo python train.py", "python"),
                           ("python -m pipeline.train", "python")]:
        (launch,) = parse_shell(line).launches
        assert launch.launcher == launcher, line
    (launch,) = parse_shell("python -m pipeline.train --bf16").launches
    assert launch.module == "pipeline.train"


# pieces of shell text: launches written plainly, through wrappers, assignments, reserved words,
# quotes (a quoted path with a space), expansions, substitutions and continuations; and the
# commands that name a launcher's word without launching (package installs, ``python -c``,
# ``python -m pip``, ``accelerate config``, a wrapped install, comments, echo)
_MAY_LAUNCH_PIECES = [
    "python train.py --lr 1", "python3.10 -u t.py", "/usr/bin/python t.py", '"/opt/my env/bin/python" t.py',
    "~/venv/bin/python3 t.py", 'py"th"on t.py', "pyt\\\nhon t.py", "p\\ython t.py", "python -m torch.distributed.run t.py",
    "python -m pip install -U accelerate", "python3 -m venv .venv", "python -c 'import trl; print(1)'",
    'X="$(python -c \'import site; print(1)\')"', "python", "python -", "torchrun --nproc_per_node 2 t.py",
    "deepspeed --num_gpus 2 t.py", "accelerate launch t.py", "accelerate config default", "accelerate $SUB t.py",
    "accelerate", "trl sft --model m", "trl --help", "trl", "lmf train x.yaml", "llamafactory-cli train x.yaml",
    "P=python; $P t.py", "PY=python3", "$PY t.py", "${LAUNCHER} t.py", "export PY=python", "CMD='accelerate launch'",
    "$CMD t.py", "CUDA_VISIBLE_DEVICES=0,1 torchrun t.py", "A=1 B=2 python t.py", "nohup python t.py > log &",
    "sudo -E python t.py", "env X=1 python t.py", "srun -N 2 torchrun t.py", "time python t.py", "! python t.py",
    "if true; then python t.py; fi", "for s in 1 2; do deepspeed t.py --seed $s; done", "{ python t.py; }",
    "(cd src && python t.py)", "OUT=$(torchrun t.py)", "echo `python t.py`", "yes | python t.py",
    "uv run python t.py", "uv run --with x torchrun t.py", "uv pip install trl accelerate", "conda run -n e python t.py",
    "conda install -c conda-forge deepspeed", "pip install accelerate peft trl", "pip install 'accelerate==0.27.1'",
    "pip3 install deepspeed", "sudo pip install deepspeed", "timeout 600 pip3 install accelerate",
    "apt install python3-dev", "git clone https://github.com/huggingface/trl", "cd trl && ls", "echo python t.py",
    "# python t.py", "bash -c 'python t.py'", "x=1 \\", "  --epochs 2", "echo 'unterminated", 'echo "unterminated',
    "cat <<EOF\npython t.py\nEOF", "pip install opencv-python biopython python-dotenv", "ls python/", "swift sft --model m",
    "case $x in a) python t.py ;; esac", "python -m pip install x && python t.py", "command -v python",
    'X="$(python -c "print(1)")"; python t.py', "awk '{print $2; exit}' f", "T=\"$(awk -F. '{print $1}' v)\"",
    "echo \"a # b\" \\", "# python t.py \\", "echo a \\\\", "python t.py # \\",
]


def test_may_launch_is_false_only_where_the_parser_finds_no_launch():
    """``may_launch`` stands in for parsing where only launch lines are wanted (a notebook's
    shell lines, Markdown's shell blocks): on random texts of launches, wrapped and quoted
    launches, expansions and the commands that only name a launcher's word, wherever it says
    no the parser finds no launch; and it says no often (the point of asking it)."""
    import random

    from trainlint.sources.shell import may_launch

    rng = random.Random(1804)
    joiners = ["\n", "\n", "; ", " && ", " | ", " \\\n  "]
    said_no = launched = 0
    for _ in range(3000):
        parts = [rng.choice(_MAY_LAUNCH_PIECES) for _ in range(rng.randint(1, 4))]
        text = parts[0]
        for p in parts[1:]:
            text += rng.choice(joiners) + p
        launches = parse_shell(text, "x.sh").launches
        if not may_launch(text):
            said_no += 1
            assert launches == [], text
        launched += bool(launches)
    assert said_no > 300 and launched > 1500, (said_no, launched)
    for piece in _MAY_LAUNCH_PIECES:  # each alone too
        assert may_launch(piece) or parse_shell(piece, "x.sh").launches == [], piece


def test_may_launch_says_no_to_install_and_setup_lines():
    """The lines most notebooks' shell text is made of launch nothing, and are not parsed."""
    from trainlint.sources.shell import may_launch

    for text in ["pip install -q accelerate peft trl bitsandbytes", "python -m pip install -qU uv",
                 "uv pip install --system -U --force-reinstall \\\n    torch torchvision --index-url x",
                 'uv pip install --system --no-deps -r "$(python -c \'import site; print(site.getsitepackages())\')"',
                 "pip install 'accelerate>=0.26' deepspeed", "accelerate config default",
                 "git clone https://github.com/huggingface/accelerate && cd accelerate",
                 "apt-get install -y python3-venv", "pip install trl\npip install -U deepspeed",
                 "wget https://x/deepspeed.json", "ls -la python/", "conda install deepspeed"]:
        assert not may_launch(text), text
        assert parse_shell(text, "x.sh").launches == [], text
    for text in ["python train.py", "accelerate launch --num_processes 2 t.py",
                 "CUDA_VISIBLE_DEVICES=0 torchrun t.py", "PY=python3\n$PY t.py", "nohup deepspeed t.py &", "trl sft --config c.yaml"]:
        assert may_launch(text), text
