"""The ONNX export against the NumPy runtime on eng.testb, in one process.

    python benchmarks/onnx_parity.py [--runs 3]

Exports the bundled `en-ner` checkpoint with `crftag export --format onnx` (into a temporary
folder), then with the bundled NumPy export and the ONNX file:

- predicts every sentence of `eng.testb` (documents as the file marks them, `probs="tag"`,
  `nbest=3`) and prints how many sentences got identical tags and the largest difference in
  sequence probability, token probability, span confidence and n-best probability;
- times `tag` on the whole file (batch 64) and the network alone on the same batches
  (`_emissions`), alternately, and prints the medians in tokens/s and the ratio.

Needs `pip install 'crftag[onnx]'` and torch (for the export).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from runtime_parity import largest_differences  # noqa: E402

from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402
from crftag.inference.array_tagger import ArrayTagger  # noqa: E402
from crftag.inference.onnx_tagger import OnnxTagger  # noqa: E402
from crftag.modelfiles.checkpoint import exported_arrays, load_model  # noqa: E402
from crftag.modelfiles.onnx_export import write_onnx  # noqa: E402
from crftag.modelfiles.registry import shipped_export  # noqa: E402

TEST_FILE = os.path.join(ROOT, "..", "shared", "data", "conll2003", "eng.testb")


def tag_seconds(tagger, sentences, documents) -> float:
    start = time.perf_counter()
    tagger.tag(sentences, 64, documents)
    return time.perf_counter() - start


def network_seconds(tagger, sentences, documents) -> float:
    """The network alone, on the batches the tagger builds (building them not counted)."""
    batches = [batch for _, batch in tagger._batches(sentences, 64, documents)]
    with tagger._running():
        start = time.perf_counter()
        for batch in batches:
            tagger._emissions(batch)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()
    gold = read_corpus(TEST_FILE, ColumnSpec())
    sentences = [list(sentence.tokens) for sentence in gold]
    documents = [sentence.document for sentence in gold]
    tokens = sum(map(len, sentences))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "en-ner.onnx")
        write_onnx(path, *exported_arrays(path, load_model("en-ner")))
        taggers = {
            "numpy": ArrayTagger.load(shipped_export("en-ner")),
            "onnx": OnnxTagger.load(path),
        }
        options = {"probs": "tag", "nbest": 3, "documents": documents}
        expected = taggers["numpy"].predict(sentences, **options)
        actual = taggers["onnx"].predict(sentences, **options)
        same = sum(a.tags == b.tags for a, b in zip(expected, actual, strict=True))
        print(f"en-ner eng.testb: identical tags {same}/{len(sentences)} sentences")
        differences = largest_differences(expected, actual)
        print("largest difference " + ", ".join(f"{k} {v:.1e}" for k, v in differences.items()))
        for measure in (tag_seconds, network_seconds):
            seconds = {name: [] for name in taggers}
            for _ in range(arguments.runs):
                for name, tagger in taggers.items():
                    seconds[name].append(measure(tagger, sentences, documents))
            medians = {name: statistics.median(values) for name, values in seconds.items()}
            print(
                f"{measure.__name__} ({tokens:,} tokens, median of {arguments.runs}): "
                + ", ".join(f"{name} {tokens / s:,.0f} tokens/s" for name, s in medians.items())
                + f"; NumPy runtime {medians['onnx'] / medians['numpy']:.2f}x ONNX Runtime"
            )


if __name__ == "__main__":
    main()
