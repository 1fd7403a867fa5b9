"""Character spans put on tokens: exact spans, misaligned ones under each policy, overlaps, and
sentences joined where a span crosses their boundary."""

import pytest

from crftag.data.align import align_document, document_tokens
from crftag.data.annotations import CharSpan, Document
from crftag.errors import CrftagError


def document(text, spans, **fields):
    return Document(text=text, spans=tuple(CharSpan(*span) for span in spans), **fields)


def test_spans_on_token_boundaries_become_iob2_tags():
    text = "Angela Merkel visited New York."
    aligned = align_document(document(text, [(0, 13, "PER"), (22, 30, "LOC")], source="d"))
    (sentence,) = aligned.sentences
    assert sentence.tokens == ("Angela", "Merkel", "visited", "New", "York", ".")
    assert sentence.tags == ("B-PER", "I-PER", "O", "B-LOC", "I-LOC", "O")
    assert aligned.offsets[0][3] == (22, 25)


def test_sentences_are_split_and_offsets_point_into_the_document():
    text = "Merkel spoke.  Then Macron left Paris."
    aligned = align_document(document(text, [(0, 6, "PER"), (20, 26, "PER"), (32, 37, "LOC")]))
    assert [s.tokens for s in aligned.sentences] == [
        ("Merkel", "spoke", "."),
        ("Then", "Macron", "left", "Paris", "."),
    ]
    assert aligned.sentences[1].tags == ("O", "B-PER", "O", "B-LOC", "O")
    for offsets, sentence in zip(aligned.offsets, aligned.sentences, strict=True):
        assert tuple(text[a:b] for a, b in offsets) == sentence.tokens


def test_a_span_across_a_sentence_boundary_keeps_its_sentences_joined():
    text = "He met Mr. Smith. Jones Inc. paid. Then it rained."
    boundaries = [s.tokens[-1] for s in align_document(document(text, [])).sentences]
    assert len(boundaries) >= 2
    # A span from the first sentence's last word into the next sentence joins the two.
    first = align_document(document(text, [])).offsets[0]
    start = first[-2][0]
    end = text.index("Jones") + len("Jones")
    aligned = align_document(document(text, [(start, end, "ORG")]))
    assert len(aligned.sentences) == len(boundaries) - 1
    assert "B-ORG" in aligned.sentences[0].tags


def test_pretokenized_text_keeps_its_tokens_and_one_sentence_per_line():
    text = "UN praises Danish plan\nMaria Lindqvist"
    tokens = ("UN", "praises", "Danish", "plan", "Maria", "Lindqvist")
    aligned = align_document(document(text, [(0, 2, "ORG"), (23, 38, "PER")], tokens=tokens))
    assert [s.tokens for s in aligned.sentences] == [tokens[:4], tokens[4:]]
    assert aligned.sentences[1].tags == ("B-PER", "I-PER")


def test_tokens_that_are_not_in_the_text_are_an_error_naming_the_record():
    bad = document("a b", [], tokens=("a", "c"), source="in.jsonl", line=4)
    with pytest.raises(CrftagError, match=r"in\.jsonl:4: the tokens do not match the text"):
        document_tokens(bad)


def test_a_mid_token_span_is_an_error_naming_file_line_and_range():
    bad = document("Angela Merkel visited", [(2, 13, "PER")], source="data.jsonl", line=3)
    with pytest.raises(CrftagError) as caught:
        align_document(bad)
    message = str(caught.value)
    assert message.startswith("data.jsonl:3: span [2, 13) PER 'gela Merkel'")
    assert "'Angela' [0, 6)" in message and "data.misaligned" in message
    assert "\n" not in message


def test_warn_leaves_the_span_out_and_reports_it():
    warnings = []
    bad = document("Angela Merkel visited", [(2, 13, "PER"), (14, 21, "X")], source="d", line=1)
    aligned = align_document(bad, "warn", warnings.append)
    assert aligned.sentences[0].tags == ("O", "O", "B-X")
    assert len(warnings) == 1 and "left out" in warnings[0]


def test_expand_stretches_the_span_to_the_tokens_it_touches():
    warnings = []
    bad = document("Angela Merkel visited", [(2, 10, "PER")], source="d", line=1)
    aligned = align_document(bad, "expand", warnings.append)
    assert aligned.sentences[0].tags == ("B-PER", "I-PER", "O")
    assert "stretched to [0, 13)" in warnings[0]


def test_a_span_over_white_space_only_covers_no_token():
    warnings = []
    aligned = align_document(document("a  b", [(1, 3, "X")]), "expand", warnings.append)
    assert aligned.sentences[0].tags == ("O", "O")
    assert "covers no token" in warnings[0]


def test_spans_that_come_to_share_a_token_after_stretching_are_an_error():
    bad = document("Berlin-based firm", [(0, 6, "LOC"), (7, 12, "MISC")], source="d", line=1)
    with pytest.raises(CrftagError, match="cannot represent overlapping spans"):
        align_document(bad, "expand")


def test_overlapping_spans_are_an_error_naming_both():
    bad = document("New York City", [(0, 8, "LOC"), (4, 13, "LOC")], source="d", line=2)
    with pytest.raises(CrftagError, match=r"New York.*York City|York City.*New York"):
        align_document(bad)


def test_per_token_tags_are_taken_as_they_are():
    aligned = align_document(
        document("I ran", [], tokens=("I", "ran"), tags=("PRON", "VERB"), source="d")
    )
    assert aligned.sentences[0].tags == ("PRON", "VERB")


def test_every_sentence_is_numbered_with_its_document():
    aligned = align_document(document("One. Two.", []), number=7)
    assert {sentence.document for sentence in aligned.sentences} == {7}
