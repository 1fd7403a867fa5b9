"""Unlabelled text for distillation: lines split into sentences and tokens as a document is,
dev and test sentences removed and counted, each sentence's line kept as its document, and the
digests of the text and of a set of sentences."""

import bz2

import pytest

from crftag.data.unlabelled_text import (
    exclusion_digest,
    read_unlabelled_text,
    sentences_digest,
    text_digest,
)
from crftag.errors import CrftagError


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_each_line_is_a_document_split_into_sentences_and_tokens(tmp_path):
    first = write(tmp_path, "a.txt", b"John lives in Berlin. He works for Siemens.\n\nOslo\n")
    second = write(tmp_path, "b.txt", bz2.compress(b"Anna Lindqvist\nMr. Smith didn't go.\n"))
    text = read_unlabelled_text([first, second], {("Anna", "Lindqvist")})
    assert text.sentences == [
        ("John", "lives", "in", "Berlin", "."),
        ("He", "works", "for", "Siemens", "."),
        ("Oslo",),
        ("Mr.", "Smith", "did", "n't", "go", "."),
    ]
    assert text.documents == [0, 0, 2, 4]  # lines counted over both files, blank ones too
    assert text.removed == 1


def test_every_equal_sentence_is_removed_and_counted(tmp_path):
    path = write(tmp_path, "a.txt", b"Oslo\nOslo .\nOslo\nBerlin\n")
    text = read_unlabelled_text([path], {("Oslo",), ("Paris",)})
    assert text.sentences == [("Oslo", "."), ("Berlin",)] and text.removed == 2


def test_a_nul_byte_is_refused_naming_the_line(tmp_path):
    path = write(tmp_path, "a.txt", b"Oslo\nOs\x00lo\n")
    with pytest.raises(CrftagError, match=f"^{path}:2: contains a NUL byte"):
        read_unlabelled_text([path], set())


def test_the_text_digest_is_of_the_bytes_in_order(tmp_path):
    a = write(tmp_path, "a.txt", b"Oslo\n")
    b = write(tmp_path, "b.txt", b"Berlin\n")
    joined = write(tmp_path, "ab.txt", b"Oslo\nBerlin\n")
    assert text_digest([a, b]) == text_digest([a, b])
    assert text_digest([a, b]) != text_digest([b, a])
    assert text_digest([a, b]) != text_digest([joined])  # where a file ends counts
    renamed = write(tmp_path, "other-name.txt", b"Oslo\n")
    assert text_digest([renamed]) == text_digest([a])


def test_the_digest_of_a_set_of_sentences_is_the_sets():
    sentences = {("Oslo",), ("Berlin", "."), ("a", "b")}
    assert exclusion_digest(sentences) == exclusion_digest(set(sorted(sentences, reverse=True)))
    assert exclusion_digest(sentences) != exclusion_digest(sentences - {("Oslo",)})
    assert sentences_digest([("a", "b")]) != sentences_digest([("a b",)])
