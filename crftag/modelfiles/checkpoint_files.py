"""A checkpoint file as a dict: :func:`write_checkpoint` writes one whole or not at all,
:func:`read_checkpoint` reads one back, refusing a file that is not plain values and tensors.
Kept apart from :mod:`crftag.modelfiles.checkpoint` (what a tagger's checkpoint holds, which
reads the input features), so a feature reads ``crftag pretrain``'s files without an import
cycle.
"""

from __future__ import annotations

import json
import os
import pickle
import warnings

import torch

from crftag.data.atomic import atomic_output
from crftag.errors import CrftagError
from crftag.runtime.zip_checks import check_model_archive

__all__ = ["read_checkpoint", "write_checkpoint"]


def write_checkpoint(path: str, payload: dict) -> None:
    """``torch.save`` the payload to ``path`` whole or not at all
    (:func:`crftag.data.atomic.atomic_output`), making its directory if missing."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if isinstance(payload.get("vocabularies"), dict):
        payload = {**payload, "vocabularies": json.dumps(payload["vocabularies"])}
    with atomic_output(path, binary=True) as stream:
        torch.save(payload, stream)


def read_checkpoint(path: str) -> dict:
    """The dict stored in a checkpoint file. ``weights_only`` loading admits tensors and plain
    values only, so a file crafted to run code when unpickled is refused, not run. The zip
    archive is checked first, its records' checksums included: torch would unpickle a damaged
    one."""
    check_model_archive(path, checksums=True)
    try:
        with warnings.catch_warnings():  # torch's notes on odd pickles would break the one line
            warnings.simplefilter("ignore")
            state = torch.load(path, map_location="cpu", weights_only=True)
    except (
        pickle.UnpicklingError,
        RuntimeError,
        EOFError,
        ValueError,
        OSError,
        KeyError,
        IndexError,
        TypeError,
        AttributeError,
        MemoryError,
        RecursionError,
    ) as error:
        if "Weights only load failed" in str(error):
            # A pickle that names a Python callable (os.system, ...) is what code execution
            # needs; torch's advice on weights_only is for files one trusts, so it is not shown.
            raise CrftagError(
                f"{path}: refused: the file holds objects other than tensors and plain values "
                "(it may try to run code when loaded); crftag checkpoints never do"
            ) from None
        raise CrftagError(
            f"{path}: not a loadable crftag checkpoint ({type(error).__name__})"
        ) from None
    if not isinstance(state, dict):
        raise CrftagError(f"{path}: not a crftag checkpoint")
    return _vocabularies_read(state, path)


def _vocabularies_read(state: dict, path: str) -> dict:
    """``state`` with its vocabularies as :func:`write_checkpoint` was given them: stored as a
    JSON string since format 2, as plain values before."""
    text = state.get("vocabularies")
    if not isinstance(text, str):
        return state
    try:
        return {**state, "vocabularies": json.loads(text)}
    except (ValueError, RecursionError):
        raise CrftagError(f"{path}: vocabularies: not valid JSON") from None
