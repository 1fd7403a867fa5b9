"""The ``POST /predict`` body, defined once as a JSON Schema, and the validator that reads that
same schema: what ``/openapi.json`` documents is what the server checks, field by field.

The validator knows the keywords the schema uses (``type``, ``enum``, ``minimum``,
``maximum``, ``minLength``, ``pattern``, ``items``, ``maxItems``, ``properties``,
``additionalProperties: false``, ``anyOf`` by type, and ``oneOf`` of ``required``); a schema
with any other keyword is a bug, refused when the module loads. Each failure is one message
naming the field (``texts[1]: expected a string, got a number``), with the HTTP status 413 for
a count over ``maxItems`` and 400 otherwise.
"""

from __future__ import annotations

import math
import re

__all__ = [
    "INPUT_FIELDS",
    "MAX_ITEMS",
    "MAX_NBEST",
    "REQUEST_SCHEMA",
    "SchemaError",
    "shown_value",
    "validate",
]

MAX_ITEMS = 1000  # texts, token lists or documents in one request
MAX_NBEST = 100  # beyond this an n-best list is a memory bomb, not an answer
INPUT_FIELDS = ("text", "texts", "tokens", "documents")

# A string's "title" says what it must be, in the messages as in the document.
_TEXT = {"type": "string", "pattern": "^[^\\u0000]*$", "title": "a string without a NUL character"}
# What a token may not hold: the characters that would split it, or break its line, in a file
# of tokens or a CoNLL column (crftag.data.labels): Python's white space and the C0 and C1
# control characters, spelled out so every regular-expression dialect reads the same set.
_NOT_IN_A_TOKEN = "\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
_TOKEN = {
    "type": "string",
    "minLength": 1,
    # "(?![\\s\\S])" (no character follows) ends the token in every dialect; "$" would also
    # match before a final line break in Python's (and so in Python's JSON Schema validators).
    "pattern": f"^[^{_NOT_IN_A_TOKEN}]+(?![\\s\\S])",
    "title": "a non-empty token without white space or control characters",
}
_SENTENCE = {"type": "array", "items": _TOKEN, "description": "one sentence's tokens"}
_DOCUMENT = {
    "anyOf": [
        _TEXT,
        {
            "type": "object",
            "properties": {"text": _TEXT},
            "required": ["text"],
            "additionalProperties": False,
        },
    ],
    "description": "a document: its text, or an object with its text",
}


def _items(schema: dict, description: str) -> dict:
    return {"type": "array", "items": schema, "maxItems": MAX_ITEMS, "description": description}


REQUEST_SCHEMA = {
    "title": "PredictRequest",
    "type": "object",
    "description": "Exactly one input (text, texts, tokens or documents) and any options.",
    "properties": {
        "text": {**_TEXT, "description": "one text, tokenized as predict --input-format text"},
        "texts": _items(_TEXT, "texts, one record each"),
        "tokens": _items(_SENTENCE, "token lists, one record each (--input-format tokens)"),
        "documents": _items(_DOCUMENT, "documents split into sentences (--input-format doc)"),
        "probs": {
            "enum": [None, False, True, "tag", "all"],
            "default": None,
            "description": 'marginal probabilities: true or "tag" for the chosen tags\', '
            '"all" for every tag\'s (--probs)',
        },
        "nbest": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_NBEST,
            "default": 1,
            "description": "the n best tag sequences (--nbest)",
        },
        "min_confidence": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "default": 0,
            "description": "leave out spans less confident than this (--min-confidence)",
        },
        "token_offsets": {
            "type": "boolean",
            "default": False,
            "description": "each token's character offsets (--token-offsets)",
        },
        "model": {
            "type": ["string", "null"],
            "default": None,
            "description": "which served model (default: the first -m)",
        },
    },
    "additionalProperties": False,
    "oneOf": [{"required": [name]} for name in INPUT_FIELDS],
}

_KEYWORDS = {
    "type", "enum", "minimum", "maximum", "minLength", "pattern", "items", "maxItems",
    "properties", "required", "additionalProperties", "anyOf", "oneOf",
    "title", "description", "default",
}  # fmt: skip
_NAMES = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


class SchemaError(Exception):
    """A value the schema refuses: ``status`` (400, or 413 over ``maxItems``) and a message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def validate(value, schema: dict, where: str) -> None:
    """Raise :class:`SchemaError` for the first way ``value`` breaks ``schema``; ``where``
    names the value in messages (``""`` for the body itself, whose fields go by their names)."""
    if "anyOf" in schema:
        _any_of(value, schema, where)
        return
    if "enum" in schema and not any(_same(value, allowed) for allowed in schema["enum"]):
        allowed = ", ".join(_json(choice) for choice in schema["enum"])
        _fail(where, f"one of {allowed}", value)
    if "type" in schema:
        _check_type(value, schema, where)
    if isinstance(value, str):
        _check_string(value, schema, where)
    elif isinstance(value, list):
        if len(value) > schema.get("maxItems", math.inf):
            raise SchemaError(
                413, f"{where}: {len(value)} items; at most {schema['maxItems']} a request"
            )
        for index, item in enumerate(value):
            validate(item, schema["items"], f"{where}[{index}]")
    elif isinstance(value, dict):
        _check_object(value, schema, where)


def _check_type(value, schema: dict, where: str) -> None:
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if not any(_is(value, kind) for kind in types):
        _fail(where, " or ".join(_NAMES[kind] for kind in types), value)
    if _is(value, "number") and not (
        schema.get("minimum", -math.inf) <= value <= schema.get("maximum", math.inf)
    ):
        kind = _NAMES[types[0]]
        _fail(where, f"{kind} from {schema['minimum']} to {schema['maximum']}", value)


def _check_string(value: str, schema: dict, where: str) -> None:
    short = len(value) < schema.get("minLength", 0)
    if short or ("pattern" in schema and not re.search(schema["pattern"], value)):
        _fail(where, schema["title"], value)


def _check_object(value: dict, schema: dict, where: str) -> None:
    known = schema.get("properties", {})
    if schema.get("additionalProperties") is False:
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise SchemaError(
                400, f"{_prefix(where)}unknown field {unknown[0]!r} (valid: {', '.join(known)})"
            )
    for name in schema.get("required", []):
        if name not in value:
            _fail(f"{where}.{name}", "a value", None)
    if "oneOf" in schema:
        names = [alternative["required"][0] for alternative in schema["oneOf"]]
        given = [name for name in names if name in value]
        if len(given) != 1:
            listed = ", ".join(repr(name) for name in names)
            got = f", got {', '.join(repr(name) for name in given)}" if given else ""
            raise SchemaError(400, f"expected exactly one of {listed}{got}")
    for name, item in value.items():
        validate(item, known[name], f"{where}.{name}" if where else name)


def _any_of(value, schema: dict, where: str) -> None:
    for alternative in schema["anyOf"]:
        if _is(value, alternative["type"]):
            validate(value, alternative, where)
            return
    _fail(where, " or ".join(_NAMES[a["type"]] for a in schema["anyOf"]), value)


def _is(value, kind: str) -> bool:
    if kind in ("integer", "number"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        finite = isinstance(value, int) or math.isfinite(value)
        return finite and (kind == "number" or isinstance(value, int))
    types = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    return isinstance(value, types[kind])


def _same(value, allowed) -> bool:
    """JSON equality: ``true`` is not ``1``."""
    return type(value) is type(allowed) and value == allowed


def _fail(where: str, expected: str, value) -> None:
    raise SchemaError(400, f"{_prefix(where)}expected {expected}, got {shown_value(value)}")


def _prefix(where: str) -> str:
    return f"{where}: " if where else ""


def shown_value(value) -> str:
    """A value as a message quotes it: its kind for an object or array, else its JSON."""
    if isinstance(value, dict | list):
        return _NAMES["object" if isinstance(value, dict) else "array"]
    shown = _json(value)
    return shown if len(shown) <= 60 else shown[:60] + "..."


def _json(value) -> str:
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return repr(value)


def _keywords(schema: dict) -> set[str]:
    found = set(schema)
    for key in ("items",):
        if key in schema:
            found |= _keywords(schema[key])
    for key in ("anyOf", "oneOf"):
        for alternative in schema.get(key, []):
            found |= _keywords(alternative)
    for item in schema.get("properties", {}).values():
        found |= _keywords(item)
    return found


if _keywords(REQUEST_SCHEMA) - _KEYWORDS:  # the validator must know every keyword it meets
    raise AssertionError(f"unknown schema keywords {_keywords(REQUEST_SCHEMA) - _KEYWORDS}")
