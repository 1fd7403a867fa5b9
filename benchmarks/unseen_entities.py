"""How many CoNLL-2003 entities training never saw, and how trained models score on them.

    python benchmarks/unseen_entities.py [--model DIR_OR_NAME ...] [--train F] [--eval F ...]

An entity is *unseen* when no entity of the training file has the same label and the same words
(case kept). For each evaluation file this prints how many gold entities are unseen; for each
model, precision, recall and F1 over the seen and the unseen entities apart. A predicted entity
belongs to the group its own words and label put it in, so the two groups' counts add up to the
overall ones. Spans are read by conlleval's rules (crftag.data.schemes.to_spans), as `crftag eval`
scores them. Prints JSON to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from crftag.data.conll import (  # noqa: E402
    ColumnSpec,
    document_keys,
    read_corpus,  # noqa: E402
)
from crftag.data.schemes import to_spans  # noqa: E402

CONLL = os.path.join(ROOT, "..", "shared", "data", "conll2003")


def entities(tokens_and_tags) -> set[tuple[int, int, int, str, tuple[str, ...]]]:
    """(sentence, start, end, label, words) of every span of some tagged sentences."""
    found = set()
    for index, (tokens, tags) in enumerate(tokens_and_tags):
        for span in to_spans(tags):
            found.add(
                (index, span.start, span.end, span.label, tuple(tokens[span.start : span.end]))
            )
    return found


def prf(gold: set, predicted: set) -> dict:
    correct = len(gold & predicted)
    precision = correct / len(predicted) if predicted else 0.0
    recall = correct / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "gold": len(gold),
        "predicted": len(predicted),
        "precision": precision,
        "recall": recall,
        "f1": f1,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", default=os.path.join(CONLL, "eng.train"))
    parser.add_argument(
        "--eval",
        nargs="+",
        default=[os.path.join(CONLL, "eng.testa"), os.path.join(CONLL, "eng.testb")],
    )
    parser.add_argument("--model", nargs="*", default=[], help="trained run folders or names")
    args = parser.parse_args()

    spec = ColumnSpec(format="conll", word_column=0, tag_column=-1)
    train = read_corpus(args.train, spec)
    known = {
        (label, words) for _, _, _, label, words in entities((s.tokens, s.tags) for s in train)
    }

    def is_seen(entity) -> bool:
        return (entity[3], entity[4]) in known

    taggers = []
    if args.model:
        from crftag.inference.loading import load

        taggers = [(name, load(name, "cpu")) for name in args.model]

    report = {"train": os.path.normpath(args.train), "files": {}}
    for path in args.eval:
        sentences = read_corpus(path, spec)
        gold = entities((s.tokens, s.tags) for s in sentences)
        unseen = {e for e in gold if not is_seen(e)}
        result = {
            "entities": len(gold),
            "unseen": len(unseen),
            "unseen_share": len(unseen) / len(gold),
        }
        for name, tagger in taggers:
            tags = tagger.tag([s.tokens for s in sentences], documents=document_keys(sentences))
            predicted = entities((s.tokens, t) for s, t in zip(sentences, tags, strict=True))
            result[name] = {
                "all": prf(gold, predicted),
                "seen": prf(gold - unseen, {e for e in predicted if is_seen(e)}),
                "unseen": prf(unseen, {e for e in predicted if not is_seen(e)}),
            }
        report["files"][os.path.normpath(path)] = result
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
