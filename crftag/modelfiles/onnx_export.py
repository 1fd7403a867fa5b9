"""A BiLSTM-CRF as one ONNX graph, for ONNX Runtime and the languages it serves.

The graph computes the emission scores (:meth:`crftag.nn.taggers.BiLSTMCRF.emissions` in
evaluation mode) with dynamic batch, sentence and word lengths, and returns the CRF's potentials
beside them; decoding (Viterbi, probabilities) stays outside, in the caller (docs/runtime.md).

Inputs:  ``words`` (B, T), ``chars`` (B, T, C), ``lengths`` (B,) int64, and for a model with
document context ``groups`` (B, T) int64: the indices :func:`crftag.data.indices.index_arrays`
and :func:`crftag.data.indices.group_ids` build (0 is padding).
Outputs: ``emissions`` (B, T, K) float32 (positions past a sentence's length hold no meaning),
``transitions`` (K, K) indexed [from, to], ``start_transitions`` (K,), ``end_transitions`` (K,)
float32, -inf where the CRF forbids a move. The model's description (config, vocabularies, tag
schemes) is the metadata entry ``crftag``, as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np

from crftag.data.atomic import atomic_output
from crftag.errors import CrftagError
from crftag.runtime.network import casing_kinds

__all__ = ["METADATA_KEY", "OPSET", "onnx_model", "write_onnx"]

METADATA_KEY = "crftag"
OPSET = 17  # ScatterND's reduction (16), LSTM's layout (14); ONNX Runtime 1.14 on runs it
INT32, INT64 = 6, 7  # onnx.TensorProto's element types, for Cast


class _Graph:
    """Nodes and constants of a graph under construction, each output named once."""

    def __init__(self) -> None:
        self.nodes, self.constants, self.count = [], [], 0

    def const(self, value: np.ndarray | list, dtype=np.int64) -> str:
        from onnx import numpy_helper

        self.count += 1
        name = f"const_{self.count}"
        self.constants.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, kind: str, *inputs: str, outputs: int = 1, name: str | None = None, **attrs):
        """Add one node; its output name (a list of them for ``outputs`` > 1)."""
        from onnx import helper

        names = []
        for _ in range(outputs):
            self.count += 1
            names.append(f"{kind.lower()}_{self.count}")
        if name is not None:
            names[0] = name
        self.nodes.append(helper.make_node(kind, list(inputs), names, **attrs))
        return names if outputs > 1 else names[0]


def _lstm_weights(graph: _Graph, weights: Mapping[str, np.ndarray], prefix: str, layer: int):
    """ONNX LSTM's W (2, 4H, D), R (2, 4H, H), B (2, 8H) from torch's bidirectional layer:
    torch orders the gates input, forget, cell, output; ONNX input, output, forget, cell."""
    kinds = {"W": "weight_ih", "R": "weight_hh"}
    stacked = {}
    for key, kind in kinds.items():
        stacked[key] = [weights[f"{prefix}{kind}_l{layer}{end}"] for end in ("", "_reverse")]
    stacked["B"] = [
        np.concatenate(
            [weights[f"{prefix}bias_ih_l{layer}{end}"], weights[f"{prefix}bias_hh_l{layer}{end}"]]
        )
        for end in ("", "_reverse")
    ]

    def reorder(array: np.ndarray, parts: int) -> np.ndarray:
        blocks = np.split(array, 4 * parts)  # i f g o (twice for B)
        order = [0, 3, 1, 2] if parts == 1 else [0, 3, 1, 2, 4, 7, 5, 6]
        return np.concatenate([blocks[i] for i in order])

    return [
        graph.const(np.stack([reorder(a, 2 if key == "B" else 1) for a in arrays]), np.float32)
        for key, arrays in stacked.items()
    ]


def _bilstm(graph: _Graph, inputs: str, lengths: str, weights, prefix: str, layer: int, size: int):
    """inputs (S, N, D), lengths (N,) int32 -> (all states (S, 2, N, H), finals (2, N, H))."""
    w, r, b = _lstm_weights(graph, weights, prefix, layer)
    return graph.op(
        "LSTM", inputs, w, r, b, lengths, outputs=2, direction="bidirectional", hidden_size=size
    )


def _word_characters(graph: _Graph, chars: str) -> tuple[str, str]:
    """chars (B, T, C) -> (flat (N, C) with N = B * T, characters of each word (N,))."""
    width = _last_dims(graph, chars, 2)
    flat = graph.op("Reshape", chars, graph.op("Concat", graph.const([-1]), width, axis=0))
    real = graph.op("Cast", graph.op("Not", graph.op("Equal", flat, graph.const(0))), to=INT64)
    return flat, graph.op("ReduceSum", real, graph.const([1]), keepdims=0)


def _char_features(graph: _Graph, weights, model: Mapping, flat: str, counts: str) -> str:
    """(N, F) encodings of the words' characters flat (N, C): the final states of a BiLSTM, or a
    convolution max-pooled; 0 for a padding word, as the NumPy runtime gives them."""
    embedded = graph.op(
        "Gather", graph.const(weights["char_encoder.embedding.weight"], np.float32), flat
    )
    is_word = graph.op("Unsqueeze", graph.op("Greater", counts, graph.const(0)), graph.const([1]))
    if model["char_encoder"] == "lstm":
        steps = graph.op("Transpose", embedded, perm=[1, 0, 2])  # (C, N, E)
        # A padding word is run over one step and zeroed below: sequence_lens must be positive.
        lengths = graph.op("Cast", graph.op("Max", counts, graph.const(1)), to=INT32)
        size = weights["char_encoder.lstm.weight_hh_l0"].shape[1]
        _, finals = _bilstm(graph, steps, lengths, weights, "char_encoder.lstm.", 0, size)
        both = graph.op("Transpose", finals, perm=[1, 0, 2])  # (N, 2, H)
        encoded = graph.op("Reshape", both, graph.const([0, -1]))
    else:
        kernel = weights["char_encoder.conv.weight"]  # (F, E, k)
        width = kernel.shape[2]
        channels = graph.op("Transpose", embedded, perm=[0, 2, 1])  # (N, E, C)
        convolved = graph.op(
            "Conv",
            channels,
            graph.const(kernel, np.float32),
            graph.const(weights["char_encoder.conv.bias"], np.float32),
            pads=[width // 2, width // 2],
        )
        columns = _last_dims(graph, flat, 1)  # C: an even kernel gives C + 1 positions
        convolved = graph.op("Slice", convolved, graph.const([0]), columns, graph.const([2]))
        padding = graph.op("Unsqueeze", graph.op("Equal", flat, graph.const(0)), graph.const([1]))
        minus_inf = graph.const(-np.inf, np.float32)
        masked = graph.op("Where", padding, minus_inf, convolved)  # padding never wins the max
        encoded = graph.op("ReduceMax", masked, axes=[2], keepdims=0)
    return graph.op("Where", is_word, encoded, graph.const(0.0, np.float32))


def _casing_features(graph: _Graph, weights, char_symbols: list[str], flat: str, counts: str):
    """(N, D) casing embeddings of the words' characters flat (N, C), the classes of
    :func:`crftag.runtime.network._casing_classes`, later rules winning."""
    kinds = graph.op("Gather", graph.const(casing_kinds(char_symbols)), flat)  # (N, C)

    def count(kind: int) -> str:
        hits = graph.op("Cast", graph.op("Equal", kinds, graph.const(kind)), to=INT64)
        return graph.op("ReduceSum", hits, graph.const([1]), keepdims=0)

    upper, lower, digits = count(1), count(2), count(3)
    first = graph.op(
        "Squeeze",
        graph.op("Slice", kinds, graph.const([0]), graph.const([1]), graph.const([1])),
        graph.const([1]),
    )
    rules = [
        (graph.op("Greater", digits, graph.const(0)), 6),
        (graph.op("Equal", first, graph.const(1)), 5),
        (graph.op("Equal", upper, counts), 4),
        (graph.op("Equal", lower, counts), 3),
        (graph.op("Greater", graph.op("Mul", digits, graph.const(2)), counts), 2),
        (graph.op("Equal", digits, counts), 1),
        (graph.op("Equal", counts, graph.const(0)), 0),
    ]
    classes = graph.op("Add", graph.op("Mul", counts, graph.const(0)), graph.const(7))
    for condition, value in rules:
        classes = graph.op("Where", condition, graph.const(value), classes)
    return graph.op("Gather", graph.const(weights["casing.embedding.weight"], np.float32), classes)


def _last_dims(graph: _Graph, tensor: str, first: int) -> str:
    """The sizes of ``tensor``'s dimensions from ``first`` on, as a 1-D int64 shape."""
    return graph.op("Slice", graph.op("Shape", tensor), graph.const([first]), graph.const([99]))


def _group_means(graph: _Graph, scores: str, groups: str) -> str:
    """scores (B, T, K'), groups (B, T) -> (B, T, K'): each position the mean of the scores of
    the positions with its id (padding's positions, an id of their own, hold zeros)."""
    width = _last_dims(graph, scores, 2)
    flat = graph.op("Reshape", scores, graph.op("Concat", graph.const([-1]), width, axis=0))
    ids = graph.op("Reshape", groups, graph.const([-1, 1]))  # (N, 1)
    count = graph.op("Add", graph.op("ReduceMax", groups, keepdims=0), graph.const(1))
    rows = graph.op("Unsqueeze", count, graph.const([0]))

    def summed(updates: str, columns: str) -> str:
        shape = graph.op("Concat", rows, columns, axis=0)
        zeros = graph.op("Expand", graph.const(0.0, np.float32), shape)
        return graph.op("ScatterND", zeros, ids, updates, reduction="add")

    sums = summed(flat, width)  # (G, K')
    ones = graph.op("Expand", graph.const(1.0, np.float32), graph.op("Shape", ids))
    sizes = summed(ones, graph.const([1]))  # (G, 1)
    means = graph.op("Div", sums, graph.op("Max", sizes, graph.const(1.0, np.float32)))
    return graph.op("Gather", means, groups)  # (B, T, K')


def _head(graph: _Graph, weights, states: str, width: int, groups: str | None) -> str:
    """states (B, T, D) -> emission scores (B, T, K): the optional tanh layer, then the
    projection, over the states and, with document context, their group means beside them;
    the means are taken after the linear map, as the NumPy runtime takes them."""
    first = "hidden.0" if "hidden.0.weight" in weights else "projection"
    weight = weights[f"{first}.weight"]  # (K', D) or (K', 2D)
    scores = graph.op("MatMul", states, graph.const(weight[:, :width].T, np.float32))
    scores = graph.op("Add", scores, graph.const(weights[f"{first}.bias"], np.float32))
    if groups is not None:
        mapped = graph.op("MatMul", states, graph.const(weight[:, width:].T, np.float32))
        scores = graph.op("Add", scores, _group_means(graph, mapped, groups))
    if first == "hidden.0":
        projection = graph.const(weights["projection.weight"].T, np.float32)
        scores = graph.op("MatMul", graph.op("Tanh", scores), projection)
        scores = graph.op("Add", scores, graph.const(weights["projection.bias"], np.float32))
    return graph.op("Identity", scores, name="emissions")


def _features(graph: _Graph, weights, model: Mapping, char_symbols: list[str]) -> str:
    """(B, T, D): each position's word embedding, character encoding and casing embedding."""
    features = [
        graph.op("Gather", graph.const(weights["word_embedding.weight"], np.float32), "words")
    ]
    flat, counts = _word_characters(graph, "chars")
    per_position = graph.op("Concat", graph.op("Shape", "words"), graph.const([-1]), axis=0)
    if model["char_encoder"] in ("lstm", "cnn"):
        encoded = _char_features(graph, weights, model, flat, counts)
        features.append(graph.op("Reshape", encoded, per_position))
    if model.get("casing_dim"):
        casing = _casing_features(graph, weights, char_symbols, flat, counts)
        features.append(graph.op("Reshape", casing, per_position))
    return graph.op("Concat", *features, axis=-1) if len(features) > 1 else features[0]


def _potentials(graph: _Graph, weights) -> list[str]:
    """The CRF's transitions, start and end scores as outputs, -inf where forbidden."""
    names = []
    for name, allowed in (
        ("transitions", "allowed"),
        ("start_transitions", "allowed_start"),
        ("end_transitions", "allowed_end"),
    ):
        scores = np.where(weights[f"crf.{allowed}"], weights[f"crf.{name}"], -np.inf)
        names.append(graph.op("Identity", graph.const(scores, np.float32), name=name))
    return names


def onnx_model(metadata: Mapping, weights: Mapping[str, np.ndarray]):
    """The ONNX model (``onnx.ModelProto``) of an exported BiLSTM-CRF: ``metadata`` as
    :func:`crftag.runtime.archive.read_archive` gives it, ``weights`` float32 state-dict
    arrays."""
    from onnx import TensorProto, helper

    model = metadata["config"]["model"]
    if model["encoder"] != "bilstm":
        raise CrftagError(f"model.encoder {model['encoder']}: ONNX export takes a BiLSTM-CRF")
    if model.get("lexicons"):
        # The dictionaries' matches are computed outside the network, which the graph does not
        # hold yet: the NumPy export carries them.
        raise CrftagError(
            "model.lexicons: ONNX export takes no dictionaries yet; use --format numpy"
        )
    if model.get("char_lm"):
        raise CrftagError(
            "model.char_lm: ONNX export takes no character language models yet; use --format numpy"
        )
    graph = _Graph()
    context = bool(model.get("document_context"))
    char_symbols = metadata["vocabularies"]["chars"]["symbols"]
    steps = graph.op("Transpose", _features(graph, weights, model, char_symbols), perm=[1, 0, 2])
    lengths = graph.op("Cast", "lengths", to=INT32)  # as LSTM's sequence_lens
    size = weights["encoder.lstm.weight_hh_l0"].shape[1]
    for layer in range(int(model["num_layers"])):
        states, _ = _bilstm(graph, steps, lengths, weights, "encoder.lstm.", layer, size)
        steps = graph.op("Transpose", states, perm=[0, 2, 1, 3])  # (T, B, 2, H)
        steps = graph.op("Reshape", steps, graph.const([0, 0, -1]))  # (T, B, 2H)
    states = graph.op("Transpose", steps, perm=[1, 0, 2])  # (B, T, 2H)
    emissions = _head(graph, weights, states, 2 * size, "groups" if context else None)
    outputs = [emissions, *_potentials(graph, weights)]
    int64, float32 = TensorProto.INT64, TensorProto.FLOAT
    inputs = [
        helper.make_tensor_value_info("words", int64, ["batch", "length"]),
        helper.make_tensor_value_info("chars", int64, ["batch", "length", "characters"]),
        helper.make_tensor_value_info("lengths", int64, ["batch"]),
    ]
    if context:
        inputs.append(helper.make_tensor_value_info("groups", int64, ["batch", "length"]))
    tags = len(weights["crf.start_transitions"])
    shapes = [["batch", "length", tags], [tags, tags], [tags], [tags]]
    declared = [
        helper.make_tensor_value_info(name, float32, shape)
        for name, shape in zip(outputs, shapes, strict=True)
    ]
    body = helper.make_graph(graph.nodes, "crftag", inputs, declared, graph.constants)
    proto = helper.make_model(
        body, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="crftag"
    )
    helper.set_model_props(proto, {METADATA_KEY: json.dumps(dict(metadata))})
    return proto


def write_onnx(path: str, metadata: Mapping, weights: Mapping[str, np.ndarray]) -> None:
    """Write the ONNX model of ``metadata`` and ``weights`` (:func:`onnx_model`) to ``path``,
    checked by ``onnx.checker`` first."""
    try:
        import onnx
    except ImportError:
        raise CrftagError(
            "--format onnx needs the onnx package: pip install 'crftag[onnx]'"
        ) from None
    proto = onnx_model(metadata, weights)
    onnx.checker.check_model(proto, full_check=True)
    with atomic_output(path, binary=True) as stream:
        stream.write(proto.SerializeToString())
