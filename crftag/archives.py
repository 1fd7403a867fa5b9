"""Zip files given as models (checkpoints and exported ``.npz`` files), checked before anything
in them is inflated.

Both formats are zip archives whose records crftag writes uncompressed, so their declared sizes
add up to about the file's own size. A deflated record can declare gigabytes in a file of a few
megabytes, and ``torch.load`` or ``np.load`` would inflate it into memory before any check of
what it holds; the central directory, read here without inflating anything, tells beforehand.
"""

from __future__ import annotations

import os
import zipfile

from crftag.errors import CrftagError

__all__ = ["MAX_EXPANSION", "check_declared_sizes"]

# Declared bytes per byte of file. Records crftag writes are stored, so ~1; a model someone
# recompressed with deflate shrinks float weights by well under 2x. Zeros deflate ~1000x.
MAX_EXPANSION = 8
SLACK = 1 << 20  # small files: headers and padding dominate


def check_declared_sizes(path: str) -> None:
    """Refuse ``path`` if its records declare far more bytes than the file holds; a file that
    is not a zip archive passes (the loader reports what it is)."""
    try:
        with zipfile.ZipFile(path) as archive:
            records = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return
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
