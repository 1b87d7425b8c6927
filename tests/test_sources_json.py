import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainlint.sources.errors import LineIndex, ReadError
from trainlint.sources.jsondoc import (
    insert_key_edit,
    parse_json,
    remove_key_edit,
    replace_value_edit,
)

EX = Path(__file__).resolve().parent.parent / "examples"


def apply(text, edit):
    idx = LineIndex(text)
    a = idx.offset(edit.line, edit.column)
    b = idx.offset(edit.end_line, edit.end_column)
    return text[:a] + edit.content + text[b:]


def test_ds_zero1_micro_batch_position():
    text = (EX / "glue_cli/ds_zero1.json").read_text()
    root = parse_json(text, "ds_zero1.json")
    node = root.get("train_micro_batch_size_per_gpu")
    assert node.value == 16
    assert (node.span.line, node.span.column, node.span.end_column) == (4, 37, 39)
    assert (node.key_span.line, node.key_span.column, node.key_span.end_column) == (4, 3, 35)
    assert root.get_path("zero_optimization.stage").value == 1
    assert root.get_path("fp16.enabled").raw == '"auto"'
    assert root.to_python() == json.loads(text)


def test_flan_buckets_are_numbers_with_positions():
    text = (EX / "flan_t5_multigpu/ds_config.json").read_text()
    root = parse_json(text, "ds_config.json")
    ag = root.get_path("zero_optimization.allgather_bucket_size")
    rb = root.get_path("zero_optimization.reduce_bucket_size")
    assert ag.value == 2e8 and ag.raw == "2e8" and ag.span.line == 29
    assert rb.span.line == 32 and rb.span.column == 27
    assert ag.key_path == "zero_optimization.allgather_bucket_size"


@pytest.mark.parametrize(
    "text,line,col,fragment",
    [
        ('{"a": 1,}', 1, 8, "Trailing comma"),
        ('{\n  "a": 1\n  "b": 2\n}', 3, 3, "','"),
        ('{"a" 1}', 1, 6, "':'"),
        ('{"a": 1} x', 1, 10, "Extra data"),
        ("", 1, 1, "Expecting value"),
        ('{"a": tru}', 1, 7, "Expecting value"),
        ('{"a": "x\\q"}', 1, 9, "escape"),
        ('{\n "a": "unterminated', 2, 7, "Unterminated"),
        ("{'a': 1}", 1, 2, "property name"),
        ('{"a": 1 // no\n}', 1, 9, "Comments"),
        ("[1, 2,]", 1, 6, "Trailing comma"),
    ],
)
def test_invalid_json_position(text, line, col, fragment):
    with pytest.raises(ReadError) as info:
        parse_json(text, "bad.json")
    err = info.value
    assert (err.line, err.column) == (line, col), str(err)
    assert fragment in err.message
    assert err.path == "bad.json"


def test_duplicate_keys_reported_last_wins():
    root = parse_json('{\n  "stage": 1,\n  "stage": 3\n}', "d.json")
    assert root.get("stage").value == 3
    (problem,) = root.problems
    assert problem.kind == "duplicate-key"
    assert problem.span.line == 3 and problem.related.line == 2


def test_nan_infinity_accepted_but_flagged():
    root = parse_json('{"a": NaN, "b": -Infinity, "c": 2e8}')
    assert root.get("b").value == float("-inf")
    assert [p.kind for p in root.problems] == ["non-standard-number"] * 2
    assert root.get("c").value == 200000000.0


def test_deep_nesting_is_read_error_not_recursion():
    text = "[" * 100_000 + "]" * 100_000
    start = time.perf_counter()
    with pytest.raises(ReadError, match="Nesting"):
        parse_json(text)
    assert time.perf_counter() - start < 1.0
    ok = parse_json("[" * 400 + "]" * 400)
    assert ok.to_python() == json.loads("[" * 400 + "]" * 400)


def test_unicode_columns_are_characters():
    root = parse_json('{"név": "ü€😀", "b": 1}')
    b = root.get("b")
    assert b.span.column == len('{"név": "ü€😀", "b": ') + 1
    assert root.get("név").value == "ü€😀"
    assert parse_json('"\\ud83d\\ude00"').value == "😀"


def test_replace_value_edit_keeps_layout():
    text = (EX / "glue_cli/ds_zero1.json").read_text()
    root = parse_json(text, "ds_zero1.json")
    new = apply(text, replace_value_edit(root.get("train_micro_batch_size_per_gpu"), '"auto"'))
    assert new == text.replace('"train_micro_batch_size_per_gpu": 16', '"train_micro_batch_size_per_gpu": "auto"')
    assert json.loads(new)["train_micro_batch_size_per_gpu"] == "auto"


def test_remove_key_edit_multiline_middle_last_and_only():
    text = (EX / "flan_t5_multigpu/ds_config.json").read_text()
    root = parse_json(text)
    zero = root.get("zero_optimization")
    middle = apply(text, remove_key_edit(zero, "overlap_comm"))
    assert '"overlap_comm"' not in middle
    assert middle.count("\n") == text.count("\n") - 1
    assert '    "allgather_bucket_size": 2e8,\n    "reduce_scatter": true,' in middle
    last = apply(text, remove_key_edit(root, "wall_clock_breakdown"))
    assert last.endswith('"train_micro_batch_size_per_gpu": "auto"\n}\n')
    first = apply(text, remove_key_edit(root, "bf16"))
    assert first.startswith('{\n  "optimizer": {')
    offload = zero.get("offload_optimizer")
    only = parse_json('{"a": {"x": 1}}')
    assert apply('{"a": {"x": 1}}', remove_key_edit(only.get("a"), "x")) == '{"a": {}}'
    for edited in (middle, last, first):
        parsed = json.loads(edited)
        assert isinstance(parsed, dict)
    assert offload.get("device").value == "cpu"


def test_remove_key_edit_inline():
    text = '{"fp16": {"enabled": true, "loss_scale": 0, "x": 1}}'
    root = parse_json(text)
    sec = root.get("fp16")
    assert apply(text, remove_key_edit(sec, "enabled")) == '{"fp16": {"loss_scale": 0, "x": 1}}'
    assert apply(text, remove_key_edit(sec, "x")) == '{"fp16": {"enabled": true, "loss_scale": 0}}'


def test_insert_key_edit_matches_indentation():
    text = (EX / "flan_t5_multigpu/ds_config.json").read_text()
    root = parse_json(text)
    offload = root.get_path("zero_optimization.offload_optimizer")
    new = apply(text, insert_key_edit(offload, "ratio", "0.5"))
    assert '        "pin_memory": true,\n        "ratio": 0.5\n    },' in new
    assert json.loads(new)["zero_optimization"]["offload_optimizer"]["ratio"] == 0.5
    new2 = apply(text, insert_key_edit(root, "bf16x", '{\n  "enabled": true\n}'))
    assert new2.endswith('  "wall_clock_breakdown": false,\n  "bf16x": {\n    "enabled": true\n  }\n}\n')
    inline = '{"fp16": {"enabled": true}}'
    r = parse_json(inline)
    assert apply(inline, insert_key_edit(r.get("fp16"), "loss_scale", "0")) == \
        '{"fp16": {"enabled": true, "loss_scale": 0}}'
    empty = '{\n  "zero_optimization": {\n  }\n}'
    r = parse_json(empty)
    out = apply(empty, insert_key_edit(r.get("zero_optimization"), "stage", "2"))
    assert out == '{\n  "zero_optimization": {\n    "stage": 2\n  }\n}'
    assert apply("{}", insert_key_edit(parse_json("{}"), "a", "1")) == '{"a": 1}'


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=6), json_values, max_size=6),
       st.sampled_from([None, 0, 2, 4, "\t"]), st.booleans())
def test_roundtrip_and_spans_point_at_text(data, indent, ensure_ascii):
    text = json.dumps(data, indent=indent, ensure_ascii=ensure_ascii)
    root = parse_json(text, "p.json")
    assert root.to_python() == json.loads(text)
    lines = text.split("\n")
    for node in root.walk():
        sp = node.span
        if sp.line == sp.end_line:
            assert lines[sp.line - 1][sp.column - 1:sp.end_column - 1] == node.raw
        if node.is_scalar:
            assert json.loads(node.raw) == node.value or node.value != node.value
        if node.key is not None:
            ks = node.key_span
            assert json.loads(lines[ks.line - 1][ks.column - 1:ks.end_column - 1]) == node.key


# -- the tree built on demand (LazyJsonNode) ----------------------------------------------------


def _lazy_random_document(rng, depth=0):
    r = rng.random()
    if depth > 4 or r < 0.4:
        return rng.choice([' 1', '-0', '1.5e3', '"a"', '"\\u00e9x"', '"\\ud83d\\ude00"', '"é"', 'true', 'null',
                           '12345678901234567890123', '"\\n\\t\\"\\\\"', '"auto"', '"\\u0061uto"', 'false', '0.1',
                           '"[{"', '"}]\\\\"'])
    if r < 0.7:
        return "[" + rng.choice([", ", ",\n  ", ","]).join(
            _lazy_random_document(rng, depth + 1) for _ in range(rng.randint(0, 4))) + "]"
    keys = [rng.choice(["a", "b", "auto", "é", "k\\n", "zero_optimization", "stage", "{"]) for _ in range(rng.randint(0, 4))]
    sep = rng.choice([":", " : ", ":\n  "])
    return "{" + ("," + rng.choice(["", "\n", " "])).join(
        f'"{k}"{sep}{_lazy_random_document(rng, depth + 1)}' for k in keys) + "}"


def _shape(root):
    return [(n.kind, n.value if n.is_scalar else None, n.start, n.end, n.key, n.key_start, n.key_end, n.key_path,
             n.parent.start if n.parent is not None else None, n.span, n.key_span, json.dumps(n.to_python()))
            for n in root.walk()]


def test_a_tree_built_on_demand_is_the_tree_read_node_by_node():
    import random

    from trainlint.sources.jsondoc import LazyJsonNode

    rng = random.Random(5)
    lazy_roots = errors = 0
    for _ in range(2500):
        text = _lazy_random_document(rng)
        r = rng.random()
        if r < 0.1:
            text = "\ufeff" + text
        elif r < 0.2:
            text = "\n  " + text + "\n "
        elif r < 0.25:
            text = text.replace("1", "NaN", 1)
        elif r < 0.3:
            text = text[:-1]
        elif r < 0.33:
            text = text.replace(",", ",,", 1)
        try:
            eager = parse_json(text, "x.json", lazy=False)
        except ReadError as e:
            with pytest.raises(ReadError) as got:
                parse_json(text, "x.json", lazy=True)
            assert (str(got.value), got.value.line, got.value.column) == (str(e), e.line, e.column)
            errors += 1
            continue
        lazy = parse_json(text, "x.json", lazy=True)
        lazy_roots += isinstance(lazy, LazyJsonNode)
        if "NaN" not in text:
            assert _shape(lazy) == _shape(eager), text
        assert [(p.kind, p.message, p.span) for p in lazy.problems] == [(p.kind, p.message, p.span) for p in eager.problems]
        # children asked for before the whole walk: the same positions
        fresh = parse_json(text, "x.json", lazy=True)
        if not fresh.is_scalar:
            assert [(c.start, c.end, c.key) for c in (fresh.members if fresh.is_mapping else fresh.items)] == \
                [(c.start, c.end, c.key) for c in (eager.members if eager.is_mapping else eager.items)]
    assert lazy_roots > 500 and errors > 100
    # what json.loads accepts but parse_json reports is read node by node: duplicates, NaN,
    # absurd nesting, integers Python refuses
    assert not isinstance(parse_json('{"a": 1, "a": 2}', lazy=True), LazyJsonNode)
    assert parse_json('{"a": 1, "a": 2}', lazy=True).problems
    assert not isinstance(parse_json('{"a": NaN}', lazy=True), LazyJsonNode)
    with pytest.raises(ReadError):
        parse_json("[" * 600 + "]" * 600, lazy=True)
    assert isinstance(parse_json("[" * 499 + "]" * 499, lazy=True), LazyJsonNode)
    with pytest.raises(ReadError):
        parse_json('{"a": ' + "9" * 5000 + "}", lazy=True)


def test_a_json_that_is_no_config_is_read_on_demand_whatever_its_size(tmp_path, monkeypatch):
    """A small walked JSON that is no config gets the tree built on demand; one with a problem
    is read node by node, and the problem is reported when a launch line names the file."""
    from trainlint.config import load_settings
    from trainlint.engine import lint
    from trainlint.sources.jsondoc import LazyJsonNode
    from trainlint.workspace import read_workspace

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "records.json").write_text('[{"instruction": "hi", "output": "ok"}]\n')
    (tmp_path / "data" / "dup.json").write_text('{"name": "a", "name": "b"}\n')
    monkeypatch.chdir(tmp_path)
    settings = load_settings(tmp_path)
    ws = read_workspace([Path(".")], settings, {})
    records, dup = ws.files["data/records.json"], ws.files["data/dup.json"]
    assert records.kind == dup.kind == "json"
    assert isinstance(records.doc, LazyJsonNode) and records.doc.to_python() == [{"instruction": "hi", "output": "ok"}]
    assert not isinstance(dup.doc, LazyJsonNode) and ws.deferred_problems["data/dup.json"]
    assert not lint([Path(".")], settings, jobs=1).diagnostics  # walked, named by nothing: not judged
    (tmp_path / "run.sh").write_text("accelerate launch train.py --deepspeed data/dup.json\n")
    found = lint([Path(".")], settings, jobs=1).diagnostics
    assert any(d.path == "data/dup.json" and "duplicate" in d.message.lower() for d in found), found


def test_a_large_deepspeed_config_gives_the_findings_of_the_node_by_node_reader(tmp_path, monkeypatch):
    from trainlint.config import load_settings
    from trainlint.engine import lint
    from trainlint.sources import jsondoc

    payload = ",\n".join(f'    "g{i}": {{"modules": ["layer.{i}.q", "layer.{i}.k"], "bits": [{i % 8}, 4]}}' for i in range(6000))
    (tmp_path / "ds_config.json").write_text(
        '{\n  "train_micro_batch_size_per_gpu": "auto",\n  "gradient_accumulation_steps": 4,\n'
        '  "fp16": {"enabled": true},\n  "bf16": {"enabled": true},\n'
        '  "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}},\n'
        '  "compression_training": {"different_groups": {\n' + payload + '\n  }},\n  "lr": "\\u0061uto"\n}\n')
    assert (tmp_path / "ds_config.json").stat().st_size > jsondoc.LAZY_MIN_CHARS
    settings = load_settings(tmp_path)

    def findings():
        return [d.to_json() for d in lint([tmp_path / "ds_config.json"], settings).diagnostics]

    lazy = findings()
    monkeypatch.setattr(jsondoc, "LAZY_MIN_CHARS", 10 ** 12)
    assert findings() == lazy and {"TL303", "TL319"} <= {d["code"] for d in lazy}
