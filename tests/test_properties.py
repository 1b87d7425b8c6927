"""Property tests and bounded fuzzing (hypothesis).

* Over generated TrainingArguments calls (values, layout, comments, CRLF): `check` never
  raises and reports no internal error, every fix result parses, and `fix` is idempotent.
* One fuzz target per reader (Python, JSON, YAML, shell, Markdown) on arbitrary and mutated
  input: the reader either reads the text or raises its documented error, and the whole
  pipeline turns anything into findings, never a TL000.

Each test has a fixed ``max_examples`` and ``deadline`` so the module runs in well under a
minute on the 2-core CI machine (``derandomize`` keeps CI reproducible).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainlint.config import load_settings
from trainlint.engine import fix_outcome, lint

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FAST = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

_SETTINGS = load_settings(Path(__file__).parent, {"gpu": "A100", "gpus": 4})
ROOT = "/nonexistent-trainlint-props"  # files live in the overlay only


def _run_fix(files: dict[str, str], unsafe: bool = True):
    paths = [Path(p) for p in files]
    return fix_outcome(paths, _SETTINGS, unsafe=unsafe, overlay=dict(files))


def _lint(files: dict[str, str]):
    return lint([Path(p) for p in files], _SETTINGS, overlay=dict(files))


# -- generated TrainingArguments calls -----------------------------------------------------

VALUES = {
    "output_dir": st.sampled_from(["'out'", '"o"', "f'{x}/o'", "OUT"]),
    "logging_steps": st.sampled_from(["1", "2", "10", "500", "n", "1 if debug else 10"]),
    "fp16": st.sampled_from(["True", "False", "not bf16", "1"]),
    "bf16": st.sampled_from(["True", "False"]),
    "per_device_train_batch_size": st.sampled_from(["1", "8", "64", "bs"]),
    "per_device_eval_batch_size": st.sampled_from(["8", "256", "bs * 2"]),
    "predict_with_generate": st.sampled_from(["True", "False"]),
    "generation_num_beams": st.sampled_from(["1", "4", "8"]),
    "learning_rate": st.sampled_from(["2e-5", "1e-4", "lr"]),
    "gradient_accumulation_steps": st.sampled_from(["1", "4", "16"]),
}
CLASSES = ["TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig"]


@st.composite
def training_script(draw) -> str:
    cls = draw(st.sampled_from(CLASSES))
    keys = draw(st.lists(st.sampled_from(sorted(VALUES)), unique=True, min_size=1, max_size=7))
    items = [f"{k}={draw(VALUES[k])}" for k in keys]
    style = draw(st.sampled_from(["inline", "one-per-line", "dict", "kwargs-var"]))
    comment = draw(st.sampled_from(["", "  # note", "  # trainlint: disable=TL201"]))
    trailing = draw(st.booleans())
    imports = ("from transformers import TrainingArguments, Seq2SeqTrainingArguments, Trainer, "
               "AutoModel, AutoTokenizer\nfrom trl import SFTConfig\n")
    pre = "n = 1\nbs = 8\nlr = 3e-5\nOUT = 'o'\ndebug = False\nbf16 = True\nx = 'y'\n"
    if style == "inline":
        call = f"args = {cls}({', '.join(items)}{', ' if trailing else ''}){comment}\n"
    elif style == "one-per-line":
        body = "".join(f"    {it},{comment if i == 0 else ''}\n" for i, it in enumerate(items))
        call = f"args = {cls}(\n{body})\n"
    elif style == "dict":
        body = ", ".join(f"{it.split('=', 1)[0]!r}: {it.split('=', 1)[1]}" for it in items)
        call = f"cfg = {{{body}}}\nargs = {cls}(**cfg){comment}\n"
    else:
        call = f"kw = dict({', '.join(items)})\nargs = {cls}(**kw)\n"
    model = draw(st.sampled_from([
        "",
        "model = AutoModel.from_pretrained('m')\nmodel.to('cuda')\n",
        "model = AutoModel.from_pretrained('m')\nmodel.cuda()\n",
    ]))
    tok = draw(st.sampled_from([
        "",
        "tok = AutoTokenizer.from_pretrained('m')\nds = ds.map(lambda b: tok(b['t'], padding='max_length'))\n",
    ]))
    trainer = "trainer = Trainer(model=model, args=args, train_dataset=ds)\n" if model else ""
    text = imports + pre + model + tok + call + trainer
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text


@FAST
@given(training_script())
def test_fix_output_parses_and_fix_is_idempotent(script):
    path = f"{ROOT}/train.py"
    ast.parse(script)  # the generator writes valid Python
    first = _run_fix({path: script})
    assert not [d for d in first.remaining if d.code == "TL000"], first.remaining
    assert not first.reverted, first.reverted  # no rule offers a fix that breaks the file
    fixed = first.fixed.get(path, script)
    ast.parse(fixed)
    if "\r\n" in script:
        assert fixed.count("\n") == fixed.count("\r\n"), "newline style kept"
    second = _run_fix({path: fixed})
    assert second.fixed == {}, "fix is not idempotent"
    assert second.applied == []


@FAST
@given(training_script(), st.data())
def test_check_never_raises_on_mutilated_scripts(script, data):
    """Any cut or splice of a valid script: findings only, never an exception or TL000."""
    cut = data.draw(st.integers(0, len(script)))
    junk = data.draw(st.sampled_from(["", "(", ")", "'", '"""', "\\", "\x0c", "\t", "é", "\r", ":", "**"]))
    text = script[:cut] + junk + script[cut:]
    result = _lint({f"{ROOT}/train.py": text})
    assert not result.internal_errors, result.internal_errors
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        assert any(d.code == "TL001" for d in result.diagnostics)
        outcome = _run_fix({f"{ROOT}/train.py": text})
        assert outcome.fixed == {}, "a file that does not parse was edited"


# -- one fuzz target per reader ---------------------------------------------------------------


def _example_texts(suffixes: tuple[str, ...]) -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.rglob("*")) if p.suffix in suffixes]


@st.composite
def mutated(draw, seeds: list[str], alphabet: str) -> str:
    """A seed with a few random cuts, insertions and deletions, or plain random text."""
    if not seeds or draw(st.integers(0, 4)) == 0:
        return draw(st.text(alphabet=alphabet, max_size=300))
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "truncate"]))
        if op == "insert":
            text = text[:i] + draw(st.text(alphabet=alphabet, min_size=1, max_size=8)) + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 20)):]
        else:
            text = text[:i]
    return text


PY_ALPHABET = "()[]{}:=,.'\"\\#\n\r\t abcTrainingArguments_0123456789é*+-@"
JSON_ALPHABET = '{}[]:,"\\ \n\t0123456789.eE+-truefalsnulNaIfiy&*é'
YAML_ALPHABET = "{}[]:,-?|>&*!%@`'\" \n\t#abcdefgh0123456789é"
SH_ALPHABET = "$(){}[]`'\"\\|&;<>=# \n\t-abcdefghtorchrunaccelerate0123456789é"


def _reader(kind: str):
    from trainlint.sources import registry

    return registry.READERS[kind]


@FUZZ
@given(mutated(_example_texts((".py",)), PY_ALPHABET))
def test_fuzz_python_reader(text):
    from trainlint.sources.python import parse_python

    try:
        parse_python("f.py", text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass  # the documented failures, turned into TL001 by resolve
    result = _lint({f"{ROOT}/f.py": text})
    assert not result.internal_errors, result.internal_errors


@pytest.mark.parametrize("kind, suffix, alphabet", [
    ("json", ".json", JSON_ALPHABET),
    ("deepspeed", ".json", JSON_ALPHABET),
    ("hf_args", ".json", JSON_ALPHABET),
    ("yaml", ".yaml", YAML_ALPHABET),
    ("accelerate", ".yaml", YAML_ALPHABET),
    ("shell", ".sh", SH_ALPHABET),
    ("markdown", ".md", SH_ALPHABET + "`~"),
])
def test_fuzz_config_readers(kind, suffix, alphabet):
    from trainlint.sources.errors import ReadError

    seeds = _example_texts((suffix,) if suffix != ".yaml" else (".yaml", ".yml"))
    if kind == "markdown":
        seeds = ["Run it:\n```bash\n" + s + "\n```\n" for s in _example_texts((".sh",))]
    reader = _reader(kind)

    @FUZZ
    @given(mutated(seeds, alphabet))
    def run(text):
        try:
            reader(f"f{suffix}", text)
        except ReadError as e:
            assert e.line >= 1 and e.column >= 1
        result = _lint({f"{ROOT}/f{suffix}": text})
        assert not result.internal_errors, (text, result.internal_errors)

    run()
