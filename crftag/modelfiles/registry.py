"""The models crftag ships, and how ``-m`` names a model: a bundled model's name, a checkpoint
file, or a run directory."""

from __future__ import annotations

import os

from crftag.errors import CrftagError

__all__ = [
    "BUNDLED_MODELS",
    "DEFAULT_MODEL",
    "MODEL_FILE",
    "is_bundled_file",
    "resolve_model_path",
]

# Models that ship inside the package, one exported file each (crftag/models/NAME.npz, int8
# weights: docs/int8.md), selected with -m NAME.
BUNDLED_MODELS = {
    "en-ner": "English named entities (PER, LOC, ORG, MISC), trained on CoNLL-2003",
    "en-pos": "English universal part-of-speech tags, trained on UD English-EWT",
}
DEFAULT_MODEL = "en-ner"
# The bundled models' folder, crftag/models/, package data beside the packages.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS_DIR = os.path.join(PACKAGE_DIR, "models")
BUNDLED_SUFFIX = ".npz"  # a bundled model is an export (crftag export --format numpy --int8)
MODEL_FILE = "model.pt"  # the checkpoint inside a run directory


def is_bundled_file(path: str) -> bool:
    """Whether ``path`` is one of the files that ship in ``crftag/models/``."""
    return os.path.dirname(os.path.abspath(path)) == os.path.abspath(MODELS_DIR)


def resolve_model_path(path: str) -> str:
    """``-m`` takes a bundled model's name, a model file (checkpoint or export), or a run
    directory that holds ``model.pt``. A file or directory of a bundled model's name in the
    current directory wins."""
    if path in BUNDLED_MODELS and not os.path.exists(path):
        bundled = os.path.join(MODELS_DIR, path + BUNDLED_SUFFIX)
        if not os.path.exists(bundled):
            raise CrftagError(
                f"-m {path}: the bundled model is not in this copy of crftag ({bundled}); "
                "build it with `make models`, or pass -m RUN_DIR"
            )
        return bundled
    if os.path.isdir(path):
        candidate = os.path.join(path, MODEL_FILE)
        if not os.path.exists(candidate):
            raise CrftagError(f"{path}: no {MODEL_FILE} in this directory; is it a training run?")
        return candidate
    if not os.path.exists(path):
        raise CrftagError(f"{path}: no such model file or directory")
    if not os.path.isfile(path):  # a FIFO or a device would hang or never end
        raise CrftagError(f"{path}: not a regular file (a FIFO or device cannot be a model)")
    return path
