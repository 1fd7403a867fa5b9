"""Binary and compressed vector files, several files at once, and ``model.word_dim`` inferred:
read as the reference library (gensim) reads them, errors naming the file and byte offset."""

import bz2
import gzip
import lzma
import struct
import tracemalloc

import numpy as np
import pytest
import torch

from crftag.data.vector_binaries import MAX_DIM
from crftag.data.vectors import embeddings_dims, read_embeddings, vector_format
from crftag.errors import CrftagError

SENTENCES = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "ran", "über", "it"]] * 20
COMPRESSORS = {"plain": lambda data: data, "gzip": gzip.compress, "bz2": bz2.compress}
COMPRESSORS["xz"] = lzma.compress


def _word2vec_binary(vectors: dict[str, list[float]]) -> bytes:
    """A word2vec binary file as the C tool writes it (a newline after each vector)."""
    dim = len(next(iter(vectors.values())))
    data = f"{len(vectors)} {dim}\n".encode()
    for word, vector in vectors.items():
        data += word.encode() + b" " + struct.pack(f"<{dim}f", *vector) + b"\n"
    return data


VECTORS = {"berlin": [1.0, 2.0, 3.0], "new_york": [-1.0, 0.5, 0.25], "über": [0.0, 0.0, 1.0]}


@pytest.mark.parametrize("compression", COMPRESSORS)
def test_word2vec_binary_by_hand_in_every_compression(tmp_path, compression):
    path = tmp_path / "vectors.data"  # the format and compression come from the bytes
    path.write_bytes(COMPRESSORS[compression](_word2vec_binary(VECTORS)))
    assert vector_format(str(path)) == "word2vec-binary"
    assert embeddings_dims([str(path)]) == [3]
    embeddings = read_embeddings(str(path), show_progress=False)
    assert embeddings.words == list(VECTORS)
    for word, vector in VECTORS.items():
        torch.testing.assert_close(embeddings.lookup(word), torch.tensor(vector))
    assert embeddings.subword_vector("berlinn") is None


@pytest.mark.parametrize("compression", ["bz2", "xz"])
def test_glove_text_in_bzip2_and_xz(tmp_path, compression):
    path = tmp_path / "glove.txt"
    path.write_bytes(COMPRESSORS[compression](b"the 0.1 0.2\nberlin 1 2\n"))
    assert vector_format(str(path)) == "text"
    embeddings = read_embeddings(str(path), show_progress=False)
    torch.testing.assert_close(embeddings.lookup("Berlin"), torch.tensor([1.0, 2.0]))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            _word2vec_binary(VECTORS)[:-7],
            r"byte 5\d: the file ends early \(truncated\), in vector 3",
        ),
        (b"0 3\n", r"byte 4: the header says 0 vectors of 3 dimensions"),
        (_word2vec_binary(VECTORS) + b"extra 1 2 3", r"byte 6\d: data after the 3 vectors"),
        (b"1 1\n\xff\xfe " + struct.pack("<f", 1.0), r"byte 7: vector 1 of 1 is not valid UTF-8"),
    ],
    ids=["truncated", "empty", "trailing", "utf8"],
)
def test_a_malformed_word2vec_binary_is_one_error_with_the_byte_offset(tmp_path, data, message):
    path = tmp_path / "bad.bin"
    path.write_bytes(data)
    with pytest.raises(CrftagError, match=rf"^{tmp_path}/bad.bin: {message}"):
        read_embeddings(str(path), show_progress=False)


@pytest.mark.parametrize("header", [b"3 0\n", b"3 70000\n"])
def test_a_word2vec_dimension_out_of_range_is_refused_where_the_dimension_is_read(tmp_path, header):
    path = tmp_path / "dim.bin"
    path.write_bytes(header + b"a " + struct.pack("<3f", 1, 2, 3))
    message = r"dim.bin: byte \d+: the header says 3 vectors of \d+ dimensions; expected 1 or "
    with pytest.raises(CrftagError, match=message):
        embeddings_dims([str(path)])
    with pytest.raises(CrftagError, match=message):
        read_embeddings(str(path), show_progress=False)


def test_a_header_promising_more_than_a_plain_file_holds_is_refused_before_allocating(
    tmp_path,
):
    path = tmp_path / "promise.bin"
    path.write_bytes(b"1999999 5000" + _word2vec_binary(VECTORS)[3:])  # 3 vectors of 3 floats
    message = (
        r"promise.bin: byte 13: 1999999 vectors of 5000 dimensions needs at least 40001979999 "
        r"bytes, but the file has \d+ left \(truncated, or a corrupt header\)$"
    )
    with pytest.raises(CrftagError, match=message):
        read_embeddings(str(path), show_progress=False)


@pytest.mark.parametrize("compression", ["gzip", "bz2", "xz"])
def test_a_compressed_file_promising_gigabytes_fails_at_its_end_without_allocating_them(
    tmp_path, compression
):
    path = tmp_path / "promise.bin"
    data = b"1999999 5000\n" + b"".join(
        word + b" " + struct.pack("<5000f", *[1.0] * 5000) for word in (b"a", b"b", b"c")
    )
    path.write_bytes(COMPRESSORS[compression](data))
    tracemalloc.start()
    try:
        with pytest.raises(CrftagError, match=r"promise.bin: byte \d+: .*ends early.* vector 4 "):
            read_embeddings(str(path), show_progress=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 256 << 20, peak  # the promise is 37 GiB


def _flipped(data: bytes, count: int = 16) -> bytes:
    """``data`` with ``count`` bytes in its middle inverted."""
    middle = len(data) // 2
    return (
        data[:middle]
        + bytes(b ^ 0xFF for b in data[middle : middle + count])
        + data[middle + count :]
    )


@pytest.mark.parametrize("compression", ["gzip", "bz2", "xz"])
def test_a_bit_flipped_compressed_binary_is_one_error_naming_the_file(tmp_path, compression):
    many = {f"word{i}": [float(i), i / 7, -i / 3] for i in range(2000)}
    path = tmp_path / "flipped.bin"
    path.write_bytes(_flipped(COMPRESSORS[compression](_word2vec_binary(many))))
    # bzip2 checks a block's CRC after handing out its data, so the garbage may be met first
    # (a header it garbles makes the file read as text: its float bytes are then NULs)
    found = r"corrupt|ends early|not valid UTF-8|NUL byte"
    with pytest.raises(CrftagError, match=rf"^{tmp_path}/flipped.bin(:\d+)?: .*({found})"):
        read_embeddings(str(path), show_progress=False)


def test_a_truncated_compressed_binary_is_one_error(tmp_path):
    path = tmp_path / "cut.bin.gz"
    path.write_bytes(gzip.compress(_word2vec_binary(VECTORS) * 50)[:-30])
    with pytest.raises(CrftagError, match=r"cut.bin.gz: byte \d+: .*ends early"):
        read_embeddings(str(path), show_progress=False)


def test_a_vector_beyond_float32_in_a_binary_is_refused(tmp_path):
    path = tmp_path / "nan.bin"
    path.write_bytes(_word2vec_binary({"a": [1.0, 2.0], "b": [float("nan"), 1.0]}))
    with pytest.raises(CrftagError, match=r"nan.bin: vector 2 \('b'\) holds NaN"):
        read_embeddings(str(path), show_progress=False)


def test_two_files_side_by_side_with_zeros_where_one_lacks_a_word(tmp_path):
    first = tmp_path / "first.bin"
    first.write_bytes(_word2vec_binary(VECTORS))
    second = tmp_path / "second.txt.gz"
    second.write_bytes(gzip.compress(b"paris 7 8\nberlin 5 6\n"))
    assert embeddings_dims([str(first), str(second)]) == [3, 2]
    embeddings = read_embeddings([str(first), str(second)], show_progress=False)
    assert embeddings.dim == 5
    assert embeddings.words == ["berlin", "new_york", "über", "paris"]
    torch.testing.assert_close(embeddings.lookup("Berlin"), torch.tensor([1.0, 2, 3, 5, 6]))
    torch.testing.assert_close(embeddings.lookup("paris"), torch.tensor([0.0, 0, 0, 7, 8]))
    assert embeddings.subword_vector("rome") is None  # neither file has pieces of words


gensim = pytest.importorskip("gensim", reason="gensim (the reference reader) is not installed")


def test_word2vec_binary_made_by_gensim_reads_as_gensim_reads_it(tmp_path):
    from gensim.models import KeyedVectors, Word2Vec

    model = Word2Vec(SENTENCES, vector_size=6, min_count=1, seed=1, workers=1)
    path = tmp_path / "w2v.bin"
    model.wv.save_word2vec_format(str(path), binary=True)
    reference = KeyedVectors.load_word2vec_format(str(path), binary=True)
    embeddings = read_embeddings(str(path), show_progress=False)
    assert embeddings.words == list(reference.index_to_key)
    np.testing.assert_array_equal(embeddings.vectors.numpy(), reference.vectors)


@pytest.fixture(scope="module")
def fasttext_bin(tmp_path_factory):
    from gensim.models import FastText
    from gensim.models.fasttext import load_facebook_vectors, save_facebook_model

    model = FastText(
        SENTENCES, vector_size=8, min_count=1, bucket=2000, min_n=2, max_n=4, seed=1, workers=1
    )
    path = tmp_path_factory.mktemp("fasttext") / "model.bin"
    save_facebook_model(model, str(path))
    return path, load_facebook_vectors(str(path))


def test_fasttext_bin_made_by_gensim_gives_its_vectors_for_known_and_unseen_words(fasttext_bin):
    path, reference = fasttext_bin
    assert vector_format(str(path)) == "fasttext-bin"
    assert embeddings_dims([str(path)]) == [8]
    embeddings = read_embeddings(str(path), show_progress=False)
    assert embeddings.words == list(reference.index_to_key)
    for word in ["cat", "über", "catt", "übermat", "x", "Dog"]:
        np.testing.assert_allclose(
            embeddings.subword_vector(word).numpy(), reference[word], rtol=1e-5, atol=1e-7
        )
    np.testing.assert_allclose(
        embeddings.vectors_of([embeddings.index["mat"]])[0].numpy(), reference["mat"], rtol=1e-5
    )


def test_a_truncated_fasttext_bin_names_the_part_it_ends_in(tmp_path, fasttext_bin):
    data = fasttext_bin[0].read_bytes()
    cut = tmp_path / "cut.bin"
    for size, compress, message in (
        (40, COMPRESSORS["plain"], r"truncated\), in the training arguments"),
        (len(data) // 2, COMPRESSORS["plain"], r"the input matrix of 2010 x 8 values needs at "),
        (len(data) // 2, gzip.compress, r"truncated\), in the input matrix"),
    ):
        cut.write_bytes(compress(data[:size]))
        with pytest.raises(CrftagError, match=rf"cut.bin: byte \d+: .*{message}"):
            read_embeddings(str(cut), show_progress=False)


@pytest.mark.parametrize("dim", [0, -50, MAX_DIM + 1])
def test_a_fasttext_dimension_out_of_range_is_refused_before_any_allocation(
    tmp_path, fasttext_bin, dim
):
    data = bytearray(fasttext_bin[0].read_bytes())
    data[8:12] = struct.pack("<i", dim)  # the first training argument, after magic and version
    path = tmp_path / "dim.bin"
    path.write_bytes(bytes(data))
    message = rf"dim.bin: byte 64: the arguments say dim {dim}, expected 1 to {MAX_DIM}$"
    with pytest.raises(CrftagError, match=message):
        embeddings_dims([str(path)])
    with pytest.raises(CrftagError, match=message):
        read_embeddings(str(path), show_progress=False)


def test_training_infers_word_dim_from_two_files_and_builds_unseen_words_from_ngrams(
    invoke, tmp_path, tiny_args, fasttext_bin
):
    glove = tmp_path / "glove.txt"
    glove.write_text("berlin 0.5 0.5 0.5\n", encoding="utf-8")
    vectors = f"[{fasttext_bin[0]}, {glove}]"
    run = tmp_path / "run"
    settings = [*tiny_args(train__epochs=1), "--set", "model.word_dim=null"]
    args = ["train", "configs/sample.yaml", "-o", str(run), *settings]
    result = invoke([*args, "--set", f"model.embeddings={vectors}"])
    assert result.status == 0, result.stderr
    assert "more built from their character n-grams" in result.stderr
    state = torch.load(run / "model.pt", weights_only=True)
    assert state["config"]["model"]["word_dim"] == 11  # 8 + 3
    assert state["state_dict"]["word_embedding.weight"].shape[1] == 11
    result = invoke(
        [*args, "--overwrite", "--set", f"model.embeddings={vectors}"]
        + [
            "--set",
            "model.word_dim=12",
        ]
    )
    assert result.status == 2
    assert "vectors have 11 dimensions but model.word_dim is 12" in result.stderr
    assert "set model.word_dim: 11 or leave it out" in result.stderr
