"""Tiny random encoders of each kind crftag reads, and of kinds it refuses, saved to folders as
``save_pretrained`` writes them: 2 layers of 32 units and 2 heads each, built here (never
downloaded) with tokenizers built by the tokenizers library, each framing a sentence as its
kind does ([CLS] ... [SEP]; RoBERTa's <s> ... </s>)."""

from __future__ import annotations

import pathlib
import string

from tests.nn.tiny_bert import bert_tokenizer, sample_words, save_tiny_bert

SIZES = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2}
SIZES |= {"intermediate_size": 64, "max_position_embeddings": 64}
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
# The kind's config (beside SIZES, under the kind's own names) and its tokenizer's framing.
KINDS = {
    "bert": {},
    "distilbert": {"dim": 32, "n_layers": 2, "n_heads": 2, "hidden_dim": 64},
    "electra": {"embedding_size": 16},  # narrower embeddings than states: the width is 32
    "deberta-v2": {  # DeBERTa v3's settings: relative positions, no absolute ones
        "relative_attention": True,
        "position_buckets": 16,
        "pos_att_type": ["p2c", "c2p"],
        "position_biased_input": False,
        "norm_rel_ebd": "layer_norm",
        "share_att_key": True,
        "type_vocab_size": 0,
    },
    "deberta": {"relative_attention": True, "pos_att_type": ["p2c", "c2p"]},
    "roberta": {"pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "type_vocab_size": 1},
    "xlm-roberta": {"pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2},
}
FRAMES = {kind: (["[CLS]"], ["[SEP]"]) for kind in KINDS}
FRAMES |= {"roberta": (["<s>"], ["</s>"]), "xlm-roberta": (["<s>"], ["</s>"])}
REFUSED = {
    "gpt2": {"n_embd": 32, "n_layer": 2, "n_head": 2, "n_positions": 64},
    "t5": {"d_model": 32, "d_kv": 16, "d_ff": 64, "num_layers": 2, "num_heads": 2},
}


def save_encoder(folder: pathlib.Path, kind: str) -> pathlib.Path:
    """Write a tiny random encoder of ``kind`` (KINDS or REFUSED) and its tokenizer to
    ``folder``; return it."""
    import torch
    from transformers import AutoConfig, AutoModel

    if kind == "bert":
        return save_tiny_bert(folder)
    roberta = kind in ("roberta", "xlm-roberta")
    tokenizer = roberta_tokenizer() if roberta else bert_tokenizer(_wordpieces(), 64)
    settings = REFUSED.get(kind) or {**SIZES, **KINDS[kind]}
    if roberta:  # positions count from the padding id's: 2 more for 64 subwords
        settings = {**settings, "max_position_embeddings": 66}
    config = AutoConfig.for_model(kind, vocab_size=len(tokenizer), **settings)
    torch.manual_seed(0)
    folder.mkdir(parents=True, exist_ok=True)
    AutoModel.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _wordpieces() -> list[str]:
    pieces = list(string.ascii_lowercase + string.digits + string.punctuation)
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *pieces]
    vocabulary += [f"##{piece}" for piece in pieces]
    return vocabulary + [word for word in sample_words() if word not in set(vocabulary)]


def roberta_tokenizer():
    """RoBERTa's byte-level BPE, learnt from the NER sample's frequent words, with its
    ``<s> ... </s>`` framing."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=ROBERTA_SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(sample_words(), trainer=trainer)
    backend.post_processor = processors.RobertaProcessing(
        ("</s>", backend.token_to_id("</s>")), ("<s>", backend.token_to_id("<s>"))
    )
    names = ("bos", "pad", "eos", "unk", "mask")
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        model_max_length=64,
        cls_token="<s>",
        sep_token="</s>",
        **{f"{name}_token": token for name, token in zip(names, ROBERTA_SPECIALS, strict=True)},
    )
