"""Word ids: each token's row of the word embedding (``model.word_dim``), the vocabulary's look-up
of its normalised form (:meth:`crftag.data.vocab.Vocabularies.word_index`); 0 is padding.

Every model has it. Its weights: ``word_embedding.weight`` (V, word_dim), initialised uniform in
+-sqrt(3 / word_dim) (Ma & Hovy 2016), the padding row zero.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from crftag.features.base import Feature, Shapes, TextBatch

__all__ = ["Words"]


class Words(Feature):
    name = "words"
    module_name = "word_embedding"
    key = "model.word_dim"
    in_every_batch = True

    def active(self, model: Mapping) -> bool:
        return True

    def arrays(self, text: TextBatch) -> np.ndarray:
        """(B, T) int64 word indices."""
        return text.indexed[0]

    def shapes(self, model: Mapping, vocabularies: Mapping) -> Shapes:
        words = len(vocabularies["words"]["symbols"])
        return {"word_embedding.weight": ((words, model["word_dim"]), "float")}

    def width(self, model: Mapping, vocabularies: Mapping) -> int:
        return model["word_dim"]

    def torch_module(self, config, vocabularies):
        import torch
        from torch import nn

        from crftag.nn.encoders import WordEmbedding

        module = WordEmbedding(len(vocabularies.words), config.word_dim)
        bound = (3.0 / config.word_dim) ** 0.5  # a unit-variance start
        nn.init.uniform_(module.weight, -bound, bound)
        with torch.no_grad():
            module.weight[0].zero_()
        return module

    def torch_forward(self, module, batch):
        return module(batch.words)  # (B, T, word_dim)

    def numpy_forward(self, weights, model, vocabularies):
        table = weights["word_embedding.weight"]

        def forward(inputs, packing, threads):
            return table[inputs["words"][packing.rows, packing.steps]]

        return forward

    def onnx_inputs(self) -> list[tuple[str, list[str]]]:
        return [("words", ["batch", "length"])]

    def onnx_forward(self, graph, weights, model, vocabularies) -> str:
        table = graph.const(weights["word_embedding.weight"], np.float32)
        return graph.op("Gather", table, "words")
