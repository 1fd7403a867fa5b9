"""The NumPy network keeps character encodings across batches; a sentence's answer must not
depend on what was tagged before it (or with it, for the character encoder), to the last bit:
otherwise a line of ``crftag predict`` would read differently after other lines, and a server's
answer would depend on its earlier requests."""

import crftag

SENTENCE = "Angela Merkel met Emmanuel Macron in Paris on Tuesday ."
BEFORE = [
    "Maria Lindqvist said the Scottish Parliament met in Kirkwall .",
    "Paris Saint-Germain beat Marseille 2-1 in Paris on Sunday .",
]


def test_a_sentence_reads_the_same_whatever_was_tagged_before():
    fresh = crftag.load("en-ner").predict([SENTENCE], probs="all")[0].to_dict()
    used = crftag.load("en-ner")
    used.predict(BEFORE, probs="all")
    assert used.predict([SENTENCE], probs="all")[0].to_dict() == fresh
    assert used.network.forwards["chars"].encodings.slots  # the encodings were kept and reused
