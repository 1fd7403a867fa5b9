"""``crftag.load``: the one loader, for the command line, the server, the cluster helpers and
Python callers alike. Whatever ``-m`` takes (a bundled model's name, a run directory, a
checkpoint, an ``.npz`` export, an ``.onnx`` graph) comes back as a tagger with the interface
of :class:`crftag.inference.base.TaggerBase`, run by the backend that suits the file:

==========  ===================================  =====================================
kind        ``--device auto`` or ``cpu``         ``--device cuda``
==========  ===================================  =====================================
bundled     NumPy                                torch, rebuilt from the export
export      NumPy                                refused: pass the checkpoint
onnx        ONNX Runtime                         refused: ONNX runs on the CPU here
checkpoint  torch (``auto``: on the GPU if any)  torch
==========  ===================================  =====================================

Choosing costs no torch import (:mod:`crftag.modelfiles.kinds` reads the file's bytes), so a
program that loads an export or a bundled model never loads torch. Sits above the taggers.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from crftag.errors import CrftagError
from crftag.modelfiles.kinds import ModelFile, model_file

if TYPE_CHECKING:
    import torch

    from crftag.inference.base import TaggerBase

__all__ = ["load"]


def load(model: str | os.PathLike[str], device: str | torch.device = "auto") -> TaggerBase:
    """The tagger of ``model``, what ``-m`` takes, on ``device`` (``auto``, ``cpu``, ``cuda``,
    ``cuda:N``, as ``--device`` takes; ``auto`` puts a checkpoint on the GPU where torch sees
    one, and runs an exported model on NumPy without importing torch). A path that is missing
    or holds no model is a one-line :class:`crftag.errors.CrftagError`."""
    found = model_file(os.fspath(model))
    device = str(device)
    on_gpu = device.startswith("cuda")
    if found.kind == "onnx":
        return _onnx_tagger(found, device)
    if found.kind == "export" or (found.kind == "bundled" and not on_gpu):
        return _array_tagger(found, device)
    return _torch_tagger(found, device)


def _onnx_tagger(found: ModelFile, device: str) -> TaggerBase:
    from crftag.inference.onnx_tagger import OnnxTagger

    return OnnxTagger.load(found.path, device)


def _array_tagger(found: ModelFile, device: str) -> TaggerBase:
    """The NumPy tagger of an export; an export of one's own cannot be asked onto a GPU (the
    network it would run there is its checkpoint's)."""
    if device.startswith("cuda"):
        raise CrftagError(
            f"{found.path}: an exported model runs on the CPU; pass its checkpoint for "
            f"--device {device}"
        )
    from crftag.inference.array_tagger import ArrayTagger

    return ArrayTagger.load(found.path)


def _torch_tagger(found: ModelFile, device: str) -> TaggerBase:
    """The torch tagger of a checkpoint, or of a bundled model's export rebuilt in torch."""
    from crftag.inference.tagger import Tagger
    from crftag.modelfiles.checkpoint import load_model
    from crftag.nn.devices import resolve_device

    resolved = resolve_device(device)
    tagger = Tagger.from_loaded(load_model(found.path, resolved), resolved)
    tagger.source = found.path
    return tagger
