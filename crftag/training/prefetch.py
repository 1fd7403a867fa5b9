"""Training batches built ahead, on a thread of their own, while a GPU runs the step before.

A CoNLL-2003 batch of 256 sentences takes tens of milliseconds of Python and CPU tensor work to
build (padding, document groups, word dropout), about as long as a GPU takes for the whole
step; built in turn, the GPU would wait for each. On a GPU the step draws its random numbers
from the device's generator, so the thread is the only user of the CPU generator (word
dropout), and building ahead draws the same numbers in the same order as building in turn. On
a CPU the step draws from the CPU generator too (dropout masks), so batches are built in turn
there, and the run is what it always was.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

import torch

__all__ = ["Prefetcher", "prefetcher"]

Item = TypeVar("Item")
Built = TypeVar("Built")


class Prefetcher(Generic[Item, Built]):
    """``make(item)`` for each of ``items`` in order, built in turn (``ahead=0``) or up to
    ``ahead`` batches ahead on one thread. :meth:`rewind` puts the CPU generator back where
    building the first batch not yet taken began, so that a run saved there and resumed draws
    what an uninterrupted run draws. Use it as a context manager: leaving stops the thread."""

    def __init__(
        self, make: Callable[[Item], Built], items: Sequence[Item], ahead: int = 0
    ) -> None:
        self._make, self._items, self._ahead = make, items, ahead
        self._queue: queue.Queue = queue.Queue(maxsize=max(ahead, 1))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unqueued_state: torch.Tensor | None = None

    def __iter__(self) -> Iterator[Built]:
        if not self._ahead:
            yield from map(self._make, self._items)
            return
        self._thread = threading.Thread(target=self._build, name="crftag-batches", daemon=True)
        self._thread.start()
        for _ in self._items:
            _, built, error = self._queue.get()
            if error is not None:
                raise error
            yield built

    def _build(self) -> None:
        """The thread: each item's generator state, then its batch (or the error), in order."""
        for item in self._items:
            state = torch.get_rng_state()
            try:
                entry = (state, self._make(item), None)
            except BaseException as error:  # handed to the training thread, which raises it
                entry = (state, None, error)
            while not self._stop.is_set():
                try:
                    self._queue.put(entry, timeout=0.05)
                    break
                except queue.Full:
                    continue
            else:  # stopped with this batch built but not queued: rewind must see its state
                self._unqueued_state = state
                return
            if entry[2] is not None:
                return

    def rewind(self) -> None:
        """Stop building, and give the CPU generator the state it had before the first batch
        built but not taken (unchanged when none was)."""
        self.close()
        try:
            state, _, _ = self._queue.get_nowait()
        except queue.Empty:
            state = self._unqueued_state
        if state is not None:
            torch.set_rng_state(state)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> Prefetcher[Item, Built]:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def prefetcher(
    make: Callable[[Item], Built], items: Sequence[Item], device: torch.device
) -> Prefetcher[Item, Built]:
    """Batches for a step on ``device``: two built ahead on a GPU, in turn on a CPU."""
    return Prefetcher(make, items, ahead=2 if device.type == "cuda" else 0)
