"""The standard streams as the commands find them: closed, full, or in an encoding that cannot
write the output. Each becomes a one-line error (or, for the encoding, UTF-8 output, which every
output format promises), never a traceback."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import sys
from collections.abc import Callable

from crftag.errors import CrftagError

__all__ = ["OUTPUT_ERRNOS", "prepare_streams", "quiet_on_closed_pipe", "silence_stdout"]

# Errors of writing the output (a full disk, a file-size limit, a closed or failing descriptor)
# that are the environment's, not crftag's: a one-line error, not a traceback.
OUTPUT_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EBADF, errno.EIO}


class _ClosedStream:
    """Stands in for a standard stream the process was started without (``<&-``, ``>&-``):
    using it is a one-line error naming it; commands that never touch it run as usual."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _closed(self, *_args, **_kwargs):
        raise CrftagError(f"{self.name} is closed")

    write = read = readline = fileno = _closed
    encoding = "utf-8"

    def flush(self) -> None:
        """Nothing is ever buffered here."""

    @property
    def buffer(self):
        self._closed()

    def isatty(self) -> bool:
        return False


def prepare_streams() -> None:
    """Closed stdin or stdout become :class:`_ClosedStream`; stdout writes UTF-8 whatever the
    locale or PYTHONIOENCODING says (the formats are UTF-8; an ASCII terminal setting must not
    turn a non-ASCII token into a traceback)."""
    if sys.stdin is None:
        sys.stdin = _ClosedStream("standard input")
    if sys.stdout is None:
        sys.stdout = _ClosedStream("standard output")
    elif (getattr(sys.stdout, "encoding", "") or "").lower().replace("-", "") != "utf8":
        reconfigure = getattr(sys.stdout, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(encoding="utf-8")


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that Python's flush at exit does not fail a second time
    after a write error was reported."""
    with contextlib.suppress(OSError, ValueError, CrftagError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def quiet_on_closed_pipe(command: Callable) -> Callable:
    """``command`` ending quietly with status 0 when the reader of its output goes away
    (``crftag eval --json A B | head -c 5``), as every command does: the output it was asked
    for was read up to where the reader chose to stop. Click would exit 1 without a word."""

    @functools.wraps(command)
    def run_command(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except BrokenPipeError:
            silence_stdout()
            return 0

    return run_command
