"""benchmarks/domain_vectors.py: the text split as crftag predict splits it, and a fastText
.bin that model.embeddings reads with the vectors gensim gives."""

import subprocess
import sys

import numpy as np
import pytest

from crftag.data.vectors import embeddings_dims, read_embeddings

pytest.importorskip("gensim")

LINES = [
    "Aspirin (low-dose) reduced the risk of stroke.",
    "Low-dose aspirin and warfarin were compared in 120 patients.",
    "",
    "Warfarin-induced bleeding was rare.",
] * 5


@pytest.fixture
def domain_vectors(load_benchmark):
    return load_benchmark("domain_vectors")


def test_lines_are_split_by_crftags_tokenizer_and_blank_ones_skipped(domain_vectors, tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    sentences = domain_vectors.tokenized_lines(str(text))
    assert len(sentences) == 15
    assert " ".join(sentences[0]) == "Aspirin ( low-dose ) reduced the risk of stroke ."


def test_the_written_bin_is_read_with_gensims_vectors(tmp_path):
    from gensim.models.fasttext import load_facebook_vectors

    text = tmp_path / "text.txt"
    text.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = tmp_path / "vectors.bin"
    argv = [sys.executable, "benchmarks/domain_vectors.py", str(text), "-o", str(out)]
    argv += ["--dim", "2", "--epochs", "1", "--min-count", "2"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    # 10 + 10 + 5 tokens, five times; each of the 23 distinct ones seen 5 times, kept.
    assert "23 words of 125 tokens in 15 lines, 2 dimensions" in done.stderr
    assert embeddings_dims([str(out)]) == [2]
    reference = load_facebook_vectors(str(out))
    embeddings = read_embeddings(str(out), show_progress=False)
    assert embeddings.words == list(reference.index_to_key)
    assert "(" in embeddings.words and "low-dose" in embeddings.words
    for word in ["aspirin", "Warfarin-induced", "asprin"]:  # the last one unseen: n-grams
        np.testing.assert_allclose(
            embeddings.subword_vector(word).numpy(), reference[word], rtol=1e-5, atol=1e-7
        )
