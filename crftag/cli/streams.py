"""The standard streams as the commands find them: closed, full, or in an encoding that cannot
write the output. Each becomes a one-line error (or, for the encoding, UTF-8 output, which every
output format promises), never a traceback.

stderr carries only messages and progress, so it never stops the work: a closed stderr
(``2>&-``), a full one (``2>/dev/full``) or a pipe whose reader has left drops what is written
to it, and a run trains and saves its model as it would have, with the exit status it would
have had."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import sys
from collections.abc import Callable

from crftag.errors import CrftagError

__all__ = ["OUTPUT_ERRNOS", "prepare_streams", "quiet_on_closed_pipe", "silence_stdout"]

_STANDARD = {0: "stdin", 1: "stdout", 2: "stderr"}

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


class _Messages:
    """stderr as the commands write to it: what cannot be written (a full disk, a pipe whose
    reader left, a descriptor closed under it) is dropped, and so is all that follows, instead
    of an exception in the middle of the work. Everything else is the stream's own."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.lost = False

    def write(self, text: str) -> int:
        if not self.lost:
            try:
                self.stream.write(text)
            except (OSError, ValueError):
                self._lose()
        return len(text)

    def flush(self) -> None:
        if not self.lost:
            try:
                self.stream.flush()
            except (OSError, ValueError):
                self._lose()

    def _lose(self) -> None:
        """Stop writing; point descriptor 2 at /dev/null, so that what the stream still
        buffers, native code's messages and Python's flush at exit go there without failing."""
        self.lost = True
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if self.stream.fileno() == 2:
                _point_at_null(2)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def _point_at_null(descriptor: int) -> None:
    """Open /dev/null on ``descriptor`` (closed, or to be replaced)."""
    null = os.open(os.devnull, os.O_RDWR)
    if null != descriptor:
        os.dup2(null, descriptor)
        os.close(null)


def _reserve_closed_descriptors() -> None:
    """Open /dev/null on each standard descriptor the process was started without: else the
    next file opened (a model being written) would take its number, and whatever writes to
    that descriptor (native code's messages on 2) would write into the file."""
    for descriptor in _STANDARD:
        try:
            os.fstat(descriptor)
        except OSError:
            _point_at_null(descriptor)


def prepare_streams() -> None:
    """Closed stdin or stdout become :class:`_ClosedStream`, a closed stderr /dev/null, and
    stderr drops what it cannot write (:class:`_Messages`); stdout writes UTF-8 whatever the
    locale or PYTHONIOENCODING says (the formats are UTF-8; an ASCII terminal setting must not
    turn a non-ASCII token into a traceback)."""
    _reserve_closed_descriptors()
    if sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 - for good
    if not isinstance(sys.stderr, _Messages):
        sys.stderr = _Messages(sys.stderr)
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
