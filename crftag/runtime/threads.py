"""How many threads the compiled BiLSTM loops take while a NumPy-runtime tagger runs.

The loops (crftag/runtime/_lstm.c) can run a layer's two directions on two threads (the second
the extension's partner thread, see ``run_both`` there), nearly halving their time on two cores.
NumPy's BLAS (OpenBLAS, in NumPy's wheels) has a thread pool of its own, whose threads keep
spinning for the cores for a while after each product it splits across them; loops on two
threads between such products fight those threads for both cores and run several times slower.
So while a tagger runs, :func:`loop_threads` holds NumPy's BLAS to one thread (by threadpoolctl,
as scikit-learn does), whatever the loops take, and lets the loops take two where the process
may use two cores and the user has not asked for one thread (``OMP_NUM_THREADS=1``).

The thread count changes no number. The loops compute each row the same way on any number of
threads, and the BLAS products are the same calls on one BLAS thread either way (one product
per direction, crftag/runtime/recurrent.py): a BLAS's kernels for another thread count, or for
another split of the columns, may add a sum in another order (OpenBLAS's AVX-512 kernels do).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

try:
    from threadpoolctl import ThreadpoolController
except ImportError:  # pragma: no cover - a dependency; without it the loops keep one thread
    ThreadpoolController = None

__all__ = ["loop_threads", "usable_threads"]

_blas = None  # threadpoolctl's handle on the BLAS libraries loaded, found on first use


def _usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def usable_threads() -> int:
    """The threads a runtime's own pool (ONNX Runtime's) may take: one per core this process
    may run on, at most ``OMP_NUM_THREADS`` where that is set (``crftag serve --workers`` sets
    1: one process a core)."""
    cores = _usable_cores()
    asked = os.environ.get("OMP_NUM_THREADS", "").strip()
    return max(1, min(cores, int(asked))) if asked.isdigit() else cores


@contextmanager
def loop_threads() -> Iterator[int]:
    """Within: NumPy's BLAS on one thread where threadpoolctl can hold it; yields how many
    threads the compiled loops may take: 2 where it held BLAS and the process may use two
    cores, else 1. ``OMP_NUM_THREADS=1`` (which ``crftag serve --workers`` sets, one process a
    core) keeps them at one."""
    global _blas
    if ThreadpoolController is None:
        yield 1
        return
    if _blas is None:
        _blas = ThreadpoolController().select(user_api="blas")
    with _blas.limit(limits=1):
        held = all(library["num_threads"] == 1 for library in _blas.info())
        yield 2 if held and usable_threads() >= 2 else 1
