"""`crftag predict`'s own path, timed and profiled: `predict_files` (read, tokenise, batch,
encode, decode, write) on the text of eng.testb with the bundled en-ner, in-process, so
start-up is excluded.

    python benchmarks/predict_speed.py [--format conll|jsonl] [--cold] [--runs 5] [--profile]

The tagger is the one `crftag predict` loads (the shipped NumPy export). By default it is
warmed up by one untimed run and then keeps its character encodings across runs, as
benchmarks/runtime_speed.py times it; with --cold each run loads a fresh tagger, as one
`crftag predict` process starts. `--format jsonl` also asks for `--probs`. Prints the median
tokens/s and every run's; --profile prints a cProfile of one run instead (to stderr).
To compare two commits, run this from each checkout in turn, alternating, on a quiet machine.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from crftag.data.conll import ColumnSpec, read_corpus  # noqa: E402
from crftag.inference.loading import load_tagger  # noqa: E402
from crftag.inference.streaming import predict_files  # noqa: E402

TESTB = os.path.join(HERE, "..", "..", "shared", "data", "conll2003", "eng.testb")


def write_tokens(path: str) -> int:
    """eng.testb's sentences as token lines (`--input-format tokens`); returns the tokens."""
    sentences = [list(sentence.tokens) for sentence in read_corpus(TESTB, ColumnSpec())]
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(" ".join(sentence) + "\n" for sentence in sentences)
    return sum(map(len, sentences))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=("conll", "jsonl"), default="conll")
    parser.add_argument("--cold", action="store_true", help="a fresh tagger for every run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        source = os.path.join(directory, "testb.tokens")
        tokens = write_tokens(source)
        tagger = load_tagger("en-ner")

        def run() -> None:
            with open(os.devnull, "w", encoding="utf-8") as sink:
                predict_files(
                    tagger,
                    [source],
                    input_format="tokens",
                    output_format=args.format,
                    batch_size=64,
                    output=sink,
                    probs="tag" if args.format == "jsonl" else None,
                )

        if not args.cold:
            run()
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(run)
            stats = pstats.Stats(profile, stream=sys.stderr)
            stats.sort_stats("tottime").print_stats(30)
            stats.sort_stats("cumulative").print_stats(40)
            return
        rates = []
        for _ in range(args.runs):
            if args.cold:
                tagger = load_tagger("en-ner")
            started = time.perf_counter()
            run()
            rates.append(tokens / (time.perf_counter() - started))
    mode = "cold" if args.cold else "warm"
    print(
        f"predict {args.format} {mode}: median {statistics.median(rates):,.0f} tokens/s "
        f"({', '.join(f'{rate:,.0f}' for rate in rates)})"
    )


if __name__ == "__main__":
    main()
