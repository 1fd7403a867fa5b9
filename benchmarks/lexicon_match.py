"""What dictionaries find on their own: `model.lexicons` matching as the tagger's features see
it, each type's matches taken as entity spans, scored against a labelled file.

    python benchmarks/lexicon_match.py TEST TYPE=FILE [TYPE=FILE ...]

Where matches of two types overlap, the type named first keeps its span. Prints the entity
precision, recall and F1 (micro, and per type) as JSON on stdout.
"""

from __future__ import annotations

import argparse
import json

from crftag.data.labelled import read_labelled
from crftag.data.lexicons import POSITIONS, Lexicons, read_lexicons
from crftag.data.schemes import Span, from_spans
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("test")
    parser.add_argument("lexicons", nargs="+", metavar="TYPE=FILE")
    args = parser.parse_args()
    lexicons = read_lexicons(dict(item.split("=", 1) for item in args.lexicons))
    sentences = read_labelled(args.test, "auto", None, None, "error")
    gold = [sentence.tags for sentence in sentences]
    predicted = [
        from_spans(matched_spans(list(s.tokens), lexicons), len(s.tokens), "iob2")
        for s in sentences
    ]
    entities = score(gold, predicted, tags_are_spans=True)["entities"]
    print(json.dumps(entities, indent=2))


if __name__ == "__main__":
    main()
