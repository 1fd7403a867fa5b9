"""Tagging with a model exported by ``crftag export --format onnx``: the network run by ONNX
Runtime, the CRF on arrays as the NumPy tagger runs it (:class:`ArrayTagger`, whose batches,
decoding and records this tagger shares), so only the emission scores come from elsewhere.
Needs ``onnxruntime`` (``pip install 'crftag[onnx]'``), not torch.
"""

from __future__ import annotations

import json
import os

import numpy as np

from crftag.config.sections import Config
from crftag.data.indices import bucketed_batches
from crftag.errors import CrftagError
from crftag.features.registry import carried_features
from crftag.inference.array_tagger import ArrayBatch, ArrayTagger
from crftag.modelfiles.checkpoint_schema import check_payload
from crftag.modelfiles.onnx_export import METADATA_KEY
from crftag.runtime.threads import usable_threads

__all__ = ["OnnxTagger", "inference_options"]


def _inference(path: str):
    """ONNX Runtime's InferenceSession of the file on the CPU; a missing package or a file ONNX
    Runtime cannot load is a one-line error."""
    try:
        import onnxruntime
    except ImportError:
        raise CrftagError(
            f"{path}: an ONNX model needs ONNX Runtime: pip install 'crftag[onnx]'"
        ) from None
    options = inference_options(onnxruntime, usable_threads())
    try:
        return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception as error:  # ONNX Runtime raises its own exception types for bad files
        raise CrftagError(f"{path}: cannot load the ONNX model ({_reason(error)})") from None


def inference_options(onnxruntime, threads: int):
    """ONNX Runtime's SessionOptions as crftag runs a model: quiet, ``threads`` threads that do
    not spin between runs."""
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # its warnings are not the user's business on stderr
    # Between runs the CRF decodes in NumPy: threads spinning for the next run would take its
    # core (measured faster without spinning on eng.testb's batches, see the commit).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.intra_op_num_threads = threads
    return options


def _reason(error: Exception) -> str:
    """The first line of ONNX Runtime's message, cut short."""
    return str(error).strip().splitlines()[0][:160] if str(error).strip() else ""


class OnnxTagger(ArrayTagger):
    """A BiLSTM-CRF exported to ONNX, ready to tag: the same calls and records as the NumPy
    tagger, the emission scores from ONNX Runtime."""

    backend = "onnx"

    def __init__(self, runner, metadata: dict, source: str) -> None:
        check_payload({**metadata, "state_dict": {}}, source)
        self.config = Config.from_dict(metadata["config"], source=source)
        self._init_description(metadata, source)
        self.runner = runner
        self._inputs = {node.name for node in runner.get_inputs()}
        properties = runner.get_modelmeta().custom_metadata_map
        self._encodings = {}  # feature name -> its arrays as graph inputs, where they differ
        for feature in carried_features(self.model_config):
            encoding = feature.onnx_encoding(
                self.model_config, self.vocabularies, properties, source
            )
            if encoding is not None:
                self._encodings[feature.name] = encoding
        # The potentials are weights of the graph: any batch gives them, so one sentence of one
        # token whose every input is 0 (padding, the first group).
        dummy = {
            name: np.zeros((1,) * len(dimensions), dtype=np.int64)
            for feature in carried_features(self.model_config)
            for name, dimensions in feature.onnx_inputs()
        }
        potentials = runner.run(
            ["transitions", "start_transitions", "end_transitions"],
            self._feeds(ArrayBatch(dummy, np.ones(1, dtype=np.int64))),
        )
        self._init_crf(*potentials)

    @classmethod
    def load(cls, path: str, device: str = "cpu") -> OnnxTagger:
        """Read an ONNX model written by ``crftag export --format onnx``; it runs on the CPU."""
        if device.startswith("cuda"):
            raise CrftagError(f"{path}: an ONNX model runs on the CPU here; use --device cpu")
        if not os.path.isfile(path):
            raise CrftagError(f"{path}: no such ONNX model file")
        runner = _inference(path)
        described = runner.get_modelmeta().custom_metadata_map.get(METADATA_KEY)
        if described is None:
            raise CrftagError(f"{path}: not an ONNX model of crftag (no {METADATA_KEY} metadata)")
        return cls(runner, json.loads(described), path)

    def _batch_rows(self, sentences, batch_size: int, documents):
        """Batches of sentences of similar sizes as a feature's graph inputs measure them (an
        encoder's subwords, which a batch's windows are padded to), longest first, where a
        feature sizes them and no document context holds sentences together; else as the
        other taggers batch them."""
        sizes = next((e.sizes for e in self._encodings.values() if hasattr(e, "sizes")), None)
        if sizes is None or self.document_context:
            return super()._batch_rows(sentences, batch_size, documents)
        non_empty = [index for index, tokens in enumerate(sentences) if tokens]
        measured = sizes([sentences[index] for index in non_empty])
        batches = bucketed_batches(measured, batch_size)
        return [([non_empty[row] for row in rows], None) for rows in batches]

    def _feeds(self, batch: ArrayBatch) -> dict[str, np.ndarray]:
        """The graph's inputs: each feature's arrays (encoded where the feature encodes them
        for the graph) it declares, and the lengths."""
        feeds = {}
        for name, value in batch.inputs.items():
            encoding = self._encodings.get(name)
            feeds.update(encoding(value) if encoding is not None else {name: value})
        declared = {name: value for name, value in feeds.items() if name in self._inputs}
        return {**declared, "lengths": batch.lengths}

    def _emissions(self, batch: ArrayBatch) -> np.ndarray:
        """(B, T, K) float32 emission scores from ONNX Runtime; a graph that loads but cannot
        run (an altered file) is a one-line error."""
        feeds = self._feeds(batch)
        try:
            return self.runner.run(["emissions"], feeds)[0]
        except Exception as error:  # ONNX Runtime raises its own exception types
            raise CrftagError(
                f"{self.source}: the ONNX model cannot run ({_reason(error)})"
            ) from None
