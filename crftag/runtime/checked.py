"""What a model file says about itself, remembered once checked: the SHA-256 digests of the
descriptions (an export's metadata entry) that passed every check, so loading the same file
again skips the checks over its 100,000-word vocabulary (about 10 ms of a 0.3 s
`crftag predict`) and computes a digest instead (under 1 ms).

The digests live in one small text file, a line each, in the user's cache folder:
``$XDG_CACHE_HOME/crftag/checked`` (``~/.cache/crftag/checked`` where the variable is unset).
A digest covers the exact bytes checked and this crftag's version, so a changed byte or
another release checks again. Nothing depends on the file: where it cannot be read or written
(a read-only home, a container without one), every load checks, as without it. Whoever can
write that file can already run code as the user, so trusting it adds no way in.
"""

from __future__ import annotations

import hashlib
import os

from crftag import __version__

__all__ = ["digest", "remember", "was_checked"]

KEPT = 64  # digests kept, the latest: a user's models, and the bundled ones


def digest(checked: bytes) -> str:
    """The SHA-256 of ``checked`` under this crftag's version, as hex."""
    return hashlib.sha256(f"crftag {__version__}\0".encode() + checked).hexdigest()


def _cache_file() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "crftag", "checked")


def _remembered() -> list[str]:
    try:
        with open(_cache_file(), encoding="ascii") as handle:
            return handle.read().split()
    except (OSError, ValueError):  # no file yet, no home, or a damaged one: check again
        return []


def was_checked(found: str) -> bool:
    """Whether the description with digest ``found`` passed the checks before."""
    return found in _remembered()


def remember(found: str) -> None:
    """Add ``found`` to the digests that passed, keeping the latest KEPT; silently nothing
    where the cache folder cannot be written."""
    path = _cache_file()
    kept = [line for line in _remembered() if line != found][-(KEPT - 1) :] + [found]
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = f"{path}.{os.getpid()}"
        with open(temporary, "w", encoding="ascii") as handle:
            handle.write("\n".join(kept) + "\n")
        os.replace(temporary, path)  # whole or not at all, whoever else writes it
    except OSError:
        pass
