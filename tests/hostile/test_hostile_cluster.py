"""Hostile input to the Ray and Spark examples' shared parts (crftag.inference.cluster): texts
that are missing or are the output itself, an output that cannot be written, and text lines a
data engine may hand over (missing, empty, control characters, one huge line). The engines
themselves run in tests/cluster (`make test-cluster`)."""

import json
import os

import pytest
from hostile_files import read_only_folder

from crftag.errors import CrftagError
from crftag.inference import loading
from crftag.inference.cluster import check_files, tag_texts, write_records


def test_texts_that_are_missing_or_the_output_are_refused_before_the_engine_starts(tmp_path):
    texts = tmp_path / "texts.txt"
    with pytest.raises(CrftagError, match=rf"^{texts}: no such file of texts$"):
        check_files(str(texts), str(tmp_path / "out.jsonl"))
    texts.write_text("Berlin .\n")
    with pytest.raises(CrftagError, match=rf"^{texts}: both the texts and the output"):
        check_files(str(texts), str(texts))
    os.link(texts, tmp_path / "linked.txt")
    with pytest.raises(CrftagError, match="both the texts and the output"):
        check_files(str(texts), str(tmp_path / "linked.txt"))
    check_files(str(texts), str(tmp_path / "out.jsonl"))
    assert texts.read_text() == "Berlin .\n"


def test_an_output_that_cannot_be_written_is_one_error_naming_it(tmp_path):
    output = os.path.join(read_only_folder(tmp_path), "out.jsonl")
    with pytest.raises(CrftagError, match=rf"^{output}: cannot write the file here"):
        write_records(iter(['{"tokens": []}']), output)


def test_records_stopped_midway_leave_no_partial_output(tmp_path):
    output = tmp_path / "out.jsonl"

    def records():
        yield '{"tokens": []}'
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_records(records(), str(output))
    assert os.listdir(tmp_path) == []


def test_any_text_a_data_engine_hands_over_gets_one_record(sample_model):
    tagger = loading.load(str(sample_model), "cpu")
    texts = [None, "", "a\x00b \x1b[31m red", "Zoë\u2028Berlin", " ".join(["Berlin"] * 5000)]
    records = [json.loads(line) for line in tag_texts(tagger, texts, batch_size=2)]
    assert len(records) == len(texts)
    assert [len(record["tokens"]) for record in records][:2] == [0, 0]
    assert len(records[-1]["tokens"]) == 5000
