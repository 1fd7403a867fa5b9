"""Stopping a run cleanly: SIGINT and SIGTERM ask the training loop to stop at the next batch."""

from __future__ import annotations

import signal
import threading

__all__ = ["StopSignals"]


class StopSignals:
    """While active, SIGINT and SIGTERM ask the training loop to stop at the next batch (so it
    can write a resumable checkpoint) instead of killing it; a second signal stops at once.
    Calling it returns the signal number received, or None."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict = {}

    def __call__(self) -> int | None:
        return self.received

    def _handle(self, number, frame) -> None:
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
