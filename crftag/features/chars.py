"""Characters: each token's characters (:func:`crftag.data.indices.word_chars`: a long word as
its prefix and suffix), read by the character encoder (``model.char_encoder``): a CNN max-pooled
over each word (Ma & Hovy 2016) or the two final states of a BiLSTM (Lample et al. 2016).

Every batch carries them, 0-padded to (B, T, C), C the batch's longest word; the casing feature
reads them too. The NumPy runtime encodes each distinct word once and keeps the encodings across
batches (:class:`crftag.runtime.encodings.WordEncodings`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from crftag.features.base import Feature, Shapes, TextBatch, lstm_shapes

__all__ = ["CACHE_WORDS", "Chars", "char_lstm"]

CACHE_WORDS = 1 << 16  # character encodings a NumPy network keeps: ~13 MB for a 50-wide encoder


class Chars(Feature):
    name = "chars"
    module_name = "char_encoder"
    key = "model.char_encoder"
    in_every_batch = True

    def active(self, model: Mapping) -> bool:
        return model["char_encoder"] != "none"

    def arrays(self, text: TextBatch) -> np.ndarray:
        """(B, T, C) int64 character indices."""
        return text.indexed[1]

    def shapes(self, model: Mapping, vocabularies: Mapping) -> Shapes:
        chars = len(vocabularies["chars"]["symbols"])
        char_dim, size = model["char_dim"], model["char_size"]
        if model["char_encoder"] == "cnn":
            return {
                "char_encoder.embedding.weight": ((chars, char_dim), "float"),
                "char_encoder.conv.weight": ((size, char_dim, model["char_kernel"]), "float"),
                "char_encoder.conv.bias": ((size,), "float"),
            }
        shapes = {"char_encoder.embedding.weight": ((chars, char_dim), "float")}
        return {**shapes, **lstm_shapes("char_encoder.lstm.", char_dim, size, 1)}

    def width(self, model: Mapping, vocabularies: Mapping) -> int:
        return model["char_size"] * (2 if model["char_encoder"] == "lstm" else 1)

    def torch_module(self, config, vocabularies):
        from crftag.nn.encoders import CharCNN, CharLSTM

        if config.char_encoder == "cnn":
            num_chars = len(vocabularies.chars)
            return CharCNN(num_chars, config.char_dim, config.char_size, config.char_kernel)
        return CharLSTM(len(vocabularies.chars), config.char_dim, config.char_size)

    def torch_forward(self, module, batch):
        return module(batch.chars)  # (B, T, F)

    def numpy_forward(self, weights, model, vocabularies):
        return _CharEncodings(weights, model["char_encoder"])

    def onnx_inputs(self) -> list[tuple[str, list[str]]]:
        return [("chars", ["batch", "length", "characters"])]

    def onnx_forward(self, graph, weights, model, vocabularies) -> str:
        from crftag.modelfiles.onnx_graph import char_encodings, per_position, word_characters

        flat, counts = word_characters(graph, "chars")
        encoded = char_encodings(graph, weights, model["char_encoder"], flat, counts)
        return per_position(graph, encoded)


class _CharEncodings:
    """The character encoder on arrays, as :class:`crftag.nn.encoders.CharCNN` or
    :class:`crftag.nn.encoders.CharLSTM` computes it in evaluation mode. Words are encoded once
    and kept (``encodings``): an encoding must not depend on which words shared its batch, or a
    sentence's scores would depend on the text tagged before it."""

    def __init__(self, weights: Mapping[str, np.ndarray], kind: str) -> None:
        from crftag.runtime.encodings import WordEncodings
        from crftag.runtime.recurrent import network_layers

        self.weights, self.kind = weights, kind
        if kind == "cnn":
            embedding = weights["char_encoder.embedding.weight"]  # (V, D)
            kernel = weights["char_encoder.conv.weight"].transpose(2, 1, 0)  # (k, D, F)
            self.tables = embedding @ kernel  # (k, V, F): each offset's products, one gather
        else:
            self.layers = network_layers(weights, "char_encoder.lstm.", exact_sums=True)
        count = len(weights["char_encoder.embedding.weight"])
        self.encodings = WordEncodings(CACHE_WORDS, max(count, 1))

    def __call__(self, inputs: Mapping, packing, threads: int) -> np.ndarray:
        """(N, F) for the packed tokens."""
        token_chars = inputs["chars"][packing.rows, packing.steps]  # (N, C)
        if self.kind == "cnn":
            return self.encodings.encode(token_chars, self._cnn)
        return self.encodings.encode(
            token_chars, lambda chars: char_lstm(self.weights, self.layers, chars, threads)
        )

    def _cnn(self, chars: np.ndarray) -> np.ndarray:
        """chars (M, C) -> (M, F): convolution over each word's characters, max-pooled (index
        0, padding, maps to 0 in every table)."""
        tables = self.tables
        kernel, width = len(tables), chars.shape[1]
        padded = np.pad(chars, ((0, 0), (kernel // 2, kernel // 2)))  # (M, C + k - 1)
        features = tables[0][padded[:, :width]]  # (M, C, F)
        for offset in range(1, kernel):
            features += tables[offset][padded[:, offset : offset + width]]
        features += self.weights["char_encoder.conv.bias"]
        features[chars == 0] = -np.inf  # padding characters must not win the max
        pooled = features.max(axis=1)  # (M, F)
        pooled[~np.isfinite(pooled)] = 0.0  # a padding word pools to 0
        return pooled


def char_lstm(
    weights: Mapping[str, np.ndarray], layers: list, chars: np.ndarray, threads: int = 1
) -> np.ndarray:
    """chars (M, C) -> (M, 2H): the two final states of a BiLSTM over each word (0 for
    none)."""
    from crftag.runtime.recurrent import pack, packed_lstm

    packing = pack((chars != 0).sum(1))
    embedded = weights["char_encoder.embedding.weight"][chars[packing.rows, packing.steps]]
    _, finals = packed_lstm(layers, embedded, packing, threads)  # (2, n, H), longest word first
    output = np.zeros((len(chars), 2 * finals.shape[2]), dtype=np.float32)
    output[packing.order[: finals.shape[1]]] = np.concatenate([finals[0], finals[1]], axis=1)
    return output
