"""The models a server holds: each ``-m`` value named and loaded once, with what ``GET /models``
says of it (labels, schemes, versions, the file's checksum)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crftag import __version__
from crftag.errors import CrftagError
from crftag.inference import loading
from crftag.modelfiles.registry import BUNDLED_MODELS, resolve_model_path

if TYPE_CHECKING:
    from crftag.inference.base import TaggerBase

__all__ = ["ServedModel", "load_models", "model_specs"]


@dataclass
class ServedModel:
    """A loaded model: its name in requests, the file it came from, and its tagger."""

    name: str
    path: str
    tagger: TaggerBase
    checksum: str

    def description(self) -> dict:
        """What ``GET /models`` says of this model."""
        tagger = self.tagger
        return {
            "name": self.name,
            "path": self.path,
            "backend": tagger.backend,
            "labels": tagger.labels,
            "tags": list(tagger.output_tags),
            "scheme": "iob2" if tagger.tags_are_spans else "none",
            "train_scheme": tagger.train_scheme,
            "document_context": tagger.document_context,
            "crftag_version": __version__,
            "sha256": self.checksum,
        }


def model_specs(values: list[str]) -> list[tuple[str, str]]:
    """(name, file) for each ``-m`` value: a bundled model by its name, a file or run directory
    by its file or directory name without the extension. Two models of one name are refused."""
    specs, names = [], set()
    for value in values:
        path = resolve_model_path(value)
        if value in BUNDLED_MODELS and not os.path.exists(value):
            name = value
        else:
            base = os.path.basename(os.path.normpath(value))
            name = os.path.splitext(base)[0] if os.path.isfile(value) else base
        if name in names:
            raise CrftagError(f"-m {value}: a second model named {name!r}; rename one file")
        names.add(name)
        specs.append((name, path))
    return specs


def load_models(specs: list[tuple[str, str]], device: str) -> list[ServedModel]:
    """Load each (name, file) once; the first is the default."""
    return [
        ServedModel(name, path, loading.load(path, device), _sha256(path)) for name, path in specs
    ]


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
