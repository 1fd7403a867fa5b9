"""A tiny random BERT saved to a folder, as ``save_pretrained`` writes one: 2 layers of 32
units, 2 heads, a WordPiece vocabulary of the NER sample's most frequent words with every
letter and digit as a word start and a continuation, so any word splits into subwords."""

from __future__ import annotations

import collections
import pathlib
import string

SAMPLE = pathlib.Path(__file__).resolve().parents[2] / "data" / "ner_sample.train.conll"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def sample_words(limit: int = 300) -> list[str]:
    """The sample's ``limit`` most frequent words, lower-cased."""
    counts = collections.Counter()
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("-DOCSTART-"):
            counts[line.split()[0].lower()] += 1
    return [word for word, _ in counts.most_common(limit)]


def save_tiny_bert(folder: pathlib.Path, *, max_positions: int = 64) -> pathlib.Path:
    """Write the tiny BERT and its fast tokenizer to ``folder``; return it."""
    import torch
    from transformers import BertConfig, BertModel

    pieces = list(string.ascii_lowercase + string.digits + string.punctuation)
    vocabulary = list(dict.fromkeys([*SPECIALS, *pieces, *(f"##{p}" for p in pieces)]))
    vocabulary += [word for word in sample_words() if word not in set(vocabulary)]
    folder.mkdir(parents=True, exist_ok=True)
    vocab_file = folder / "vocab.txt"
    vocab_file.write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    tokenizer = bert_tokenizer(vocabulary, max_positions)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocabulary),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=max_positions,
    )
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def bert_tokenizer(vocabulary: list[str], max_positions: int):
    """BERT's uncased WordPiece tokenizer over ``vocabulary``, built with the tokenizers library
    itself: transformers 5's ``BertTokenizerFast(vocab_file=...)`` reads no vocabulary, so a
    tokenizer made that way would turn every word into [UNK] under one version and not the
    other."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    ids = {piece: index for index, piece in enumerate(vocabulary)}
    backend = Tokenizer(models.WordPiece(ids, unk_token="[UNK]"))
    backend.normalizer = normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        model_max_length=max_positions,
        **{f"{name}_token": f"[{name.upper()}]" for name in ("pad", "unk", "cls", "sep", "mask")},
    )
