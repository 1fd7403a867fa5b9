"""What a pretrained encoder (``model.transformer``) costs in time: tagging tokens/s of models
with and without one, timed alternately in one process, and the frozen encoder's extraction of
a file's sentences.

    python benchmarks/transformer_speed.py FILE --models A B ... [--rounds R] [--limit S]
    python benchmarks/transformer_speed.py FILE --extract ENCODER [--layers N] [--limit S]

``--models``: each model (a run directory, a checkpoint, a bundled name) tags FILE's sentences
(CoNLL, the first column; its first S with ``--limit``) in batches of 32, once to warm up,
then R rounds in turn; the best round's tokens/s is printed, loading not counted.
``--extract``: the encoder folder reads the distinct sentences as training does before its
first epoch (the mean of the last N layers, mean pooling), and its words/s is printed. Prints
one JSON line per measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

from crftag import load
from crftag.data.conll import ColumnSpec, open_binary, read_columns
from crftag.nn.transformer import TransformerWords, load_encoder_files, load_encoder_weights

BATCH = 32


def sentences_of(path: str) -> list[tuple[str, ...]]:
    with open_binary(path) as stream:
        spec = ColumnSpec.for_format("conll", 0, -1)
        return [tuple(sentence.tokens) for sentence in read_columns(stream, path, spec)]


def tagging_speed(paths: list[str], sentences: list, rounds: int) -> dict[str, float]:
    """{model: best tokens/s over ``rounds``}, the models taking turns each round."""
    taggers = {path: load(path, device="cpu") for path in paths}
    words = sum(map(len, sentences))
    best = dict.fromkeys(paths, 0.0)
    for round_number in range(rounds + 1):
        for path, tagger in taggers.items():
            started = time.perf_counter()
            for first in range(0, len(sentences), BATCH):
                tagger.tag([list(s) for s in sentences[first : first + BATCH]])
            if round_number:  # the first round warms up
                best[path] = max(best[path], words / (time.perf_counter() - started))
    return best


def extraction_speed(folder: str, sentences: list, layers: int) -> dict:
    module = TransformerWords(load_encoder_files(folder), layers=layers, pooling="mean")
    module.encoder.load_state_dict(load_encoder_weights(folder))
    module.eval()
    distinct = list(dict.fromkeys(sentences))
    started = time.perf_counter()
    module.extract(distinct, show_progress=False)
    seconds = time.perf_counter() - started
    words = sum(map(len, distinct))
    return {"sentences": len(distinct), "words": words, "seconds": round(seconds, 1),
            "words_per_second": round(words / seconds)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--models", nargs="*", default=[])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--extract", help="a Hugging Face model folder")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--limit", type=int, default=None, help="FILE's first sentences only")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sentences = sentences_of(args.file)[: args.limit]
    common = {"file": os.path.basename(args.file), "threads": args.threads}
    if args.models:
        for model, speed in tagging_speed(args.models, sentences, args.rounds).items():
            print(json.dumps({**common, "model": model, "tokens_per_second": round(speed)}))
    if args.extract:
        measured = extraction_speed(args.extract, sentences, args.layers)
        print(json.dumps({**common, "encoder": args.extract, **measured}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
