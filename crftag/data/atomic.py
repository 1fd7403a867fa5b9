"""Files written whole or not at all: the one way crftag writes an output file in place.

The content goes to a temporary file beside the target (``.partial-*``), which is flushed to
disk and renamed over the target, and the directory is flushed so the rename itself survives a
power cut. A crash at any moment leaves the earlier file or the new one, never a torn one; what
a kill leaves behind is a ``.partial-*`` file, which ``crftag train`` removes from its run
directory. The file gets the mode a plain ``open()`` would give it under the process's umask.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

__all__ = ["PARTIAL_PREFIX", "atomic_output", "plain_file_mode"]

PARTIAL_PREFIX = ".partial-"  # the temporary name of a file being written


@contextmanager
def atomic_output(path: str, *, binary: bool = False) -> Iterator[IO]:
    """A stream to write ``path`` through: text (UTF-8, line ends as written) or ``binary``.
    The target is replaced only when the block ends without an exception."""
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=PARTIAL_PREFIX, dir=directory)
    try:
        if binary:
            stream = os.fdopen(handle, "wb")
        else:
            stream = os.fdopen(handle, "w", encoding="utf-8", newline="")
        with stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        # mkstemp makes the file private (0600); a plain open() gives 0666 less the umask.
        os.chmod(temporary, plain_file_mode())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    _sync_directory(directory)


def plain_file_mode() -> int:
    """The permissions ``open(path, "w")`` gives a new file: 0666 less the umask."""
    umask = os.umask(0o022)  # reading the umask means setting it; it is put back at once
    os.umask(umask)
    return 0o666 & ~umask


def _sync_directory(directory: str) -> None:
    """Flush the directory entry of a rename to disk, where the system allows it (not on
    Windows, nor on some network file systems)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
