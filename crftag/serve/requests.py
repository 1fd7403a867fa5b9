"""A ``POST /predict`` body, read and checked against :data:`crftag.serve.schema.REQUEST_SCHEMA`
(the schema ``/openapi.json`` documents): every mistake is a :class:`RequestError` with the HTTP
status and a message naming the field, never an exception that would become a 500."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from crftag.errors import json_mistake
from crftag.serve.schema import (
    INPUT_FIELDS,
    MAX_ITEMS,
    MAX_NBEST,
    REQUEST_SCHEMA,
    SchemaError,
    shown_value,
    validate,
)

__all__ = ["MAX_ITEMS", "MAX_NBEST", "PredictRequest", "RequestError", "parse_request"]


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
    except ValueError as error:  # an integer too long to convert
        raise RequestError(400, f"body: not valid JSON ({json_mistake(error)})") from None
    if not isinstance(data, dict):
        raise RequestError(400, f"body: expected a JSON object, got {shown_value(data)}")
    try:
        validate(data, REQUEST_SCHEMA, "")
    except SchemaError as error:
        raise RequestError(error.status, error.message) from None
    return _request(data)


def _request(data: dict) -> PredictRequest:
    """A body the schema accepts, with the schema's defaults for what it leaves out."""
    defaults = {name: item.get("default") for name, item in REQUEST_SCHEMA["properties"].items()}
    chosen = {**defaults, **data}
    (name,) = [name for name in INPUT_FIELDS if name in data]
    if name == "text":
        kind, items = "sentences", [data["text"]]
    elif name == "documents":
        kind = "documents"
        items = [item["text"] if isinstance(item, dict) else item for item in data[name]]
    else:
        kind, items = "sentences", list(data[name])
    probs = "tag" if chosen["probs"] is True else chosen["probs"] or None
    return PredictRequest(
        kind,
        items,
        model=chosen["model"],
        probs=probs,  # as on the command line, a bare --probs means "tag"
        nbest=chosen["nbest"],
        min_confidence=float(chosen["min_confidence"]),
        token_offsets=chosen["token_offsets"],
    )
