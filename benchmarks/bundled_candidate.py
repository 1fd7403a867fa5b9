"""A candidate for a bundled model against today's file: its size, its tagging speed and its
one-sentence `crftag predict`, measured alternately in one run, each within 5% of today's.

    python benchmarks/bundled_candidate.py NAME CANDIDATE [--rounds 5] [--starts 10]
        [--json PATH] [--record]

NAME is a bundled model (en-ner, en-pos); CANDIDATE its would-be successor packed as the bundled
files are (`crftag export RUN OUT --format numpy --int8`). Measured, the two files taking turns
(A B, then B A, so that a slow spell of a shared machine falls on both):

- bytes: each file's size;
- tagging: each file's tokens/s as `crftag predict -m FILE` tags (the NumPy runtime), in this
  process, over the sentences of the task's test file (benchmarks/model_card.py's: eng.testb
  for a model of spans, EWT test otherwise), one untimed pass each first; ``--rounds`` pairs;
- one sentence: the wall time of `crftag predict -m FILE` as a whole process given one
  sentence on stdin, ``--starts`` pairs.

Each speed is the median of the pairs' ratios (candidate over today's). The candidate passes if
its bytes are at most 1.05 times today's, its tagging at least 0.95 times today's tokens/s, and
its one sentence at most 1.05 times today's time; misses are printed and the command exits 1.
Writes runs/bench/bundled_candidate.json (``--record``: benchmarks/results/, see
benchmarks/output.py), keyed by NAME, with the load average before and after.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks import output  # noqa: E402
from benchmarks.model_card import CORPORA  # noqa: E402
from benchmarks.provenance import commit  # noqa: E402
from benchmarks.startup import CRFTAG_PREDICT, SENTENCE, environment, timed_run  # noqa: E402
from crftag.inference.loading import load  # noqa: E402
from crftag.modelfiles.registry import BUNDLED_MODELS, MODELS_DIR  # noqa: E402
from crftag.scoring.files import gold_sentences  # noqa: E402

RESULTS_NAME = "bundled_candidate.json"
MARGIN = 0.05  # how far each figure may move against today's file


def test_tokens(tagger) -> list[list[str]]:
    """The tokens of the sentences of the test file of ``tagger``'s task."""
    corpus = CORPORA["ner" if tagger.tags_are_spans else "pos"]
    gold = gold_sentences(tagger, corpus.files["test"], data_format=corpus.format)
    return [list(sentence.tokens) for sentence in gold]


def alternating(measure, pairs: int) -> dict[str, list[float]]:
    """``measure(name)`` of "today" and "candidate" in ``pairs`` pairs, which goes first
    alternating, so that a slow spell of a shared machine falls on both."""
    found = {"today": [], "candidate": []}
    for pair in range(pairs):
        for name in ("today", "candidate") if pair % 2 == 0 else ("candidate", "today"):
            found[name].append(measure(name))
    return found


def median_ratio(found: dict[str, list[float]]) -> float:
    """The median over the pairs of candidate / today."""
    pairs = zip(found["candidate"], found["today"], strict=True)
    return round(statistics.median(c / t for c, t in pairs), 3)


def tagging_ratios(files: dict[str, str], rounds: int) -> dict:
    """Tokens/s of each file's tagger over the task's test sentences, in ``rounds`` pairs,
    after one untimed pass each (first-use costs: caches, pages)."""
    taggers = {name: load(path, "cpu") for name, path in files.items()}
    sentences = test_tokens(taggers["today"])
    tokens = sum(map(len, sentences))
    for tagger in taggers.values():
        tagger.tag(sentences)

    def speed(name: str) -> float:
        started = time.perf_counter()
        taggers[name].tag(sentences)
        return tokens / (time.perf_counter() - started)

    speeds = alternating(speed, rounds)
    return {
        "tokens": tokens,
        "today_tokens_per_second": round(statistics.median(speeds["today"])),
        "candidate_tokens_per_second": round(statistics.median(speeds["candidate"])),
        "ratio": median_ratio(speeds),
    }


def start_ratios(files: dict[str, str], starts: int) -> dict:
    """Wall seconds of a whole `crftag predict -m FILE` process given one sentence
    (benchmarks/startup.py's timing, this checkout's crftag), in ``starts`` pairs after one
    untimed start each (bytecode and the page cache as a user's second run has them)."""
    children = environment()

    def seconds(name: str) -> float:
        return timed_run([*CRFTAG_PREDICT, "-m", files[name]], SENTENCE, children)[0]

    alternating(seconds, 1)
    times = alternating(seconds, starts)
    return {
        "today_seconds": round(statistics.median(times["today"]), 3),
        "candidate_seconds": round(statistics.median(times["candidate"]), 3),
        "ratio": median_ratio(times),
    }


def misses(entry: dict) -> list[str]:
    """The figures on which the candidate moves more than MARGIN against today's file."""
    found = []
    if entry["bytes"]["ratio"] > 1 + MARGIN:
        found.append(f"size: {entry['bytes']['ratio']:.3f} times today's bytes")
    if entry["tagging"]["ratio"] < 1 - MARGIN:
        found.append(f"tagging: {entry['tagging']['ratio']:.3f} times today's tokens/s")
    if entry["one_sentence"]["ratio"] > 1 + MARGIN:
        found.append(f"one sentence: {entry['one_sentence']['ratio']:.3f} times today's time")
    return found


def measure(name: str, candidate: str, rounds: int, starts: int) -> dict:
    """The entry of ``candidate`` against crftag/models/NAME.npz."""
    files = {"today": os.path.join(MODELS_DIR, f"{name}.npz"), "candidate": candidate}
    sizes = {which: os.path.getsize(path) for which, path in files.items()}
    load_before = round(os.getloadavg()[0], 2)
    entry = {
        "candidate": os.path.relpath(os.path.abspath(candidate), ROOT),
        "bytes": sizes | {"ratio": round(sizes["candidate"] / sizes["today"], 4)},
        "tagging": tagging_ratios(files, rounds),
        "one_sentence": start_ratios(files, starts),
        "load_average": [load_before, round(os.getloadavg()[0], 2)],
        "margin": MARGIN,
        "date": datetime.date.today().isoformat(),
        "commit": commit(),
    }
    entry["misses"] = misses(entry)
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=sorted(BUNDLED_MODELS))
    parser.add_argument("candidate", help="the packed .npz that would replace NAME's")
    parser.add_argument("--rounds", type=int, default=5, help="pairs of tagging passes")
    parser.add_argument("--starts", type=int, default=10, help="pairs of one-sentence starts")
    parser.add_argument("--json", help="write the results here (default: benchmarks/output.py)")
    output.add_record_option(parser)
    options = parser.parse_args(argv)
    if options.rounds < 1 or options.starts < 1:
        parser.error("--rounds and --starts take at least 1")
    entry = measure(options.name, options.candidate, options.rounds, options.starts)
    output.merge_entries(RESULTS_NAME, {options.name: entry}, options.record, options.json)
    print(
        f"{options.name}: bytes {entry['bytes']['ratio']:.3f}x, tagging "
        f"{entry['tagging']['ratio']:.3f}x, one sentence {entry['one_sentence']['ratio']:.3f}x "
        f"of today's (load {entry['load_average'][0]} to {entry['load_average'][1]})"
    )
    for miss in entry["misses"]:
        print(
            f"{options.name}: candidate misses the {MARGIN:.0%} margin on {miss}", file=sys.stderr
        )
    return 1 if entry["misses"] else 0


if __name__ == "__main__":
    sys.exit(main())
