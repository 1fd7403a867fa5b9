"""Zip files given as models (checkpoints and exported ``.npz`` files), checked before anything
in them is inflated.

Both formats are zip archives whose records crftag writes uncompressed, so their declared sizes
add up to about the file's own size. A deflated record can declare gigabytes in a file of a few
megabytes, and ``torch.load`` or ``np.load`` would inflate it into memory before any check of
what it holds; the central directory, read here without inflating anything, tells beforehand.
"""

from __future__ import annotations

import os
import struct
import zipfile
import zlib

from crftag.errors import CrftagError

__all__ = [
    "MAX_EXPANSION",
    "ZIP_ERRORS",
    "check_declared_sizes",
    "check_model_archive",
    "is_zip",
]

# What zipfile raises on a damaged archive: a flipped bit in a header can make a name that is
# not UTF-8, a version it does not know, an offset past the end or a truncated record.
ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    ValueError,  # UnicodeDecodeError among them
    NotImplementedError,
    OSError,
    EOFError,
    KeyError,
    IndexError,
    OverflowError,
    RuntimeError,
    struct.error,
    zlib.error,
)

# Declared bytes per byte of file. Records crftag writes are stored, so ~1; a model someone
# recompressed with deflate shrinks float weights by well under 2x. Zeros deflate ~1000x.
MAX_EXPANSION = 8
SLACK = 1 << 20  # small files: headers and padding dominate


def check_model_archive(path: str, *, checksums: bool = False) -> None:
    """Refuse ``path`` unless it is a zip archive whose headers read and whose records declare
    about the bytes the file holds; with ``checksums``, every record's CRC-32 is checked too
    (torch reads a checkpoint's records without), so a flipped bit anywhere is found before
    anything is unpickled. Each refusal is one line naming the file."""
    if not is_zip(path):
        raise CrftagError(
            f"{path}: not a crftag model: checkpoints and exported models are zip archives, "
            "and this file is not one (another kind of file, or a model cut short)"
        )
    try:
        with zipfile.ZipFile(path) as archive:
            check_declared_sizes(path, archive.infolist())
            damaged = archive.testzip() if checksums else None
    except ZIP_ERRORS as error:
        raise CrftagError(f"{path}: a damaged model file ({_reason(error)})") from None
    if damaged is not None:
        raise CrftagError(
            f"{path}: a damaged model file (record {damaged[:100]!r} fails its CRC-32 checksum)"
        )


def is_zip(path: str) -> bool:
    """Whether ``path`` ends like a zip archive; a damaged end record (which zipfile reads
    with errors of its own) is not one."""
    try:
        return zipfile.is_zipfile(path)
    except ZIP_ERRORS:
        return False


def _reason(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0][:120] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def check_declared_sizes(path: str, records: list[zipfile.ZipInfo]) -> None:
    """Refuse ``path`` if its ``records`` declare far more bytes than the file holds."""
    if not records:
        return
    declared = sum(record.file_size for record in records)
    size = os.path.getsize(path)
    if declared > MAX_EXPANSION * size + SLACK:
        largest = max(records, key=lambda record: record.file_size)
        raise CrftagError(
            f"{path}: its records declare {declared:,} bytes in a file of {size:,} (record "
            f"{largest.filename[:100]!r}: {largest.file_size:,} bytes); crftag model files "
            "store their records uncompressed, so this one is damaged or crafted"
        )
