"""The arrays an exported BiLSTM-CRF must hold, checked before anything is tagged with it: the
names, shapes and dtypes of the state dict of the network its metadata describes (the config's
``model`` section and the sizes of its vocabularies), as :class:`crftag.nn.taggers.BiLSTMCRF`
names them, and every floating-point value finite. NumPy only: the runtime runs without torch.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from crftag.data.lexicons import FEATURE_SIZE, POSITIONS
from crftag.errors import CrftagError

__all__ = ["MAX_TAG_SCORE", "check_arrays", "check_score_range", "expected_arrays"]

CASING_CLASSES = 8  # crftag.nn.encoders.CasingEmbedding.NUM_CLASSES
# The largest tag score (emission or transition) a model may give one token. float32 rounds a
# score of 10,000 by 0.001 already, and larger ones by more: the CRF's probabilities would be
# those of the rounding, not the model's. Trained models stay far below (the bundled en-ner's
# emissions are bounded by 177, its transitions by 2.8).
MAX_TAG_SCORE = 10_000.0
Shapes = dict[str, tuple[tuple[int, ...], str]]  # name -> (shape, "float" or "bool")


def _lstm(prefix: str, input_size: int, hidden: int, layers: int) -> Shapes:
    """A bidirectional ``nn.LSTM``'s weights, layer by layer, the reverse direction's after."""
    shapes: Shapes = {}
    for layer in range(layers):
        width = input_size if layer == 0 else 2 * hidden
        for suffix in ("", "_reverse"):
            shapes[f"{prefix}weight_ih_l{layer}{suffix}"] = ((4 * hidden, width), "float")
            shapes[f"{prefix}weight_hh_l{layer}{suffix}"] = ((4 * hidden, hidden), "float")
            shapes[f"{prefix}bias_ih_l{layer}{suffix}"] = ((4 * hidden,), "float")
            shapes[f"{prefix}bias_hh_l{layer}{suffix}"] = ((4 * hidden,), "float")
    return shapes


def expected_arrays(
    model: Mapping,
    words: int,
    chars: int,
    tags: int,
    char_lm: Mapping | None = None,
) -> Shapes:
    """name -> (shape, kind) of every array of the BiLSTM-CRF that ``model`` (the config's
    model section, checked) describes with vocabularies of ``words``, ``chars`` and ``tags``
    symbols, and for a model with ``model.char_lm``, ``char_lm`` its vocabulary's state
    (:meth:`crftag.data.char_codes.CharCodes.to_state`)."""
    shapes: Shapes = {"word_embedding.weight": ((words, model["word_dim"]), "float")}
    char_dim, char_size = model["char_dim"], model["char_size"]
    features = model["word_dim"] + model["casing_dim"]
    if model["char_encoder"] == "cnn":
        shapes["char_encoder.embedding.weight"] = ((chars, char_dim), "float")
        conv = (char_size, char_dim, model["char_kernel"])
        shapes["char_encoder.conv.weight"] = (conv, "float")
        shapes["char_encoder.conv.bias"] = ((char_size,), "float")
        features += char_size
    elif model["char_encoder"] == "lstm":
        shapes["char_encoder.embedding.weight"] = ((chars, char_dim), "float")
        shapes.update(_lstm("char_encoder.lstm.", char_dim, char_size, 1))
        features += 2 * char_size
    if model["casing_dim"]:
        shapes["casing.embedding.weight"] = ((CASING_CLASSES, model["casing_dim"]), "float")
    types = len(model.get("lexicons") or ())
    if types:
        shapes["lexicon.embedding.weight"] = ((types * len(POSITIONS), FEATURE_SIZE), "float")
        features += types * FEATURE_SIZE
    if model.get("char_lm"):
        features += _char_lm_arrays(shapes, _pretrained_sizes(char_lm, "char_lm"))
    hidden = model["hidden_size"]
    shapes.update(_lstm("encoder.lstm.", features, hidden, model["num_layers"]))
    projected = 2 * hidden * (2 if model["document_context"] else 1)
    if model["hidden_layer"]:
        shapes["hidden.0.weight"] = ((model["hidden_layer"], projected), "float")
        shapes["hidden.0.bias"] = ((model["hidden_layer"],), "float")
        projected = model["hidden_layer"]
    shapes["projection.weight"] = ((tags, projected), "float")
    shapes["projection.bias"] = ((tags,), "float")
    shapes["crf.transitions"] = ((tags, tags), "float")
    shapes["crf.start_transitions"] = ((tags,), "float")
    shapes["crf.end_transitions"] = ((tags,), "float")
    shapes["crf.allowed"] = ((tags, tags), "bool")
    shapes["crf.allowed_start"] = ((tags,), "bool")
    shapes["crf.allowed_end"] = ((tags,), "bool")
    return shapes


def _pretrained_sizes(state: Mapping | None, key: str) -> tuple[int, int, int]:
    """(symbols, char_dim, hidden_size) of the vocabulary state of the pretrained models of
    ``model.{key}``."""
    if not isinstance(state, Mapping) or not isinstance(state.get("symbols"), list):
        raise ValueError(f"model.{key}: the vocabularies hold no {key} symbols")
    sizes = [state.get("char_dim"), state.get("hidden_size")]
    if not all(isinstance(size, int) and 1 <= size <= 1 << 14 for size in sizes):
        raise ValueError(f"vocabularies.{key}: char_dim and hidden_size must be 1 to 16384")
    return len(state["symbols"]), sizes[0], sizes[1]


def _char_lm_arrays(shapes: Shapes, sizes: tuple[int, int, int]) -> int:
    """Add the arrays of :class:`crftag.nn.char_lm.CharLanguageModels` to ``shapes``; return
    the width of the word features they give."""
    symbols, char_dim, hidden = sizes
    shapes["char_lm.embedding.weight"] = ((symbols, char_dim), "float")
    shapes.update(_lstm("char_lm.encoder.lstm.", char_dim, hidden, 1))
    for direction in ("forward", "backward"):
        shapes[f"char_lm.{direction}_softmax.weight"] = ((symbols, hidden), "float")
        shapes[f"char_lm.{direction}_softmax.bias"] = ((symbols,), "float")
    return 2 * hidden


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
