"""Build a tiny BERT classifier + WordLevel tokenizer offline (no hub access), in ~5 s.

    python make_tiny_model.py OUT_DIR
"""
from __future__ import annotations

import sys
from pathlib import Path

SENTENCES = [
    "the movie was great and the actors were wonderful",
    "a terrible film with a boring story",
    "i loved every minute of this wonderful movie",
    "the plot was dull and the acting was bad",
    "an excellent and moving story",
    "worst movie i have seen this year",
]


def build(out_dir: str | Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(SENTENCES, trainers.WordLevelTrainer(special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
        sep_token="[SEP]", mask_token="[MASK]", model_max_length=64,
    )
    fast.save_pretrained(out)
    config = BertConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=37, max_position_embeddings=64, num_labels=2,
    )
    BertForSequenceClassification(config).save_pretrained(out)
    return out


if __name__ == "__main__":
    print(build(sys.argv[1] if len(sys.argv) > 1 else "tiny-bert"))
