"""Training speed against a reference BiLSTM-CRF toolkit (flair), on the same machine, the same
CoNLL-2003 batches and the same network shape, timed in one process.

    python benchmarks/reference_training.py [--batches 200] [--rounds 2] [--record] [--json PATH]

Writes runs/bench/reference_training.json; --record replaces
benchmarks/results/reference_training.json (benchmarks/output.py).

flair is not a dependency of crftag: `make bench-reference` installs it (with torch pinned to the
CPU build) in its own virtual environment, .venv-reference.

Both sides train, on the first ``--batches`` batches of eng.train in crftag's training order
(batches of 10 sentences of similar length), this network: a 50-dimensional word embedding of the
training vocabulary (randomly initialised: speed does not depend on where vectors come from), a
character BiLSTM of 25 units each way (flair's CharacterEmbeddings; crftag's `char_encoder: lstm`,
Lample et al.), one word BiLSTM layer of 200 units each way, dropout 0.5, a linear layer to BIOES
tag scores and a CRF; SGD with momentum 0.9 at lr 0.015, gradient-norm clipping at 5. A step is
what each toolkit's trainer does per batch: batch to tensors, forward, CRF loss, backward,
clipping, optimizer step (and, for flair, clearing the stored embeddings, as its trainer does).
The two are timed in alternating rounds over the same batches, so a slow spell of the machine
hits both; the epoch figure scales the measured tokens/s to all of eng.train.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import sys
import time

import output  # benchmarks/output.py, beside this script
import torch

from crftag.config.sections import load_config
from crftag.data.conll import ColumnSpec, open_binary, read_columns
from crftag.data.indices import bucketed_batches
from crftag.data.schemes import to_spans
from crftag.nn.taggers import build_model
from crftag.training.corpus import build_vocabularies, encode_training_set, in_train_scheme
from crftag.training.embeddings import set_trained_rows
from crftag.training.optimizers import make_optimizer
from crftag.training.step import train_step, training_batch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONLL = os.path.join(ROOT, "..", "shared", "data", "conll2003")
OVERRIDES = [
    "model.embeddings=null",
    "vocab.embedding_words=0",
    "model.char_encoder=lstm",
    "model.char_dim=25",
    "model.char_size=25",
    "model.hidden_size=200",
    "train.word_dropout=0",
    # flair's network has no document context: the same shape on both sides, sentence batches.
    "model.document_context=false",
]


def read_train():
    path = os.path.join(CONLL, "eng.train")
    with open_binary(path) as stream:
        return list(read_columns(stream, path, ColumnSpec("conll", 0, -1)))


class Crftag:
    """crftag's training step, as `crftag train` runs it: its own batches and train_step."""

    name = "crftag"

    def __init__(self, sentences):
        config = load_config(os.path.join(ROOT, "configs", "conll03.yaml"), OVERRIDES)
        self.settings = config.train
        files = [("eng.train", sentences)]
        vocabularies = build_vocabularies(config, in_train_scheme(sentences, "bioes"), "bioes")
        self.training = encode_training_set(files, vocabularies, "iob1", "bioes")
        self.model = build_model(config, vocabularies, "bioes")
        set_trained_rows(self.model, config, self.training.words)
        self.optimizer = make_optimizer(config, self.model)
        self.no_singletons = torch.zeros(len(vocabularies.words), dtype=torch.bool)
        self.model.train()

    def step(self, rows):
        batch = training_batch(
            self.training,
            rows,
            document_context=False,
            singletons=self.no_singletons,
            word_dropout=0.0,
        )
        train_step(self.model, self.optimizer, batch, self.settings)


class Flair:
    """flair's SequenceTagger with a CRF, stepped as flair's ModelTrainer steps it."""

    name = "flair"

    def __init__(self, sentences):
        import flair
        from flair.data import Dictionary, Sentence
        from flair.embeddings import CharacterEmbeddings, OneHotEmbeddings, StackedEmbeddings
        from flair.models import SequenceTagger
        from flair.training_utils import store_embeddings

        flair.device = torch.device("cpu")
        logging.getLogger("flair").setLevel(logging.WARNING)  # it logs the whole vocabulary
        self.store_embeddings = store_embeddings
        words = Dictionary(add_unk=True)
        characters = Dictionary(add_unk=True)  # from the training data, as crftag's are
        types = Dictionary(add_unk=False)
        types.span_labels = True
        self.sentences = []
        for s in sentences:
            sentence = Sentence(list(s.tokens))
            for token in s.tokens:
                words.add_item(token)
                for character in token:
                    characters.add_item(character)
            for span in to_spans(s.tags):
                sentence[span.start : span.end].add_label("ner", span.label)
                types.add_item(span.label)
            self.sentences.append(sentence)
        embeddings = StackedEmbeddings(
            [
                OneHotEmbeddings(words, embedding_length=50),
                CharacterEmbeddings(characters, char_embedding_dim=25, hidden_size_char=25),
            ]
        )
        self.model = SequenceTagger(
            hidden_size=200,
            embeddings=embeddings,
            tag_dictionary=types,
            tag_type="ner",
            tag_format="BIOES",
            use_crf=True,
            reproject_embeddings=False,
            dropout=0.5,
            word_dropout=0.0,
            locked_dropout=0.0,
        )
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.015, momentum=0.9)
        self.model.train()

    def step(self, rows):
        batch = [self.sentences[i] for i in rows]
        loss, _ = self.model.forward_loss(batch)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 5.0)
        self.optimizer.step()
        self.store_embeddings(batch, "none")


def timed(toolkit, batches) -> float:
    started = time.perf_counter()
    for rows in batches:
        toolkit.step(rows)
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", help="write here instead (default: see --record)")
    output.add_record_option(parser)
    args = parser.parse_args()
    args.json = args.json or output.result_path("reference_training.json", args.record)
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    sentences = read_train()
    lengths = [len(s.tokens) for s in sentences]
    batches = bucketed_batches(lengths, 10, random.Random(1))[: args.batches]
    tokens = sum(lengths[i] for rows in batches for i in rows)
    toolkits = [Crftag(sentences), Flair(sentences)]
    for toolkit in toolkits:  # warm-up, outside the timing
        timed(toolkit, batches[:5])
    seconds = {toolkit.name: 0.0 for toolkit in toolkits}
    for round_number in range(args.rounds):
        for toolkit in toolkits if round_number % 2 == 0 else toolkits[::-1]:
            seconds[toolkit.name] += timed(toolkit, batches)
            print(f"round {round_number + 1}: {toolkit.name} done", file=sys.stderr, flush=True)
    epoch_tokens = sum(lengths)
    report = {
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "threads": args.threads,
            "torch": torch.__version__,
        },
        "batches": len(batches),
        "rounds": args.rounds,
        "tokens_per_round": tokens,
    }
    for name, total in seconds.items():
        per_second = tokens * args.rounds / total
        report[name] = {
            "seconds": total,
            "tokens_per_second": per_second,
            "epoch_seconds_scaled": epoch_tokens / per_second,
        }
    report["speedup"] = seconds["flair"] / seconds["crftag"]
    for name in seconds:
        figures = report[name]
        print(
            f"{name:<8}{figures['tokens_per_second']:>10,.0f} tokens/s"
            f"{figures['epoch_seconds_scaled']:>10,.0f} s per eng.train epoch (scaled)"
        )
    print(f"crftag is {report['speedup']:.2f}x faster per training step")
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)


if __name__ == "__main__":
    main()
