"""Files written whole or not at all: the one way crftag writes an output file in place.

The content goes to a temporary file beside the target (``.partial-*``), which is flushed to
disk and renamed over the target, and the directory is flushed so the rename itself survives a
power cut. A crash at any moment leaves the earlier file or the new one, never a torn one; what
a kill leaves behind is a ``.partial-*`` file, which ``crftag train`` removes from its run
directory. The file gets the mode a plain ``open()`` would give it under the process's umask.

A folder of files (:func:`atomic_folder`) is written the same way: into a ``.partial-*`` folder
inside it, whose files are flushed and renamed into place only once all are written.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from crftag.errors import CrftagError

__all__ = ["PARTIAL_PREFIX", "atomic_folder", "atomic_output", "plain_file_mode"]

PARTIAL_PREFIX = ".partial-"  # the temporary name of a file being written


@contextmanager
def atomic_output(path: str, *, binary: bool = False) -> Iterator[IO]:
    """A stream to write ``path`` through: text (UTF-8, line ends as written) or ``binary``.
    The target is replaced only when the block ends without an exception."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        handle, temporary = tempfile.mkstemp(prefix=PARTIAL_PREFIX, dir=directory)
    except OSError as error:  # a read-only or missing folder: the user's to fix, named
        raise CrftagError(f"{path}: cannot write the file here ({error.strerror})") from None
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


@contextmanager
def atomic_folder(folder: str) -> Iterator[str]:
    """A hidden folder to write files into, inside ``folder`` (made if missing). When the block
    ends without an exception, each file is flushed to disk, given the mode a plain ``open()``
    gives, and renamed into ``folder`` (over a file of its name). An exception moves nothing:
    the hidden folder goes, and so does ``folder`` if it was made here and is empty, as it is
    also when no file was written. Each file moved is whole; a kill during the renames leaves
    those not yet moved in the ``.partial-*`` folder."""
    made = not os.path.isdir(folder)
    os.makedirs(folder, exist_ok=True)
    partial = tempfile.mkdtemp(prefix=PARTIAL_PREFIX, dir=folder)
    try:
        yield partial
        names = sorted(os.listdir(partial))
        mode = plain_file_mode()
        for name in names:
            _sync_file(os.path.join(partial, name))
            os.chmod(os.path.join(partial, name), mode)
        for name in names:
            os.replace(os.path.join(partial, name), os.path.join(folder, name))
    finally:
        shutil.rmtree(partial, ignore_errors=True)
        if made and not os.listdir(folder):
            os.rmdir(folder)
    _sync_directory(folder)


def plain_file_mode() -> int:
    """The permissions ``open(path, "w")`` gives a new file: 0666 less the umask."""
    umask = os.umask(0o022)  # reading the umask means setting it; it is put back at once
    os.umask(umask)
    return 0o666 & ~umask


def _sync_file(path: str) -> None:
    """Flush a file written and closed elsewhere to disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


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
