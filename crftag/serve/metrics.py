"""What ``GET /metrics`` reports, in the Prometheus text format: requests by status, errors,
request latency as a histogram, batches, sentences and tokens tagged, requests in flight.

The counts are kept by the Prometheus client for Python. With ``--workers N`` each worker
process is started with ``PROMETHEUS_MULTIPROC_DIR`` naming a fresh folder (:func:`shared_folder`),
where the client keeps every process's counts in memory-mapped files; whichever worker answers a
scrape adds them all up, so the totals are those of the whole server, on every scrape. Without
it (one process) the counts are the process's own.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

from crftag.errors import CrftagError

__all__ = ["LATENCY_BUCKETS", "MULTIPROCESS_VARIABLE", "Metrics", "client", "shared_folder"]

# Seconds; the upper bounds of the latency histogram's buckets (then +Inf).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
MULTIPROCESS_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"  # the client's own name for it


def client():
    """The Prometheus client module, or a one-line error saying what to install."""
    try:
        import prometheus_client
    except ImportError:
        raise CrftagError(
            "crftag serve needs prometheus_client, which is not installed: "
            "pip install 'crftag[serve]'"
        ) from None
    return prometheus_client


@contextlib.contextmanager
def shared_folder() -> Iterator[str]:
    """A fresh folder for the worker processes' counts, named in the environment they inherit
    while the block runs, and removed after it."""
    folder = tempfile.mkdtemp(prefix="crftag-metrics-")
    previous = os.environ.get(MULTIPROCESS_VARIABLE)
    os.environ[MULTIPROCESS_VARIABLE] = folder
    try:
        yield folder
    finally:
        if previous is None:
            os.environ.pop(MULTIPROCESS_VARIABLE, None)
        else:
            os.environ[MULTIPROCESS_VARIABLE] = previous
        shutil.rmtree(folder, ignore_errors=True)


class Metrics:
    """The server's counters, safe to update from the event loop and the tagging thread (the
    client locks them). They are registered nowhere but here, so several applications in one
    process each count their own."""

    def __init__(self) -> None:
        prometheus = client()
        prometheus.disable_created_metrics()  # the same series with or without worker processes
        self._client = prometheus
        self.multiprocess = bool(os.environ.get(MULTIPROCESS_VARIABLE))
        self._registry = prometheus.CollectorRegistry(auto_describe=True)
        registry = None if self.multiprocess else self._registry
        self.requests = prometheus.Counter(
            "crftag_requests",
            "HTTP requests answered, by path and status.",
            ["path", "status"],
            registry=registry,
        )
        self.errors = prometheus.Counter(
            "crftag_request_errors",
            "Requests answered with a 4xx or 5xx status.",
            registry=registry,
        )
        self.latency = prometheus.Histogram(
            "crftag_request_duration_seconds",
            "Time from a request's arrival to its answer.",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.batches = prometheus.Counter(
            "crftag_batches", "Batches the tagger ran.", registry=registry
        )
        self.sentences = prometheus.Counter(
            "crftag_sentences_tagged", "Sentences tagged.", registry=registry
        )
        self.tokens = prometheus.Counter(
            "crftag_tokens_tagged", "Tokens tagged.", registry=registry
        )
        self.in_flight = prometheus.Gauge(
            "crftag_requests_in_flight",
            "Requests being answered now.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.errors.inc(0)  # every series is reported from the start, at 0

    def started(self) -> None:
        self.in_flight.inc()

    def answered(self, path: str, status: int, seconds: float) -> None:
        """One request finished (``path`` one of the known endpoints, else ``other``)."""
        self.in_flight.dec()
        self.requests.labels(path=path, status=str(status)).inc()
        if status >= 400:
            self.errors.inc()
        self.latency.observe(seconds)

    def tagged(self, sentences: int, tokens: int) -> None:
        """One batch tagged."""
        self.batches.inc()
        self.sentences.inc(sentences)
        self.tokens.inc(tokens)

    def render(self) -> str:
        """The Prometheus text exposition of every metric: the whole server's, where there are
        worker processes."""
        registry = self._registry
        if self.multiprocess:
            from prometheus_client import multiprocess

            registry = self._client.CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
        return self._client.generate_latest(registry).decode("utf-8")

    def close(self) -> None:
        """This process stops counting: its requests in flight leave the live sum."""
        if self.multiprocess:
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(os.getpid())
