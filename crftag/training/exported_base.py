"""An exported model (``crftag export --format numpy``, an ``.npz``) rebuilt as a torch model,
so ``train.init_from`` can start from it.

The archive holds what a checkpoint holds (:func:`crftag.checkpoint.model_payload`), the
weights as arrays: the payload is put back together and built as a checkpoint's is, through the
same checks. Weights stored as int8 come back dequantized (each within half its row's step), so
such a model starts from an approximation of the exported one.
"""

from __future__ import annotations

import torch

from crftag.checkpoint import LoadedModel, loaded_from_payload
from crftag.runtime.archive import read_archive

__all__ = ["load_exported"]

# What an archive's metadata adds to a checkpoint's description.
_ARCHIVE_KEYS = ("format", "archive_version", "quantized")


def load_exported(path: str) -> LoadedModel:
    """The torch model that the exported model at ``path`` describes."""
    metadata, weights = read_archive(path)
    payload = {key: value for key, value in metadata.items() if key not in _ARCHIVE_KEYS}
    payload["format"] = "crftag"
    payload["state_dict"] = {name: torch.from_numpy(array) for name, array in weights.items()}
    loaded = loaded_from_payload(payload, path)
    loaded.model.eval()
    return loaded
