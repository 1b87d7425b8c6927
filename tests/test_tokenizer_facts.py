"""The no-BOS tokenizer families (TL133's model facts): generated data in step with its generator,
checked against the installed transformers with tiny tokenizers built here (no download)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from trainlint.knowledge.tokenizer_facts import adds_no_bos

ROOT = Path(__file__).resolve().parent.parent


def _gen():
    spec = importlib.util.spec_from_file_location("gen_tokenizer_facts", ROOT / "scripts" / "gen_tokenizer_facts.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_data_file_is_what_the_generator_writes():
    gen = _gen()
    on_disk = json.loads((ROOT / "trainlint/knowledge/data/tokenizer_facts.json").read_text(encoding="utf-8"))
    assert on_disk == json.loads(json.dumps(gen.build(), ensure_ascii=False))


@pytest.mark.parametrize("mid, expected", [
    ("Qwen/Qwen2.5-7B-Instruct", True), ("qwen/Qwen3-4B", True), ("unsloth/Qwen2.5-7B", True),
    ("unsloth/QwQ-32B", True), ("gpt2", True), ("openai-community/gpt2-xl", True),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", False), ("meta-llama/Llama-3.1-8B", False),
    ("mistralai/Mistral-7B-v0.1", False), ("gpt2-finetuned/llama", False), ("", False),
])
def test_families_are_told_by_id(mid, expected):
    assert adds_no_bos(mid) is expected


def test_installed_tokenizer_classes_add_no_bos():
    pytest.importorskip("transformers")
    _gen().verify()  # raises SystemExit when a family's class prepends a BOS token


def test_verification_catches_a_bos_adding_class(monkeypatch):
    """The check can fail: Llama's tokenizer prepends <s> by default."""
    transformers = pytest.importorskip("transformers")
    gen = _gen()

    class BosLlama(transformers.LlamaTokenizer):
        def __init__(self, vocab, merges):
            super().__init__(vocab={"<unk>": 4, "<s>": 5, "</s>": 6, **vocab}, merges=merges,
                             bos_token="<s>", add_bos_token=True)

    monkeypatch.setattr(transformers, "BosLlama", BosLlama, raising=False)
    monkeypatch.setattr(gen, "FAMILIES", [{**gen.FAMILIES[0], "tokenizer_classes": ["BosLlama"]}])
    with pytest.raises(SystemExit, match="not a no-BOS family"):
        gen.verify()


def test_an_evidence_config_with_a_bos_token_is_refused(monkeypatch):
    gen = _gen()
    fam = {**gen.FAMILIES[0], "evidence": ["deepseek-ai/DeepSeek-R1-Distill-Qwen-32B"], "counter_examples": []}
    monkeypatch.setattr(gen, "FAMILIES", [fam])
    with pytest.raises(SystemExit, match="no evidence"):
        gen.build()


def test_tokenizer_defaults_are_what_the_installed_transformers_declares():
    """tokenizer_defaults.json (scripts/gen_tokenizer_defaults.py) against the installed classes:
    the generator's output in a fresh interpreter (other tests patch transformers in this one),
    and a tiny LlamaTokenizer built here has the tokens in its vocabulary."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    import transformers

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", "import json, sys; sys.path.insert(0, 'scripts'); "
                          "import gen_tokenizer_defaults as g; print(json.dumps(g.build()))"],
                         cwd=root, capture_output=True, text=True, check=True).stdout
    built = json.loads(out)
    stored = json.loads((root / "trainlint" / "knowledge" / "data" / "tokenizer_defaults.json").read_text("utf-8"))
    if built["transformers"] == stored["transformers"]:
        assert built == stored
    from trainlint.knowledge.tokenizer_facts import class_default_tokens

    assert class_default_tokens("LlamaTokenizer") == frozenset({"<s>", "</s>", "<unk>"})
    assert class_default_tokens("AutoTokenizer") is None
    tok = transformers.LlamaTokenizer(vocab={"<unk>": 0, "<s>": 1, "</s>": 2, "a": 3}, merges=[])
    before = len(tok)
    assert tok.add_special_tokens({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}) == 0
    assert len(tok) == before
