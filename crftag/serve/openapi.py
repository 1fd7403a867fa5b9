"""The OpenAPI 3.1 document that ``GET /openapi.json`` serves: every endpoint, with the
``/predict`` request body given by :data:`crftag.serve.schema.REQUEST_SCHEMA` itself, the schema
the server validates against (OpenAPI 3.1 takes JSON Schema as it is)."""

from __future__ import annotations

from crftag import __version__
from crftag.serve.schema import REQUEST_SCHEMA

__all__ = ["openapi_document"]

_ERROR = {
    "type": "object",
    "properties": {
        "error": {"type": "string", "description": "one line, naming the field"},
        "status": {"type": "integer"},
    },
    "required": ["error", "status"],
}
_RECORD = {
    "type": "object",
    "description": "one record, as crftag predict --format jsonl writes it (docs/predict.md)",
}


def _json(description: str, schema: dict | None = None) -> dict:
    return {
        "description": description,
        "content": {"application/json": {"schema": schema or {"type": "object"}}},
    }


def _error(description: str) -> dict:
    return _json(description, {"$ref": "#/components/schemas/Error"})


def _get(summary: str, answer: dict) -> dict:
    return {"get": {"summary": summary, "responses": {"200": answer}}}


def openapi_document() -> dict:
    """The document: ``/predict``, ``/health``, ``/models``, ``/metrics`` and itself."""
    predict = {
        "summary": "Tag texts, token lists or documents",
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Predict"}}},
        },
        "responses": {
            "200": {
                "description": "one record per item: JSON lines, or with Accept: "
                'application/json one object {"model": ..., "predictions": [...]}',
                "content": {
                    "application/x-ndjson": {"schema": _RECORD},
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "properties": {
                                "model": {"type": "string"},
                                "predictions": {"type": "array", "items": _RECORD},
                            },
                        }
                    },
                },
            },
            "400": _error("a body the schema refuses, naming the field"),
            "404": _error("no such model"),
            "413": _error("a body or an item count over the limit"),
            "415": _error("a body whose Content-Type is not application/json"),
            "503": _error("the models are still loading"),
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "crftag serve", "version": __version__},
        "paths": {
            "/predict": {"post": predict},
            "/health": _get(
                "Whether the models are loaded (503 while loading or draining)", _json("ready")
            ),
            "/models": _get("The served models", _json("each model's description")),
            "/metrics": _get(
                "Prometheus metrics",
                {"description": "Prometheus text", "content": {"text/plain": {}}},
            ),
            "/openapi.json": _get("This document", _json("OpenAPI 3.1")),
        },
        "components": {"schemas": {"Predict": REQUEST_SCHEMA, "Error": _ERROR}},
    }
