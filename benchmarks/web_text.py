"""Per-token cost of web text against news: training (loss forward and backward) and tagging of
the EWT web genres (weblogs, e-mail, reviews, answers, newsgroups: the document ids say which)
against CoNLL-2003's eng.train, with one model, in batches of 10 sentences in a seeded order,
timed alternately.

    python benchmarks/web_text.py [--model en-ner] [--batches 200]

Web text has long tokens (URLs, e-mail addresses) that make the character encoder run as many
steps as the longest word of a batch; the target is web within 1.3x of news per token.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from crf_kernels import paired_seconds  # noqa: E402

from crftag.data.batching import collate, encode  # noqa: E402
from crftag.data.conll import ColumnSpec, open_binary, read_columns  # noqa: E402
from crftag.inference.tagger import Tagger  # noqa: E402
from crftag.modelfiles.checkpoint import load_model  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "data")
WEB_GENRES = ("weblog", "email", "reviews", "answers", "newsgroup")


def news_sentences() -> list[tuple[str, ...]]:
    path = os.path.join(DATA, "conll2003", "eng.train")
    return _read(path, ColumnSpec.for_format("conll", None, None), keep=lambda _: True)


def web_sentences() -> list[tuple[str, ...]]:
    """EWT training sentences of the web genres (its document ids begin with the genre)."""
    path = os.path.join(DATA, "ud_english_ewt", "en_ewt-ud-train.conllu")
    spec = ColumnSpec.for_format("conllu", None, None)
    return _read(path, spec, keep=lambda sentence: sentence.startswith(WEB_GENRES))


def _read(path, spec, keep) -> list[tuple[str, ...]]:
    """The non-empty sentences of a column file whose sent_id (CoNLL-U) passes ``keep``."""
    sentences, document = [], ""
    with open_binary(path) as stream:
        for sentence in read_columns(stream, path, spec, keep_raw=True, keep_markup=True):
            for line in sentence.raw or ():
                if line.startswith("# sent_id = "):
                    document = line[len("# sent_id = ") :]
            if sentence.tokens and keep(document):
                sentences.append(sentence.tokens)
    return sentences


def batches_of(sentences, tagger, count):
    """``count`` batches of 10 sentences in a seeded order; every sentence is its own document
    (a model with document context pools nothing across sentences)."""
    order = list(sentences)
    random.Random(0).shuffle(order)
    batches = []
    for start in range(0, min(len(order), 10 * count), 10):
        batch = collate([encode(list(s), tagger.vocabularies) for s in order[start : start + 10]])
        rows, steps = batch.words.shape
        groups = torch.arange(rows).unsqueeze(1).expand(rows, steps).contiguous()
        # Tags do not change the work of a loss: every word tagged with the first tag.
        tags = torch.zeros(rows, steps, dtype=torch.long)
        batches.append(dataclasses.replace(batch, groups=groups, tags=tags))
    return batches


def measure(model_path: str, count: int = 200) -> dict:
    tagger = Tagger.from_loaded(load_model(model_path))  # torch, whatever the file
    model = tagger.model.float()
    news, web = (
        batches_of(news_sentences(), tagger, count),
        batches_of(web_sentences(), tagger, count),
    )
    tokens = {
        name: sum(int(b.lengths.sum()) for b in batches)
        for name, batches in (("news", news), ("web", web))
    }

    def training(batches):
        def run():
            model.train()
            for batch in batches:
                model.zero_grad(set_to_none=True)
                model.loss(batch).backward()

        return run

    def tagging(batches):
        def run():
            model.eval()
            with torch.inference_mode():
                for batch in batches:
                    model.decode(batch)

        return run

    result = {"model": model_path, "batches": count, "tokens": tokens}
    for name, make in (("training", training), ("tagging", tagging)):
        news_s, web_s, _ = paired_seconds(make(news), make(web), 3)
        news_per_token, web_per_token = news_s / tokens["news"], web_s / tokens["web"]
        result[name] = {
            "news_tokens_per_s": 1 / news_per_token,
            "web_tokens_per_s": 1 / web_per_token,
            "web_over_news_per_token": web_per_token / news_per_token,
            "target": 1.3,
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="en-ner")
    parser.add_argument("--batches", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(2)
    print(json.dumps(measure(args.model, args.batches), indent=2))


if __name__ == "__main__":
    main()
