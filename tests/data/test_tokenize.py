import pytest

from crftag.data.tokenize import tokenize


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
