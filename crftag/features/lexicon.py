"""Dictionary matches (``model.lexicons``, ``{TYPE: file}``): each token's position in the longest
match of each type's entries, O, B, I, E or S (:mod:`crftag.data.lexicons`), and a learned
vector of each type's position, the types' vectors side by side.

Its values: (B, T, L) int64 positions, L types, 0 (outside) at padding. The dictionaries'
entries are kept in the vocabularies (their ``lexicons`` resource), so a model tags without the
files. Its weights: ``lexicon.embedding.weight`` (L * 5, 8). The ONNX graph does not match
dictionaries: it refuses such a model.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from crftag.data.lexicons import FEATURE_SIZE, POSITIONS, Lexicons, lexicon_arrays, read_lexicons
from crftag.features.base import Feature, Shapes, TextBatch

__all__ = ["MAX_LEXICON_CHARS", "Lexicon"]

MAX_LEXICON_CHARS = 1 << 28  # of a model's dictionaries in all: 268 M characters


class Lexicon(Feature):
    name = "lexicon"
    module_name = "lexicon"
    key = "model.lexicons"
    vocabulary_key = "lexicons"
    onnx_refusal = "takes no dictionaries yet; use --format numpy"
    needs_bilstm = True
    inherited = False  # the dictionaries as read now

    def encodes(self, vocabularies) -> bool:
        return self.resource(vocabularies) is not None

    def arrays(self, text: TextBatch) -> np.ndarray:
        """(B, T, L) int64 positions."""
        return lexicon_arrays(text.sentences, self.resource(text.vocabularies))

    def read_resource(self, config) -> Lexicons | None:
        return read_lexicons(config.model.lexicons) if config.model.lexicons else None

    def resource_from_state(self, state) -> Lexicons:
        return Lexicons.from_state(state)

    def input_files(self, config) -> list[tuple[str, str]]:
        return [(f"{self.key}.{k}", path) for k, path in (config.model.lexicons or {}).items()]

    def check_vocabularies(self, state: Mapping, model: Mapping) -> None:
        """A string of entries per type, bounded in all, for the types of the config's
        ``model.lexicons``, in order; ValueError saying what is wrong otherwise."""
        where = "vocabularies.lexicons"
        lexicons = state.get("lexicons", {})
        types = list(model.get("lexicons") or ())
        if not isinstance(lexicons, dict):
            raise ValueError(f"{where}: expected a mapping of types to entries")
        total = 0
        for name, entries in lexicons.items():
            if not isinstance(name, str) or not isinstance(entries, str):
                raise ValueError(f"{where}: expected type names and strings of entries")
            total += len(name) + len(entries)
        if total > MAX_LEXICON_CHARS:
            raise ValueError(f"{where}: larger than {MAX_LEXICON_CHARS:,} characters in all")
        if list(lexicons) != types:
            raise ValueError(f"{where}: types {list(lexicons)[:10]}, {self.key} has {types[:10]}")

    def shapes(self, model: Mapping, vocabularies: Mapping) -> Shapes:
        rows = len(model["lexicons"]) * len(POSITIONS)
        return {"lexicon.embedding.weight": ((rows, FEATURE_SIZE), "float")}

    def width(self, model: Mapping, vocabularies: Mapping) -> int:
        return len(model["lexicons"]) * FEATURE_SIZE

    def torch_module(self, config, vocabularies):
        from crftag.nn.lexicons import LexiconEmbedding

        return LexiconEmbedding(len(config.lexicons), FEATURE_SIZE)

    def torch_forward(self, module, batch):
        return module(batch.lexicon)  # (B, T, L * 8)

    def numpy_forward(self, weights, model, vocabularies):
        table = weights["lexicon.embedding.weight"]  # (L * 5, D)

        def forward(inputs, packing, threads):
            """(N, L * D): each type's row of its position."""
            positions = inputs["lexicon"][packing.rows, packing.steps]  # (N, L)
            offsets = np.arange(positions.shape[1]) * len(POSITIONS)  # (L,)
            return table[positions + offsets].reshape(len(positions), -1)

        return forward
