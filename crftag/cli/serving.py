"""``crftag serve``: the tagger behind HTTP."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from crftag.cli.options import DeviceChoice, finite
from crftag.errors import CrftagError
from crftag.modelfiles.registry import DEFAULT_MODEL

MAX_WORKERS = 64


def serve(
    models: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            "-m",
            help="A model to serve (bundled name, run directory, checkpoint, .npz or .onnx); "
            "repeat for several, the first is the default. [default: en-ner]",
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="The address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port (0: any free one).")] = 8080,
    workers: Annotated[int, typer.Option(help="Processes, each with its own models.")] = 1,
    max_batch_tokens: Annotated[
        int, typer.Option(help="Tokens gathered into one batch at most.")
    ] = 4096,
    max_wait_ms: Annotated[
        float,
        typer.Option(
            callback=finite,
            help="How long a request waits for others when the tagger is idle (0: not at all; "
            "requests that arrive while it works are batched together anyway).",
        ),
    ] = 0.0,
    max_body_bytes: Annotated[int, typer.Option(help="The largest request body.")] = 1 << 20,
    device: Annotated[DeviceChoice, typer.Option(help="Where to run.")] = DeviceChoice.auto,
) -> None:
    """Serve models over HTTP: POST /predict, GET /health, /models, /metrics (docs/serve.md).

    Binds 127.0.0.1 unless --host says otherwise; SIGTERM or Ctrl-C drains the requests in
    flight and exits 0.
    """
    if workers > 1:
        # One process a core: each process's BLAS thread pool would otherwise spin on every
        # core after each small product, against the other processes (set these to override).
        for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(variable, "1")
    from crftag.serve.models import model_specs
    from crftag.serve.server import ServeSettings
    from crftag.serve.server import serve as run_server

    _check_ranges(port, workers, max_batch_tokens, max_wait_ms, max_body_bytes)
    specs = model_specs(models or [DEFAULT_MODEL])
    run_server(
        ServeSettings(
            specs=specs,
            host=host,
            port=port,
            workers=workers,
            device=device.value,
            max_batch_tokens=max_batch_tokens,
            max_wait_ms=max_wait_ms,
            max_body_bytes=max_body_bytes,
        )
    )


def _check_ranges(port, workers, max_batch_tokens, max_wait_ms, max_body_bytes) -> None:
    checks = [
        ("--port", port, 0 <= port <= 65535, "0 to 65535"),
        ("--workers", workers, 1 <= workers <= MAX_WORKERS, f"1 to {MAX_WORKERS}"),
        (
            "--max-batch-tokens",
            max_batch_tokens,
            1 <= max_batch_tokens <= 1_000_000,
            "1 to 1000000",
        ),
        ("--max-wait-ms", max_wait_ms, 0 <= max_wait_ms <= 10_000, "0 to 10000"),
        ("--max-body-bytes", max_body_bytes, 1 <= max_body_bytes <= 1 << 30, "1 to 1073741824"),
    ]
    for option, value, valid, allowed in checks:
        if not valid:
            raise CrftagError(f"{option} {value}: expected {allowed}")
