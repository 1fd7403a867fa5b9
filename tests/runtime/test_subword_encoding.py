"""The exported encoder's bare tokenizer (crftag/runtime/subword_encoding.py) under
crftag/data/subwords.py's ``subwords_of``: a batch of sentences is tokenised in one call and its
ids are read once, so a file of N sentences costs N, not N squared."""

import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("transformers")

from crftag.data.subwords import subwords_of  # noqa: E402
from crftag.runtime import subword_encoding  # noqa: E402
from crftag.runtime.subword_encoding import BareTokenizer  # noqa: E402
from tests.nn.tiny_bert import save_tiny_bert  # noqa: E402


def test_a_batch_reads_its_ids_once_and_equals_its_sentences_one_by_one(tmp_path, monkeypatch):
    folder = save_tiny_bert(tmp_path / "bert")
    tokenizer = BareTokenizer((folder / "tokenizer.json").read_text("utf-8"), "[UNK]")
    sentences = [["John", "lives", "in", f"Berlin{i}", "\u200b", "."] for i in range(300)]
    alone = [subwords_of(tokenizer, [sentence])[0] for sentence in sentences]
    reads = []
    read = subword_encoding._Encodings.__getitem__

    def counted(self, key):
        reads.append(key)
        return read(self, key)

    monkeypatch.setattr(subword_encoding._Encodings, "__getitem__", counted)
    together = subwords_of(tokenizer, sentences)
    assert together == alone
    # One read of the batch; the zero-width word of each sentence makes its own call (and read)
    # to read it as the unknown token.
    assert reads.count("input_ids") == 1 + len(sentences)


def test_an_exported_encoder_tokenises_each_sentence_once(tmp_path, tiny_args, monkeypatch):
    """The tagger sizes its sentences to batch them; the batches then take the subwords found
    there instead of tokenising again, and tag as the torch model does."""
    from crftag.inference.loading import load
    from crftag.inference.tagger import Tagger
    from crftag.modelfiles.checkpoint import load_model
    from tests.inference.encoder_exports import encoder_model

    checkpoint, exported, _ = encoder_model(tmp_path, tiny_args, int8=False)
    tagger = load(str(exported))
    sentences = [["John", "lives", "in", "Berlin", str(i), "."] for i in range(150)]
    sentences += [["Anna", "sang", "."]] * 3  # the same sentence, more than once
    words = []
    encode = BareTokenizer.__call__

    def counted(self, batch, **options):
        words.extend(batch)
        return encode(self, batch, **options)

    monkeypatch.setattr(BareTokenizer, "__call__", counted)
    found = tagger.tag(sentences)
    assert sorted(map(tuple, words)) == sorted(map(tuple, sentences))
    assert found == Tagger.from_loaded(load_model(str(checkpoint))).tag(sentences)
