"""Span annotation files: every variant reads to the same documents, writing reads back the
same, and every malformed record is a one-line error naming its file and line (or document)."""

import io
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crftag.data.annotations import (
    CharSpan,
    Document,
    check_overlaps,
    format_span_jsonl,
    read_annotations,
    read_brat,
    read_span_jsonl,
    write_brat,
)
from crftag.errors import CrftagError

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "annotations")
LETTER = "Ada Lovelace wrote to Charles Babbage in London."
LETTER_SPANS = [(0, 12, "PER"), (22, 37, "PER"), (41, 47, "LOC")]
GREETING = "Grüße aus Zürich, sagte Åsa Öberg."
GREETING_SPANS = [(10, 16, "LOC"), (24, 33, "PER")]


def spans_of(document):
    return [(s.start, s.end, s.label) for s in document.spans]


@pytest.mark.parametrize(
    "name",
    ["spans.jsonl", "doccano.jsonl", "doccano_offsets.jsonl", "spacy.jsonl", "label_studio.json"],
)
def test_every_variant_reads_to_the_same_documents(name):
    documents = list(read_annotations(os.path.join(FIXTURES, name)))
    assert [d.text for d in documents] == [LETTER, GREETING]
    assert [spans_of(d) for d in documents] == [LETTER_SPANS, GREETING_SPANS]
    assert documents[0].id in ("letter-1", "41")


def test_prodigy_tokens_keep_their_offsets_and_other_keys_are_kept():
    (document,) = read_annotations(os.path.join(FIXTURES, "prodigy.jsonl"))
    assert spans_of(document) == LETTER_SPANS
    assert document.tokens[:2] == ("Ada", "Lovelace") and document.token_offsets[1] == (4, 12)
    assert document.extra == {"id": "letter-1", "answer": "accept"}


def test_tokens_with_tags_and_no_text():
    (document,) = read_annotations(os.path.join(FIXTURES, "tokens_tags.jsonl"))
    assert document.text == "Ada wrote letters ."
    assert document.tags == ("PROPN", "VERB", "NOUN", "PUNCT") and document.spans == ()


def test_brat_reads_spans_and_passes_over_relations_and_notes():
    documents = list(read_brat(os.path.join(FIXTURES, "brat")))
    assert [d.id for d in documents] == ["letter-1", "letter-2"]
    assert spans_of(documents[0]) == LETTER_SPANS
    # CRLF in the text is kept, so the offsets after it count both characters.
    assert documents[1].text == "Grüße aus Zürich,\r\nsagte Åsa Öberg."
    assert documents[1].text[25:34] == "Åsa Öberg"


def read(text, source="in.jsonl"):
    return list(read_span_jsonl(io.BytesIO(text.encode("utf-8")), source))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "in.jsonl:2: not valid JSON"),
        pytest.param(
            '{"text": "ab", "spans": [[0, 1' + "0" * 5000 + ', "X"]]}',
            "in.jsonl:2: not valid JSON (an integer of more than 4300 digits)",
            id="5000-digit integer",
        ),
        ("[1, 2]", "in.jsonl:2: expected a JSON object, got list"),
        ('{"spans": []}', 'in.jsonl:2: expected "text" to be a string'),
        ('{"text": "ab", "spans": [[0, 3, "X"]]}', "in.jsonl:2: span [0, 3) is not 0 <= start"),
        ('{"text": "ab", "spans": [[1, 1, "X"]]}', "in.jsonl:2: span [1, 1) is not"),
        ('{"text": "ab", "spans": [[true, 1, "X"]]}', "in.jsonl:2: span [True, 1) is not"),
        ('{"text": "ab", "spans": [[0, 1, ""]]}', "in.jsonl:2: span [0, 1) has no label"),
        ('{"text": "ab", "spans": [], "entities": []}', "give the spans once"),
        ('{"tokens": ["a"], "tags": ["X", "Y"]}', "one tag per token"),
        ('{"text": "ab", "spans": {"start": 0}}', "expected the spans to be a list"),
    ],
)
def test_a_malformed_record_is_a_one_line_error_naming_its_line(line, message):
    with pytest.raises(CrftagError) as caught:
        read('{"text": "fine", "spans": []}\n' + line + "\n")
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_brat_span_whose_text_differs_is_an_error_naming_the_ann_line(tmp_path):
    (tmp_path / "a.txt").write_text("Ada wrote.")
    (tmp_path / "a.ann").write_text("T1\tPER 0 3\tAda\nT2\tPER 4 9\tWrote\n")
    with pytest.raises(CrftagError, match=r"a\.ann:2: the text 'Wrote' is not"):
        list(read_brat(str(tmp_path)))


def test_a_discontinuous_brat_span_is_an_error(tmp_path):
    (tmp_path / "a.txt").write_text("New and York")
    (tmp_path / "a.ann").write_text("T1\tLOC 0 3;8 12\tNew York\n")
    with pytest.raises(CrftagError, match=r"a\.ann:1: a discontinuous span"):
        list(read_brat(str(tmp_path)))


def test_an_ann_without_its_txt_is_an_error(tmp_path):
    (tmp_path / "lost.ann").write_text("")
    with pytest.raises(CrftagError, match=r"lost\.ann: no lost\.txt beside it"):
        list(read_brat(str(tmp_path)))
    (tmp_path / "lost.txt").write_text("")
    (tmp_path / "other.txt").write_text("text")
    with pytest.raises(CrftagError, match=r"other\.txt: no other\.ann beside it"):
        list(read_brat(str(tmp_path)))


def test_a_folder_without_ann_files_is_no_brat_folder(tmp_path):
    (tmp_path / "notes.txt").write_text("text")
    with pytest.raises(CrftagError, match="is a directory, and holds no brat .ann files"):
        list(read_brat(str(tmp_path)))


def test_overlapping_spans_name_both_and_say_why():
    document = Document(
        "New York City", (CharSpan(0, 8, "LOC"), CharSpan(4, 13, "LOC")), source="f", line=3
    )
    with pytest.raises(CrftagError) as caught:
        check_overlaps(document)
    message = str(caught.value)
    assert message.startswith("f:3: spans [0, 8) LOC 'New York' and [4, 13) LOC 'York City'")
    assert "linear-chain CRF" in message
    check_overlaps(Document("New York", (CharSpan(0, 3, "A"), CharSpan(3, 8, "B"))))  # touching


texts = st.text(min_size=1, max_size=40)


@st.composite
def documents(draw):
    text = draw(texts)
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=6)))
    spans = tuple(
        CharSpan(start, end, draw(st.sampled_from(["PER", "LOC", "Ölabel"])))
        for start, end in zip(cuts[::2], cuts[1::2], strict=False)
        if start < end
    )
    return Document(text, spans, source="x", line=1)


@settings(max_examples=80, deadline=None)
@given(documents())
def test_span_jsonl_round_trips_any_text(document):
    line = format_span_jsonl(document)
    assert line.count("\n") == 1 and len(line.splitlines()) == 1
    (back,) = read(line, "x")
    assert back == document


@settings(max_examples=40, deadline=None)
@given(documents())
def test_brat_round_trips_any_text(tmp_path_factory, document):
    folder = tmp_path_factory.mktemp("brat")
    write_brat(str(folder), "doc", document)
    (back,) = read_brat(str(folder))
    assert (back.text, back.spans) == (document.text, document.spans)


def test_records_written_back_keep_their_other_keys():
    (document,) = read('{"text": "Ada", "spans": [[0, 3, "PER"]], "meta": {"k": 1}}\n')
    assert json.loads(format_span_jsonl(document))["meta"] == {"k": 1}


@pytest.mark.parametrize(
    "command",
    [
        ["convert", "IN", "OUT.conll"],
        ["eval", "IN", "-m", "en-ner"],
        ["predict", "IN", "-m", "en-ner", "--input-format", "doc"],
    ],
)
def test_a_5000_digit_integer_is_one_line_through_each_command(invoke, tmp_path, command):
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "x", "n": 1' + "0" * 5000 + '}\n{"text": "Berlin", "spans": []}\n')
    places = {"IN": str(source), "OUT.conll": str(tmp_path / "OUT.conll")}
    args = [places.get(arg, arg) for arg in command]
    result = invoke(args)
    assert result.status == 2 and result.stdout == ""
    assert result.stderr == (
        f"crftag: error: {source}:1: not valid JSON (an integer of more than 4300 digits)\n"
    )
    assert not (tmp_path / "OUT.conll").exists()
