"""Stopping a run cleanly: SIGINT and SIGTERM stop a run being set up at once, and ask a run
under way to stop at the next batch."""

from __future__ import annotations

import signal
import threading

from crftag.errors import TrainingInterrupted

__all__ = ["StopSignals"]


class StopSignals:
    """While active, SIGINT and SIGTERM stop the run. Until :meth:`defer` they stop it at once
    with :class:`TrainingInterrupted` and ``early_message`` (nothing resumable is written while
    a run is set up); after it they ask the training loop to stop at the next batch (so it can
    write a resumable checkpoint), and a second signal stops at once. Calling it returns the
    signal number received since :meth:`defer`, or None."""

    def __init__(self, early_message: str = "interrupted") -> None:
        self.received: int | None = None
        self.early_message = early_message
        self._deferred = False
        self._previous: dict = {}

    def __call__(self) -> int | None:
        return self.received

    def defer(self) -> None:
        """From now on a first signal asks the training loop to stop at its next batch."""
        self._deferred = True

    def _handle(self, number, frame) -> None:
        if not self._deferred:
            raise TrainingInterrupted(number, self.early_message)
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = number

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
