"""Which CRF kernel runs: the install's own choice, or the one a comparison or a test asks for.

By default the CPU runs the compiled loops (``crftag/crf/_compiled.c``) where they were built and
NumPy loops otherwise, and long sentences on a GPU take the parallel scan. A kernel can be named
instead, everywhere at once (log Z, marginals and Viterbi on tensors and on NumPy arrays):

    compiled   the C loops (where built)
    numpy      the NumPy loops, as an install without a compiler runs
    torch      torch's steps, as every device other than the CPU runs them
    scan       the parallel scan, for every sentence (on the CPU too)

``CRFTAG_CRF_KERNEL=NAME`` names one for the whole process, read when this module loads (like
``CRFTAG_ISA`` for the LSTM loops); :func:`use_kernel` switches within a block. Results agree
to rounding whichever runs: the tests compare each with brute-force enumeration.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

try:  # the compiled CPU kernels (crftag/crf/_compiled.c), built by setup.py where a compiler exists
    from crftag.crf import _compiled as COMPILED
except ImportError:  # pragma: no cover - depends on the build
    COMPILED = None

__all__ = ["COMPILED", "KERNELS", "VARIABLE", "compiled_loops", "forced_kernel", "use_kernel"]

KERNELS = ("compiled", "numpy", "torch", "scan")
VARIABLE = "CRFTAG_CRF_KERNEL"


def _from_environment() -> str | None:
    value = os.environ.get(VARIABLE) or None
    if value is not None and value not in KERNELS:
        sys.stderr.write(
            f"crftag: warning: {VARIABLE}={value} is not a CRF kernel ({', '.join(KERNELS)}); "
            "the default choice runs\n"
        )
        return None
    return value


_forced = _from_environment()


def compiled_loops():
    """The compiled kernels' module where they were built and no other kernel is named, else
    None (the caller runs its NumPy or torch loops)."""
    return COMPILED if _forced in (None, "compiled") else None


def forced_kernel() -> str | None:
    """The kernel named by :func:`use_kernel` or the environment, or None: the default choice."""
    return _forced


@contextmanager
def use_kernel(name: str | None) -> Iterator[None]:
    """Run the block with kernel ``name`` (one of :data:`KERNELS`; None: the default choice).
    ``compiled`` where the C loops were not built is a ``ValueError``."""
    global _forced
    if name is not None and name not in KERNELS:
        raise ValueError(f"expected a CRF kernel ({', '.join(KERNELS)}) or None, got {name!r}")
    if name == "compiled" and COMPILED is None:
        raise ValueError("expected the compiled CRF kernels, but they were not built")
    previous, _forced = _forced, name
    try:
        yield
    finally:
        _forced = previous
