"""Where the NumPy runtime spends its time: a cProfile of `ArrayTagger.tag` on one test file.

    python benchmarks/runtime_profile.py [en-ner|en-pos] [lines]

Exports the bundled model (into a temporary folder), warms the tagger up on 64 sentences, then
profiles tagging the whole file (eng.testb for en-ner, the EWT test file for en-pos) at batch 64
and prints the functions with the most cumulative and internal time (to stderr, the wall time
to stdout). Pair it with `benchmarks/runtime_parity.py`, which times both paths.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from runtime_parity import CASES  # noqa: E402

from crftag.data.conll import read_corpus  # noqa: E402
from crftag.inference.array_tagger import ArrayTagger  # noqa: E402
from crftag.modelfiles.checkpoint import export_arrays, load_model  # noqa: E402


def main(name: str = "en-ner", lines: int = 25) -> None:
    path, spec = next((path, spec) for case, path, spec in CASES if case == name)
    gold = read_corpus(path, spec)
    sentences = [list(sentence.tokens) for sentence in gold]
    documents = [sentence.document for sentence in gold]
    with tempfile.TemporaryDirectory() as folder:
        exported = os.path.join(folder, f"{name}.npz")
        export_arrays(exported, load_model(name))
        tagger = ArrayTagger.load(exported)
    tagger.tag(sentences[:64], 64, documents[:64])
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.runcall(tagger.tag, sentences, 64, documents)
    seconds = time.perf_counter() - start
    tokens = sum(map(len, sentences))
    print(f"{name}: {seconds:.2f} s profiled, {tokens / seconds:,.0f} tokens/s")
    stats = pstats.Stats(profile, stream=sys.stderr)
    stats.sort_stats("cumulative").print_stats(lines)
    stats.sort_stats("tottime").print_stats(lines)


if __name__ == "__main__":
    main(*sys.argv[1:2], *[int(value) for value in sys.argv[2:3]])
