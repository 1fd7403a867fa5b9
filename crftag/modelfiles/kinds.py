"""Which kind of model ``-m MODEL`` names, decided in this one place for every loader: a bundled
model, an export of one's own (``.npz``), an ONNX graph or a torch checkpoint. Deciding reads
the file's first bytes and its zip directory, never torch, so a loader can choose the runtime
before importing one.
"""

from __future__ import annotations

from dataclasses import dataclass

from crftag.modelfiles.registry import is_bundled_file, resolve_model_path
from crftag.runtime.archive import is_archive, is_exported_model

__all__ = ["KINDS", "ModelFile", "model_file"]

# bundled    an export that ships in crftag/models/ (named by -m en-ner, en-pos)
# export     a file of `crftag export --format numpy`
# onnx       a file of `crftag export --format onnx`
# checkpoint a torch checkpoint (a run directory's model.pt, `crftag export --format checkpoint`)
KINDS = ("bundled", "export", "onnx", "checkpoint")
ONNX_SUFFIX = ".onnx"  # ONNX files carry no magic bytes: the suffix names them


@dataclass(frozen=True)
class ModelFile:
    """A model file and its kind (one of :data:`KINDS`)."""

    path: str  # the file itself: a bundled name or a run directory resolved to its file
    kind: str

    @property
    def exported(self) -> bool:
        """Whether the file holds exported arrays, which the NumPy runtime reads."""
        return self.kind in ("bundled", "export")


def model_file(model: str) -> ModelFile:
    """The file ``-m model`` names and its kind; a missing path is a one-line error.

    The bytes decide where they can: a zip archive with crftag's metadata record is an export
    (whatever its name), any other zip archive a checkpoint. A file that is no zip archive is
    an ONNX graph by its suffix, else a checkpoint, which reading then refuses in one line."""
    path = resolve_model_path(model)
    if is_exported_model(path):
        return ModelFile(path, "bundled" if is_bundled_file(path) else "export")
    if not is_archive(path) and path.lower().endswith(ONNX_SUFFIX):
        return ModelFile(path, "onnx")
    return ModelFile(path, "checkpoint")
