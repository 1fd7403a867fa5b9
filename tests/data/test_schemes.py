"""Tag schemes: detection, conversion, conlleval's chunk rules and the scoring built on them."""

import pytest

from crftag.data.conll import ColumnSpec, read_columns
from crftag.data.schemes import Span, allowed_transitions, convert, detect_scheme, to_spans
from crftag.scoring.evaluate import score

IOB1 = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG", "I-ORG"]
IOB2 = ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "I-ORG"]
BIOES = ["B-PER", "E-PER", "S-PER", "O", "S-LOC", "B-ORG", "E-ORG"]
SPANS = [Span(0, 2, "PER"), Span(2, 3, "PER"), Span(4, 5, "LOC"), Span(5, 7, "ORG")]


@pytest.mark.parametrize("tags", [IOB1, IOB2, BIOES])
def test_every_scheme_reads_the_same_spans(tags):
    assert to_spans(tags) == SPANS


@pytest.mark.parametrize("source", [IOB1, IOB2, BIOES])
@pytest.mark.parametrize("target,expected", [("iob1", IOB1), ("iob2", IOB2), ("bioes", BIOES)])
def test_conversions_round_trip(source, target, expected):
    assert convert(source, target) == expected


def test_detection():
    assert detect_scheme([IOB1]) == "iob1"
    assert detect_scheme([IOB2]) == "iob2"
    assert detect_scheme([BIOES]) == "bioes"
    assert detect_scheme([["NOUN", "VERB"]]) == "none"
    assert detect_scheme([["O", "O"]]) == "iob2"


def test_malformed_sequences_read_like_conlleval():
    # I-X after O opens a chunk; a type change closes one; E-X without B-X still ends a chunk.
    assert to_spans(["O", "I-PER", "I-LOC", "E-LOC", "B-ORG"]) == [
        Span(1, 2, "PER"),
        Span(2, 4, "LOC"),
        Span(4, 5, "ORG"),
    ]


def test_iob1_file_scores_as_conlleval_by_hand():
    """tests/fixtures/conlleval_iob1.txt: gold is column 4, prediction column 5, both IOB1.

    Worked out by hand with conlleval's rules:
      gold chunks: ORG Acme; PER Vandeleur; LOC Lisbon; PER Peter; PER Paul; PER Mary;
                   LOC New York; ORG Times -> 8 chunks: 2 ORG, 4 PER, 2 LOC.
      predicted chunks: ORG Acme; PER Vandeleur; ORG Lisbon; PER "Peter Paul"; PER Mary;
                       LOC "New York Times"  -> 6 chunks.
      correct: Acme/ORG, Vandeleur/PER, Mary/PER -> 3.
      precision 3/6 = 50.00, recall 3/8 = 37.50, F1 = 2*0.5*0.375/0.875 = 42.86.
      per type: PER  p 2/3 r 2/4; ORG p 1/2 r 1/2; LOC p 0/1 r 0/2.
      token accuracy over 17 tokens (DOCSTART excluded), compared in IOB2: Lisbon wrong;
      Paul wrong (gold B-PER, predicted I-PER); Times wrong; Mary right (B-PER in both)
      -> 14/17 = 82.35.
    """
    with open("tests/fixtures/conlleval_iob1.txt", "rb") as stream:
        gold = list(read_columns(stream, "x", ColumnSpec("conll", 0, 3)))
    with open("tests/fixtures/conlleval_iob1.txt", "rb") as stream:
        predicted = list(read_columns(stream, "x", ColumnSpec("conll", 0, 4)))
    result = score([s.tags for s in gold], [s.tags for s in predicted], tags_are_spans=True)
    micro = result["entities"]["micro"]
    assert micro["precision"] == pytest.approx(0.5)
    assert micro["recall"] == pytest.approx(0.375)
    assert micro["f1"] == pytest.approx(2 * 0.5 * 0.375 / 0.875)
    assert micro["support"] == 8
    assert result["entities"]["PER"]["precision"] == pytest.approx(2 / 3)
    assert result["entities"]["PER"]["recall"] == pytest.approx(2 / 4)
    assert result["entities"]["ORG"]["f1"] == pytest.approx(0.5)
    assert result["entities"]["LOC"]["f1"] == 0.0
    assert result["tokens"] == 17
    assert result["accuracy"] == pytest.approx(14 / 17)


def enumerate_valid(scheme, labels, length):
    import itertools

    allowed, start, end = allowed_transitions(scheme, labels)
    valid = []
    for path in itertools.product(range(len(labels)), repeat=length):
        ok = (
            start[path[0]]
            and end[path[-1]]
            and all(allowed[a][b] for a, b in zip(path, path[1:], strict=False))
        )
        if ok:
            valid.append([labels[i] for i in path])
    return valid


@pytest.mark.parametrize("scheme", ["iob1", "iob2", "bioes"])
def test_allowed_transitions_admit_exactly_the_well_formed_sequences(scheme):
    prefixes = {"iob1": "BI", "iob2": "BI", "bioes": "BIES"}[scheme]
    labels = ["O"] + [f"{p}-{x}" for x in ("A", "B") for p in prefixes]
    import itertools

    for length in (1, 2, 3, 4):
        valid = enumerate_valid(scheme, labels, length)
        everything = [list(p) for p in itertools.product(labels, repeat=length)]
        # Well-formed: writing the sequence's own spans back in the scheme gives it unchanged.
        well_formed = [tags for tags in everything if convert(tags, scheme) == tags]
        assert sorted(valid) == sorted(well_formed)
