"""crftag/data/lines.py: one reader for every text file, so a CoNLL file, a dictionary, a text
vector file and pretraining text follow the same rules (BOM, compression told from the bytes,
NUL, line length) and fail the same way (one line naming the file and line)."""

import bz2
import gzip
import lzma

import pytest

from crftag.data import lines
from crftag.data.conll import ColumnSpec, read_corpus
from crftag.data.lexicons import read_lexicons
from crftag.data.lines import open_binary, read_lines
from crftag.data.raw_text import read_text_lines
from crftag.data.vectors import read_embeddings
from crftag.errors import CrftagError

COMPRESSORS = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}
BOM = b"\xef\xbb\xbf"


def read_all(path) -> list:
    with open_binary(str(path)) as stream:
        return list(read_lines(stream, str(path)))


@pytest.mark.parametrize("name", list(COMPRESSORS))
def test_compression_is_told_from_the_bytes_not_the_name(tmp_path, name):
    path = tmp_path / "plain.txt"  # no .gz, .bz2 or .xz: the name says nothing
    path.write_bytes(COMPRESSORS[name](BOM + b"one\r\ntwo\n"))
    assert read_all(path) == [(1, "one"), (2, "two")]


def test_a_compressed_looking_name_on_plain_text_is_read_as_plain(tmp_path):
    path = tmp_path / "text.gz"
    path.write_bytes(b"just text\n")
    assert read_all(path) == [(1, "just text")]


@pytest.mark.parametrize("name", list(COMPRESSORS))
def test_truncated_compressed_data_is_one_error_naming_file_and_line(tmp_path, name):
    data = COMPRESSORS[name](b"".join(b"line %d\n" % i for i in range(20000)))
    path = tmp_path / "cut"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CrftagError, match=rf"^{tmp_path}/cut:\d+: the {name} file ends early"):
        read_all(path)


@pytest.mark.parametrize("name", ["gzip", "xz"])
def test_corrupt_compressed_data_is_one_error_naming_file_and_line(tmp_path, name):
    data = bytearray(COMPRESSORS[name](b"a line of text\n" * 1000))
    data[len(data) // 2] ^= 0xFF
    path = tmp_path / "flipped"
    path.write_bytes(bytes(data))
    with pytest.raises(CrftagError, match=rf"^{tmp_path}/flipped:\d+: corrupt {name} data \("):
        read_all(path)


def test_a_nul_byte_is_an_error_unless_the_text_is_raw(tmp_path):
    path = tmp_path / "nul.txt"
    path.write_bytes(b"fine\nbad\x00line\n")
    with pytest.raises(CrftagError, match=r"nul.txt:2: contains a NUL byte"):
        read_all(path)
    with open_binary(str(path)) as stream:
        assert list(read_lines(stream, "t", allow_nul=True))[1] == (2, "bad\x00line")


def test_a_missing_file_and_a_directory_are_named(tmp_path):
    with pytest.raises(CrftagError, match=r"nothing.txt: no such dictionary file$"):
        lines.open_file(str(tmp_path / "nothing.txt"), "dictionary file")
    with pytest.raises(CrftagError, match=r": is a directory, expected an embeddings file$"):
        lines.open_file(str(tmp_path), "embeddings file")


# Every kind of text file, read through its own reader, with a BOM and CRLF line ends, gzip'ed.


def test_a_bom_prefixed_dictionary_matches_its_first_entry(tmp_path):
    path = tmp_path / "chemicals.txt"
    path.write_bytes(BOM + b"aspirin\r\nvitamin C\r\n")
    lexicons = read_lexicons({"Chemical": str(path)})
    assert lexicons.lexicons[0].entries == {("aspirin",), ("vitamin", "c")}
    assert lexicons.features(["Aspirin"]) == [[4]]  # S: a whole entry


def test_a_compressed_dictionary_is_read(tmp_path):
    path = tmp_path / "chemicals.txt"
    path.write_bytes(gzip.compress(b"aspirin\n"))
    assert read_lexicons({"Chemical": str(path)}).lexicons[0].entries == {("aspirin",)}


def test_a_dictionary_error_names_the_key_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok\nbad\x00\n")
    with pytest.raises(CrftagError, match=r"^model.lexicons.X: .*bad.txt:2: contains a NUL byte"):
        read_lexicons({"X": str(path)})


def test_a_bom_prefixed_conll_file_reads_its_first_word(tmp_path):
    path = tmp_path / "train.conll"
    path.write_bytes(gzip.compress(BOM + b"UN B-ORG\r\npraises O\r\n"))
    (sentence,) = read_corpus(str(path), ColumnSpec())
    assert sentence.tokens == ("UN", "praises")


def test_a_bom_prefixed_vector_file_reads_its_first_word(tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_bytes(gzip.compress(BOM + b"the 0.1 0.2\r\ncat 0.3 0.4\r\n"))
    embeddings = read_embeddings(str(path), show_progress=False)
    assert embeddings.words == ["the", "cat"]


def test_a_bom_prefixed_vector_file_with_a_header_skips_it(tmp_path):
    path = tmp_path / "vectors.vec"
    path.write_bytes(BOM + b"2 2\nthe 0.1 0.2\ncat 0.3 0.4\n")
    assert read_embeddings(str(path), show_progress=False).words == ["the", "cat"]


def test_bom_prefixed_pretraining_text_loses_the_bom(tmp_path):
    path = tmp_path / "text"
    path.write_bytes(xz := lzma.compress(BOM + b"One line .\r\n"))
    assert xz[:6] == b"\xfd7zXZ\x00"
    assert read_text_lines([str(path)]) == ["One line ."]


def read_with(reader: str, path: str) -> None:
    """``path`` read in full as a CoNLL file, a dictionary, a vector file or pretraining text."""
    if reader == "conll":
        read_corpus(path, ColumnSpec())
    elif reader == "dictionary":
        read_lexicons({"X": path})
    elif reader == "vectors":
        read_embeddings(path, show_progress=False)
    else:
        read_text_lines([path])


READERS = ["conll", "dictionary", "vectors", "text"]


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_stops_a_too_long_line_naming_it(tmp_path, monkeypatch, reader):
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 32)
    path = tmp_path / "long"
    path.write_bytes(b"a 0.5\n" + b"x" * 40 + b" 0.5\n")
    with pytest.raises(CrftagError, match=r"long:2: line longer than 32 bytes$"):
        read_with(reader, str(path))


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_names_the_line_of_corrupt_compressed_data(tmp_path, reader):
    path = tmp_path / "cut"
    data = gzip.compress(b"".join(b"w%d 0.5\n" % i for i in range(20000)))
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CrftagError, match=r"cut:\d+: the gzip file ends early \(truncated\)$"):
        read_with(reader, str(path))
