"""The pipeline's scheduling: the stand-alone split's name index, the layering of the stages,
and one result whatever the scheduler (default, -j 1, -j 2, warm cache)."""

from __future__ import annotations

import random
import re

from trainlint.parallel import NameIndex


def _word(name: str) -> re.Pattern[str]:  # the regular expression the index replaces
    return re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])")


ALPHABET = ["train", "run", ".", "-", "_", "py", "json", "yaml", "sh", " ", "/", "\n", "\"", "'", "=",
            "é", "x1", "ds", "cfg", ".py", ".json", "(", "+", "Ω"]
NAMES = ["train.py", "run.sh", "ds.json", "cfg.yaml", "x1.py", "train-x.py", "a b.json", "é.json",
         "run", "train", "train.", "ds", "py", "x1", "run.sh.bak", "TRAIN.PY", "t+r.json", "Ω.py"]


def test_name_index_gives_the_answers_of_the_searches():
    rng = random.Random(7)
    suffixes = {n[n.rfind("."):] for n in NAMES if n.rfind(".") > 0}
    checked = 0
    for _ in range(400):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 60)))
        index = NameIndex(text, suffixes, max(len(n) for n in NAMES))
        for name in NAMES:
            assert index.mentions(name) == (name in text), (name, text)
            stem = name[:-3] if name.endswith(".py") else name
            assert index.mentions_word(stem) == bool(_word(stem).search(text)), (stem, text)
            checked += 1
    assert checked == 400 * len(NAMES)


def test_name_index_on_file_names_in_configs():
    text = 'bash run.sh src/train.py --deepspeed "ds_z3.json" # see xtrain.py and train.v2'
    index = NameIndex(text, {".py", ".json"}, 32)
    assert index.mentions("train.py") and index.mentions("ds_z3.json") and index.mentions("xtrain.py")
    assert not index.mentions("rain.json") and not index.mentions("ds_z2.json")
    assert index.mentions_word("train") and index.mentions_word("run") and index.mentions_word("ds_z3")
    assert not index.mentions_word("rain") and not index.mentions_word("v2")
