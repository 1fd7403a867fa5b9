"""Column-file readers and writers on hand-made files."""

import io

import pytest

from crftag.data.conll import (
    ColumnSpec,
    detect_format,
    document_keys,
    format_conll_block,
    read_columns,
)
from crftag.errors import CrftagError


def read(text, spec=ColumnSpec(), **options):
    data = text.encode("utf-8") if isinstance(text, str) else text
    return list(read_columns(io.BytesIO(data), "f.conll", spec, **options))


CONLL03 = (
    "-DOCSTART- -X- -X- O\n\n"
    "UN NNP B-NP B-ORG\npraises VBZ B-VP O\nDanish JJ B-NP B-MISC\n\n\n\n"
    "Maria NNP B-NP B-PER\nLindqvist NNP I-NP I-PER"  # no blank line, no newline at the end
)


def test_conll2003_four_columns():
    sentences = read(CONLL03)
    assert [s.tokens for s in sentences] == [("UN", "praises", "Danish"), ("Maria", "Lindqvist")]
    assert [s.tags for s in sentences] == [("B-ORG", "O", "B-MISC"), ("B-PER", "I-PER")]
    assert [s.line for s in sentences] == [3, 9]


def test_crlf_bom_tabs_and_chosen_columns():
    text = "\ufeffJohn\tNNP\tB-PER\r\nlives\tVBZ\tO\r\n\r\n"
    sentences = read(text, ColumnSpec("conll", word_column=0, tag_column=1))
    assert sentences[0].tokens == ("John", "lives")
    assert sentences[0].tags == ("NNP", "VBZ")


def test_conllu_skips_comments_ranges_and_empty_nodes():
    text = (
        "# sent_id = 1\n# text = I can't go\n"
        "1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_\n"
        "2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "2\tca\tcan\tAUX\tMD\t_\t4\taux\t_\t_\n"
        "3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_\n"
        "3.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t_\t_\n"
        "4\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\t_\n"
    )
    sentences = read(text, ColumnSpec.for_format("conllu"), keep_raw=True)
    assert sentences[0].tokens == ("I", "ca", "n't", "go")
    assert sentences[0].tags == ("PRON", "AUX", "PART", "VERB")
    assert len(sentences[0].raw) == 8
    assert sentences[0].token_rows == (2, 4, 5, 7)


def test_inconsistent_column_count_names_file_and_line():
    with pytest.raises(
        CrftagError, match=r"^f.conll:3: expected 2 columns \(line 1 has 2\), got 3"
    ):
        read("a O\nb O\nc X O\n")


def test_missing_tag_column_and_bad_bytes():
    with pytest.raises(CrftagError, match=r"f.conll:1: expected a word and a tag column"):
        read("word\nother\n")
    with pytest.raises(CrftagError, match=r"f.conll:2: not valid UTF-8"):
        read(b"a O\n\xff\xfe O\n")
    with pytest.raises(CrftagError, match=r"f.conll:1: contains a NUL byte"):
        read(b"a\x00 O\n")


def test_conllu_needs_ten_columns():
    with pytest.raises(CrftagError, match=r"f.conll:1: expected 10 columns"):
        read("1\tword\tPRON\n", ColumnSpec.for_format("conllu"))


def test_markup_blocks_are_kept_for_writing_back():
    sentences = read(CONLL03, keep_raw=True, keep_markup=True)
    assert [len(s.tokens) for s in sentences] == [0, 3, 2]
    written = "".join(format_conll_block(s, ["X"] * len(s.tokens)) for s in sentences)
    assert written.splitlines()[0] == "-DOCSTART- -X- -X- O O"
    assert written.splitlines()[2] == "UN NNP B-NP B-ORG X"
    # Every original line is there, in order, with one column more.
    originals = [line for line in CONLL03.splitlines() if line.strip()]
    extended = [line for line in written.splitlines() if line.strip()]
    assert [line.rsplit(" ", 1)[0] for line in extended] == originals


def test_detect_format(tmp_path):
    conllu = tmp_path / "a.txt"
    conllu.write_text("1\tI\tI\tPRON\tPRP\t_\t3\tnsubj\t_\t_\n", encoding="utf-8")
    conll = tmp_path / "b.txt"
    conll.write_text("I PRP\n", encoding="utf-8")
    assert detect_format(str(conllu)) == "conllu"
    assert detect_format(str(conll)) == "conll"
    assert detect_format("x.conllu") == "conllu"


DOCUMENTS = """-DOCSTART- -X- O O

Japan NNP B-NP B-LOC
won VBD B-VP O

Japan NNP B-NP B-LOC
lost VBD B-VP O

-DOCSTART- -X- O O

JAPAN NNP B-NP B-LOC
. . O O
"""


def test_documents_follow_the_markers():
    sentences = read(DOCUMENTS)
    assert [s.document for s in sentences] == [1, 1, 2]
    keys = document_keys(sentences, "f")
    assert keys[0] == keys[1] != keys[2]


def test_sentences_before_any_marker_are_documents_of_their_own():
    sentences = read("a O\n\nb O\n\n-DOCSTART- O\n\nc O\n\nd O\n")
    keys = document_keys(sentences)
    assert len(set(keys[:2])) == 2 and keys[2] == keys[3]
    assert keys[0] not in keys[2:] and keys[1] not in keys[2:]


def test_conllu_newdoc_comments_start_documents():
    row = "1\t{}\t_\tNOUN\t_\t_\t0\troot\t_\t_\n"
    text = (
        "# newdoc id = a\n# sent_id = 1\n" + row.format("x") + "\n"
        "# sent_id = 2\n" + row.format("y") + "\n"
        "# newdoc id = b\n# sent_id = 3\n" + row.format("z") + "\n"
    )
    sentences = read(text, ColumnSpec.for_format("conllu"))
    assert [s.document for s in sentences] == [1, 1, 2]
