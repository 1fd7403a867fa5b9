"""Which tagger runs a model: the NumPy one for an exported model (and for a bundled model, which
ships exported), the torch one for a checkpoint. Deciding costs no torch import, so a predict
that runs on an exported model starts without ever loading torch.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from crftag.errors import CrftagError
from crftag.registry import BUNDLED_MODELS, resolve_model_path, shipped_export
from crftag.runtime.archive import is_exported_model

if TYPE_CHECKING:
    from crftag.inference.base import TaggerBase

__all__ = ["exported_model_path", "is_exported", "load_tagger", "resolve_device"]


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


def load_tagger(model: str, device: str = "auto") -> TaggerBase:
    """The tagger for ``-m model`` on ``--device device`` (unresolved: ``auto`` too): the NumPy
    tagger where the model is exported, without importing torch; the torch tagger otherwise."""
    exported = exported_model_path(model, device, bundled=True)
    if exported is not None:
        from crftag.inference.array_tagger import ArrayTagger

        return ArrayTagger.load(exported)
    from crftag.inference.tagger import Tagger

    return Tagger.load(model, resolve_device(device))
