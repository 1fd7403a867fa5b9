"""`crftag predict`'s own path, timed and profiled: `predict_files` (read, tokenise, batch,
encode, decode, write) on the text of eng.testb with the bundled en-ner, in-process, so
start-up is excluded.

    python benchmarks/predict_speed.py [--format conll|jsonl] [--cold] [--runs 5] [--profile]
                                       [--encoder]

The tagger is the one `crftag predict` loads (the shipped NumPy export). By default it is
warmed up by one untimed run and then keeps its character encodings across runs, as
benchmarks/runtime_speed.py times it; with --cold each run loads a fresh tagger, as one
`crftag predict` process starts. `--format jsonl` also asks for `--probs`. Prints the median
tokens/s and every run's; --profile prints a cProfile of one run instead (to stderr).
--encoder times the network alone (emission scores, the compiled loops on the threads predict
gives them) on the very batches predict makes, alternately with whole runs, and prints the
median ratio of the pairs, as benchmarks/speed.py does for the torch path.
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
from crftag.inference.loading import load  # noqa: E402
from crftag.inference.streaming import predict_files  # noqa: E402

TESTB = os.path.join(HERE, "..", "..", "shared", "data", "conll2003", "eng.testb")


def write_tokens(path: str) -> list[list[str]]:
    """eng.testb's sentences as token lines (`--input-format tokens`); returns the sentences."""
    sentences = [list(sentence.tokens) for sentence in read_corpus(TESTB, ColumnSpec())]
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(" ".join(sentence) + "\n" for sentence in sentences)
    return sentences


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=("conll", "jsonl"), default="conll")
    parser.add_argument("--cold", action="store_true", help="a fresh tagger for every run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--encoder", action="store_true", help="the ratio to the network alone")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        source = os.path.join(directory, "testb.tokens")
        tokens = sum(map(len, write_tokens(source)))
        tagger = load("en-ner")

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
        if args.encoder:
            ratio_to_encoder(tagger, run, tokens, args.runs)
            return
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
                tagger = load("en-ner")
            started = time.perf_counter()
            run()
            rates.append(tokens / (time.perf_counter() - started))
    mode = "cold" if args.cold else "warm"
    print(
        f"predict {args.format} {mode}: median {statistics.median(rates):,.0f} tokens/s "
        f"({', '.join(f'{rate:,.0f}' for rate in rates)})"
    )


def ratio_to_encoder(tagger, run, tokens: int, pairs: int) -> None:
    """Whole runs against the network alone on the batches a run scores, alternately."""
    batches = []
    emissions = tagger._emissions
    tagger._emissions = lambda batch: batches.append(batch) or emissions(batch)
    run()
    del tagger._emissions

    def encoder() -> None:
        with tagger._running():
            for batch in batches:
                tagger._emissions(batch)

    timed = []
    for _ in range(pairs):
        started = time.perf_counter()
        encoder()
        middle = time.perf_counter()
        run()
        timed.append((middle - started, time.perf_counter() - middle))
    encoder_s = statistics.median(first for first, _ in timed)
    whole_s = statistics.median(second for _, second in timed)
    ratio = statistics.median(second / first for first, second in timed)
    print(
        f"predict {tokens / whole_s:,.0f} tokens/s, the network alone {tokens / encoder_s:,.0f}:"
        f" predict / network {ratio:.2f}x (median of {pairs} pairs)"
    )


if __name__ == "__main__":
    main()
