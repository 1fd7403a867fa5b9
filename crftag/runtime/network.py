"""The BiLSTM-CRF's network in NumPy: emission scores from a trained model's weights, computed as
:meth:`crftag.nn.taggers.BiLSTMCRF.emissions` computes them in evaluation mode, without torch.

Weights are the model's state dict as float32 arrays, under the same names. Each registered
feature the model has gives its vectors of the real tokens (:meth:`Feature.numpy_forward`,
:mod:`crftag.features`); the BiLSTM runs over packed rows (crftag/runtime/recurrent.py); the
``STATES`` features add their columns' share of the tag projection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from crftag.data.vocab import Vocabularies
from crftag.features.base import INPUT, STATES
from crftag.features.registry import active_features
from crftag.runtime.recurrent import lstm, network_layers, pack, packed_lstm

__all__ = ["Network", "emissions", "lstm"]


def _head(
    weights: Mapping[str, np.ndarray],
    states: np.ndarray,
    extra: list | None = None,
) -> np.ndarray:
    """states (N, D) -> tag scores (N, K): the optional tanh layer, then the projection, over
    the states and the columns beside them: ``extra`` (feature, inputs, packing), each
    ``STATES`` feature adding its columns' share of the first layer; None or [] for none."""
    first = "hidden.0" if "hidden.0.weight" in weights else "projection"
    weight, width = weights[f"{first}.weight"], states.shape[1]  # (K', D) or (K', 2D)
    scores = states @ weight[:, :width].T + weights[f"{first}.bias"]  # (N, K')
    start = width
    for feature, model, inputs, packing in extra or ():
        block = weight[:, start : start + feature.width(model, {}) * width]
        scores += feature.numpy_states(states, block, inputs, packing)
        start += block.shape[1]
    if first == "hidden.0":
        scores = np.tanh(scores) @ weights["projection.weight"].T + weights["projection.bias"]
    return scores


def emissions(
    weights: Mapping[str, np.ndarray],
    model: Mapping[str, object],
    vocabularies: Vocabularies,
    inputs: Mapping[str, Any],
    lengths: np.ndarray,
) -> np.ndarray:
    """Emission scores (B, T, K) of a BiLSTM-CRF: :meth:`Network.emissions` of a network
    built for the one call."""
    return Network(weights, model, vocabularies).emissions(inputs, lengths)


class Network:
    """A BiLSTM-CRF's emission network on arrays, built once and run batch after batch (the
    character encodings of the words it has seen are kept: the chars feature's ``encodings``).

    weights  the state dict as arrays; model  the config's ``model`` section; vocabularies
    the model's (what a feature's forward pass may read, the characters' kinds)."""

    def __init__(
        self, weights: Mapping[str, np.ndarray], model: Mapping[str, Any], vocabularies
    ) -> None:
        self.weights = weights
        self.model = model
        self.encoder_layers = network_layers(weights, "encoder.lstm.")
        self.forwards = {
            feature.name: feature.numpy_forward(weights, model, vocabularies)
            for feature in active_features(model, INPUT)
        }
        self.states_features = active_features(model, STATES)

    def emissions(self, inputs: Mapping[str, Any], lengths: np.ndarray, threads: int = 1):
        """Emission scores (B, T, K) float32 for a batch: ``inputs`` each feature's
        :meth:`~crftag.features.base.Feature.arrays` by name (``words`` (B, T) among them),
        lengths (B,). Only the real positions are computed; past each end, the scores of
        torch's zero states. ``threads``: for the compiled BiLSTM loops (see
        :func:`packed_lstm`)."""
        packing = pack(lengths)
        vectors = [forward(inputs, packing, threads) for forward in self.forwards.values()]
        features = np.concatenate(vectors, axis=1) if len(vectors) > 1 else vectors[0]
        states, _ = packed_lstm(self.encoder_layers, features, packing, threads)
        extra = [(f, self.model, inputs, packing) for f in self.states_features]
        scores = _head(self.weights, states, extra)
        # Past each end torch's states are zeros, and zero states add nothing beside them.
        padding = _head(self.weights, np.zeros((1, states.shape[1]), dtype=np.float32))
        result = np.empty((*inputs["words"].shape, scores.shape[1]), dtype=np.float32)
        result[:] = padding
        result[packing.rows, packing.steps] = scores
        return result
