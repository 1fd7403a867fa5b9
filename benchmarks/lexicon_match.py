"""What dictionaries find on their own: `model.lexicons` matching as the tagger's features see
it, each type's matches taken as entity spans, scored against a labelled file.

    python benchmarks/lexicon_match.py TEST TYPE=FILE [TYPE=FILE ...] [--seen TRAIN]

Where matches of two types overlap, the type named first keeps its span. Prints the entity
precision, recall and F1 (micro, and per type) as JSON on stdout. With ``--seen``, also how
many of TEST's entities the dictionaries hold as entries of their type, and how many of those
TRAIN's labels already show (the same type and tokens, compared as the dictionaries compare
them): what the dictionaries could teach a model that the training set does not.
"""

from __future__ import annotations

import argparse
import json

from crftag.data.labelled import read_labelled
from crftag.data.lexicons import POSITIONS, Lexicons, read_lexicons, token_key
from crftag.data.schemes import Span, from_spans, to_spans
from crftag.scoring.evaluate import score


def matched_spans(tokens: list[str], lexicons: Lexicons) -> list[Span]:
    """Each type's longest matches as spans, the earlier types' first where they overlap."""
    taken: set[int] = set()
    spans = []
    for column, label in enumerate(lexicons.types):
        positions = [POSITIONS[row[column]] for row in lexicons.features(tokens)]
        start = 0
        for index, position in enumerate(positions):
            start = index if position in "BS" else start
            covered = set(range(start, index + 1))
            if position in "ES" and not covered & taken:
                spans.append(Span(start, index + 1, label))
                taken |= covered
    return spans


def entity_keys(sentences) -> list[tuple[str, tuple[str, ...]]]:
    """Each labelled entity of ``sentences`` as (type, its tokens' keys), in order."""
    return [
        (span.label, tuple(token_key(token) for token in s.tokens[span.start : span.end]))
        for s in sentences
        for span in to_spans(s.tags)
    ]


def seen_in_training(test_sentences, train_sentences, lexicons: Lexicons) -> dict:
    """Counts of TEST's entities: all, those TRAIN labels (the same type and tokens), those a
    dictionary of their type holds, and of the latter those TRAIN labels."""
    entries = dict(
        zip(lexicons.types, (lexicon.entries for lexicon in lexicons.lexicons), strict=True)
    )
    trained = set(entity_keys(train_sentences))
    test = entity_keys(test_sentences)
    held = [(label, keys) for label, keys in test if keys in entries.get(label, ())]
    return {
        "test_entities": len(test),
        "labelled_in_training": sum(1 for entity in test if entity in trained),
        "held_by_dictionaries": len(held),
        "held_and_labelled_in_training": sum(1 for entity in held if entity in trained),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("test")
    parser.add_argument("lexicons", nargs="+", metavar="TYPE=FILE")
    parser.add_argument("--seen", metavar="TRAIN", help="count the test entities TRAIN labels")
    args = parser.parse_args()
    lexicons = read_lexicons(dict(item.split("=", 1) for item in args.lexicons))
    sentences = read_labelled(args.test, "auto", None, None, "error")
    gold = [sentence.tags for sentence in sentences]
    predicted = [
        from_spans(matched_spans(list(s.tokens), lexicons), len(s.tokens), "iob2")
        for s in sentences
    ]
    entities = score(gold, predicted, tags_are_spans=True)["entities"]
    if args.seen:
        train = read_labelled(args.seen, "auto", None, None, "error")
        entities["seen"] = seen_in_training(sentences, train, lexicons)
    print(json.dumps(entities, indent=2))


if __name__ == "__main__":
    main()
