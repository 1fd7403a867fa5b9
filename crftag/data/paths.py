"""What a data path is, found without opening it.

Opening a FIFO blocks until something writes to it, a device may never end, and a socket cannot
be opened at all; a file that is sniffed for its format and then read, or read once for a
fingerprint and again for its sentences, must be a regular file (or a symbolic link to one).
"""

from __future__ import annotations

import os
import stat

from crftag.errors import CrftagError

__all__ = ["check_regular_file", "is_regular_file", "not_regular"]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def not_regular(path: str) -> str | None:
    """None for a regular file (or a link to one); else what ``path`` is instead, as a
    message: ``no such file``, ``a dangling symbolic link``, ``a FIFO (named pipe)``..."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a dangling symbolic link" if os.path.islink(path) else "no such file"
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def is_regular_file(path: str) -> bool:
    return not_regular(path) is None


def check_regular_file(path: str, where: str | None = None) -> None:
    """A one-line error unless ``path`` is a regular file: ``WHERE: PATH: what it is instead``
    (``where`` a setting's name such as ``data.train``, or None)."""
    problem = not_regular(path)
    if problem is not None:
        prefix = f"{where}: " if where else ""
        expected = "" if problem == "no such file" else ", expected a regular file"
        raise CrftagError(f"{prefix}{path}: {problem}{expected}")
