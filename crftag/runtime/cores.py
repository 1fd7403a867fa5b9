"""How a crftag process shares the machine's cores with other work.

torch runs its parallel kernels, and the training BiLSTM loops their two directions, on GNU
OpenMP's thread pool (libgomp). By default libgomp's threads keep spinning for a core after each
parallel region (GOMP_SPINCOUNT, 300,000 rounds of a pause loop, milliseconds on some CPUs) so
that the next region starts without a wake-up. On a quiet machine that saves microseconds. Beside
other busy processes it is ruinous: the spinning threads hold the cores that the other process's
working threads wait for: two crftag trainings side by side ran forty to ninety times slower than
one alone with OMP_WAIT_POLICY=ACTIVE, which spins for good (docs/cpus.md).
With ``OMP_WAIT_POLICY=PASSIVE`` an idle thread sleeps at once and the cores go to whoever has
work.

libgomp reads its settings once, when it is loaded, which is when torch is first imported; so
the ``crftag`` command calls :func:`share_cores` first (``main`` in crftag/cli/__init__.py),
before any command imports torch, and the processes it starts inherit the setting. Importing the
library sets nothing: a program that uses crftag keeps its own environment (it may set
``OMP_WAIT_POLICY=PASSIVE`` itself). A value the user set (``OMP_WAIT_POLICY`` or
``GOMP_SPINCOUNT``) is kept.

A sleeping thread costs a wake-up at each parallel region, which a training step of torch's
small operations on two threads met hundreds of times; so a training step runs torch on the
calling thread (crftag/training/step.py), and the BiLSTM loops run their second direction on a
thread of their own, not OpenMP's: the partner (crftag/runtime/_lstm.c), which spins between
calls only while the machine has a core for every runnable thread and sleeps otherwise, so it is
as quick as a spinning pool on a quiet machine and as fair as a sleeping one beside other work.

NumPy's BLAS pool spins too, but crftag holds it to one thread while a tagger runs
(crftag/runtime/threads.py), and the NumPy runtime's loops take the partner too, which spins
between calls only while a core is free.
"""

from __future__ import annotations

import os
import sys

__all__ = ["WAIT_POLICY", "share_cores"]

WAIT_POLICY = "PASSIVE"
_USER_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def share_cores() -> None:
    """Set OpenMP's wait policy to PASSIVE for this process and its children, unless the user
    chose one or torch (and with it libgomp) is already loaded, when it could not apply."""
    if any(name in os.environ for name in _USER_SETTINGS) or "torch" in sys.modules:
        return
    os.environ["OMP_WAIT_POLICY"] = WAIT_POLICY
