"""Running the application under uvicorn: one process, or ``--workers N`` processes that each
load the models, behind one port. uvicorn brings HTTP/1.1 keep-alive, request limits, and the
graceful shutdown on SIGTERM or Ctrl-C: it stops accepting, answers what is in flight, then
exits 0 ([docs/serve.md](../../docs/serve.md) says why uvicorn)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import asdict, dataclass

from crftag.errors import CrftagError
from crftag.serve import metrics
from crftag.serve.app import DEFAULT_MAX_BODY_BYTES, TaggingApp
from crftag.serve.models import ServedModel, load_models

__all__ = ["ServeSettings", "app_from_environment", "serve"]

SETTINGS_VARIABLE = "CRFTAG_SERVE_SETTINGS"  # how worker processes receive the settings
GRACEFUL_SHUTDOWN_S = 30


@dataclass
class ServeSettings:
    """What ``crftag serve`` was asked for: the models ((name, file) pairs) and the limits."""

    specs: list[tuple[str, str]]
    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1
    device: str = "auto"
    max_batch_tokens: int = 4096
    max_wait_ms: float = 0.0
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES


def _uvicorn():
    try:
        import uvicorn
    except ImportError:
        raise CrftagError(
            "crftag serve needs uvicorn, which is not installed: pip install 'crftag[serve]'"
        ) from None
    return uvicorn


def _app(settings: ServeSettings, models: list[ServedModel] | None) -> TaggingApp:
    def announce(loaded: list[ServedModel]) -> None:
        names = ", ".join(model.name for model in loaded)
        print(
            f"crftag: serving {names} on http://{settings.host}:{settings.port} "
            f"(pid {os.getpid()}; POST /predict, GET /health /models /metrics /openapi.json)",
            file=sys.stderr,
            flush=True,
        )

    return TaggingApp(
        [tuple(spec) for spec in settings.specs],
        models=models,
        device=settings.device,
        max_batch_tokens=settings.max_batch_tokens,
        max_wait_ms=settings.max_wait_ms,
        max_body_bytes=settings.max_body_bytes,
        announce=announce,
    )


def _drained_server(uvicorn):
    """uvicorn's server, except that once SIGTERM (or Ctrl-C) has drained it, the process exits
    0: uvicorn raises the signal again after its shutdown, which would end the process with the
    signal's status, as if the requests in flight had been cut off."""

    class DrainedServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            with super().capture_signals():
                yield
                self._captured_signals.clear()

    return DrainedServer


def app_from_environment() -> TaggingApp:
    """The application of one worker process (``--workers N``), from the settings the command
    put in the environment."""
    return _app(ServeSettings(**json.loads(os.environ[SETTINGS_VARIABLE])), None)


def serve(settings: ServeSettings) -> None:
    """Serve until SIGTERM or Ctrl-C; a model that does not load is a one-line error first."""
    uvicorn = _uvicorn()
    from crftag.serve.protocol import JsonErrorProtocol  # uvicorn's own, so after the check

    metrics.client()  # a missing extra is one line here, before any model loads
    options = {
        "host": settings.host,
        "port": settings.port,
        "lifespan": "on",
        "log_level": "warning",
        "access_log": False,
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_S,
        "http": JsonErrorProtocol,
    }
    if settings.workers > 1:
        os.environ[SETTINGS_VARIABLE] = json.dumps(asdict(settings))
        with metrics.shared_folder():  # the workers add up each other's counts
            uvicorn.run(
                "crftag.serve.server:app_from_environment",
                factory=True,
                workers=settings.workers,
                **options,
            )
        return
    os.environ.pop(metrics.MULTIPROCESS_VARIABLE, None)  # one process counts on its own
    models = load_models(settings.specs, settings.device)  # errors here, before any port
    server = _drained_server(uvicorn)(uvicorn.Config(_app(settings, models), **options))
    server.run()
    if not server.started:
        raise CrftagError(f"could not serve on {settings.host}:{settings.port} (see above)")
