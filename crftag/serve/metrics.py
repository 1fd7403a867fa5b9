"""What ``GET /metrics`` reports, in the Prometheus text format: requests by status, errors,
request latency as a histogram, batches, sentences and tokens tagged, requests in flight."""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import Counter

__all__ = ["LATENCY_BUCKETS", "Metrics"]

# Seconds; the upper bounds of the latency histogram's buckets (then +Inf).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """Counters shared by the event loop and the tagging thread (a lock keeps them whole)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[tuple[str, int]] = Counter()  # (path, status) -> count
        self.latency_counts = [0] * (len(LATENCY_BUCKETS) + 1)
        self.latency_sum = 0.0
        self.batches = 0
        self.sentences = 0
        self.tokens = 0
        self.in_flight = 0

    def started(self) -> None:
        with self._lock:
            self.in_flight += 1

    def answered(self, path: str, status: int, seconds: float) -> None:
        """One request finished (``path`` one of the known endpoints, else ``other``)."""
        with self._lock:
            self.in_flight -= 1
            self.requests[(path, status)] += 1
            self.latency_counts[bisect_left(LATENCY_BUCKETS, seconds)] += 1
            self.latency_sum += seconds

    def tagged(self, sentences: int, tokens: int) -> None:
        """One batch tagged."""
        with self._lock:
            self.batches += 1
            self.sentences += sentences
            self.tokens += tokens

    def render(self) -> str:
        """The Prometheus text exposition of every metric."""
        with self._lock:
            lines = [
                "# HELP crftag_requests_total HTTP requests answered, by path and status.",
                "# TYPE crftag_requests_total counter",
            ]
            for (path, status), count in sorted(self.requests.items()):
                lines.append(f'crftag_requests_total{{path="{path}",status="{status}"}} {count}')
            errors = sum(c for (_, status), c in self.requests.items() if status >= 400)
            lines += [
                "# HELP crftag_request_errors_total Requests answered with a 4xx or 5xx status.",
                "# TYPE crftag_request_errors_total counter",
                f"crftag_request_errors_total {errors}",
                *self._latency_lines(),
                *_counter("batches", "Batches the tagger ran.", self.batches),
                *_counter("sentences_tagged", "Sentences tagged.", self.sentences),
                *_counter("tokens_tagged", "Tokens tagged.", self.tokens),
                "# HELP crftag_requests_in_flight Requests being answered now.",
                "# TYPE crftag_requests_in_flight gauge",
                f"crftag_requests_in_flight {self.in_flight}",
            ]
        return "\n".join(lines) + "\n"

    def _latency_lines(self) -> list[str]:
        name = "crftag_request_duration_seconds"
        lines = [
            f"# HELP {name} Time from a request's arrival to its answer.",
            f"# TYPE {name} histogram",
        ]
        running = 0
        for bound, count in zip((*LATENCY_BUCKETS, "+Inf"), self.latency_counts, strict=True):
            running += count
            lines.append(f'{name}_bucket{{le="{bound}"}} {running}')
        lines += [f"{name}_sum {self.latency_sum:.6f}", f"{name}_count {running}"]
        return lines


def _counter(name: str, description: str, value: int) -> list[str]:
    return [
        f"# HELP crftag_{name}_total {description}",
        f"# TYPE crftag_{name}_total counter",
        f"crftag_{name}_total {value}",
    ]
