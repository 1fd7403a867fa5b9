"""The pieces an ONNX graph of a tagger is built from: a graph under construction
(:class:`Graph`), torch's bidirectional LSTM as ONNX's, and the graphs of the features the
export takes (characters, casing, document groups). :mod:`crftag.modelfiles.onnx_export`
assembles them; each feature's module (:mod:`crftag.features`) calls its own.

Shapes: B sentences, T words, C characters a word, N = B * T positions.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = [
    "INT32",
    "INT64",
    "OPSET",
    "Graph",
    "bilstm",
    "casing_embeddings",
    "char_encodings",
    "group_means",
    "last_dims",
    "per_position",
    "word_characters",
]

INT32, INT64 = 6, 7  # onnx.TensorProto's element types, for Cast
OPSET = 17  # ScatterND's reduction (16), LSTM's layout (14); ONNX Runtime 1.14 on runs it


class Graph:
    """Nodes and constants of a graph under construction, each output named once; the
    model's metadata entries its pieces add (``properties``), and the names of the matrix
    products ``export --int8`` quantises (``quantizable``)."""

    def __init__(self) -> None:
        self.nodes, self.constants, self.count = [], [], 0
        self.properties: dict[str, str] = {}
        self.quantizable: list[str] = []

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


def lstm_weights(graph: Graph, weights: Mapping[str, np.ndarray], prefix: str, layer: int):
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


def bilstm(graph: Graph, inputs: str, lengths: str, weights, prefix: str, layer: int, size: int):
    """inputs (S, N, D), lengths (N,) int32 -> (all states (S, 2, N, H), finals (2, N, H))."""
    w, r, b = lstm_weights(graph, weights, prefix, layer)
    return graph.op(
        "LSTM", inputs, w, r, b, lengths, outputs=2, direction="bidirectional", hidden_size=size
    )


def word_characters(graph: Graph, chars: str) -> tuple[str, str]:
    """chars (B, T, C) -> (flat (N, C) with N = B * T, characters of each word (N,))."""
    width = last_dims(graph, chars, 2)
    flat = graph.op("Reshape", chars, graph.op("Concat", graph.const([-1]), width, axis=0))
    real = graph.op("Cast", graph.op("Not", graph.op("Equal", flat, graph.const(0))), to=INT64)
    return flat, graph.op("ReduceSum", real, graph.const([1]), keepdims=0)


def char_encodings(graph: Graph, weights, kind: str, flat: str, counts: str) -> str:
    """(N, F) encodings of the words' characters flat (N, C): the final states of a BiLSTM, or a
    convolution max-pooled; 0 for a padding word, as the NumPy runtime gives them."""
    embedded = graph.op(
        "Gather", graph.const(weights["char_encoder.embedding.weight"], np.float32), flat
    )
    is_word = graph.op("Unsqueeze", graph.op("Greater", counts, graph.const(0)), graph.const([1]))
    if kind == "lstm":
        steps = graph.op("Transpose", embedded, perm=[1, 0, 2])  # (C, N, E)
        # A padding word is run over one step and zeroed below: sequence_lens must be positive.
        lengths = graph.op("Cast", graph.op("Max", counts, graph.const(1)), to=INT32)
        size = weights["char_encoder.lstm.weight_hh_l0"].shape[1]
        _, finals = bilstm(graph, steps, lengths, weights, "char_encoder.lstm.", 0, size)
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
        columns = last_dims(graph, flat, 1)  # C: an even kernel gives C + 1 positions
        convolved = graph.op("Slice", convolved, graph.const([0]), columns, graph.const([2]))
        padding = graph.op("Unsqueeze", graph.op("Equal", flat, graph.const(0)), graph.const([1]))
        minus_inf = graph.const(-np.inf, np.float32)
        masked = graph.op("Where", padding, minus_inf, convolved)  # padding never wins the max
        encoded = graph.op("ReduceMax", masked, axes=[2], keepdims=0)
    return graph.op("Where", is_word, encoded, graph.const(0.0, np.float32))


def casing_embeddings(graph: Graph, weights, char_kinds: np.ndarray, flat: str, counts: str):
    """(N, D) casing embeddings of the words' characters flat (N, C), ``char_kinds`` the kind
    of each character index: the classes of :func:`crftag.features.casing.casing_classes`,
    later rules winning."""
    kinds = graph.op("Gather", graph.const(char_kinds), flat)  # (N, C)

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


def last_dims(graph: Graph, tensor: str, first: int) -> str:
    """The sizes of ``tensor``'s dimensions from ``first`` on, as a 1-D int64 shape."""
    return graph.op("Slice", graph.op("Shape", tensor), graph.const([first]), graph.const([99]))


def group_means(graph: Graph, scores: str, groups: str) -> str:
    """scores (B, T, K'), groups (B, T) -> (B, T, K'): each position the mean of the scores of
    the positions with its id (padding's positions, an id of their own, hold zeros)."""
    width = last_dims(graph, scores, 2)
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


def per_position(graph: Graph, encoded: str) -> str:
    """(N, D) with N = B * T -> (B, T, D), B and T those of the ``words`` input."""
    shape = graph.op("Concat", graph.op("Shape", "words"), graph.const([-1]), axis=0)
    return graph.op("Reshape", encoded, shape)
