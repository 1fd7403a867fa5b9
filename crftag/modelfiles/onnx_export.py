"""A BiLSTM-CRF as one ONNX graph, for ONNX Runtime and the languages it serves.

The graph computes the emission scores (:meth:`crftag.nn.taggers.BiLSTMCRF.emissions` in
evaluation mode) with dynamic batch, sentence and word lengths, and returns the CRF's potentials
beside them; decoding (Viterbi, probabilities) stays outside, in the caller (docs/runtime.md).

Inputs:  ``lengths`` (B,) int64 and each registered feature's own (:mod:`crftag.features`):
``words`` (B, T), ``chars`` (B, T, C), and for a model with document context ``groups``
(B, T), int64, the arrays the features make (0 is padding). A feature the graph cannot take
(dictionaries, character language models) is refused in one line.
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
from crftag.data.vocab import Vocabularies
from crftag.errors import CrftagError
from crftag.features.base import INPUT, STATES
from crftag.features.registry import active_features, carried_features, vocabularies_from_state
from crftag.modelfiles.onnx_graph import INT32, OPSET, Graph, bilstm

__all__ = ["METADATA_KEY", "OPSET", "onnx_model", "write_onnx"]

METADATA_KEY = "crftag"


def _head(graph: Graph, weights, states: str, width: int, model: Mapping) -> str:
    """states (B, T, D) -> emission scores (B, T, K): the optional tanh layer, then the
    projection, over the states and the columns each ``STATES`` feature puts beside them
    (document context), each feature adding its columns' share of the first layer."""
    first = "hidden.0" if "hidden.0.weight" in weights else "projection"
    weight = weights[f"{first}.weight"]  # (K', D) or (K', 2D)
    scores = graph.op("MatMul", states, graph.const(weight[:, :width].T, np.float32))
    scores = graph.op("Add", scores, graph.const(weights[f"{first}.bias"], np.float32))
    start = width
    for feature in active_features(model, STATES):
        block = weight[:, start : start + feature.width(model, {}) * width]
        scores = graph.op("Add", scores, feature.onnx_states(graph, states, block))
        start += len(block[0])
    if first == "hidden.0":
        projection = graph.const(weights["projection.weight"].T, np.float32)
        scores = graph.op("MatMul", graph.op("Tanh", scores), projection)
        scores = graph.op("Add", scores, graph.const(weights["projection.bias"], np.float32))
    return graph.op("Identity", scores, name="emissions")


def _features(graph: Graph, weights, model: Mapping, vocabularies: Vocabularies) -> str:
    """(B, T, D): each ``INPUT`` feature's vectors side by side, in the registry's order."""
    features = [
        feature.onnx_forward(graph, weights, model, vocabularies)
        for feature in active_features(model, INPUT)
    ]
    return graph.op("Concat", *features, axis=-1) if len(features) > 1 else features[0]


def _word_bilstm(graph: Graph, features: str, weights, model: Mapping) -> tuple[str, int]:
    """features (B, T, D) -> (the word BiLSTM's states (B, T, 2H), 2H)."""
    steps = graph.op("Transpose", features, perm=[1, 0, 2])  # (T, B, D)
    lengths = graph.op("Cast", "lengths", to=INT32)  # as LSTM's sequence_lens
    size = weights["encoder.lstm.weight_hh_l0"].shape[1]
    for layer in range(int(model["num_layers"])):
        states, _ = bilstm(graph, steps, lengths, weights, "encoder.lstm.", layer, size)
        steps = graph.op("Transpose", states, perm=[0, 2, 1, 3])  # (T, B, 2, H)
        steps = graph.op("Reshape", steps, graph.const([0, 0, -1]))  # (T, B, 2H)
    return graph.op("Transpose", steps, perm=[1, 0, 2]), 2 * size  # (B, T, 2H)


def _inputs(model: Mapping) -> list:
    """The graph's inputs, each once: those every model has (the inputs of the features every
    batch carries, then ``lengths``), then those of the model's other features."""
    from onnx import TensorProto, helper

    carried = carried_features(model)
    declared = {}
    for feature in [f for f in carried if f.in_every_batch]:
        declared.update(feature.onnx_inputs())
    declared["lengths"] = ["batch"]
    for feature in [f for f in carried if not f.in_every_batch]:
        declared.update(feature.onnx_inputs())
    return [
        helper.make_tensor_value_info(name, TensorProto.INT64, dims)
        for name, dims in declared.items()
    ]


def _potentials(graph: Graph, weights) -> list[str]:
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
    return _built(metadata, weights)[0]


def _built(metadata: Mapping, weights: Mapping[str, np.ndarray]):
    """(the ONNX model of :func:`onnx_model`, the names of its quantizable matrix products)."""
    from onnx import TensorProto, helper

    model = metadata["config"]["model"]
    for feature in active_features(model):
        if feature.onnx_refusal is not None:
            raise CrftagError(f"{feature.key}: ONNX export {feature.onnx_refusal}")
    graph = Graph()
    vocabularies = vocabularies_from_state(metadata["vocabularies"])
    features = _features(graph, weights, model, vocabularies)
    if int(model["hidden_size"]) == 0:  # the tag scores straight from the word features
        inputs = active_features(model, INPUT)
        width = sum(feature.width(model, metadata["vocabularies"]) for feature in inputs)
        emissions = _head(graph, weights, features, width, model)
    else:
        states, width = _word_bilstm(graph, features, weights, model)
        emissions = _head(graph, weights, states, width, model)
    outputs = [emissions, *_potentials(graph, weights)]
    float32 = TensorProto.FLOAT
    inputs = _inputs(model)
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
    helper.set_model_props(proto, {METADATA_KEY: json.dumps(dict(metadata)), **graph.properties})
    return proto, graph.quantizable


def write_onnx(
    path: str, metadata: Mapping, weights: Mapping[str, np.ndarray], *, int8: bool = False
) -> None:
    """Write the ONNX model of ``metadata`` and ``weights`` (:func:`onnx_model`) to ``path``,
    checked by ``onnx.checker`` first. ``int8``: its features' matrix products (a pretrained
    encoder's) quantised to int8 by ONNX Runtime's dynamic quantisation."""
    try:
        import onnx
    except ImportError:
        raise CrftagError(
            "--format onnx needs the onnx package: pip install 'crftag[onnx]'"
        ) from None
    proto, quantizable = _built(metadata, weights)
    if int8 and not quantizable:
        raise CrftagError(
            "--int8 with --format onnx quantises a pretrained encoder's matrix products, and "
            "this model has none; use --format numpy --int8"
        )
    onnx.checker.check_model(proto, full_check=True)
    with atomic_output(path, binary=True) as stream:
        stream.write(_quantized(proto, quantizable) if int8 else proto.SerializeToString())


def _quantized(proto, nodes: list[str]) -> bytes:
    """``proto`` with the matrix products ``nodes`` quantised to int8 weights (one scale per
    output column) and dynamically quantised inputs: ``onnxruntime.quantization``'s
    ``quantize_dynamic``, which reads and writes files."""
    import logging
    import os
    import tempfile

    import onnx

    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        raise CrftagError("--int8 needs ONNX Runtime: pip install 'crftag[onnx]'") from None
    with tempfile.TemporaryDirectory() as folder:
        source, target = os.path.join(folder, "float.onnx"), os.path.join(folder, "int8.onnx")
        onnx.save(proto, source)
        logging.disable(logging.WARNING)  # its advice to pre-process the graph, on stderr
        try:
            quantize_dynamic(
                source,
                target,
                op_types_to_quantize=["MatMul"],
                nodes_to_quantize=nodes,
                per_channel=True,
                weight_type=QuantType.QInt8,
            )
        finally:
            logging.disable(logging.NOTSET)
        quantized = onnx.load(target)
    onnx.helper.set_model_props(quantized, {p.key: p.value for p in proto.metadata_props})
    return quantized.SerializeToString()
