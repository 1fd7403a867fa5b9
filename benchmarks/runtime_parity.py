"""The NumPy runtime against the torch tagger on the real test files, in one process.

    python benchmarks/runtime_parity.py

Exports the bundled `en-ner` and `en-pos` with `crftag export --format numpy` (into a temporary
folder), tags `eng.testb` and the EWT test file with both `Tagger.tag` and `ArrayTagger.tag`
(batch 64, documents as the files mark them), and prints how many sentences got identical tags
and each path's tokens/s. Each path is warmed up on 64 sentences first. Then both predict every
sentence with `probs="tag"` and `nbest=3`, and it prints the largest difference between the two
paths in sequence probability, token probability, span confidence and n-best probability.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402
from crftag.inference.array_tagger import ArrayTagger  # noqa: E402
from crftag.inference.tagger import Tagger  # noqa: E402
from crftag.modelfiles.checkpoint import export_arrays, load_model  # noqa: E402

DATA = os.path.join(ROOT, "..", "shared", "data")
CASES = [
    ("en-ner", os.path.join(DATA, "conll2003", "eng.testb"), ColumnSpec()),
    (
        "en-pos",
        os.path.join(DATA, "ud_english_ewt", "en_ewt-ud-test.conllu"),
        ColumnSpec.for_format("conllu"),
    ),
]


def timed(tag, sentences, documents) -> tuple[list, float]:
    tag(sentences[:64], 64, documents[:64])
    start = time.perf_counter()
    tags = tag(sentences, 64, documents)
    return tags, time.perf_counter() - start


def largest_differences(expected, actual) -> dict[str, float]:
    """The largest absolute difference of each probability field between two predictions."""
    largest = {"probability": 0.0, "token_probs": 0.0, "confidence": 0.0, "nbest": 0.0}
    for left, right in zip(expected, actual, strict=True):
        assert left.tags == right.tags and len(left.spans) == len(right.spans)
        pairs = {
            "probability": [(left.probability, right.probability)],
            "token_probs": zip(left.token_probs, right.token_probs, strict=True),
            "confidence": [
                (a["confidence"], b["confidence"])
                for a, b in zip(left.spans, right.spans, strict=True)
            ],
            "nbest": [
                (a["probability"], b["probability"])
                for a, b in zip(left.nbest, right.nbest, strict=True)
            ],
        }
        for field, values in pairs.items():
            for a, b in values:
                largest[field] = max(largest[field], abs(a - b))
    return largest


def main() -> None:
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as folder:
        for name, path, spec in CASES:
            exported = os.path.join(folder, f"{name}.npz")
            loaded = load_model(name)  # the bundled export, rebuilt in torch
            export_arrays(exported, loaded)
            gold = read_corpus(path, spec)
            sentences = [list(sentence.tokens) for sentence in gold]
            documents = [sentence.document for sentence in gold]
            tokens = sum(map(len, sentences))
            torch_tags, torch_seconds = timed(Tagger.from_loaded(loaded).tag, sentences, documents)
            array_tags, array_seconds = timed(ArrayTagger.load(exported).tag, sentences, documents)
            same = sum(a == b for a, b in zip(torch_tags, array_tags, strict=True))
            print(
                f"{name} {os.path.basename(path)}: identical tags {same}/{len(sentences)}; "
                f"torch {tokens / torch_seconds:,.0f} tokens/s, NumPy "
                f"{tokens / array_seconds:,.0f} tokens/s, ratio {torch_seconds / array_seconds:.2f}"
            )
            options = {"probs": "tag", "nbest": 3, "documents": documents}
            differences = largest_differences(
                Tagger.from_loaded(loaded).predict(sentences, **options),
                ArrayTagger.load(exported).predict(sentences, **options),
            )
            print(
                f"{name}: largest difference "
                + ", ".join(f"{field} {value:.1e}" for field, value in differences.items())
            )


if __name__ == "__main__":
    main()
