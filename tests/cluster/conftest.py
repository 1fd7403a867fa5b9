import subprocess
import sys

import pytest

from crftag.data.conll import ColumnSpec, read_corpus

SAMPLES = [
    ("data/ner_sample.train.conll", "conll"),
    ("data/ner_sample.dev.conll", "conll"),
    ("data/ner_sample.test.conll", "conll"),
    ("data/ewt_sample.train.conllu", "conllu"),
    ("data/ewt_sample.dev.conllu", "conllu"),
]
# Lines a text file can hold beyond plain sentences: empty, non-ASCII, one long line.
EDGES = ["", "Zoë Ştefănescu flew to Zürich .", " ".join(["Berlin", "and", "Paris"] * 400)]


@pytest.fixture(scope="session")
def cluster_texts(tmp_path_factory):
    """(texts file, crftag predict --format jsonl's output on it): the bundled samples' 2,600
    sentences as text lines, with the edge lines among them."""
    lines = []
    for path, file_format in SAMPLES:
        for sentence in read_corpus(path, ColumnSpec.for_format(file_format)):
            lines.append(" ".join(sentence.tokens))
    for offset, edge in enumerate(EDGES):
        lines.insert(100 + 700 * offset, edge)
    folder = tmp_path_factory.mktemp("cluster")
    texts = folder / "texts.txt"
    texts.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "crftag",
            "predict",
            "-m",
            "en-ner",
            "--format",
            "jsonl",
            str(texts),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return texts, done.stdout
