"""Adapting a model to a new genre with ``train.init_from``, on UD English-EWT's genres.

    python benchmarks/adaptation.py [--adapt-sentences N] [--base-epochs E] [--epochs E]

EWT's ``# sent_id`` names each sentence's genre. A base UPOS model is trained on the training
sentences of four genres (answers, email, newsgroup, weblog); the fifth, reviews, is the new
domain: the first N of its training sentences (in file order) are all the new data. Four models
are scored on the test set's reviews sentences (new) and on its other genres' (old):

    base          the base model, not adapted
    scratch       a new model trained on the N reviews sentences alone
    init_from     the base model trained on, with ``train.init_from``, on the N sentences
    + rehearsal   the same with ``train.rehearsal``: as many old-genre training sentences

"old NLL/token" is the mean CRF negative log-likelihood of the gold tags per token on the old
genres' test sentences (those whose tags the model knows): how much of the old domain a model
keeps. One recipe for all (configs/sample_pos.yaml-like: no pretrained vectors, char CNN, 64
units, Adam), seed 1, the last epoch's weights (no dev set is used). The bundled en-pos is not
the base: it was trained on all of EWT train + dev, reviews included. Writes
runs/bench/adaptation.json (with --record, benchmarks/results/adaptation.json:
benchmarks/output.py) and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import output  # noqa: E402  (benchmarks/output.py, beside this script)
import torch  # noqa: E402

from crftag.config.sections import Config  # noqa: E402
from crftag.data.batching import build_batch, encode  # noqa: E402
from crftag.data.conll import Sentence  # noqa: E402
from crftag.inference.tagger import Tagger  # noqa: E402
from crftag.modelfiles.checkpoint import save_model  # noqa: E402
from crftag.scoring.evaluate import score_sentences  # noqa: E402
from crftag.training.run import train_in_memory  # noqa: E402

EWT = os.path.join(ROOT, "..", "shared", "data", "ud_english_ewt")
NEW_GENRE = "reviews"
RECIPE = {
    "data": {"train": "-", "format": "conllu", "tag_scheme": "none"},
    "model": {"word_dim": 50, "char_encoder": "cnn", "hidden_size": 64, "dropout": 0.3},
    "train": {"optimizer": "adam", "lr": 0.005, "batch_size": 16, "loss_reduction": "mean"},
}


def read_genres(path: str) -> list[tuple[str, Sentence]]:
    """(genre, sentence) for every sentence of an EWT file, in file order."""
    with open(path, encoding="utf-8") as handle:
        genres = [
            line.split("=", 1)[1].strip().split("-")[0]
            for line in handle
            if line.startswith("# sent_id")
        ]
    sentences = Config.from_dict(RECIPE).data.read(path)
    assert len(genres) == len(sentences), (len(genres), len(sentences))
    return list(zip(genres, sentences, strict=True))


def write_conllu(path: str, sentences: list[Sentence]) -> None:
    """FORM and UPOS of ``sentences`` as a CoNLL-U file (the rehearsal file)."""
    with open(path, "w", encoding="utf-8") as handle:
        for sentence in sentences:
            for number, (form, tag) in enumerate(
                zip(sentence.tokens, sentence.tags, strict=True), 1
            ):
                handle.write(f"{number}\t{form}\t_\t{tag}\t_\t_\t_\t_\t_\t_\n")
            handle.write("\n")


def config(epochs: int, **train) -> Config:
    return Config.from_dict({**RECIPE, "train": {**RECIPE["train"], "epochs": epochs, **train}})


def old_nll(tagger: Tagger, sentences: list[Sentence]) -> tuple[float, int]:
    """Mean CRF NLL per token of the gold tags, over the sentences whose tags the model has."""
    vocabularies = tagger.loaded.vocabularies
    known = [s for s in sentences if all(t in vocabularies.tags for t in s.tags)]
    total, tokens = 0.0, 0
    model = tagger.loaded.model.eval()
    with torch.no_grad():
        for start in range(0, len(known), 64):
            chunk = known[start : start + 64]
            encoded = [encode(s.tokens, vocabularies, s.tags) for s in chunk]
            batch = build_batch([s.tokens for s in chunk], vocabularies, encoded=encoded)
            total += float(model.loss(batch, reduction="sum"))
            tokens += sum(len(s.tokens) for s in chunk)
    return total / tokens, len(known)


def measure(name: str, tagger: Tagger, new_test: list, old_test: list, seconds: float) -> dict:
    nll, covered = old_nll(tagger, old_test)
    row = {
        "new_accuracy": 100 * score_sentences(tagger, new_test)["accuracy"],
        "old_accuracy": 100 * score_sentences(tagger, old_test)["accuracy"],
        "old_nll_per_token": nll,
        "old_sentences_scored_for_nll": covered,
        "train_seconds": round(seconds, 1),
    }
    print(name, json.dumps(row), file=sys.stderr)
    return row


def timed(settings: Config, train: list[Sentence]) -> tuple[Tagger, float]:
    start = time.perf_counter()
    tagger, _ = train_in_memory(settings, train)
    return tagger, time.perf_counter() - start


def commit() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapt-sentences", type=int, default=300)
    parser.add_argument("--base-epochs", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=10)
    output.add_record_option(parser)
    args = parser.parse_args()
    torch.set_num_threads(2)
    train = read_genres(os.path.join(EWT, "en_ewt-ud-train.conllu"))
    test = read_genres(os.path.join(EWT, "en_ewt-ud-test.conllu"))
    old_train = [s for genre, s in train if genre != NEW_GENRE]
    new_train = [s for genre, s in train if genre == NEW_GENRE][: args.adapt_sentences]
    old_test = [s for genre, s in test if genre != NEW_GENRE]
    new_test = [s for genre, s in test if genre == NEW_GENRE]
    rows = {}
    with tempfile.TemporaryDirectory() as scratch_dir:
        base, seconds = timed(config(args.base_epochs), old_train)
        rows["base"] = measure("base", base, new_test, old_test, seconds)
        base_path = os.path.join(scratch_dir, "base.pt")
        save_model(base_path, base.loaded)
        rehearsal_path = os.path.join(scratch_dir, "old.conllu")
        write_conllu(rehearsal_path, old_train)
        variants = {
            "scratch": config(args.epochs),
            "init_from": config(args.epochs, init_from=base_path),
            "init_from_rehearsal": config(
                args.epochs, init_from=base_path, rehearsal=rehearsal_path
            ),
        }
        for name, settings in variants.items():
            tagger, seconds = timed(settings, new_train)
            rows[name] = measure(name, tagger, new_test, old_test, seconds)
    result = {
        "date": datetime.date.today().isoformat(),
        "commit": commit(),
        "recipe": {
            **RECIPE,
            "base": f"EWT train minus {NEW_GENRE}: {len(old_train)} sentences, "
            f"{args.base_epochs} epochs",
            "adapt": f"first {len(new_train)} {NEW_GENRE} sentences of EWT train, "
            f"{args.epochs} epochs; rehearsal: as many old-genre sentences, seeded",
            "test": f"EWT test: {len(new_test)} {NEW_GENRE} sentences (new), "
            f"{len(old_test)} of the other genres (old)",
            "seed": 1,
        },
        "rows": rows,
    }
    path = output.result_path("adaptation.json", args.record)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
