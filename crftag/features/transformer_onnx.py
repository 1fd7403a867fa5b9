"""The transformer feature's ONNX part (:mod:`crftag.features.transformer`): the encoder's graph
exported from torch into the tagger's graph, and the input encoding that feeds it at run time.

In the graph: ``subword_ids`` and ``subword_mask`` (W, L) go through the encoder as torch
exported it (dynamic windows and lengths; eager attention, the scalar mix of its last N layers
applied to each subword), giving states (W, L, D); each word gathers its subwords' states by
``subword_rows`` (B, T, P) from the states flattened behind a zero row, and pools them (the first,
or the mean of the P non-zero rows). The windowing settings, the unknown token and the encoder's
vocabulary size are the graph's metadata entry :data:`SETTINGS_KEY`, as JSON; the tokenizer's
``tokenizer.json`` is in the model's vocabularies, as in a checkpoint.

Exporting needs torch and transformers; tagging needs neither, only ``tokenizers``
(:mod:`crftag.runtime.subword_encoding`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np

from crftag.data.subwords import EncoderFiles
from crftag.errors import CrftagError

__all__ = ["SETTINGS_KEY", "encoder_graph", "subword_encoding"]

SETTINGS_KEY = "crftag.transformer"
_PREFIX = "transformer/"  # the names of the encoder's nodes and weights in the graph


def _module(model: Mapping, files: EncoderFiles, weights: Mapping[str, np.ndarray]):
    """The trained :class:`crftag.nn.transformer.TransformerWords`, in evaluation mode, with
    eager attention (the exporter traces it; the other kernels give the same states)."""
    import torch

    from crftag.nn.transformer import TransformerWords

    module = TransformerWords(
        files,
        layers=model["transformer_layers"],
        pooling=model["transformer_pooling"],
        max_length=model["transformer_max_length"],
    )
    state = {
        name[len("transformer.") :]: torch.from_numpy(np.array(array))
        for name, array in weights.items()
        if name.startswith("transformer.")
    }
    module.load_state_dict(state)
    module.encoder.config._attn_implementation = "eager"
    return module.eval()


def _traced(module):
    """The encoder, its last layers mixed, as an ONNX model: ids, mask (W, L) -> (W, L, D)."""
    import io
    import warnings

    import onnx
    import torch

    from crftag.modelfiles.onnx_graph import OPSET

    class MixedStates(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.words = module

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            words = self.words
            output = words.encoder(input_ids=ids, attention_mask=mask, output_hidden_states=True)
            layers = torch.stack(output.hidden_states[-words.layers :], dim=2)  # (W, L, N, D)
            return layers[:, :, 0] if words.mix is None else words.mix(layers)

    example = torch.tensor([[*module.frame[0], 5, 6, 7, *module.frame[1]]] * 2)
    dynamic = {0: "windows", 1: "window_length"}
    stream = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on Python values it fixes
        torch.onnx.export(
            MixedStates(),
            (example, torch.ones_like(example)),
            stream,
            input_names=["ids", "mask"],
            output_names=["states"],
            dynamic_axes={"ids": dynamic, "mask": dynamic, "states": dynamic},
            opset_version=OPSET,
            dynamo=False,
        )
    return onnx.load_from_string(stream.getvalue())


def encoder_graph(graph, weights: Mapping[str, np.ndarray], model: Mapping, files) -> str:
    """Add the encoder and the pooling to ``graph``; the name of its (B, T, D) word vectors.
    The encoder's matrix products are marked quantizable (``export --int8``)."""
    import onnx

    from crftag.modelfiles.onnx_graph import INT64

    if files is None:
        raise CrftagError("model.transformer: the model file holds no encoder files")
    module = _module(model, files, weights)
    encoder = onnx.compose.add_prefix(_traced(module), _PREFIX).graph
    graph.op("Identity", "subword_ids", name=f"{_PREFIX}ids")
    graph.op("Identity", "subword_mask", name=f"{_PREFIX}mask")
    graph.nodes.extend(encoder.node)
    graph.constants.extend(encoder.initializer)
    graph.quantizable.extend(node.name for node in encoder.node if node.op_type == "MatMul")
    size = module.output_size
    flat = graph.op("Reshape", f"{_PREFIX}states", graph.const([-1, size]))  # (W * L, D)
    behind_zero = graph.op("Concat", graph.const(np.zeros((1, size)), np.float32), flat, axis=0)
    gathered = graph.op("Gather", behind_zero, "subword_rows")  # (B, T, P, D)
    if module.pooling == "first":
        words = graph.op("Squeeze", gathered, graph.const([2]))
    else:
        real = graph.op("Cast", graph.op("Greater", "subword_rows", graph.const(0)), to=INT64)
        counts = graph.op("ReduceSum", real, graph.const([2]), keepdims=1)  # (B, T, 1)
        counts = graph.op("Cast", graph.op("Max", counts, graph.const(1)), to=1)  # float32
        sums = graph.op("ReduceSum", gathered, graph.const([2]), keepdims=0)  # (B, T, D)
        words = graph.op("Div", sums, counts)
    graph.properties[SETTINGS_KEY] = json.dumps(
        {
            "width": module.width,
            "frame": [list(module.frame[0]), list(module.frame[1])],
            "pad_id": module.tokenizer.pad_token_id or 0,
            "unk_token": module.tokenizer.unk_token,
            "pooling": module.pooling,
            "vocabulary": int(module.encoder.get_input_embeddings().weight.shape[0]),
        }
    )
    return words


def subword_encoding(files: EncoderFiles | None, properties: Mapping[str, str], source: str):
    """The :class:`crftag.runtime.subword_encoding.SubwordEncoding` of an exported encoder:
    its tokenizer from ``files``, its settings from the graph's metadata ``properties``; a
    missing or altered one is a one-line error naming ``source``."""
    from crftag.data.subwords import special_frame
    from crftag.runtime.subword_encoding import BareTokenizer, SubwordEncoding

    text = (files.tokenizer if files is not None else {}).get("tokenizer.json")
    if not isinstance(text, str):
        raise CrftagError(f"{source}: the encoder's tokenizer.json is missing")
    settings = _settings(properties.get(SETTINGS_KEY), source)
    try:
        tokenizer = BareTokenizer(text, settings.unk_token)
        frame = special_frame(tokenizer)
    except CrftagError:
        raise
    except Exception as error:  # the tokenizers library's own exception types
        reason = str(error).splitlines()[0][:160] if str(error) else type(error).__name__
        raise CrftagError(
            f"{source}: the encoder's tokenizer.json is unusable ({reason})"
        ) from None
    if tuple(map(tuple, frame)) != settings.frame:
        raise CrftagError(
            f"{source}: the tokenizer frames a window with {frame}, the encoder was exported "
            f"with {settings.frame}: the file was altered"
        )
    return SubwordEncoding(tokenizer, settings, source)


def _settings(text: str | None, source: str):
    """The encoder's settings from the graph's metadata entry, checked."""
    from crftag.runtime.subword_encoding import EncoderSettings

    where = f"{source}: metadata {SETTINGS_KEY}"
    if text is None:
        raise CrftagError(f"{where} is missing: not an export of an encoder model")
    try:
        found = json.loads(text)
        frame = tuple(tuple(int(i) for i in part) for part in found["frame"])
        settings = EncoderSettings(
            width=found["width"],
            frame=(frame[0], frame[1]),
            pad_id=found["pad_id"],
            unk_token=found["unk_token"],
            pooling=found["pooling"],
            vocabulary=found["vocabulary"],
        )
    except (ValueError, TypeError, KeyError, IndexError):
        raise CrftagError(f"{where}: not the settings crftag writes") from None
    numbers = (settings.width, settings.pad_id, settings.vocabulary)
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        raise CrftagError(f"{where}: width, pad_id and vocabulary must be whole numbers")
    if settings.width < 2 or settings.pooling not in ("first", "mean"):
        raise CrftagError(f"{where}: a window of {settings.width}, pooling {settings.pooling!r}")
    if not isinstance(settings.unk_token, str) or not settings.unk_token:
        raise CrftagError(f"{where}: no unknown token")
    return settings
