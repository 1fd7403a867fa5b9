"""Request bodies: what /predict accepts, and a 4xx naming the field for everything else."""

import json

import pytest

from crftag.serve.requests import MAX_ITEMS, MAX_NBEST, RequestError, parse_request


def parse(value) -> object:
    return parse_request(json.dumps(value).encode())


def test_each_input_kind_and_the_options():
    assert parse({"text": "A b ."}).items == ["A b ."]
    assert parse({"texts": ["a", ""]}).items == ["a", ""]
    assert parse({"tokens": [["A", "b"], []]}).items == [["A", "b"], []]
    documents = parse({"documents": ["One. Two.", {"text": "Three."}]})
    assert (documents.kind, documents.items) == ("documents", ["One. Two.", "Three."])
    request = parse(
        {"text": "a", "probs": "all", "nbest": 3, "min_confidence": 0.5, "token_offsets": True}
    )
    assert (request.probs, request.nbest, request.min_confidence, request.token_offsets) == (
        "all",
        3,
        0.5,
        True,
    )
    assert parse({"text": "a", "probs": True}).probs == "tag"


@pytest.mark.parametrize(
    ("body", "status", "names"),
    [
        (b"", 400, "empty body"),
        (b"   ", 400, "empty body"),
        (b"{bad", 400, "not valid JSON"),
        (b"\xff\xfe", 400, "not valid UTF-8"),
        (b"[1, 2]", 400, "expected a JSON object"),
        (b'{"text": "a", "colour": 1}', 400, "unknown field 'colour'"),
        (b"{}", 400, "exactly one of"),
        (b'{"text": "a", "texts": ["b"]}', 400, "exactly one of"),
        (b'{"text": 5}', 400, "text: expected a string"),
        (b'{"texts": "a"}', 400, "texts: expected an array"),
        (b'{"texts": ["a", 3]}', 400, "texts[1]: expected a string"),
        (b'{"tokens": [["a b"]]}', 400, "tokens[0][0]"),
        (b'{"tokens": [[""]]}', 400, "tokens[0][0]"),
        (b'{"tokens": ["a"]}', 400, "tokens[0]: expected an array"),
        (b'{"documents": [{"text": "a", "id": 1}]}', 400, "documents[0]: unknown field 'id'"),
        (b'{"text": "a\\u0000b"}', 400, "NUL"),
        (b'{"text": "a", "probs": "some"}', 400, "probs"),
        (b'{"text": "a", "nbest": 0}', 400, "nbest"),
        (b'{"text": "a", "nbest": true}', 400, "nbest"),
        (b'{"text": "a", "nbest": 10000000}', 400, "nbest"),
        (b'{"text": "a", "min_confidence": 2}', 400, "min_confidence"),
        (b'{"text": "a", "min_confidence": "high"}', 400, "min_confidence"),
        (b'{"text": "a", "token_offsets": 1}', 400, "token_offsets"),
        (b'{"text": "a", "model": 7}', 400, "model"),
        (b"[" * 100000 + b"]" * 100000, 400, "not valid JSON"),
        pytest.param(
            b'{"text": "a", "nbest": 1' + b"0" * 5000 + b"}",
            400,
            "not valid JSON (an integer of more than 4300 digits)",
            id="5000-digit integer",
        ),
    ],
)
def test_a_bad_body_is_a_4xx_naming_the_field(body, status, names):
    with pytest.raises(RequestError) as caught:
        parse_request(body)
    assert caught.value.status == status
    assert names in caught.value.message
    assert "\n" not in caught.value.message


def test_limits_on_items_and_nbest():
    with pytest.raises(RequestError) as caught:
        parse({"texts": ["a"] * (MAX_ITEMS + 1)})
    assert caught.value.status == 413
    assert parse({"text": "a", "nbest": MAX_NBEST}).nbest == MAX_NBEST
    long = ["w"] * 5000  # one long sentence: tagged in pieces, not refused
    assert parse({"tokens": [long]}).items == [long]
