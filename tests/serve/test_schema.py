"""The /predict request schema is the one the server validates: every documented field is
accepted with a value the document allows, every undocumented field is refused, and on
arbitrary bodies the server agrees with an independent JSON Schema validator reading the
served document."""

import json
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from crftag.data.labels import label_problem
from crftag.serve.openapi import openapi_document
from crftag.serve.requests import RequestError, parse_request
from crftag.serve.schema import INPUT_FIELDS, REQUEST_SCHEMA

DOCUMENT = json.loads(json.dumps(openapi_document()))  # as a client reads it
SCHEMA = DOCUMENT["components"]["schemas"]["Predict"]

# A value the document allows, and one it refuses, for each documented field.
ALLOWED = {
    "text": "John lives in Berlin .",
    "texts": ["a b", ""],
    "tokens": [["John", "lives"], []],
    "documents": ["One. Two.", {"text": "Three."}],
    "probs": "all",
    "nbest": 3,
    "min_confidence": 0.5,
    "token_offsets": True,
    "model": "en-ner",
}
REFUSED = {
    "text": 5,
    "texts": "a",
    "tokens": [["a b"]],
    "documents": [{"text": "a", "id": 1}],
    "probs": "some",
    "nbest": 0,
    "min_confidence": 2,
    "token_offsets": 1,
    "model": 7,
}


def accepts(body: dict) -> bool:
    try:
        parse_request(json.dumps(body).encode())
    except RequestError:
        return False
    return True


def test_the_document_describes_predict_with_the_validated_schema():
    assert DOCUMENT["openapi"].startswith("3.1")
    body = DOCUMENT["paths"]["/predict"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"] == {"$ref": "#/components/schemas/Predict"}
    assert json.loads(json.dumps(REQUEST_SCHEMA)) == SCHEMA
    assert set(DOCUMENT["paths"]) == {"/predict", "/health", "/models", "/metrics", "/openapi.json"}


def test_every_documented_field_is_accepted_and_checked():
    assert set(SCHEMA["properties"]) == set(ALLOWED) == set(REFUSED)
    for name in SCHEMA["properties"]:
        base = {} if name in INPUT_FIELDS else {"text": "a"}
        assert accepts({**base, name: ALLOWED[name]}), name
        with pytest.raises(RequestError) as caught:
            parse_request(json.dumps({**base, name: REFUSED[name]}).encode())
        assert caught.value.message.startswith(name), caught.value.message


@pytest.mark.parametrize("name", ["colour", "id", "Text", "option", "inputs", "labels"])
def test_every_undocumented_field_is_refused(name):
    assert name not in SCHEMA["properties"]
    with pytest.raises(RequestError) as caught:
        parse_request(json.dumps({"text": "a", name: 1}).encode())
    assert caught.value.message.startswith(f"unknown field {name!r}")


def test_the_documented_defaults_are_the_servers():
    request = parse_request(b'{"text": "a"}')
    for name in ("probs", "nbest", "min_confidence", "token_offsets", "model"):
        assert getattr(request, name) == SCHEMA["properties"][name]["default"]


def test_the_server_serves_the_document_and_takes_each_documented_field():
    pytest.importorskip("uvicorn")
    from test_serve_http import Server

    running = Server()
    try:
        status, body, headers = running.get("/openapi.json")
        assert status == 200 and headers["content-type"] == "application/json"
        assert json.loads(body) == DOCUMENT
        for name in SCHEMA["properties"]:
            base = {} if name in INPUT_FIELDS else {"text": "a"}
            assert running.predict({**base, name: ALLOWED[name]})[0] == 200, name
            assert running.predict({**base, name: REFUSED[name]})[0] == 400, name
        assert running.predict({"text": "a", "colour": 1})[0] == 400
    finally:
        status, errors = running.stop()
    assert status == 0, errors


jsonschema = pytest.importorskip("jsonschema")
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 200),
    st.floats(-1, 2, allow_nan=False),
    st.sampled_from(["", "a", "a b", "tag", "all", "a\x00b", "en-ner", "x\n"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["text", "id"]), inner, max_size=2)
    ),
    max_leaves=6,
)
BODIES = st.dictionaries(
    st.sampled_from([*REQUEST_SCHEMA["properties"], "colour"]), VALUES, max_size=4
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(BODIES)
@example({"tokens": [["x\n"]]})  # Python's "$" matches before a final line break
def test_the_server_accepts_exactly_what_the_document_allows(body):
    assert accepts(body) == VALIDATOR.is_valid(body), body


@pytest.mark.parametrize(
    "token", ["x\n", "x\r\n", "\nx", "x\ty", "x\x85", "x\u2028", "x\x01", "x\x7f"]
)
def test_a_token_with_white_space_or_a_control_character_is_refused_by_both(token):
    body = {"tokens": [[token]]}
    assert not VALIDATOR.is_valid(body)
    with pytest.raises(RequestError) as caught:
        parse_request(json.dumps(body).encode())
    assert caught.value.message.startswith("tokens[0][0]: expected a non-empty token without")


def test_a_token_holds_exactly_what_a_column_field_holds():
    """The token pattern refuses exactly the characters a CoNLL column refuses in a label (white
    space and control characters), every code point tried alone and after a letter."""
    pattern = re.compile(SCHEMA["properties"]["tokens"]["items"]["items"]["pattern"])
    for code in range(0x110000):
        for token in (chr(code), "a" + chr(code)):
            assert (pattern.search(token) is not None) == (label_problem(token) is None), hex(code)
