import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crftag.data.tokenize import token_offsets, tokenize


@pytest.mark.parametrize(
    "text,tokens",
    [
        ("John Smith lives in Berlin.", "John Smith lives in Berlin ."),
        ("I don't know, he said.", "I do n't know , he said ."),
        ("The U.S. economy grew 3.5% in 2023.", "The U.S. economy grew 3.5% in 2023 ."),
        ("It's Mr. Smith's car (not mine)!", "It 's Mr. Smith 's car ( not mine ) !"),
        ('"Hello," she said...', '" Hello , " she said ...'),
        ("They can't pay $1,000.", "They ca n't pay $ 1,000 ."),
        ("well-known long-term", "well-known long-term"),
        ("   ", ""),
        ("Moved to the U.S.", "Moved to the U.S."),
    ],
)
def test_tokenize_like_conll(text, tokens):
    assert tokenize(text) == tokens.split()


# Any text: letters, combining marks, wide, zero-width and soft-hyphen characters, emoji, the
# punctuation the tokenizer splits off, and every kind of space.
ANY_TEXT = st.text(
    alphabet=st.sampled_from(
        list("aZé.,;:!?'\"()[]$-`“”‘’«»")
        + ["\u0301", "東", "\u200b", "\u00ad", "😀"]
        + [" ", "\t", "\u00a0", "\u3000", "\u2009"]
    ),
    max_size=60,
)


@given(ANY_TEXT)
def test_tokens_are_the_texts_own_characters_in_order(text):
    tokens = tokenize(text)
    # Nothing dropped, nothing rewritten: the tokens are the text's non-space characters.
    assert "".join(tokens) == "".join(text.split())
    offsets = token_offsets(text, tokens)
    for token, (start, end) in zip(tokens, offsets, strict=True):
        assert text[start:end] == token
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(offsets))


def test_offsets_of_tokens_not_in_the_text_are_a_value_error():
    assert token_offsets("a  b", ["a", "b"]) == [(0, 1), (3, 4)]
    with pytest.raises(ValueError, match="'c'"):
        token_offsets("a b", ["a", "c"])
