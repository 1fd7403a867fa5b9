"""A ``POST /predict`` body, read and checked: every mistake is a :class:`RequestError` with the
HTTP status and a message naming the field, never an exception that would become a 500."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

__all__ = ["MAX_ITEMS", "MAX_NBEST", "PredictRequest", "RequestError", "parse_request"]

MAX_ITEMS = 1000  # texts, token lists or documents in one request
MAX_NBEST = 100  # beyond this an n-best list is a memory bomb, not an answer
INPUT_FIELDS = ("text", "texts", "tokens", "documents")
OPTION_FIELDS = ("probs", "nbest", "min_confidence", "token_offsets", "model")


class RequestError(Exception):
    """A request the server refuses: ``status`` (4xx) and a one-line ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class PredictRequest:
    """What a request asks for: ``kind`` ``"sentences"`` (``items`` strings or token lists,
    one record each) or ``"documents"`` (``items`` texts), and the options of predict."""

    kind: str
    items: list = field(default_factory=list)
    model: str | None = None
    probs: str | None = None
    nbest: int = 1
    min_confidence: float = 0.0
    token_offsets: bool = False

    @property
    def options(self) -> tuple:
        """The options that must be equal for two requests to share a batch."""
        return (self.model, self.probs, self.nbest, self.min_confidence, self.token_offsets)


def parse_request(body: bytes) -> PredictRequest:
    """The request in ``body`` (UTF-8 JSON object), or a :class:`RequestError`."""
    if not body.strip():
        raise RequestError(400, 'empty body: expected a JSON object such as {"text": "..."}')
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise RequestError(400, "body: not valid UTF-8") from None
    except (json.JSONDecodeError, RecursionError) as error:
        raise RequestError(400, f"body: not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise RequestError(400, f"body: expected a JSON object, got {_kind(data)}")
    unknown = sorted(set(data) - set(INPUT_FIELDS) - set(OPTION_FIELDS))
    if unknown:
        valid = ", ".join(INPUT_FIELDS + OPTION_FIELDS)
        raise RequestError(400, f"unknown field {unknown[0]!r} (valid: {valid})")
    given = [name for name in INPUT_FIELDS if name in data]
    if len(given) != 1:
        raise RequestError(
            400,
            "expected exactly one of 'text', 'texts', 'tokens', 'documents'"
            + (f", got {', '.join(repr(g) for g in given)}" if given else ""),
        )
    request = _read_items(given[0], data[given[0]])
    _read_options(request, data)
    return request


def _read_items(name: str, value) -> PredictRequest:
    if name == "text":
        return PredictRequest("sentences", [_string(value, "text")])
    items = _list(value, name)
    if name == "texts":
        return PredictRequest("sentences", [_string(v, f"texts[{i}]") for i, v in enumerate(items)])
    if name == "tokens":
        return PredictRequest(
            "sentences", [_tokens(v, f"tokens[{i}]") for i, v in enumerate(items)]
        )
    return PredictRequest(
        "documents", [_document(v, f"documents[{i}]") for i, v in enumerate(items)]
    )


def _read_options(request: PredictRequest, data: dict) -> None:
    probs = data.get("probs")
    if probs is True:  # as on the command line, a bare --probs means "tag"
        probs = "tag"
    if probs not in (None, False, "tag", "all"):
        raise RequestError(400, f'probs: expected null, true, "tag" or "all", got {probs!r}')
    request.probs = probs or None
    nbest = data.get("nbest", 1)
    if isinstance(nbest, bool) or not isinstance(nbest, int) or not 1 <= nbest <= MAX_NBEST:
        raise RequestError(400, f"nbest: expected an integer from 1 to {MAX_NBEST}, got {nbest!r}")
    request.nbest = nbest
    threshold = data.get("min_confidence", 0.0)
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not math.isfinite(threshold)
        or not 0.0 <= threshold <= 1.0
    ):
        raise RequestError(400, f"min_confidence: expected a number from 0 to 1, got {threshold!r}")
    request.min_confidence = float(threshold)
    offsets = data.get("token_offsets", False)
    if not isinstance(offsets, bool):
        raise RequestError(400, f"token_offsets: expected true or false, got {offsets!r}")
    request.token_offsets = offsets
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise RequestError(400, f"model: expected a model name, got {_kind(model)}")
    request.model = model


def _kind(value) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _string(value, where: str) -> str:
    if not isinstance(value, str):
        raise RequestError(400, f"{where}: expected a string, got {_kind(value)}")
    if "\x00" in value:
        raise RequestError(400, f"{where}: a NUL character is not text")
    return value


def _list(value, where: str) -> list:
    if not isinstance(value, list):
        raise RequestError(400, f"{where}: expected an array, got {_kind(value)}")
    if len(value) > MAX_ITEMS:
        raise RequestError(413, f"{where}: {len(value)} items; at most {MAX_ITEMS} a request")
    return value


def _tokens(value, where: str) -> list[str]:
    """One sentence's tokens: any number (a long sentence is tagged in pieces, as by predict)."""
    if not isinstance(value, list):
        raise RequestError(400, f"{where}: expected an array of tokens, got {_kind(value)}")
    tokens = value
    for index, token in enumerate(tokens):
        if not isinstance(token, str) or not token or any(c.isspace() for c in token):
            raise RequestError(
                400, f"{where}[{index}]: expected a non-empty token without spaces, got {token!r}"
            )
    return list(tokens)


def _document(value, where: str) -> str:
    if isinstance(value, dict):
        extra = sorted(set(value) - {"text"})
        if extra:
            raise RequestError(400, f"{where}: unknown field {extra[0]!r} (valid: text)")
        return _string(value.get("text"), f"{where}.text")
    return _string(value, where)
