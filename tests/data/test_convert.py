"""Conversion between column files and span annotations: exact round trips, documents kept, tags
that are not spans kept, and bad input named."""

import io
import json
import os
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crftag.data.annotations import read_annotations
from crftag.data.conll import ColumnSpec
from crftag.data.convert import (
    output_format_of,
    read_documents_of,
    write_brat_folder,
    write_documents,
)
from crftag.errors import CrftagError

IOB1 = """-DOCSTART- -X- O

UN NNP I-ORG
praises VBZ O
Danish JJ I-MISC
plan NN O

Maria NNP I-PER
Lindqvist NNP I-PER
met VBD O
Anna NNP I-PER
Li NNP B-PER

-DOCSTART- -X- O

Paris NNP I-LOC
"""

IOB2 = """-DOCSTART- O

UN B-ORG
praises O
Danish B-MISC
plan O

Maria B-PER
Lindqvist I-PER
met O
Anna B-PER
Li B-PER

-DOCSTART- O

Paris B-LOC

"""


def convert_text(path, input_format, output_format, scheme="iob2"):
    documents = read_documents_of(str(path), input_format, ColumnSpec.for_format(input_format))
    output = io.StringIO()
    write_documents(documents, output, output_format, scheme)
    return output.getvalue()


@pytest.fixture
def iob1(tmp_path):
    path = tmp_path / "in.conll"
    path.write_text(IOB1)
    return path


def test_conll_to_iob2_rewrites_the_chunks_and_keeps_the_documents(iob1):
    assert convert_text(iob1, "conll", "conll") == IOB2


def test_conll_to_jsonl_to_conll_is_exact(iob1, tmp_path):
    jsonl = tmp_path / "out.jsonl"
    jsonl.write_text(convert_text(iob1, "conll", "jsonl"))
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert len(records) == 2  # one per document
    first = records[0]
    assert first["text"] == "UN praises Danish plan\nMaria Lindqvist met Anna Li"
    spans = [(s["start"], s["end"], s["label"]) for s in first["spans"]]
    assert [first["text"][s:e] for s, e, _ in spans] == [
        "UN",
        "Danish",
        "Maria Lindqvist",
        "Anna",
        "Li",
    ]
    assert convert_text(jsonl, "jsonl", "conll") == IOB2


def test_bioes_and_iob1_on_the_way_out(iob1, tmp_path):
    bioes = convert_text(iob1, "conll", "conll", scheme="bioes")
    assert "Maria B-PER\nLindqvist E-PER\n" in bioes and "Anna S-PER\nLi S-PER\n" in bioes
    assert "UN I-ORG\n" in convert_text(iob1, "conll", "conll", scheme="iob1")


def test_sentences_without_a_document_marker_come_back_without_one(tmp_path):
    path = tmp_path / "plain.conll"
    path.write_text("Nokia B-ORG\nfell O\n\nShares O\n\n")
    jsonl = tmp_path / "plain.jsonl"
    jsonl.write_text(convert_text(path, "conll", "jsonl"))
    assert all(json.loads(line)["docstart"] is False for line in jsonl.read_text().splitlines())
    assert convert_text(jsonl, "jsonl", "conll") == "Nokia B-ORG\nfell O\n\nShares O\n\n"


def test_part_of_speech_tags_travel_as_tags(tmp_path):
    path = tmp_path / "pos.conll"
    path.write_text("I PRON\nran VERB\n\n")
    record = json.loads(convert_text(path, "conll", "jsonl"))
    assert record["tokens"] == ["I", "ran"] and record["tags"] == ["PRON", "VERB"]
    assert record["spans"] == []


def test_a_non_span_tag_after_span_tags_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "mixed.conll"
    path.write_text("EU B-ORG\n\nI PRON\n\n")
    with pytest.raises(CrftagError, match=r"mixed.conll:3: tag 'PRON' is not a span tag"):
        convert_text(path, "conll", "jsonl")


def test_jsonl_to_brat_to_jsonl_keeps_the_spans(tmp_path):
    source = tmp_path / "in.jsonl"
    records = [
        {"text": "Angela Merkel flew to Paris.", "spans": [[0, 13, "PER"], [22, 27, "LOC"]]},
        {"text": "Straße in Köln – ok", "spans": [[10, 14, "LOC"]]},
    ]
    source.write_text(
        "".join(
            json.dumps({"text": r["text"], "entities": r["spans"]}, ensure_ascii=False) + "\n"
            for r in records
        )
    )
    count = write_brat_folder(
        read_documents_of(str(source), "jsonl", ColumnSpec()), str(tmp_path / "brat")
    )
    assert count == 2
    back = list(read_annotations(str(tmp_path / "brat")))
    assert [d.text for d in back] == [r["text"] for r in records]
    assert [[(s.start, s.end, s.label) for s in d.spans] for d in back] == [
        [tuple(span) for span in r["spans"]] for r in records
    ]


def test_a_token_with_white_space_cannot_be_a_conll_line(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(
        json.dumps(
            {
                "tokens": [{"text": "New York", "start": 0, "end": 8}],
                "text": "New York",
                "spans": [],
            }
        )
        + "\n"
    )
    with pytest.raises(CrftagError, match="holds white space"):
        convert_text(source, "jsonl", "conll")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a.jsonl", "jsonl"),
        ("a.json", "jsonl"),
        ("a.conllu", "conllu"),
        ("out/", "brat"),
        ("-", "conll"),
        ("a.txt", "conll"),
    ],
)
def test_output_format_follows_the_name(path, expected):
    assert output_format_of(path) == expected


words = st.text(alphabet=st.characters(blacklist_categories=("Z", "C")), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(words, st.sampled_from(["O", "B-A", "I-A", "B-B", "I-B"])),
            min_size=1,
            max_size=6,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_any_iob2_file_survives_the_round_trip_through_jsonl(tmp_path_factory, sentences):
    directory = tmp_path_factory.mktemp("round")
    source = directory / "in.conll"
    blocks = ["-DOCSTART- O\n\n"]
    blocks += ["".join(f"{w} {t}\n" for w, t in sentence) + "\n" for sentence in sentences]
    source.write_text("".join(blocks), encoding="utf-8")
    direct = convert_text(source, "conll", "conll")
    jsonl = directory / "mid.jsonl"
    jsonl.write_text(convert_text(source, "conll", "jsonl"), encoding="utf-8")
    assert convert_text(jsonl, "jsonl", "conll") == direct


def test_brat_files_get_a_plain_files_mode_and_a_bad_document_writes_none(tmp_path):
    source = tmp_path / "in.jsonl"
    good = {"text": "Anna flew.", "spans": [[0, 4, "PER"]]}
    bad = {"text": "Anna flew.", "spans": [[0, 4, "PER PERSON"]]}  # no brat type has a space
    source.write_text(json.dumps(good) + "\n")
    folder = tmp_path / "brat"
    previous = os.umask(0o022)
    try:
        assert write_brat_folder(read_documents_of(str(source), "jsonl", ColumnSpec()), str(folder))
    finally:
        os.umask(previous)
    assert sorted(os.listdir(folder)) == ["000001.ann", "000001.txt"]
    assert {stat.S_IMODE(os.stat(folder / name).st_mode) for name in os.listdir(folder)} == {0o644}
    source.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(CrftagError):
        write_brat_folder(read_documents_of(str(source), "jsonl", ColumnSpec()), str(folder))
    assert sorted(os.listdir(folder)) == ["000001.ann", "000001.txt"]
    with pytest.raises(CrftagError):
        write_brat_folder(
            read_documents_of(str(source), "jsonl", ColumnSpec()), str(tmp_path / "new")
        )
    assert not (tmp_path / "new").exists()
