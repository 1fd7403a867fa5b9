import itertools
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crftag.data.sentences import paragraphs, split_sentences, split_sentences_with
from crftag.errors import CrftagError


def sentences(text):
    return [text[start:end] for start, end in split_sentences(text)]


@pytest.mark.parametrize(
    "text,expected",
    [
        (
            "Mr. Smith went to Washington. He arrived at 3.5 p.m. today.",
            ["Mr. Smith went to Washington.", "He arrived at 3.5 p.m. today."],
        ),
        (
            "The U.S. economy grew 3.5% in 2023. Prices fell by 1.2 percent.",
            ["The U.S. economy grew 3.5% in 2023.", "Prices fell by 1.2 percent."],
        ),
        ('"Stop!" he said. "Why?" she asked.', ['"Stop!" he said.', '"Why?" she asked.']),
        ("Dr. Jones et al. agree. So do we.", ["Dr. Jones et al. agree.", "So do we."]),
        # Tokenized text: a terminal after a space still ends a sentence.
        (
            "The river froze early . Boats stayed in port ( all of them ) .",
            ["The river froze early .", "Boats stayed in port ( all of them ) ."],
        ),
        # A blank line ends a sentence, even one with no terminal; a single line break does not.
        ("A headline\n\nThe body starts here.", ["A headline", "The body starts here."]),
        (
            "Text wrapped over\na line break. Then more.",
            ["Text wrapped over\na line break.", "Then more."],
        ),
        ("One\r\n\r\nTwo and\r\nthree.", ["One", "Two and\r\nthree."]),
        ("a\n \t\u00a0\nb", ["a", "b"]),
        ("a\u2028\u2028b", ["a", "b"]),
        ("  Leading and trailing space.  ", ["Leading and trailing space."]),
        (
            "Café\u0301 😀 au lait. Ça\u200b va? 東京は大きい。",
            ["Café\u0301 😀 au lait.", "Ça\u200b va?", "東京は大きい。"],
        ),
    ],
)
def test_split_sentences(text, expected):
    assert sentences(text) == expected


@pytest.mark.parametrize("text", ["", " ", "\n\n\t", "\u00a0\u3000\r\n", "\u2028"])
def test_blank_text_has_no_sentences(text):
    assert split_sentences(text) == []


def test_a_crlf_line_end_is_one_line_break_not_a_blank_line():
    assert paragraphs("a\r\nb\r\n\r\nc") == [(0, 4), (8, 9)]
    assert paragraphs("a\r\rb\n\r\nc") == [(0, 1), (3, 4), (7, 8)]


# Text that looks like prose (words, abbreviations, numbers, quotes, terminals) and text of any
# characters: combining marks, wide, zero-width, emoji, a lone surrogate, every kind of space and
# line break.
PIECES = st.sampled_from(
    ["The", "cat", "Mr.", "U.S.", "3.5", "e.g.", "A.", "sat", '"', "'", "(", ")", "...", ".", "!"]
    + ["?", "。", "東京", "e\u0301", "\u200b", "😀", "\ud800", " ", " ", " ", "\t", "\u00a0"]
    + ["\u3000", "\n", "\r\n", "\r", "\n\n", "\u2028", "\x0c", "\x1c", "\x85"]
)
ANY_TEXT = st.one_of(st.lists(PIECES, max_size=40).map("".join), st.text(max_size=60))


def assert_contract(text, ranges):
    for start, end in ranges:
        piece = text[start:end]
        assert 0 <= start < end <= len(text)
        assert piece == piece.strip()
        # No blank line inside a sentence: the inner lines all hold something.
        assert all(line.strip() for line in piece.splitlines())
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
    covered = {index for start, end in ranges for index in range(start, end)}
    assert covered >= {index for index, character in enumerate(text) if not character.isspace()}


@given(ANY_TEXT)
def test_sentences_cover_the_text_once_in_order(text):
    ranges = split_sentences(text)
    assert_contract(text, ranges)
    assert ranges == split_sentences(text)
    if not text.strip():
        assert ranges == []


@given(ANY_TEXT, ANY_TEXT)
def test_a_blank_line_splits_the_text_into_independent_parts(first, second):
    joined = first + "\n\n" + second
    shift = len(first) + 2
    expected = split_sentences(first) + [(a + shift, b + shift) for a, b in split_sentences(second)]
    assert split_sentences(joined) == expected


@given(ANY_TEXT, st.lists(st.text(max_size=20), max_size=6))
def test_any_segmenter_output_still_gives_the_contract(text, returned):
    # A segmenter that drops, changes or invents characters: offsets still cover the text.
    assert_contract(text, split_sentences_with(text, lambda paragraph: returned))


def test_characters_a_segmenter_changes_do_not_move_the_boundaries():
    text = "Ab cd. Ef gh. Ij."
    changed = ["Ab c.", "EF gh.", "ij"]
    assert split_sentences_with(text, lambda paragraph: changed) == [(0, 6), (7, 13), (14, 17)]


def test_text_a_segmenter_leaves_out_joins_a_sentence_beside_it():
    text = "One. Two. Three."
    beside = split_sentences_with(text, lambda paragraph: ["One.", "Three."])
    assert beside in ([(0, 4), (5, 16)], [(0, 9), (10, 16)])
    assert split_sentences_with(text, lambda paragraph: ["One."]) == [(0, 16)]


def test_a_segmenter_that_returns_nothing_gives_whole_paragraphs():
    text = "One. Two.\n\nThree. Four."
    assert split_sentences_with(text, lambda paragraph: []) == [(0, 9), (11, 23)]


def test_without_segtok_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "segtok", None)
    monkeypatch.setitem(sys.modules, "segtok.segmenter", None)
    with pytest.raises(CrftagError, match=r"needs the segtok package: pip install segtok"):
        split_sentences("A sentence.")


def test_importing_the_module_does_not_import_segtok():
    code = "import sys, crftag.data.sentences; print('segtok' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr
