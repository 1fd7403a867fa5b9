"""The character vocabulary and the words' boundary positions in the coded sentence."""

from crftag.data.char_codes import BOUNDARY, UNKNOWN, CharCodes


def test_most_frequent_characters_are_kept_and_the_rest_read_as_unknown():
    codes = CharCodes.counted(["aab", "abc"], max_symbols=5)
    assert codes.symbols[3:] == ["a", "b"]
    assert codes.encode("abz") == [BOUNDARY, 3, 4, UNKNOWN, BOUNDARY]


def test_word_boundaries_index_the_first_and_last_characters():
    codes = CharCodes.counted(["New York is big"], max_symbols=50)
    coded, lasts, firsts = codes.encode_words(["New", "York", "is"])
    text = "\0New York is\0"  # the boundary symbols at both ends
    assert len(coded) == len(text)
    assert [text[i] for i in lasts] == ["w", "k", "s"]
    assert [text[i] for i in firsts] == ["N", "Y", "i"]
    assert [codes.symbols[coded[i]] for i in firsts] == ["N", "Y", "i"]
