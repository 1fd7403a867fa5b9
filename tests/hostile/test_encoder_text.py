"""Text an encoder's tokenizer makes little or nothing of, tagged by an encoder model: one record
per sentence and one tag per token, always (a token with no subword is read as the unknown
token), whatever the token: zero-width and control characters, a lone combining mark, emoji,
right-to-left text, and sentences of 1,000 to 10,000 tokens. A U+FEFF that opens the input is
its byte-order mark, as in every text file crftag reads; anywhere else it is a token."""

import json
import pathlib

import pytest

transformers = pytest.importorskip("transformers")

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "encoder_models"
MODEL = FIXTURES / f"tf{transformers.__version__.split('.')[0]}.pt"
SENTENCES = [
    ["John", "\ufeff", "Smith"],  # U+FEFF inside a line
    ["\ufeff", "John", "Smith"],  # and opening one (not the input's first)
    ["\u200b", "John", "\u200d", "\u2060", "\u00ad"],  # zero-width space, joiner, word joiner
    ["\u0301"],  # a lone combining acute accent
    ["a", "\x01", "\x1b", "\x7f", "b"],  # control characters
    ["\U0001f600", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\U0001f1e9\U0001f1ea"],
    ["\u05e9\u05dc\u05d5\u05dd", "\u0645\u0631\u062d\u0628\u0627", "\u202e", "x", "\u200f"],
]


@pytest.fixture(scope="module")
def tagger():
    from crftag import load

    return load(str(MODEL))


def test_every_token_is_tagged_through_the_command(invoke):
    text = "Anna Lindqvist\n" + "".join(" ".join(tokens) + "\n" for tokens in SENTENCES)
    result = invoke(
        ["predict", "-m", str(MODEL), "--input-format", "tokens", "--format", "jsonl"], stdin=text
    )
    assert result.status == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [record["tokens"] for record in records] == [["Anna", "Lindqvist"], *SENTENCES]
    assert [len(record["tags"]) for record in records] == [2, *map(len, SENTENCES)]


def test_a_byte_order_mark_opening_the_input_is_not_a_token(invoke):
    args = ["predict", "-m", str(MODEL), "--input-format", "tokens", "--format", "jsonl"]
    result = invoke(args, stdin="\ufeffJohn Smith\n\ufeff John\n")
    assert result.status == 0, result.stderr
    records = [json.loads(line)["tokens"] for line in result.stdout.splitlines()]
    assert records == [["John", "Smith"], ["\ufeff", "John"]]


def test_every_token_is_tagged_through_the_library(tagger):
    tags = tagger.tag(SENTENCES)
    assert [len(sentence) for sentence in tags] == [len(tokens) for tokens in SENTENCES]


@pytest.mark.parametrize("length", [1_000, pytest.param(10_000, marks=pytest.mark.slow)])
def test_a_long_sentence_has_a_tag_for_every_token(tagger, length):
    words = ["John", "Smith", "lives", "in", "Berlin", "\u200b", "Zwölfhundertneunundneunzig"]
    sentence = [words[index % len(words)] for index in range(length)]
    (tags,) = tagger.tag([sentence])
    assert len(tags) == length
    # The same words in the same surroundings, far apart: read in windows, tagged alike.
    assert tags[len(words) * 20 : len(words) * 21] == tags[len(words) * 80 : len(words) * 81]


def test_a_token_a_tokenizer_without_an_unknown_token_drops_is_one_line():
    """A tokenizer with no unknown token that makes nothing of a token cannot give it a state:
    refused in one line naming the token, never tagged without it."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from crftag.data.subwords import subwords_of
    from crftag.errors import CrftagError

    backend = Tokenizer(models.BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]))
    backend.normalizer = normalizers.BertNormalizer(clean_text=True)  # drops control characters
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend)
    assert subwords_of(tokenizer, [["ab", "a"]])[0].counts == [1, 1]
    with pytest.raises(CrftagError, match=r"makes nothing of the token '\\x01' and has no unknown"):
        subwords_of(tokenizer, [["ab", "\x01", "a"]])
