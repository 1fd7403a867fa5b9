"""Which tagger runs a model: ONNX Runtime for an ``.onnx`` file, the NumPy one for an exported
model (and for a bundled model, which ships exported), the torch one for a checkpoint. Deciding
costs no torch import, so a predict that runs on an exported model starts without ever loading
torch. Sits above the taggers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crftag.inference.model_paths import exported_model_path, is_onnx_path
from crftag.nn.devices import resolve_device

if TYPE_CHECKING:
    from crftag.inference.base import TaggerBase

__all__ = ["load_tagger"]


def load_tagger(model: str, device: str = "auto") -> TaggerBase:
    """The tagger for ``-m model`` on ``--device device`` (unresolved: ``auto`` too): the NumPy
    tagger where the model is exported, without importing torch; the torch tagger otherwise."""
    if is_onnx_path(model):
        from crftag.inference.onnx_tagger import OnnxTagger

        return OnnxTagger.load(model, device)
    exported = exported_model_path(model, device, bundled=True)
    if exported is not None:
        from crftag.inference.array_tagger import ArrayTagger

        return ArrayTagger.load(exported)
    from crftag.inference.tagger import Tagger

    return Tagger.load(model, resolve_device(device))
