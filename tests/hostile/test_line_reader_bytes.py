"""The bytes of every text file crftag reads (a training corpus, a dictionary, a text vector file,
pretraining text), through the one line reader (crftag/data/lines.py): compression told from the
bytes and not the name, several gzip members, trailing garbage, a zero-byte .gz, byte-order marks
in the middle or of UTF-16 and UTF-32, CR and CRLF line ends, a 100 MB line, NUL bytes and
invalid UTF-8. Each file is read as it should be, or refused in one line naming the file and the
line with exit status 2, and left as it was; no record is dropped or altered in silence."""

import bz2
import gzip
import io
import lzma
import re

import pytest
from hostile_files import assert_refused, assert_training_refuses, snapshot

from crftag.data.conll import ColumnSpec, read_corpus
from crftag.data.lexicons import read_lexicons
from crftag.data.lines import MAX_LINE_BYTES, read_lines
from crftag.data.raw_text import read_text_lines
from crftag.data.vectors import read_embeddings
from crftag.errors import CrftagError

# Each kind of file: a good one (two lines at least), and how `crftag train` is told to read it.
GOOD = {
    "corpus": b"UN B-ORG\nbacks O\n\nBerlin B-LOC\n",
    "dictionary": b"aspirin\nvitamin C\n",
    "vectors": b"the 0.1 0.2\ncat 0.3 0.4\n",
    "text": b"One line of text .\nAnother line .\n",
}
SETTINGS = {
    "corpus": lambda path: [f"data.train={path}"],
    "dictionary": lambda path: [f"model.lexicons={{LOC: {path}}}"],
    "vectors": lambda path: ["model.word_dim=null", f"model.embeddings={path}"],
}
PRETRAIN_TINY = ["--hidden", "8", "--char-dim", "4", "--batch-size", "4", "--device", "cpu"]


def read(kind: str, path) -> list:
    """What crftag reads of ``path`` as a file of ``kind``."""
    if kind == "corpus":
        return [
            sentence.tokens + sentence.tags for sentence in read_corpus(str(path), ColumnSpec())
        ]
    if kind == "dictionary":
        return sorted(read_lexicons({"X": str(path)}).lexicons[0].entries)
    if kind == "vectors":
        embeddings = read_embeddings(str(path), show_progress=False)
        return [embeddings.words, embeddings.vectors.tolist()]
    return read_text_lines([str(path)])


def first_and_rest(data: bytes) -> tuple[bytes, bytes]:
    first, rest = data.split(b"\n", 1)
    return first + b"\n", rest


# Read as they should be: the same records as the plain UTF-8 file gives.
RIGHT = {
    "gzip named .txt": gzip.compress,
    "bzip2 named .txt": bz2.compress,
    "xz named .txt": lzma.compress,
    "plain named .gz": lambda data: data,  # the name says nothing: the bytes are plain text
    "several gzip members": lambda data: b"".join(map(gzip.compress, first_and_rest(data))),
    "gzip padded with zeros": lambda data: gzip.compress(data) + bytes(16),  # as gzip(1) reads
    "CRLF line ends": lambda data: data.replace(b"\n", b"\r\n"),
    "a BOM first": lambda data: b"\xef\xbb\xbf" + data,
}


@pytest.mark.parametrize("case", RIGHT)
@pytest.mark.parametrize("kind", GOOD)
def test_a_file_that_can_be_read_gives_the_records_of_the_plain_file(tmp_path, kind, case):
    plain = tmp_path / "plain.txt"
    plain.write_bytes(GOOD[kind])
    hostile = tmp_path / ("hostile.gz" if case == "plain named .gz" else "hostile.txt")
    hostile.write_bytes(RIGHT[case](GOOD[kind]))
    assert read(kind, hostile) == read(kind, plain)


def with_line_two(data: bytes) -> bytes:
    """``data`` with its second line as given."""
    first, rest = first_and_rest(GOOD["text"])
    return first + data + rest


# Refused: (the bytes, the line named and what it says); `None` for the kinds where it is read.
WRONG = {
    "gzip with trailing garbage": (
        lambda data: gzip.compress(data) + b"garbage!",
        lambda data: f":{len(data.splitlines()) + 1}: bytes after the gzip data that are not gzip",
    ),
    "a zero-byte .gz": (lambda data: b"", lambda data: None),
    "lone CR line ends": (
        lambda data: data.replace(b"\n", b"\r"),
        lambda data: ":1: old Mac (CR-only) line ends",
    ),
    "a lone CR in line 2": (
        lambda data: data.replace(b"\n", b"\n\r", 1),
        lambda data: ":2: a carriage return (\\r) not followed by \\n",
    ),
    "invalid UTF-8 in line 2": (
        lambda data: data.replace(b"\n", b"\n\xff", 1),
        lambda data: ":2: not valid UTF-8 (byte 1 of the line)",
    ),
    "UTF-16 LE with a BOM": (
        lambda data: b"\xff\xfe" + data.decode().encode("utf-16-le"),
        lambda data: ":1: UTF-16 text (it starts with a UTF-16 byte-order mark); convert it",
    ),
    "UTF-16 BE with a BOM": (
        lambda data: b"\xfe\xff" + data.decode().encode("utf-16-be"),
        lambda data: ":1: UTF-16 text",
    ),
    "UTF-32 with a BOM": (
        lambda data: data.decode().encode("utf-32"),
        lambda data: ":1: UTF-32 text (it starts with a UTF-32 byte-order mark)",
    ),
}
EMPTY = {  # what each kind says of a file with no lines
    "corpus": "no sentences found",
    "dictionary": "no entries",
    "vectors": "no vectors",
    "text": "no text (the file is empty or blank)",
}


def refuse(invoke, tiny_args, tmp_path, kind, data, message) -> None:
    """``crftag train`` (or ``pretrain`` for text) on ``data`` as a file of ``kind`` is one
    line naming the file with ``message``, exit status 2, and leaves the file as it was."""
    if kind != "text":
        setting = SETTINGS[kind]
        assert_training_refuses(
            invoke, tiny_args(train__epochs=1), tmp_path, data, setting, message
        )
        return
    path = tmp_path / "hostile.txt"
    path.write_bytes(data)
    before = snapshot(path)
    result = run_on(invoke, tiny_args, tmp_path, kind, path)
    assert_refused(result, path, message)
    assert result.status == 2 and snapshot(path) == before


def run_on(invoke, tiny_args, tmp_path, kind, path):
    """``crftag train`` reading ``path`` as its file of ``kind``, or ``pretrain`` on it."""
    if kind == "text":
        return invoke(["pretrain", str(path), "-o", str(tmp_path / "lm"), *PRETRAIN_TINY])
    settings = [part for value in SETTINGS[kind](path) for part in ("--set", value)]
    run = ["-o", str(tmp_path / "run"), *tiny_args(train__epochs=1), *settings]
    return invoke(["train", "configs/sample.yaml", *run])


@pytest.mark.parametrize("case", WRONG)
@pytest.mark.parametrize("kind", GOOD)
def test_a_file_that_cannot_be_read_is_one_line_naming_file_and_line(
    invoke, tiny_args, tmp_path, kind, case
):
    damage, where = WRONG[case]
    data = GOOD[kind]
    message = where(data) or EMPTY[kind]
    refuse(invoke, tiny_args, tmp_path, kind, damage(data), message)


# A NUL byte and a byte-order mark starting a later line (files joined with cat): an error in a
# file of records, where either would cling to a word; characters of raw text, kept there.
IN_LINE_TWO = {
    "a NUL byte": (b"\x00", ":2: contains a NUL byte; is this a binary file?"),
    "a BOM in the middle": (b"\xef\xbb\xbf", ":2: starts with a byte-order mark (U+FEFF)"),
}


@pytest.mark.parametrize("case", IN_LINE_TWO)
@pytest.mark.parametrize("kind", ["corpus", "dictionary", "vectors"])
def test_a_nul_or_a_bom_in_a_file_of_records_is_one_line(invoke, tiny_args, tmp_path, kind, case):
    added, message = IN_LINE_TWO[case]
    data = GOOD[kind].replace(b"\n", b"\n" + added, 1)
    refuse(invoke, tiny_args, tmp_path, kind, data, message)


@pytest.mark.parametrize("case", IN_LINE_TWO)
def test_a_nul_or_a_bom_in_raw_text_is_a_character_kept(tmp_path, case):
    added, _ = IN_LINE_TWO[case]
    path = tmp_path / "text.txt"
    path.write_bytes(with_line_two(added))
    assert read_text_lines([str(path)]) == ["One line of text .", added.decode() + "Another line ."]


# A 100 MB line: refused at its first MAX_LINE_BYTES bytes, never held whole.


@pytest.mark.parametrize("kind", GOOD)
def test_a_100_mb_line_is_one_line_naming_it(invoke, tiny_args, tmp_path, kind):
    path = tmp_path / "long.txt"
    with open(path, "wb") as handle:  # a sparse file: 100 MB long, no disk used
        handle.write(first_and_rest(GOOD[kind])[0])
        handle.seek(100 << 20)
        handle.write(b"x\n")
    result = run_on(invoke, tiny_args, tmp_path, kind, path)
    assert_refused(result, path, f":2: line longer than {MAX_LINE_BYTES} bytes")
    assert result.status == 2 and path.stat().st_size == (100 << 20) + 2


class EndlessLine(io.RawIOBase):
    """One line that never ends (``x`` forever), counting the bytes read of it."""

    def __init__(self) -> None:
        self.given = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        buffer[:] = b"x" * len(buffer)
        self.given += len(buffer)
        return len(buffer)


def test_the_reader_stops_a_line_without_end_after_its_limit():
    raw = EndlessLine()
    with pytest.raises(CrftagError, match=r"^endless:1: line longer than 1000 bytes$"):
        list(read_lines(io.BufferedReader(raw), "endless", max_bytes=1000))
    assert raw.given <= 1000 + 2 + io.DEFAULT_BUFFER_SIZE


# bzip2 and xz read as gzip is: several streams, zero padding, and trailing garbage refused.
STREAMS = {"bzip2": bz2.compress, "xz": lzma.compress}


@pytest.mark.parametrize("name", STREAMS)
@pytest.mark.parametrize("kind", GOOD)
def test_several_bzip2_or_xz_streams_and_padding_are_read_whole(tmp_path, kind, name):
    plain = tmp_path / "plain.txt"
    plain.write_bytes(GOOD[kind])
    hostile = tmp_path / "hostile.txt"
    compress = STREAMS[name]
    hostile.write_bytes(b"".join(map(compress, first_and_rest(GOOD[kind]))) + bytes(12))
    assert read(kind, hostile) == read(kind, plain)


@pytest.mark.parametrize("name", STREAMS)
@pytest.mark.parametrize("kind", GOOD)
def test_bzip2_or_xz_with_trailing_garbage_is_one_line(invoke, tiny_args, tmp_path, kind, name):
    data = GOOD[kind]
    line = len(data.splitlines()) + 1
    message = f":{line}: bytes after the {name} data that are not {name} (trailing garbage)"
    refuse(invoke, tiny_args, tmp_path, kind, STREAMS[name](data) + b"garbage!", message)


@pytest.mark.parametrize("name", STREAMS)
def test_a_damaged_last_stream_is_not_dropped_in_silence(tmp_path, name):
    """The lines of a second stream whose header is damaged are not lost without a word, as
    bz2.BZ2File and lzma.LZMAFile would lose them."""
    compress = STREAMS[name]
    second = bytearray(compress(b"Another line .\n"))
    second[0] ^= 0xFF
    path = tmp_path / "text.txt"
    path.write_bytes(compress(b"One line .\n") + bytes(second))
    with pytest.raises(CrftagError, match=rf"text.txt:2: bytes after the {name} data"):
        read_text_lines([str(path)])


@pytest.mark.parametrize("kind", GOOD)
def test_a_zero_byte_file_named_gz_is_an_empty_file(tmp_path, kind):
    path = tmp_path / "empty.gz"
    path.write_bytes(b"")
    with pytest.raises(CrftagError, match=re.escape(f"empty.gz: {EMPTY[kind]}")):
        read(kind, path)
