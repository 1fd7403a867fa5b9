"""Hostile vector files for `model.embeddings` (word2vec and fastText `.bin`, text, plain or
compressed), through `crftag train` with `model.word_dim` left to the file: each is one line
naming the file, before any training, and the file is left as it was."""

import bz2
import gzip
import lzma
import struct

import pytest
from hostile_files import (
    PNG,
    assert_refused,
    assert_training_refuses,
    flipped,
    truncated,
    word2vec_binary,
)

from crftag.data.vector_binaries import FASTTEXT_MAGIC

VECTORS = {f"word{i}": [i / 3, -i / 7, 1.0] for i in range(300)}
GOOD = word2vec_binary(VECTORS)
HUGE = word2vec_binary(dict(list(VECTORS.items())[:3]), header=b"1999999 5000\n")


def fasttext_arguments(dim: int) -> bytes:
    """A fastText .bin's start: magic, version, and its training arguments with ``dim``."""
    arguments = struct.pack("<12id", dim, 5, 5, 1, 5, 1, 1, 1, 2000, 3, 6, 100, 1e-4)
    return struct.pack("<ii", FASTTEXT_MAGIC, 12) + arguments


CASES = {
    "empty": (b"", "vectors"),
    "truncated": (truncated(GOOD), "truncated"),
    "truncated-gzip": (truncated(gzip.compress(GOOD)), "truncated"),
    "flipped-xz": (flipped(lzma.compress(GOOD)), "corrupt xz data"),
    "flipped-gzip": (flipped(gzip.compress(GOOD)), "gzip"),
    "flipped-bzip2": (flipped(bz2.compress(GOOD)), ""),
    "flipped-text": (flipped(b"".join(b"w%d 0.5 0.25\n" % i for i in range(200))), "UTF-8"),
    "png": (PNG, ""),
    "latin-1": (b"caf\xe9 0.5 0.25\n", "UTF-8"),
    "word2vec-dim-0": (b"3 0\n", "3 vectors of 0 dimensions"),
    "word2vec-promise": (HUGE, "needs at least"),
    "word2vec-promise-xz": (lzma.compress(HUGE), "truncated"),
    "word2vec-nan": (word2vec_binary({"a": [1.0, 2.0], "b": [float("nan"), 1.0]}), "NaN"),
    "text-nan": (b"a 0.5 nan\n", "finite"),
    "text-inf": (b"a 0.5 1e999\n", "finite"),
    "fasttext-dim-0": (fasttext_arguments(0), "dim 0, expected 1 to"),
    "fasttext-dim-negative": (fasttext_arguments(-50), "dim -50, expected 1 to"),
    "fasttext-truncated": (fasttext_arguments(8)[:30], "truncated"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_hostile_vector_file_is_one_line_naming_it(invoke, tiny_args, tmp_path, case):
    data, message = CASES[case]

    def setting(path):
        return ["model.word_dim=null", f"model.embeddings={path}"]

    assert_training_refuses(invoke, tiny_args(), tmp_path, data, setting, message)


def test_a_folder_as_the_vector_file_is_one_line(invoke, tiny_args, tmp_path):
    settings = ["--set", "model.word_dim=null", "--set", f"model.embeddings={tmp_path}"]
    result = invoke(["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *settings])
    assert_refused(result, tmp_path, "directory")
