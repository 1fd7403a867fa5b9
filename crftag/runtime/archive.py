"""The exported model file: one uncompressed NumPy ``.npz`` holding every weight as an array under
its state-dict name and, under ``__metadata__``, the model's description as UTF-8 JSON (config,
vocabularies, tag schemes, metrics, versions): what a checkpoint holds, without pickles or torch.

Uncompressed because loading is then a read and a view per array. Weights are stored as float32,
or float16 where the checkpoint's are (exactly representable, so nothing is lost), or, for the
matrices named in the metadata's ``quantized`` list, as int8 with one float32 scale per row
under ``NAME@scale`` (symmetric: ``weight[r] ~ int8[r] * scale[r]``). The CRF's constraints are
bool. :func:`read_archive` hands back float32 whatever was stored, so the runtime computes in one
precision. Version 1 archives (float32 only) read as before.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Collection, Mapping

import numpy as np

from crftag.data.atomic import atomic_output
from crftag.errors import CrftagError
from crftag.runtime.checked import digest
from crftag.runtime.zip_checks import ZIP_ERRORS, check_model_archive, is_zip

__all__ = [
    "ARCHIVE_FORMAT",
    "dequantize_rows",
    "is_archive",
    "quantize_rows",
    "read_archive",
    "read_archive_digest",
    "write_archive",
]

ARCHIVE_FORMAT = "crftag-numpy"
# Version 2 may hold float16 and int8 arrays, which a version 1 reader would compute with as they
# are; version 1 archives are a subset of version 2 and are still read.
ARCHIVE_VERSION = 2
READABLE_VERSIONS = (1, 2)
METADATA = "__metadata__"
SCALE_SUFFIX = "@scale"  # state-dict names never hold "@"


def _narrowed(weights: np.ndarray) -> np.ndarray:
    """``weights`` as float16 when every value is exactly a float16 (a checkpoint saved in half
    precision), else unchanged: the float16 copy reads back bit for bit."""
    if weights.dtype != np.float32:
        return weights
    with np.errstate(over="ignore"):  # a value beyond float16 is inf there: not equal, kept
        half = weights.astype(np.float16)
    return half if np.array_equal(half.astype(np.float32), weights) else weights


def quantize_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 quantization with one scale per row (an output unit of a layer).

    matrix (R, C) float -> (quantized (R, C) int8 in [-127, 127], scales (R,) float32), with
    ``scale = max |row| / 127``, so each value is off by at most ``scale / 2`` once dequantized.
    A row of zeros gets scale 0 and stays zeros."""
    if matrix.ndim != 2 or not np.issubdtype(matrix.dtype, np.floating):
        raise ValueError(f"expected a 2-D float matrix, got {matrix.ndim}-D {matrix.dtype}")
    values = matrix.astype(np.float64)
    scales = (np.abs(values).max(axis=1) / 127.0).astype(np.float32)  # (R,)
    divisors = np.where(scales > 0, scales, 1.0)[:, None]  # (R, 1); zero rows divide by 1
    quantized = np.clip(np.rint(values / divisors), -127, 127).astype(np.int8)
    return quantized, scales


def dequantize_rows(quantized: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """quantized (R, C) int8, scales (R,) -> (R, C) float32, widened and scaled in one pass
    (the same values as widening first: int8 is exact in float32)."""
    return np.multiply(quantized, scales.astype(np.float32)[:, None], dtype=np.float32)


def write_archive(
    path: str,
    metadata: Mapping,
    weights: Mapping[str, np.ndarray],
    *,
    quantized: Collection[str] = (),
) -> None:
    """Write ``weights`` and ``metadata`` to ``path`` through a temporary file renamed over it,
    so a crash leaves the old file or the new one, never a torn one. The weights named in
    ``quantized`` (2-D float matrices) are stored as int8 and per-row scales
    (:func:`quantize_rows`); float32 ones that are exactly float16 as float16; the others as
    they are given."""
    if METADATA in weights:
        raise ValueError(f"expected no weight named {METADATA}")
    stored = {name: _narrowed(array) for name, array in weights.items()}
    for name in quantized:
        stored[name], stored[name + SCALE_SUFFIX] = quantize_rows(weights[name])
    described = {
        **metadata,
        "format": ARCHIVE_FORMAT,
        "archive_version": ARCHIVE_VERSION,
        "quantized": sorted(quantized),
    }
    encoded = np.frombuffer(json.dumps(described).encode("utf-8"), dtype=np.uint8)
    with atomic_output(path, binary=True) as stream:
        np.savez(stream, **{METADATA: encoded}, **stored)


def is_archive(path: str) -> bool:
    """Whether ``path`` is a file that starts like a zip archive (an ``.npz``)."""
    return os.path.isfile(path) and is_zip(path)


def is_exported_model(path: str) -> bool:
    """Whether ``path`` is an exported model: a zip archive with the metadata record, or a
    NumPy archive (only ``.npy`` entries) without it, which reading then names as missing. A
    torch checkpoint is a zip archive of other entries (``data.pkl``). A damaged archive is
    not one; reading it as a checkpoint says what is wrong."""
    if not is_archive(path):
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except ZIP_ERRORS:
        return False
    return f"{METADATA}.npy" in names or bool(names) and all(n.endswith(".npy") for n in names)


def read_archive(path: str) -> tuple[dict, dict[str, np.ndarray]]:
    """(metadata, weights) of an exported model, every floating-point weight float32 (float16
    ones widened, int8 ones dequantized); a file that is not one is a one-line error. The
    arrays are checked against the network the metadata describes by
    :func:`crftag.modelfiles.checkpoint_schema.check_export`."""
    metadata, weights, _ = read_archive_digest(path)
    return metadata, weights


def read_archive_digest(path: str) -> tuple[dict, dict[str, np.ndarray], str]:
    """:func:`read_archive`'s (metadata, weights) and the digest of the metadata entry's bytes
    (:func:`crftag.runtime.checked.digest`), by which its checks are remembered."""
    check_model_archive(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            if METADATA not in archive.files:
                raise CrftagError(
                    f"{path}: not an exported crftag model: a NumPy archive without the "
                    f"{METADATA} entry that describes the network; export the model again"
                )
            described = archive[METADATA].tobytes()
            metadata = json.loads(described.decode("utf-8"))
            stored = {name: archive[name] for name in archive.files if name != METADATA}
    except ZIP_ERRORS as error:
        first = str(error).strip().splitlines()[0][:160] if str(error).strip() else ""
        reason = f"{type(error).__name__}: {first}" if first else type(error).__name__
        raise CrftagError(f"{path}: cannot read the exported model ({reason})") from None
    if not isinstance(metadata, dict) or metadata.get("format") != ARCHIVE_FORMAT:
        found = metadata.get("format") if isinstance(metadata, dict) else type(metadata).__name__
        raise CrftagError(f"{path}: not an exported crftag model (format {found!r})")
    _check_archive_version(path, metadata.get("archive_version"))
    weights = _float32_weights(path, stored, metadata.get("quantized", []))
    return metadata, weights, digest(described)


def _check_archive_version(path: str, version) -> None:
    readable = ", ".join(map(str, READABLE_VERSIONS))
    if version in READABLE_VERSIONS and isinstance(version, int) and not isinstance(version, bool):
        return
    if isinstance(version, int) and not isinstance(version, bool) and version > ARCHIVE_VERSION:
        raise CrftagError(
            f"{path}: archive version {version} is newer than this crftag reads ({readable}); "
            "upgrade crftag"
        )
    raise CrftagError(
        f"{path}: archive_version {version!r} is not one crftag writes (it reads {readable}); "
        "export the model again"
    )


def _float32_weights(
    path: str, stored: dict[str, np.ndarray], quantized: list[str]
) -> dict[str, np.ndarray]:
    """The stored arrays with the quantized ones dequantized (their scales consumed) and float16
    ones widened; bool and integer arrays (constraints) as they are."""
    weights = dict(stored)
    if not isinstance(quantized, list) or not all(isinstance(name, str) for name in quantized):
        raise CrftagError(f"{path}: quantized: expected a list of weight names")
    for name in quantized:
        if name not in weights or name + SCALE_SUFFIX not in weights:
            raise CrftagError(f"{path}: quantized weight {name!r} or its scales are missing")
        rows, scales = weights.pop(name), weights.pop(name + SCALE_SUFFIX)
        if rows.dtype != np.int8 or rows.ndim != 2 or scales.shape != rows.shape[:1]:
            raise CrftagError(
                f"{path}: quantized weight {name!r}: expected an int8 matrix and one scale per "
                f"row, got {rows.dtype} {rows.shape} and scales {scales.shape}"
            )
        weights[name] = dequantize_rows(rows, scales)
    return {
        name: array.astype(np.float32) if array.dtype == np.float16 else array
        for name, array in weights.items()
    }
