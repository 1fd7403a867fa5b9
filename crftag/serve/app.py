"""The ASGI application of ``crftag serve``: ``POST /predict``, ``GET /health``, ``GET /models``,
``GET /metrics``, ``GET /openapi.json``. A raw ASGI callable (no web framework): five routes do
not need one, and the request schema is defined once (:mod:`crftag.serve.schema`).

Every refusal is a 4xx with a JSON body ``{"error": "...", "status": N}`` naming the field; a
client that goes away mid-request is dropped without disturbing the others. The models are
loaded before the first connection is accepted (by the command, or at start-up in each worker
process); ``/health`` answers 200 once they are, and 503 again while the server drains.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable

from crftag.data.jsonl import json_line
from crftag.serve.batcher import MicroBatcher
from crftag.serve.metrics import Metrics
from crftag.serve.models import ServedModel, load_models
from crftag.serve.openapi import openapi_document
from crftag.serve.requests import RequestError, parse_request

__all__ = ["DEFAULT_MAX_BODY_BYTES", "TaggingApp", "error_answer"]

LOG = logging.getLogger("crftag.serve")
DEFAULT_MAX_BODY_BYTES = 1 << 20
ROUTES = {
    "/predict": "POST",
    "/health": "GET",
    "/models": "GET",
    "/metrics": "GET",
    "/openapi.json": "GET",
}


class _Disconnected(Exception):
    """The client closed the connection before its request was read."""


class TaggingApp:
    """Serves the models that ``-m`` named: ``models`` already loaded, or ``specs`` ((name,
    path) pairs) to load at start-up; the first is the default. ``announce`` is called once
    they are ready (the command line prints a line)."""

    def __init__(
        self,
        specs: list[tuple[str, str]],
        *,
        models: list[ServedModel] | None = None,
        device: str = "auto",
        max_batch_tokens: int = 4096,
        max_wait_ms: float = 0.0,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        announce: Callable[[list[ServedModel]], None] | None = None,
    ) -> None:
        self.specs = specs
        self.device = device
        self.batching = (max_batch_tokens, max_wait_ms)
        self.max_body_bytes = max_body_bytes
        self.announce = announce
        self.metrics = Metrics()
        self.loaded = models
        self.models: dict[str, ServedModel] = {}
        self.batcher: MicroBatcher | None = None
        self.draining = False

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self._start()
                except Exception as error:  # a model that will not load: the server stops
                    await send({"type": "lifespan.startup.failed", "message": str(error)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.draining = True
                if self.batcher is not None:
                    await self.batcher.stop()
                self.metrics.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _start(self) -> None:
        loaded = self.loaded or await asyncio.to_thread(load_models, self.specs, self.device)
        taggers = {model.name: model.tagger for model in loaded}
        self.batcher = MicroBatcher(taggers, self.metrics, *self.batching)
        self.batcher.start()
        self.models = {model.name: model for model in loaded}
        if self.announce is not None:
            self.announce(loaded)

    @property
    def ready(self) -> bool:
        return bool(self.models) and not self.draining

    async def _http(self, scope, receive, send) -> None:
        started = time.perf_counter()
        path = scope["path"]
        self.metrics.started()
        status = 500
        try:
            status, body, content_type = await self._route(scope, receive)
        except _Disconnected:
            status, body, content_type = 499, b"", ""  # nobody to answer
        except Exception:  # a bug: a JSON 500, the traceback in the log only
            LOG.exception("answering %s failed", path)
            status, body, content_type = error_answer(500, "internal error: see the server's log")
        finally:
            endpoint = path if path in ROUTES else "other"
            self.metrics.answered(endpoint, status, time.perf_counter() - started)
        if status != 499:
            await _respond(send, status, body, content_type, scope["method"], path)

    async def _route(self, scope, receive) -> tuple[int, bytes, str]:
        path, method = scope["path"], scope["method"]
        if path not in ROUTES:
            return error_answer(404, f"no such endpoint {path!r} (endpoints: {', '.join(ROUTES)})")
        if method != ROUTES[path] and not (method == "HEAD" and ROUTES[path] == "GET"):
            return error_answer(405, f"{path} takes {ROUTES[path]}, not {method}")
        if path == "/health":
            if not self.ready:
                return _json(503, {"status": "draining" if self.draining else "loading"})
            return _json(200, {"status": "ok", "models": list(self.models)})
        if path == "/metrics":
            return 200, self.metrics.render().encode(), "text/plain; version=0.0.4"
        if path == "/openapi.json":
            return _json(200, openapi_document())
        if not self.models:
            return error_answer(503, "the models are still loading; try again shortly")
        if path == "/models":
            return _json(200, {"models": [model.description() for model in self.models.values()]})
        return await self._predict(scope, receive)

    async def _predict(self, scope, receive) -> tuple[int, bytes, str]:
        try:
            self._check_declared_size(scope)
            _check_content_type(scope)
            body = await self._read_body(receive)
            request = parse_request(body)
            request.model = request.model or next(iter(self.models))
            if request.model not in self.models:
                raise RequestError(
                    404,
                    f"model: no model {request.model!r} here (serving: {', '.join(self.models)})",
                )
        except RequestError as error:
            return error_answer(error.status, error.message)
        records = await self.batcher.submit(request)
        if _wants_json(scope):
            return _json(200, {"model": request.model, "predictions": records})
        return 200, "".join(map(json_line, records)).encode("utf-8"), "application/x-ndjson"

    def _check_declared_size(self, scope) -> None:
        """A body declared longer than ``max_body_bytes`` is refused (413) before it is read."""
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise RequestError(413, f"body: {int(declared)} bytes; at most {self.max_body_bytes}")

    async def _read_body(self, receive) -> bytes:
        """The whole body, refused (413) past ``max_body_bytes`` without reading it all."""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise RequestError(413, f"body: more than {self.max_body_bytes} bytes")
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)


def _check_content_type(scope) -> None:
    """A ``/predict`` body is ``application/json`` (parameters such as ``charset`` aside).
    Anything else is refused unread: a web page can make a browser post ``text/plain``, a
    form or no type at all to any address without asking the server first (a CORS "simple
    request"); ``application/json`` needs the server's consent, which this one never gives."""
    declared = dict(scope["headers"]).get(b"content-type", b"").decode("latin-1")
    media_type = declared.split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        shown = f"got {declared!r}" if declared else "got none"
        raise RequestError(415, f"Content-Type: expected application/json, {shown}")


def _wants_json(scope) -> bool:
    """Whether the client asked for one JSON document (``Accept: application/json``) rather
    than the JSON lines ``crftag predict --format jsonl`` writes (the default)."""
    accept = dict(scope["headers"]).get(b"accept", b"").decode("latin-1")
    return "application/json" in accept and "ndjson" not in accept


def _json(status: int, value) -> tuple[int, bytes, str]:
    return status, (json.dumps(value, ensure_ascii=False) + "\n").encode(), "application/json"


def error_answer(status: int, message: str) -> tuple[int, bytes, str]:
    """(status, body, content type) of a refusal: the JSON object ``{"error", "status"}``."""
    return _json(status, {"error": message, "status": status})


async def _respond(send, status: int, body: bytes, content_type: str, method: str, path: str):
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    if status == 405:
        headers.append((b"allow", ROUTES[path].encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})
