"""Which model file ``-m`` names, and where it runs: the exported model (``.npz``) for a bundled
name or an export, None for a torch checkpoint; the device a ``--device`` choice means. Deciding
costs no torch import.
"""

from __future__ import annotations

import os

from crftag.errors import CrftagError
from crftag.modelfiles.registry import BUNDLED_MODELS, resolve_model_path, shipped_export
from crftag.runtime.archive import is_exported_model

__all__ = ["exported_model_path", "is_exported", "is_onnx_path", "resolve_device"]


def resolve_device(choice: str):
    """The one place a device is chosen (``auto``, ``cpu``, ``cuda``, ``cuda:N``); everything
    below receives it explicitly."""
    import torch

    if choice.startswith("cuda") and not torch.cuda.is_available():
        raise CrftagError(f"--device {choice}: no CUDA device is available; use --device cpu")
    if choice == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(choice)


def is_exported(path: str) -> bool:
    """Whether ``path`` is an exported model: a zip archive (an ``.npz``) with the metadata
    entry. A torch checkpoint is a zip archive too, without it."""
    return is_exported_model(path)


def is_onnx_path(model: str) -> bool:
    """Whether ``-m model`` names an ONNX model (by its suffix: ONNX files carry no magic)."""
    return model.lower().endswith(".onnx")


def exported_model_path(model: str, device: str, bundled: bool = False) -> str | None:
    """The exported model file that ``-m model`` names, or None for a torch checkpoint.

    bundled: also take a bundled model's shipped export for its name (the command line does;
    ``Tagger.load("en-ner")`` keeps the torch model). An exported model runs on the CPU, so
    ``--device cuda`` with one is a one-line error, and takes the checkpoint of a bundled name.
    """
    on_gpu = device.startswith("cuda")
    if bundled and not on_gpu and model in BUNDLED_MODELS and not os.path.exists(model):
        shipped = shipped_export(model)
        if shipped is not None:
            return shipped
    path = resolve_model_path(model)
    if not is_exported(path):
        return None
    if on_gpu:
        raise CrftagError(
            f"{path}: an exported model runs on the CPU; pass its checkpoint for --device {device}"
        )
    return path
