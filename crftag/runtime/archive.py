"""The exported model file: one uncompressed NumPy ``.npz`` holding every weight as an array under
its state-dict name and, under ``__metadata__``, the model's description as UTF-8 JSON (config,
vocabularies, tag schemes, metrics, versions): what a checkpoint holds, without pickles or torch.

Uncompressed because loading is then a read and a view per array; the arrays are float32 (weights)
and bool (the CRF's constraints), in NumPy's own portable format.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections.abc import Mapping

import numpy as np

from crftag.errors import CrftagError

__all__ = ["ARCHIVE_FORMAT", "is_archive", "read_archive", "write_archive"]

ARCHIVE_FORMAT = "crftag-numpy"
ARCHIVE_VERSION = 1
METADATA = "__metadata__"


def write_archive(path: str, metadata: Mapping, weights: Mapping[str, np.ndarray]) -> None:
    """Write ``weights`` and ``metadata`` to ``path`` through a temporary file renamed over it,
    so a crash leaves the old file or the new one, never a torn one."""
    if METADATA in weights:
        raise ValueError(f"expected no weight named {METADATA}")
    described = {**metadata, "format": ARCHIVE_FORMAT, "archive_version": ARCHIVE_VERSION}
    encoded = np.frombuffer(json.dumps(described).encode("utf-8"), dtype=np.uint8)
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".partial-", suffix=".npz", dir=directory)
    try:
        with os.fdopen(handle, "wb") as stream:
            np.savez(stream, **{METADATA: encoded}, **weights)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def is_archive(path: str) -> bool:
    """Whether ``path`` is a file that starts like a zip archive (an ``.npz``)."""
    return os.path.isfile(path) and zipfile.is_zipfile(path)


def read_archive(path: str) -> tuple[dict, dict[str, np.ndarray]]:
    """(metadata, weights) of an exported model; a file that is not one is a one-line error."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            if METADATA not in archive.files:
                raise CrftagError(f"{path}: not an exported crftag model (no {METADATA})")
            metadata = json.loads(archive[METADATA].tobytes().decode("utf-8"))
            weights = {name: archive[name] for name in archive.files if name != METADATA}
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise CrftagError(f"{path}: cannot read the exported model ({error})") from None
    if metadata.get("format") != ARCHIVE_FORMAT:
        raise CrftagError(
            f"{path}: not an exported crftag model (format {metadata.get('format')!r})"
        )
    if metadata.get("archive_version") != ARCHIVE_VERSION:
        raise CrftagError(
            f"{path}: exported with archive version {metadata.get('archive_version')!r}; this "
            f"crftag reads version {ARCHIVE_VERSION}: export the model again"
        )
    return metadata, weights
