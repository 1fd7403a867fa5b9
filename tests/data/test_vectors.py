"""Pretrained vectors: GloVe and word2vec text, plain or gzip; errors name the line."""

import gzip

import pytest
import torch

from crftag.data.lines import MAX_LINE_BYTES
from crftag.data.vectors import embeddings_dims, read_embeddings
from crftag.errors import CrftagError
from crftag.modelfiles.checkpoint import read_checkpoint

GLOVE = "the 0.1 0.2 0.3\nberlin 1 2 3\nnew york -1 -2 -3.5e-1\n"


def test_glove_plain_and_gzip_and_word2vec_header(tmp_path):
    plain = tmp_path / "v.txt"
    plain.write_text(GLOVE, encoding="utf-8")
    packed = tmp_path / "v.gz"  # compression is detected from the bytes, not the name
    packed.write_bytes(gzip.compress(GLOVE.encode()))
    word2vec = tmp_path / "w2v.txt"
    word2vec.write_text("3 3\n" + GLOVE, encoding="utf-8")
    for path in (plain, packed, word2vec):
        embeddings = read_embeddings(str(path), show_progress=False)
        assert embeddings.words == ["the", "berlin", "new york"]
        assert embeddings.dim == 3
        torch.testing.assert_close(embeddings.lookup("Berlin"), torch.tensor([1.0, 2.0, 3.0]))
        torch.testing.assert_close(embeddings.lookup("new york"), torch.tensor([-1, -2, -0.35]))
        assert embeddings.lookup("paris") is None


def test_malformed_lines_and_dimension_mismatch_name_the_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("the 0.1 0.2\nberlin 1 x\n", encoding="utf-8")
    with pytest.raises(CrftagError, match=r"bad.txt:2: the vector holds something"):
        read_embeddings(str(bad), show_progress=False)
    short = tmp_path / "short.txt"
    short.write_text("the 0.1 0.2\nberlin 1\n", encoding="utf-8")
    with pytest.raises(CrftagError, match=r"short.txt:2: expected a word and 2 numbers"):
        read_embeddings(str(short), show_progress=False)
    short.write_text("the 0.1 0.2\nberlin 1 2\n", encoding="utf-8")
    assert embeddings_dims([str(short)]) == [2]
    with pytest.raises(CrftagError, match=r"short.txt:2: more than vocab.max_size=1 vectors"):
        read_embeddings(str(short), show_progress=False, max_words=1)
    with pytest.raises(CrftagError, match="no such embeddings file"):
        embeddings_dims([str(tmp_path / "missing.txt")])


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_a_line_without_end_is_refused_at_the_bound_not_read_whole(tmp_path, compress):
    endless = tmp_path / ("zeros.txt.gz" if compress else "zeros.txt")
    data = b"the 0.1 0.2\n" + b"0" * (MAX_LINE_BYTES + 10)
    endless.write_bytes(gzip.compress(data) if compress else data)
    with pytest.raises(
        CrftagError, match=rf"zeros.txt(.gz)?:2: line longer than {MAX_LINE_BYTES} bytes$"
    ):
        read_embeddings(str(endless), show_progress=False)


@pytest.mark.parametrize("freeze", [True, False])
def test_training_with_embeddings_extends_the_vocabulary(
    invoke, tmp_path, freeze, tiny_args, tiny_config
):
    dim = tiny_config().model.word_dim  # the vectors fit the tiny model
    vectors = tmp_path / "v.txt"
    vectors.write_text(
        "berlin " + " ".join(["0.5"] * dim) + "\nzanzibar " + " ".join(["0.25"] * dim) + "\n",
        encoding="utf-8",
    )
    settings = tiny_args(
        train__epochs=1,
        model__embeddings=vectors,
        model__freeze_embeddings=freeze,
        vocab__embedding_words=10,
        train__word_dropout=0.5,
    )
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *settings]
    result = invoke(args)
    assert result.status == 0, result.stderr
    # Both file words are new in these forms: "berlin" (training has only "Berlin") and
    # "zanzibar"; lower-case "berlin" in a test sentence then keeps its vector.
    assert "added 2 words that training never saw" in result.stderr
    state = read_checkpoint(str(tmp_path / "run" / "model.pt"))
    symbols = state["vocabularies"]["words"]["symbols"]
    assert "zanzibar" in symbols and "Berlin" in symbols
    weights = state["state_dict"]["word_embedding.weight"]
    # A word that training never saw keeps exactly the file's vector, fine-tuned or not;
    # "Berlin", a training word, moves only when fine-tuned.
    assert torch.equal(weights[symbols.index("zanzibar")], torch.full((dim,), 0.25))
    berlin = weights[symbols.index("Berlin")]
    assert torch.equal(berlin, torch.full((dim,), 0.5)) == freeze
    result = invoke(["train", "configs/sample.yaml", "--set", f"model.embeddings={vectors}"])
    assert result.status == 2
    assert f"vectors have {dim} dimensions but model.word_dim is 50" in result.stderr
