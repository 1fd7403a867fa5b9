"""Case and shape: an embedding of each word's casing class (``model.casing_dim``; Reimers &
Gurevych 2017), so that lower-cased word vectors such as GloVe's can tell "Apple" from "apple".

Classes, later rules winning: 7 other, 6 contains a digit, 5 initial upper, 4 all upper, 3 all
lower, 2 mainly numeric, 1 numeric, 0 padding. They are computed from the batch's characters
(the chars feature's values) through a table from character index to kind: the feature has no
values of its own. Its weights: ``casing.embedding.weight`` (8, casing_dim).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from crftag.features.base import Feature, Shapes

__all__ = ["CASING_CLASSES", "Casing", "casing_classes", "casing_kinds"]

CASING_CLASSES = 8


def casing_kinds(char_symbols: list[str]) -> np.ndarray:
    """Kind of each character index: 0 padding, 1 upper, 2 lower, 3 digit, 4 anything else
    (indices 0 and 1 are the padding and unknown characters, whose names are no letters)."""
    kinds = [0, 4] + [
        1 if c.isupper() else 2 if c.islower() else 3 if c.isdigit() else 4
        for c in char_symbols[2:]
    ]
    return np.asarray(kinds, dtype=np.int64)


def casing_classes(kinds: np.ndarray, chars: np.ndarray) -> np.ndarray:
    """Casing class (N,) of each word's characters (N, C)."""
    char_kinds = kinds[chars]  # (N, C)
    length = (char_kinds != 0).sum(1)
    upper, lower, digits = ((char_kinds == kind).sum(1) for kind in (1, 2, 3))
    classes = np.full(length.shape, 7)
    classes[digits > 0] = 6
    classes[char_kinds[:, 0] == 1] = 5
    classes[upper == length] = 4
    classes[lower == length] = 3
    classes[2 * digits > length] = 2
    classes[digits == length] = 1
    classes[length == 0] = 0
    return classes


class Casing(Feature):
    name = "casing"
    module_name = "casing"
    key = "model.casing_dim"
    has_values = False

    def shapes(self, model: Mapping, vocabularies: Mapping) -> Shapes:
        return {"casing.embedding.weight": ((CASING_CLASSES, model["casing_dim"]), "float")}

    def width(self, model: Mapping, vocabularies: Mapping) -> int:
        return model["casing_dim"]

    def torch_module(self, config, vocabularies):
        from crftag.nn.encoders import CasingEmbedding

        return CasingEmbedding(vocabularies.chars.symbols, config.casing_dim)

    def torch_forward(self, module, batch):
        return module(batch.chars)  # (B, T, casing_dim)

    def numpy_forward(self, weights, model, vocabularies):
        kinds = casing_kinds(vocabularies.chars.symbols)
        table = weights["casing.embedding.weight"]

        def forward(inputs, packing, threads):
            return table[casing_classes(kinds, inputs["chars"][packing.rows, packing.steps])]

        return forward

    def onnx_forward(self, graph, weights, model, vocabularies) -> str:
        from crftag.modelfiles.onnx_graph import casing_embeddings, per_position, word_characters

        flat, counts = word_characters(graph, "chars")
        kinds = casing_kinds(vocabularies.chars.symbols)
        return per_position(graph, casing_embeddings(graph, weights, kinds, flat, counts))
