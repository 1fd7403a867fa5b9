"""Which model file ``-m`` names, and where it runs: the exported model (``.npz``) for a bundled
name or an export, None for a torch checkpoint. Deciding costs no torch import.
"""

from __future__ import annotations

from crftag.errors import CrftagError
from crftag.modelfiles.registry import is_bundled_file, resolve_model_path
from crftag.runtime.archive import is_exported_model

__all__ = ["exported_model_path", "is_onnx_path"]


def is_onnx_path(model: str) -> bool:
    """Whether ``-m model`` names an ONNX model (by its suffix: ONNX files carry no magic)."""
    return model.lower().endswith(".onnx")


def exported_model_path(model: str, device: str, bundled: bool = False) -> str | None:
    """The exported model file that ``-m model`` names, or None where torch runs it: a
    checkpoint, or a bundled model (which ships exported) on a GPU or without ``bundled``.

    bundled: run a bundled model on its export, as the command line does; without it
    (``Tagger.load("en-ner")``) torch rebuilds the network from the export. An exported model
    runs on the CPU, so ``--device cuda`` with an export of one's own is a one-line error.
    """
    on_gpu = device.startswith("cuda")
    path = resolve_model_path(model)
    if not is_exported_model(path):
        return None
    if is_bundled_file(path):
        return path if bundled and not on_gpu else None
    if on_gpu:
        raise CrftagError(
            f"{path}: an exported model runs on the CPU; pass its checkpoint for --device {device}"
        )
    return path
