"""The BiLSTM-CRF's network in NumPy: emission scores from a trained model's weights, computed as
:meth:`crftag.nn.taggers.BiLSTMCRF.emissions` computes them in evaluation mode, without torch.

Weights are the model's state dict as float32 arrays, under the same names; the BiLSTMs run
over packed rows (crftag/runtime/recurrent.py). The character encoder runs once per distinct
word of a batch, and :class:`Network` keeps the encodings across batches (news text repeats its
words).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import numpy as np

from crftag.data.lexicons import POSITIONS
from crftag.runtime.encodings import WordEncodings
from crftag.runtime.recurrent import Packing, lstm, network_layers, pack, packed_lstm

__all__ = ["CASING_CLASSES", "Network", "casing_kinds", "emissions", "lstm"]

CASING_CLASSES = 8
CACHE_WORDS = 1 << 16  # character encodings a Network keeps: ~13 MB for a 50-wide encoder


def casing_kinds(char_symbols: list[str]) -> np.ndarray:
    """Kind of each character index: 0 padding, 1 upper, 2 lower, 3 digit, 4 anything else
    (indices 0 and 1 are the padding and unknown characters)."""
    kinds = [0, 4] + [
        1 if c.isupper() else 2 if c.islower() else 3 if c.isdigit() else 4
        for c in char_symbols[2:]
    ]
    return np.asarray(kinds, dtype=np.int64)


def _casing_classes(kinds: np.ndarray, chars: np.ndarray) -> np.ndarray:
    """Casing class (N,) of each word's characters (N, C), as
    :class:`crftag.nn.encoders.CasingEmbedding` gives it."""
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


def _conv_tables(weights: Mapping[str, np.ndarray]) -> np.ndarray:
    """(k, V, F): every character's embedding times each kernel offset's weights (F, D, k)."""
    embedding = weights["char_encoder.embedding.weight"]  # (V, D)
    kernel_weights = weights["char_encoder.conv.weight"].transpose(2, 1, 0)  # (k, D, F)
    return embedding @ kernel_weights


def _char_cnn(
    tables: np.ndarray,
    weights: Mapping[str, np.ndarray],
    chars: np.ndarray,
) -> np.ndarray:
    """chars (M, C) -> (M, F): convolution over each word's characters, max-pooled; tables
    from :func:`_conv_tables`, so each kernel offset is one gather (index 0, padding, maps
    to 0)."""
    kernel, width = len(tables), chars.shape[1]
    padded = np.pad(chars, ((0, 0), (kernel // 2, kernel // 2)))  # (M, C + k - 1)
    features = tables[0][padded[:, :width]]  # (M, C, F)
    for offset in range(1, kernel):
        features += tables[offset][padded[:, offset : offset + width]]
    features += weights["char_encoder.conv.bias"]
    features[chars == 0] = -np.inf  # padding characters must not win the max
    pooled = features.max(axis=1)  # (M, F)
    pooled[~np.isfinite(pooled)] = 0.0  # a padding word pools to 0
    return pooled


def _char_lstm(
    weights: Mapping[str, np.ndarray],
    layers: list,
    chars: np.ndarray,
    threads: int = 1,
) -> np.ndarray:
    """chars (M, C) -> (M, 2H): the two final states of a BiLSTM over each word (0 for
    none)."""
    packing = pack((chars != 0).sum(1))
    embedded = weights["char_encoder.embedding.weight"][chars[packing.rows, packing.steps]]
    _, finals = packed_lstm(layers, embedded, packing, threads)  # (2, n, H), longest word first
    output = np.zeros((len(chars), 2 * finals.shape[2]), dtype=np.float32)
    output[packing.order[: finals.shape[1]]] = np.concatenate([finals[0], finals[1]], axis=1)
    return output


def _lexicon_features(weights: Mapping[str, np.ndarray], positions: np.ndarray) -> np.ndarray:
    """positions (N, L) -> (N, L * D): each type's row of its position, as
    :class:`crftag.nn.encoders.LexiconEmbedding` gives it."""
    table = weights["lexicon.embedding.weight"]  # (L * 5, D)
    offsets = np.arange(positions.shape[1]) * len(POSITIONS)  # (L,)
    return table[positions + offsets].reshape(len(positions), -1)


def _group_means(states: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """states (N, D), groups (N,) ids -> (N, D): each position the mean over the positions with
    its id. Only real positions are packed, so padding (an id of its own) never counts."""
    # Sorted by id, each group's rows are one run: np.add.reduceat sums the runs (np.add.at,
    # which would do it unsorted, is many times slower).
    order = np.argsort(groups, kind="stable")
    sorted_ids = groups[order]
    firsts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    sizes = np.diff(np.r_[firsts, len(groups)])
    means = np.add.reduceat(states[order], firsts, axis=0) / sizes[:, None].astype(np.float32)
    result = np.empty_like(states)
    result[order] = np.repeat(means, sizes, axis=0)
    return result


def _head(
    weights: Mapping[str, np.ndarray], states: np.ndarray, groups: np.ndarray | None
) -> np.ndarray:
    """states (N, D) -> tag scores (N, K): the optional tanh layer, then the projection, over
    the states and, given groups (N,) for document context, their group means beside them."""
    first = "hidden.0" if "hidden.0.weight" in weights else "projection"
    weight, width = weights[f"{first}.weight"], states.shape[1]  # (K', D) or (K', 2D)
    scores = states @ weight[:, :width].T + weights[f"{first}.bias"]  # (N, K')
    if groups is not None:
        # The means enter through a linear map, and the mean of the mapped states is the mapped
        # mean: averaging K' columns instead of D is far cheaper.
        scores += _group_means(states @ weight[:, width:].T, groups)
    if first == "hidden.0":
        scores = np.tanh(scores) @ weights["projection.weight"].T + weights["projection.bias"]
    return scores


def emissions(
    weights: Mapping[str, np.ndarray],
    model: Mapping[str, object],
    words: np.ndarray,
    chars: np.ndarray,
    lengths: np.ndarray,
    groups: np.ndarray | None = None,
    kinds: np.ndarray | None = None,
    lexicon: np.ndarray | None = None,
) -> np.ndarray:
    """Emission scores (B, T, K) of a BiLSTM-CRF.

    weights  the state dict as arrays; model  the config's ``model`` section (``char_encoder``,
    ``casing_dim``, ``document_context``); words (B, T) and chars (B, T, C) indices, 0 padding;
    lengths (B,); groups (B, T) document groups for a model with document context (padding with
    an id of its own); kinds the :func:`casing_kinds` of the character vocabulary for a model
    with a casing embedding; lexicon (B, T, L) dictionary positions for a model with
    dictionaries (:func:`crftag.data.lexicons.lexicon_arrays`)."""
    network = Network(weights, model, [])
    network.kinds = kinds  # given, in place of a character vocabulary's
    return network.emissions(words, chars, lengths, groups, lexicon=lexicon)


class Network:
    """A BiLSTM-CRF's emission network on arrays, built once and run batch after batch; it
    keeps the character encodings of the words it has seen.

    weights  the state dict as arrays; model  the config's ``model`` section; char_symbols
    the character vocabulary's symbols (for a casing embedding's character kinds)."""

    def __init__(
        self,
        weights: Mapping[str, np.ndarray],
        model: Mapping[str, object],
        char_symbols: list[str],
    ) -> None:
        self.weights = weights
        self.model = model
        self.kinds = casing_kinds(char_symbols) if model.get("casing_dim") else None
        self.encoder_layers = network_layers(weights, "encoder.lstm.")
        self.char_encoder = None  # chars (M, C) -> (M, F)
        if model["char_encoder"] == "cnn":
            self.char_encoder = partial(_char_cnn, _conv_tables(weights), weights)
        elif model["char_encoder"] == "lstm":
            # Words are encoded once and kept (WordEncodings): an encoding must not depend on
            # which words shared its batch, or a sentence's scores would depend on the text
            # tagged before it.
            layers = network_layers(weights, "char_encoder.lstm.", exact_sums=True)
            self.char_encoder = partial(_char_lstm, weights, layers)
        self.char_lm_layers = None
        if model.get("char_lm"):
            self.char_lm_layers = network_layers(weights, "char_lm.encoder.lstm.")
        char_count = len(weights.get("char_encoder.embedding.weight", ()))
        self.char_encodings = WordEncodings(CACHE_WORDS, max(char_count, 1))

    def emissions(
        self,
        words: np.ndarray,
        chars: np.ndarray,
        lengths: np.ndarray,
        groups: np.ndarray | None = None,
        threads: int = 1,
        lexicon: np.ndarray | None = None,
        char_lm: list[tuple[list[int], list[int], list[int]]] | None = None,
    ) -> np.ndarray:
        """Emission scores (B, T, K) for words (B, T), chars (B, T, C), lengths (B,) and, for a
        model with document context, groups (B, T), for one with dictionaries, lexicon
        (B, T, L), as :func:`emissions` takes them, and for one with character language
        models each sentence's :meth:`crftag.data.char_codes.CharCodes.encode_words`. Only the
        real positions are computed; past each end, the scores of torch's zero states.
        ``threads``: for the compiled BiLSTM loops (see :func:`packed_lstm`)."""
        weights = self.weights
        packing = pack(lengths)
        token_chars = chars[packing.rows, packing.steps]  # (N, C)
        features = [weights["word_embedding.weight"][words[packing.rows, packing.steps]]]
        if self.char_encoder is not None:
            encoder = self.char_encoder
            if self.model["char_encoder"] == "lstm":
                encoder = partial(encoder, threads=threads)
            features.append(self.char_encodings.encode(token_chars, encoder))
        if self.model.get("casing_dim"):
            classes = _casing_classes(self.kinds, token_chars)
            features.append(weights["casing.embedding.weight"][classes])
        if self.model.get("lexicons"):
            features.append(_lexicon_features(weights, lexicon[packing.rows, packing.steps]))
        if self.char_lm_layers is not None:
            features.append(self._char_lm_states(char_lm, packing, threads))
        inputs = np.concatenate(features, axis=1)
        states, _ = packed_lstm(self.encoder_layers, inputs, packing, threads)
        context = self.model.get("document_context")
        scores = _head(weights, states, groups[packing.rows, packing.steps] if context else None)
        # Past each end torch's states, and the means of the padding's own group, are zeros.
        zero = np.zeros((1, states.shape[1]), dtype=np.float32)
        padding = _head(weights, zero, np.zeros(1, dtype=np.int64) if context else None)
        result = np.empty((*words.shape, scores.shape[1]), dtype=np.float32)
        result[:] = padding
        result[packing.rows, packing.steps] = scores
        return result

    def _char_lm_states(
        self,
        encoded: list[tuple[list[int], list[int], list[int]]],
        tokens: Packing,
        threads: int,
    ) -> np.ndarray:
        """(N, 2H') for the packed tokens: the forward character model's state after each
        word's last character and the backward one's at its first, as
        :meth:`crftag.nn.char_lm.CharLanguageModels.word_states` gives them."""
        states, where, lasts, firsts = self._line_states("char_lm", encoded, threads)
        hidden = states.shape[1] // 2
        forward = states[where[tokens.rows, lasts[tokens.rows, tokens.steps]], :hidden]
        backward = states[where[tokens.rows, firsts[tokens.rows, tokens.steps]], hidden:]
        return np.concatenate([forward, backward], axis=1)

    def _line_states(
        self, prefix: str, encoded: list[tuple[list[int], list[int], list[int]]], threads: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(states (M, 2H') of the ``prefix`` model's BiLSTM over the packed codes of each
        sentence, where (B, L) each code position's packed index, lasts (B, T), firsts (B, T))."""
        lengths = np.array([len(codes) for codes, _, _ in encoded], dtype=np.int64)
        codes = np.zeros((len(encoded), int(lengths.max())), dtype=np.int64)
        longest = max(len(last) for _, last, _ in encoded)
        lasts = np.zeros((len(encoded), longest), dtype=np.int64)
        firsts = np.zeros_like(lasts)
        for row, (coded, last, first) in enumerate(encoded):
            codes[row, : len(coded)] = coded
            lasts[row, : len(last)] = last
            firsts[row, : len(first)] = first
        packing = pack(lengths)
        embedded = self.weights[f"{prefix}.embedding.weight"][codes[packing.rows, packing.steps]]
        states, _ = packed_lstm(self.char_lm_layers, embedded, packing, threads)  # (M, 2H')
        where = np.zeros(codes.shape, dtype=np.int64)  # each (row, code position)'s packed index
        where[packing.rows, packing.steps] = np.arange(len(packing.rows))
        return states, where, lasts, firsts
