"""The arrays an exported BiLSTM-CRF must hold, checked before anything is tagged with it: the
names, shapes and dtypes of the state dict of the network its metadata describes (the config's
``model`` section and its vocabularies; each feature declares its own arrays,
:mod:`crftag.features`), as :class:`crftag.nn.taggers.BiLSTMCRF` names them, and every
floating-point value finite. NumPy only: the runtime runs without torch.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from crftag.errors import CrftagError
from crftag.features.base import INPUT, STATES, Shapes, lstm_shapes
from crftag.features.registry import active_features

__all__ = ["MAX_TAG_SCORE", "check_arrays", "check_score_range", "expected_arrays"]

# The largest tag score (emission or transition) a model may give one token. float32 rounds a
# score of 10,000 by 0.001 already, and larger ones by more: the CRF's probabilities would be
# those of the rounding, not the model's. Trained models stay far below (the bundled en-ner's
# emissions are bounded by 177, its transitions by 2.8).
MAX_TAG_SCORE = 10_000.0


def expected_arrays(model: Mapping, vocabularies: Mapping) -> Shapes:
    """name -> (shape, kind) of every array of the BiLSTM-CRF that ``model`` (the config's
    model section, checked) describes with ``vocabularies`` (their state,
    :meth:`crftag.data.vocab.Vocabularies.to_state`): each ``INPUT`` feature's arrays, the
    BiLSTM over their vectors, the projection over its states and the ``STATES`` features'
    columns, and the CRF. ValueError for vocabularies that cannot size a feature."""
    shapes: Shapes = {}
    features = 0  # the BiLSTM's input width
    for feature in active_features(model, INPUT):
        shapes.update(feature.shapes(model, vocabularies))
        features += feature.width(model, vocabularies)
    hidden = model["hidden_size"]
    shapes.update(lstm_shapes("encoder.lstm.", features, hidden, model["num_layers"]))
    beside = sum(f.width(model, vocabularies) for f in active_features(model, STATES))
    projected = 2 * hidden * (1 + beside)
    if model["hidden_layer"]:
        shapes["hidden.0.weight"] = ((model["hidden_layer"], projected), "float")
        shapes["hidden.0.bias"] = ((model["hidden_layer"],), "float")
        projected = model["hidden_layer"]
    tags = len(vocabularies["tags"]["symbols"])
    shapes["projection.weight"] = ((tags, projected), "float")
    shapes["projection.bias"] = ((tags,), "float")
    shapes["crf.transitions"] = ((tags, tags), "float")
    shapes["crf.start_transitions"] = ((tags,), "float")
    shapes["crf.end_transitions"] = ((tags,), "float")
    shapes["crf.allowed"] = ((tags, tags), "bool")
    shapes["crf.allowed_start"] = ((tags,), "bool")
    shapes["crf.allowed_end"] = ((tags,), "bool")
    return shapes


def check_arrays(
    weights: Mapping[str, np.ndarray], expected: Shapes, source: str
) -> dict[str, np.ndarray]:
    """``weights`` as the network computes with them (floats as float32), once every array is
    the one ``expected`` names, of its shape and kind of dtype, every float finite; anything
    else is a one-line error naming ``source`` and the array."""
    missing = sorted(set(expected) - set(weights))
    extra = sorted(set(weights) - set(expected))
    if missing or extra:
        parts = [f"missing {', '.join(missing[:5])}"] if missing else []
        parts += [f"unexpected {', '.join(name[:60] for name in extra[:5])}"] if extra else []
        raise CrftagError(f"{source}: arrays: {'; '.join(parts)}")
    checked = {}
    for name, (shape, kind) in expected.items():
        array = weights[name]
        if array.shape != shape:
            raise CrftagError(
                f"{source}: array {name}: shape {array.shape}, the config and vocabularies "
                f"make it {shape}"
            )
        if kind == "bool" and array.dtype != np.bool_:
            raise CrftagError(f"{source}: array {name}: dtype {array.dtype}, expected bool")
        if kind == "float":
            if not np.issubdtype(array.dtype, np.floating):
                raise CrftagError(f"{source}: array {name}: dtype {array.dtype}, expected float32")
            array = array.astype(np.float32, copy=False)
            if not np.isfinite(array).all():
                raise CrftagError(f"{source}: array {name}: holds NaN or infinite values")
        checked[name] = array
    return checked


def check_score_range(weights: Mapping[str, np.ndarray], source: str) -> None:
    """The CRF's scores stay within :data:`MAX_TAG_SCORE` per token: each tag's emission is
    bounded by its projection row's absolute sum plus its bias, as the projection's inputs (LSTM
    states, their means, or tanh units) lie in (-1, 1); the transitions by their own size."""
    projection = weights["projection.weight"].astype(np.float64)  # (K, D)
    bias = weights["projection.bias"].astype(np.float64)  # (K,)
    reach = {"projection": float((np.abs(projection).sum(axis=1) + np.abs(bias)).max())}
    for name in ("transitions", "start_transitions", "end_transitions"):
        reach[f"crf.{name}"] = float(np.abs(weights[f"crf.{name}"]).max())
    name, largest = max(reach.items(), key=lambda item: item[1])
    if largest > MAX_TAG_SCORE:
        raise CrftagError(
            f"{source}: {name} gives tag scores up to {largest:.3g} per token; beyond "
            f"{MAX_TAG_SCORE:,.0f} float32 rounding decides the CRF's probabilities, not the "
            "model, so the model is refused (a trained model's stay far below)"
        )
