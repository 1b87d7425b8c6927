import time
from pathlib import Path

import pytest
import yaml as pyyaml

from trainlint.sources.errors import LineIndex, ReadError
from trainlint.sources.yamldoc import (
    insert_key_edit,
    parse_yaml,
    remove_key_edit,
    replace_scalar_edit,
    resolve_plain,
    yaml_scalar_text,
)

EX = Path(__file__).resolve().parent.parent / "examples"
ACC = (EX / "flan_t5_multigpu/accelerate_config.yaml").read_text()


def apply(text, edit):
    idx = LineIndex(text)
    a = idx.offset(edit.line, edit.column)
    b = idx.offset(edit.end_line, edit.end_column)
    return text[:a] + edit.content + text[b:]


def test_accelerate_positions():
    root = parse_yaml(ACC, "acc.yaml")
    n = root.get("num_processes")
    assert n.value == 4
    assert (n.span.line, n.span.column, n.span.end_column) == (10, 16, 17)
    assert (n.key_span.line, n.key_span.column, n.key_span.end_column) == (10, 1, 14)
    f = root.get_path("deepspeed_config.deepspeed_config_file")
    assert f.value == "ds_config.json" and f.span.line == 5 and f.span.column == 26
    assert root.get("deepspeed_config").span.end_line == 6
    assert root.to_python() == pyyaml.safe_load(ACC)


@pytest.mark.parametrize("text", ["2e8", "1e-5", "1.0e5", "1.5e-5", "2.0e+8", "yes", "off", "0x1F",
                                  "0o17", "017", "1_000", "~", "Null", "1:30", ".inf", "-.5",
                                  "+12", "3.", "true", "abc", "0", "-0", "1e+8", "TRUE"])
def test_plain_scalars_resolve_like_pyyaml(text):
    expected = pyyaml.safe_load(f"v: {text}")["v"]
    got = resolve_plain(text)
    assert got == expected and type(got) is type(expected), (text, got, expected)


def test_values_follow_pyyaml_and_keep_raw():
    root = parse_yaml("learning_rate: 1e-5\nbucket: 2e8\nlr2: 2.0e-5\nq: '3'\nb: |\n  x\n  y\n")
    assert root.get("learning_rate").value == "1e-5"  # a string for PyYAML
    assert root.get("learning_rate").tag.endswith(":float")  # ruamel (YAML 1.2) says float
    assert root.get("lr2").value == 2e-5
    assert root.get("q").value == "3" and root.get("q").style == "'"
    blk = root.get("b")
    assert blk.value == "x\ny\n" and blk.raw == "|\n  x\n  y"


@pytest.mark.parametrize(
    "text,line,col",
    [("a: [1, 2\n", 2, 1), ("a: b: c\n", 1, 5), ("a:\n  - 1\n - 2\n", 3, 2),
     ("a: 1\n---\nb: 2\n", 2, 1), ("a: 'x\n", 2, 1)],
)
def test_invalid_yaml_has_position(text, line, col):
    with pytest.raises(ReadError) as info:
        parse_yaml(text, "bad.yaml")
    assert (info.value.line, info.value.column) == (line, col), str(info.value)
    assert info.value.path == "bad.yaml"


def test_alias_bomb_refused_quickly():
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    prev = "a"
    for name in "bcdefghi":
        text += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
        prev = name
    start = time.perf_counter()
    with pytest.raises(ReadError, match="alias"):
        parse_yaml(text)
    assert time.perf_counter() - start < 1.0


def test_recursive_alias_and_deep_nesting():
    with pytest.raises(ReadError, match="Recursive"):
        parse_yaml("a: &x [1, *x]\n")
    start = time.perf_counter()
    with pytest.raises(ReadError, match="Nesting"):
        parse_yaml("a: " + "[" * 5000 + "]" * 5000)
    assert time.perf_counter() - start < 1.0


def test_small_aliases_and_merge_work():
    root = parse_yaml("base: &b {x: 1, y: 2}\nc:\n  <<: *b\n  y: 3\n")
    assert root.to_python() == {"base": {"x": 1, "y": 2}, "c": {"x": 1, "y": 3}}
    assert root.get_path("c.x").span.line == 1


def test_duplicate_key_is_a_problem():
    root = parse_yaml("num_processes: 2\nnum_processes: 4\n")
    assert root.get("num_processes").value == 4
    (p,) = root.problems
    assert p.kind == "duplicate-key" and p.span.line == 2 and p.related.line == 1


def test_replace_scalar_keeps_comment():
    text = "mixed_precision: fp16  # fast\nnum_processes: 2\n"
    root = parse_yaml(text)
    out = apply(text, replace_scalar_edit(root.get("mixed_precision"), "bf16"))
    assert out == "mixed_precision: bf16  # fast\nnum_processes: 2\n"


def test_remove_and_insert_keys_keep_layout():
    root = parse_yaml(ACC)
    ds = root.get("deepspeed_config")
    out = apply(ACC, remove_key_edit(ds, "zero3_init_flag"))
    assert "zero3_init_flag" not in out and "  deepspeed_config_file: ds_config.json\nmachine_rank: 0" in out
    out = apply(ACC, remove_key_edit(root, "deepspeed_config"))
    assert "deepspeed_config" not in out and "distributed_type: DEEPSPEED\nmachine_rank: 0" in out
    assert out.startswith("# 4 x A100 80GB")
    out = apply(ACC, insert_key_edit(ds, "zero_stage", "2"))
    assert "  zero3_init_flag: false\n  zero_stage: 2\nmachine_rank: 0" in out
    out = apply(ACC, insert_key_edit(root, "mixed_precision", "bf16"))
    assert out.endswith("use_cpu: false\nmixed_precision: bf16\n")
    assert pyyaml.safe_load(out)["mixed_precision"] == "bf16"
    flow = "fsdp: {a: 1, b: 2}\n"
    r = parse_yaml(flow)
    assert apply(flow, remove_key_edit(r.get("fsdp"), "a")) == "fsdp: {b: 2}\n"
    assert apply(flow, insert_key_edit(r.get("fsdp"), "c", "3")) == "fsdp: {a: 1, b: 2, c: 3}\n"


def test_remove_key_keeps_following_comment_lines():
    text = "a: 1\nb:\n  x: 1\n  y: 2\n# about c\nc: 3\n"
    out = apply(text, remove_key_edit(parse_yaml(text), "b"))
    assert out == "a: 1\n# about c\nc: 3\n"


@pytest.mark.parametrize("value", [2e-5, 1e8, 3.0, True, None, 7, "fp16", "yes", "1e-5", "a: b", ""])
def test_yaml_scalar_text_round_trips_through_pyyaml(value):
    assert pyyaml.safe_load(f"v: {yaml_scalar_text(value)}")["v"] == value


def test_the_alias_count_runs_only_for_a_graph_that_shares_a_node_or_has_more_nodes_than_allowed(monkeypatch):
    from trainlint.sources import yamldoc

    counted = []
    real = yamldoc._check_expansion
    monkeypatch.setattr(yamldoc, "_check_expansion", lambda *a: counted.append(1) or real(*a))
    plain = "a: 1\nb:\n  c: [1, 2, 3]\n  d: {e: f}\n"
    parse_yaml(plain)
    assert counted == []  # a tree (no alias) of fewer nodes than allowed: nothing to count
    parse_yaml("a: &x {b: 1}\nc: *x\n")
    assert counted == [1]  # an alias: counted as before
    with pytest.raises(ReadError, match="expand to more than 5 nodes"):
        parse_yaml(plain, max_nodes=5)  # more nodes than allowed: counted, refused as before
    assert counted == [1, 1]
    with pytest.raises(ReadError, match="Recursive YAML alias"):
        parse_yaml("a: &x [*x]\n")
