"""benchmarks/char_lm_text.py without its repository: the lines kept, repeats and the held-apart
sentences removed, and the size cut."""

import pytest


@pytest.fixture
def char_lm_text(load_benchmark):
    return load_benchmark("char_lm_text")


def write(path, sentences):
    path.write_text(
        "".join("".join(f"{word}\tO\n" for word in words) + "\n" for words in sentences),
        encoding="utf-8",
    )
    return str(path)


def test_held_apart_sentences_and_repeats_are_dropped(char_lm_text, tmp_path):
    first = write(tmp_path / "a.tsv", [["Aspirin", "helps", "."], ["Cells", "grow", "."]])
    second = write(tmp_path / "b.tsv", [["Cells", "grow", "."], ["Lithium", "kills", "."]])
    test = write(tmp_path / "test.tsv", [["Lithium", "kills", "."]])
    kept, repeats, removed = char_lm_text.pretraining_text([first, second], [test])
    assert kept == ["Aspirin helps .", "Cells grow ."]
    assert (repeats, removed) == (1, 1)


def test_raw_lines_are_compared_without_white_space(char_lm_text, tmp_path):
    tweets = tmp_path / "tweets.txt"
    tweets.write_text("RT @CNN: Obama wins!\n\nnothing here\nnothing  here \n", encoding="utf-8")
    test = write(tmp_path / "test.conll", [["RT", "@", "CNN", ":", "Obama", "wins", "!"]])
    kept, repeats, removed = char_lm_text.pretraining_text([str(tweets)], [test], reader="lines")
    assert kept == ["nothing here", "nothing  here"]
    assert (repeats, removed) == (0, 1)


def test_the_size_cut_counts_utf8_bytes_and_newlines(char_lm_text):
    lines = ["ab", "\u00e9\u00e9", "c"]  # 3, 5 and 2 bytes with their newlines
    assert char_lm_text.within_size(lines, 8e-6) == ["ab", "\u00e9\u00e9"]
    assert char_lm_text.within_size(lines, 7e-6) == ["ab"]
    assert char_lm_text.within_size(lines, None) == lines


REUTERS_SGML = """<!DOCTYPE lewis SYSTEM "lewis.dtd">
<REUTERS TOPICS="YES" NEWID="1">
<DATE>26-FEB-1987 15:01:01.79</DATE>
<TEXT>&#2;
<TITLE>BAHIA COCOA REVIEW</TITLE>
<DATELINE>    SALVADOR, Feb 26 - </DATELINE><BODY>Showers continued throughout
the week in the Bahia cocoa zone. Dry weather &lt;remains&gt; a worry.
    Comissaria Smith said 1.2 mln bags were sold &amp; shipped.
 Reuter
&#3;</BODY></TEXT>
</REUTERS>
<REUTERS TOPICS="NO" NEWID="2">
<TEXT TYPE="BRIEF">&#2;
******<TITLE>SHORT ITEM</TITLE>
&#3;</TEXT>
</REUTERS>
"""


def test_reuters_stories_become_tokenized_sentences(char_lm_text, tmp_path):
    sgml = tmp_path / "reut2-000.sgm"
    sgml.write_text(REUTERS_SGML, encoding="latin-1")
    assert char_lm_text.source_lines(str(sgml), "reuters") == [
        "BAHIA COCOA REVIEW",
        "Showers continued throughout the week in the Bahia cocoa zone .",
        "Dry weather <remains> a worry .",  # crftag keeps <...> whole
        "Comissaria Smith said 1.2 mln bags were sold & shipped .",
        "SHORT ITEM",
    ]


def test_reuters_lines_are_removed_by_their_text_without_white_space(char_lm_text, tmp_path):
    sgml = tmp_path / "reut2-000.sgm"
    sgml.write_text(REUTERS_SGML, encoding="latin-1")
    test = write(tmp_path / "eng.testb", [["SHORT", "ITEM"]])
    kept, repeats, removed = char_lm_text.pretraining_text([str(sgml)], [test], reader="reuters")
    assert "SHORT ITEM" not in kept and len(kept) == 4
    assert (repeats, removed) == (0, 1)


def test_a_byte_order_mark_inside_a_file_is_dropped_from_its_line(char_lm_text, tmp_path):
    tweets = tmp_path / "tweets.txt"
    tweets.write_text("first tweet\n\ufeffsecond tweet\n\ufeff\n", encoding="utf-8")
    kept, repeats, removed = char_lm_text.pretraining_text([str(tweets)], [], reader="lines")
    assert kept == ["first tweet", "second tweet"]
    assert (repeats, removed) == (0, 0)
