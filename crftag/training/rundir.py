"""The run directory of ``crftag train``: one run in it at a time, never a mix of two runs'
files, nothing left of a write that a kill cut short, and a full disk or a file-size limit met
while writing as a one-line error that keeps the files written before.

The lock is ``flock`` on the directory itself, so it leaves no file behind and the kernel
releases it when the process ends, however it ends.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager

from crftag.data.atomic import PARTIAL_PREFIX, atomic_output
from crftag.errors import CrftagError
from crftag.modelfiles.checkpoint_files import read_checkpoint
from crftag.modelfiles.registry import MODEL_FILE
from crftag.training.state import RESUME_FILE, RESUME_FORMAT, TASKS, resume_file

try:
    import fcntl
except ImportError:  # Windows has no flock: runs there go unlocked
    fcntl = None

__all__ = [
    "METRICS_FILE",
    "clear_run",
    "hold_run_directory",
    "resumed_task",
    "write_metrics",
    "writing",
]

METRICS_FILE = "metrics.json"
RUN_FILES = (MODEL_FILE, METRICS_FILE, RESUME_FILE)  # what a run leaves in its directory
# A full disk, a file-size limit (RLIMIT_FSIZE, with SIGXFSZ ignored), a full quota.
DISK_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


@contextmanager
def hold_run_directory(
    output_dir: str, *, resume: bool, overwrite: bool, main: bool = True
) -> Iterator[None]:
    """Hold ``output_dir`` for one run until the block ends: lock it against a second
    ``crftag train`` (a new run or a resume), remove the temporary files of a write that was
    killed, and refuse a new run over an earlier run's files unless ``overwrite`` (the caller
    removes them with :func:`clear_run` once the new run is set up). Only the ``main`` process
    of a distributed run holds it; the others do nothing here."""
    if not main:
        yield
        return
    with _locked(output_dir):
        _remove_partial_files(output_dir)
        if not resume and not overwrite:
            _refuse_earlier_run(output_dir)
        yield


def clear_run(output_dir: str) -> None:
    """Remove an earlier run's files, so that none of them mixes with the new run's."""
    for name in RUN_FILES:
        path = os.path.join(output_dir, name)
        if os.path.lexists(path):
            os.unlink(path)


@contextmanager
def writing(path: str, output_dir: str) -> Iterator[None]:
    """Within the block, a full disk or a file-size limit met while writing ``path`` is a
    one-line error saying what is kept and how to go on. Files are written to a temporary name
    and renamed, so a failed write leaves the earlier file as it was."""
    try:
        yield
    except (OSError, RuntimeError) as error:
        cause = _disk_error(error)
        if cause is None:
            raise
        if os.path.exists(os.path.join(output_dir, RESUME_FILE)):
            kept = "the files written before are kept: make room, then crftag train --resume "
            kept += output_dir
        else:
            kept = "nothing was resumable yet: make room and train again"
        raise CrftagError(f"{path}: cannot write: {cause.strerror}; {kept}") from None


def write_metrics(output_dir: str, metrics: dict) -> None:
    """``metrics.json``, written whole or not at all."""
    with atomic_output(os.path.join(output_dir, METRICS_FILE)) as stream:
        json.dump(metrics, stream, indent=2, sort_keys=True)
        stream.write("\n")


def resumed_task(output_dir: str) -> str:
    """The task (:data:`TASKS`) that the resume file in ``output_dir`` continues; ``train``
    where it names none, or is no resume file (which :func:`load_resume` then refuses)."""
    state = read_checkpoint(resume_file(output_dir))
    task = state.get("task", "train") if state.get("format") == RESUME_FORMAT else "train"
    return task if task in TASKS else "train"


@contextmanager
def _locked(output_dir: str) -> Iterator[None]:
    """An exclusive lock on the directory while the block runs; a second holder is refused at
    once. A file system without locks (some network mounts) leaves the run unlocked."""
    if fcntl is None:
        yield
        return
    descriptor = os.open(output_dir, os.O_RDONLY)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CrftagError(
                f"{output_dir}: another crftag train is running in this run directory; wait "
                "for it to end, or give another -o"
            ) from None
        except OSError:
            pass
        yield
    finally:
        os.close(descriptor)  # releases the lock


def _remove_partial_files(output_dir: str) -> None:
    """Temporary files of atomic writes that a kill (``kill -9``, a crash) cut short: under
    the lock, no other run can be writing them."""
    for name in os.listdir(output_dir):
        path = os.path.join(output_dir, name)
        if name.startswith(PARTIAL_PREFIX) and os.path.isfile(path):
            os.unlink(path)


def _refuse_earlier_run(output_dir: str) -> None:
    found = [name for name in RUN_FILES if os.path.exists(os.path.join(output_dir, name))]
    if not found:
        return
    if RESUME_FILE in found:
        how = f"continue it with crftag train --resume {output_dir}, or replace it: --overwrite"
        what = "an unfinished run"
    else:
        how = "give --overwrite to replace it, or another -o"
        what = "a finished run" if METRICS_FILE in found else "an earlier run"
    raise CrftagError(f"{output_dir}: holds {what} ({', '.join(found)}); {how}")


def _disk_error(error: BaseException) -> OSError | None:
    """The full-disk or file-size error behind ``error``: torch's writer reports a failed write
    as a RuntimeError whose context is the OSError."""
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, OSError) and error.errno in DISK_ERRNOS:
            return error
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None
