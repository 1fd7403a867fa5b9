"""The readers' limits and edges: a bound on one line's length (and on one document's), CR-only
line ends, invisible characters quoted in errors, CoNLL-U IDs, and lines skipped under
``on_error="skip"`` kept in their place."""

import io
import json

import pytest

from crftag.data import annotations, lines
from crftag.data.annotations import (
    read_annotations,
    read_brat,
    read_document_text,
    read_label_studio,
    read_span_jsonl,
)
from crftag.data.conll import ColumnSpec, detect_format, read_columns, read_lines, shown
from crftag.errors import CrftagError

UNTAGGED = ColumnSpec("conll", 0, None)
CONLLU = ColumnSpec.for_format("conllu")


def read(data, spec=ColumnSpec(), **options):
    """The sentences of ``data`` (text, bytes or a byte stream) read as ``f.conll``."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    stream = data if hasattr(data, "readline") else io.BytesIO(data)
    return list(read_columns(stream, "f.conll", spec, **options))


def message(call) -> str:
    with pytest.raises(CrftagError) as caught:
        call()
    return str(caught.value)


class Zeros(io.RawIOBase):
    """An endless stream of NUL bytes, as /dev/zero is, that counts what it hands out."""

    def __init__(self):
        self.given = 0

    def readable(self):
        return True

    def readinto(self, buffer):
        buffer[:] = bytes(len(buffer))
        self.given += len(buffer)
        return len(buffer)


def test_a_line_over_the_bound_is_an_error_naming_it(monkeypatch):
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 16)
    sixteen = "x" * 14 + " O"
    sentences = read(f"a O\n{sixteen}\n{sixteen}\r\n\n{sixteen}")  # LF, CRLF, none at the end
    assert [s.tokens for s in sentences] == [("a", "x" * 14, "x" * 14), ("x" * 14,)]
    assert message(lambda: read(f"a O\n{sixteen}\nx{sixteen}\n")) == (
        "f.conll:3: line longer than 16 bytes"
    )
    assert message(lambda: read(f"a O\nx{sixteen}")) == "f.conll:2: line longer than 16 bytes"


def test_an_endless_line_is_refused_after_reading_about_the_bound(monkeypatch):
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 1000)
    zeros = Zeros()
    stream = io.BufferedReader(zeros, buffer_size=256)
    assert message(lambda: read(stream)) == "f.conll:1: line longer than 1000 bytes"
    assert zeros.given <= 1000 + 2 + 2 * 256


def test_the_default_bound_is_4_mib_and_holds_a_line_of_that_size():
    assert lines.MAX_LINE_BYTES == 4 << 20
    word = "x" * (lines.MAX_LINE_BYTES - 2)
    assert read(f"{word} O\n")[0].tokens == (word,)
    assert message(lambda: read(f"{word}x O\n")) == "f.conll:1: line longer than 4194304 bytes"


def test_the_bound_holds_for_skip_and_raw_text_too(monkeypatch):
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 8)
    found = read_lines(io.BytesIO(b"short\n" + b"y" * 9 + b"\n"), "t", "skip", allow_nul=True)
    assert next(found) == (1, "short")
    assert message(lambda: next(found)) == "t:2: line longer than 8 bytes"


def test_cr_only_line_ends_are_refused_naming_the_style():
    cr_only = b"UN B-ORG\rpraises O\rDanish B-MISC\r"
    assert message(lambda: read(cr_only)) == (
        "f.conll:1: old Mac (CR-only) line ends; convert to \\n"
    )
    assert message(lambda: read(cr_only, UNTAGGED, keep_raw=True, on_error="skip")) == (
        "f.conll:1: old Mac (CR-only) line ends; convert to \\n"
    )
    assert message(lambda: read(b"a O\nb O\rc O\n")) == (
        "f.conll:2: a carriage return (\\r) not followed by \\n: mixed line ends; convert to \\n"
    )
    text = read_lines(io.BytesIO(b"one line\rtwo\r"), "t", allow_nul=True)
    assert message(lambda: list(text)) == "t:1: old Mac (CR-only) line ends; convert to \\n"


def test_crlf_and_a_last_cr_keep_working():
    lf = read("a O\nb O\n\nc O\n", keep_raw=True)
    crlf = read("a O\r\nb O\r\n\r\nc O\r", keep_raw=True)
    assert crlf == lf


def test_errors_show_invisible_characters():
    assert message(lambda: read("a O\n\n\u2060\n")) == (
        "f.conll:3: expected 2 columns (line 1 has 2), got 1 column: '\\u2060' (U+2060)"
    )
    assert message(lambda: read("\u200b\nb\n")) == (
        "f.conll:1: expected a word and a tag column, got 1 column: '\\u200b' (U+200B)"
    )
    assert message(lambda: read("a\u00a0b O\n", ColumnSpec("conll", 0, 3))) == (
        "f.conll:1: no column 3 in a line of 3 columns: 'a\\xa0b O' (U+00A0)"
    )
    assert message(lambda: read("a O\nb c O\n")) == (
        "f.conll:2: expected 2 columns (line 1 has 2), got 3 columns: 'b c O'"
    )


def test_shown_cuts_long_lines_and_names_few_code_points():
    assert shown("plain words") == "'plain words'"
    assert shown("tab\there") == "'tab\\there'"
    assert shown("y" * 70) == repr("y" * 60) + "..."
    assert shown("\u200b\u200c\u200d\u2060\ufeff\u00ad\u202e") == (
        repr("\u200b\u200c\u200d\u2060\ufeff\u00ad\u202e")
        + " (U+00AD, U+200B, U+200C, U+200D, U+202E, ...)"
    )


def test_conllu_column_count_error_reads_right():
    assert message(lambda: read("1\tword\tPRON\n", CONLLU)) == (
        "f.conll:1: expected 10 columns (CoNLL-U has 10, tab-separated), got 3 columns: "
        "'1\\tword\\tPRON'"
    )


def test_conllu_ids_that_are_no_number_are_errors_not_dropped_words():
    row = "\t".join(["w", "w", "N", "_", "_", "0", "root", "_", "_"])
    assert [s.tokens for s in read(f"1\t{row}\n2-3\t{row}\n4.1\t{row}\n", CONLLU)] == [("w",)]
    line = f"\u200b2\t{row}"
    assert message(lambda: read(f"1\t{row}\n{line}\n", CONLLU)) == (
        "f.conll:2: CoNLL-U ID '\\u200b2' is not a word number, a range (3-4) or an empty node "
        f"(5.1): {shown(line)}"
    )
    assert "U+200B" in message(lambda: read(f"\u200b2\t{row}\n", CONLLU))
    assert message(lambda: read(f"\u00b2\t{row}\n", CONLLU)).startswith(
        "f.conll:1: CoNLL-U ID '\u00b2' is not a word number"
    )


def test_detect_format_takes_ascii_ids_only(tmp_path):
    row = "\t".join(["w"] * 9)
    (tmp_path / "a.txt").write_text(f"1\t{row}\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text(f"\u00b2\t{row}\n", encoding="utf-8")
    assert detect_format(str(tmp_path / "a.txt")) == "conllu"
    assert detect_format(str(tmp_path / "b.txt")) == "conll"


def test_a_skipped_line_stays_in_its_place_as_no_word(capsys):
    data = b"a\nb\xff\nc\n\n\xfe\xfe\n\nd\n"
    sentences = read(data, UNTAGGED, keep_raw=True, keep_markup=True, on_error="skip")
    assert [s.tokens for s in sentences] == [("a", "c"), (), ("d",)]
    assert [s.raw for s in sentences] == [("a", "b\ufffd", "c"), ("\ufffd\ufffd",), ("d",)]
    assert [s.token_rows for s in sentences] == [(0, 2), (), (0,)]
    assert [s.line for s in sentences] == [1, 5, 7]
    assert capsys.readouterr().err == (
        "crftag: warning: f.conll:2: not valid UTF-8 (byte 2 of the line); skipped\n"
        "crftag: warning: f.conll:5: not valid UTF-8 (byte 1 of the line); skipped\n"
    )


def test_a_skipped_line_before_a_document_marker_stays(capsys):
    data = b"a\n\n\xff\n-DOCSTART- O\nb\n"
    sentences = read(data, UNTAGGED, keep_raw=True, keep_markup=True, on_error="skip")
    assert [s.raw for s in sentences] == [("a",), ("\ufffd",), ("-DOCSTART- O",), ("b",)]
    assert [s.tokens for s in sentences] == [("a",), (), (), ("b",)]
    assert "f.conll:3: not valid UTF-8" in capsys.readouterr().err


def test_a_skipped_conllu_line_stays_in_its_place(capsys):
    row = "\t".join(["w", "w", "N", "_", "_", "0", "root", "_", "_"])
    data = f"1\t{row}\n".encode() + b"2\tx\xff\n" + f"3\t{row}\n".encode()
    sentences = read(data, ColumnSpec("conllu", 1, None), keep_raw=True, on_error="skip")
    assert sentences[0].tokens == ("w", "w")
    assert sentences[0].raw == (f"1\t{row}", "2\tx\ufffd", f"3\t{row}")
    assert sentences[0].token_rows == (0, 2)
    assert "f.conll:2: not valid UTF-8" in capsys.readouterr().err


def test_json_lines_are_bounded_per_document(monkeypatch):
    monkeypatch.setattr(annotations, "MAX_DOCUMENT_BYTES", 32)
    record = json.dumps({"text": "a" * 10}).encode() + b"\n"
    long = json.dumps({"text": "a" * 40}).encode() + b"\n"
    assert [d.text for d in read_span_jsonl(io.BytesIO(record * 2), "f.jsonl")] == ["a" * 10] * 2
    documents = read_span_jsonl(io.BytesIO(record + long), "f.jsonl")
    assert message(lambda: list(documents)) == "f.jsonl:2: line longer than 32 bytes"
    cr_only = read_span_jsonl(io.BytesIO(record.replace(b"\n", b"\r") * 2), "f.jsonl")
    assert message(lambda: list(cr_only)) == (
        "f.jsonl:1: old Mac (CR-only) line ends; convert to \\n"
    )


def test_documents_and_exports_are_bounded(monkeypatch):
    monkeypatch.setattr(annotations, "MAX_DOCUMENT_BYTES", 100)
    monkeypatch.setattr(annotations, "MAX_EXPORT_BYTES", 200)
    assert read_document_text(io.BytesIO(b"x\r" * 50), "d.txt") == "x\r" * 50
    assert message(lambda: read_document_text(io.BufferedReader(Zeros()), "d.txt")) == (
        "d.txt: longer than 100 bytes, the most a document may hold"
    )
    assert message(lambda: read_document_text(io.BytesIO(b"ok\n\xff"), "d.txt")) == (
        "d.txt:2: not valid UTF-8"
    )
    export = json.dumps([{"data": {"text": "x" * 300}}]).encode()
    assert message(lambda: list(read_label_studio(io.BytesIO(export), "ls.json"))) == (
        "ls.json: longer than 200 bytes, the most a Label Studio export may hold"
    )


def test_brat_errors_name_the_line_and_show_its_characters(tmp_path):
    (tmp_path / "a.txt").write_text("UN praises", encoding="utf-8")
    ann = tmp_path / "a.ann"
    ann.write_text("T1\tORG 0 \u00b2\tUN\n", encoding="utf-8")
    assert message(lambda: list(read_brat(str(tmp_path)))) == (
        f"{ann}:1: offsets '0 \u00b2' are not within the text"
    )
    ann.write_text("T1\tORG\u200b0 2\tUN\n", encoding="utf-8")
    assert message(lambda: list(read_brat(str(tmp_path)))) == (
        f"{ann}:1: expected 'ID<TAB>LABEL START END<TAB>TEXT', got "
        "'T1\\tORG\\u200b0 2\\tUN' (U+200B)"
    )
    ann.write_text("T1\tORG 0 2\tUN\u200b\n", encoding="utf-8")
    assert message(lambda: list(read_brat(str(tmp_path)))) == (
        f"{ann}:1: the text 'UN\\u200b' (U+200B) is not the text's [0, 2) 'UN'"
    )
    ann.write_text("", encoding="utf-8")
    (tmp_path / "a.txt").write_bytes(b"UN\n\xff")
    assert message(lambda: list(read_annotations(str(tmp_path)))) == (
        f"{tmp_path / 'a.txt'}:2: not valid UTF-8"
    )
