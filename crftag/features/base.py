"""What an input feature of a tagger declares, in one place.

A feature is one :class:`Feature` subclass in one module of this package, listed once in
:data:`crftag.features.registry.FEATURES`. It says, for itself:

- which models have it (:meth:`Feature.active`, read from the config's ``model`` section);
- how a sentence becomes its values (:meth:`Feature.encode`, :meth:`Feature.collate`), also
  after augmentation changed the text (the same call on the new tokens), and how a batch of
  sentences becomes its arrays at once (:meth:`Feature.arrays`, :meth:`Feature.tensors`);
- its arrays in the checkpoint and the export, with their shapes (:meth:`Feature.shapes`);
- its torch module and the module's forward pass (:meth:`Feature.torch_module`,
  :meth:`Feature.torch_forward`);
- its NumPy forward pass (:meth:`Feature.numpy_forward`);
- its ONNX graph (:meth:`Feature.onnx_inputs`, :meth:`Feature.onnx_forward`), or a one-line
  refusal (:attr:`Feature.onnx_refusal`);
- what it keeps in the vocabularies (:attr:`Feature.vocabulary_key`,
  :meth:`Feature.read_resource`, :meth:`Feature.resource_from_state`, :attr:`Feature.inherited`);
- its part of training: the files and settings checked before a run
  (:meth:`Feature.input_files`, :attr:`Feature.needs_bilstm`, :attr:`Feature.without_bilstm`),
  its pretrained weights (:meth:`Feature.load_pretrained`), the work done once before the first
  epoch (:meth:`Feature.prepare`), and its optimizer groups (:meth:`Feature.parameter_groups`).

The batch (:mod:`crftag.data.batching`), the re-encoding after augmentation, the checkpoint and
archive schemas, the three runtimes (torch, NumPy, ONNX) and training loop over the registered
features; none of them names one.

Stages: an ``INPUT`` feature's vectors, in registry order, are the BiLSTM's input; a ``STATES``
feature adds columns beside the BiLSTM's states before the tag projection (document context);
a ``SPARSE`` feature is read by the feature CRF alone (hashed token features).

Layers: a feature module imports, at its top, only ``data`` (and ``config``-free helpers) and
NumPy, so the NumPy runtime can import it without torch. Each runtime's part imports what it
needs (torch, :mod:`crftag.nn`, :mod:`crftag.runtime`, the ONNX graph builder) inside the
method that builds it; tests/test_architecture.py checks both rules.

Shapes: B sentences, T words (the batch's longest sentence), C characters a word, N real
tokens of a batch packed (:class:`crftag.runtime.recurrent.Packing`), D a feature's width.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from crftag.data.indices import index_arrays
from crftag.data.vocab import Vocabularies

if TYPE_CHECKING:
    import torch

__all__ = ["INPUT", "SPARSE", "STATES", "Feature", "Shapes", "TextBatch", "lstm_shapes"]

INPUT, STATES, SPARSE = "input", "states", "sparse"

# array name -> (shape, kind): kind "float" (any float dtype) or "bool"
Shapes = dict[str, tuple[tuple[int, ...], str]]


def lstm_shapes(prefix: str, input_size: int, hidden: int, layers: int) -> Shapes:
    """The arrays of a bidirectional ``nn.LSTM`` of ``layers`` layers under ``prefix``."""
    shapes: Shapes = {}
    for layer in range(layers):
        width = input_size if layer == 0 else 2 * hidden
        for suffix in ("", "_reverse"):
            shapes[f"{prefix}weight_ih_l{layer}{suffix}"] = ((4 * hidden, width), "float")
            shapes[f"{prefix}weight_hh_l{layer}{suffix}"] = ((4 * hidden, hidden), "float")
            shapes[f"{prefix}bias_ih_l{layer}{suffix}"] = ((4 * hidden,), "float")
            shapes[f"{prefix}bias_hh_l{layer}{suffix}"] = ((4 * hidden,), "float")
    return shapes


@dataclass
class TextBatch:
    """A batch of sentences to encode at once, with what every feature may read of it.

    sentences  token lists, each at least one token
    vocabularies  the model's
    documents  one key per sentence, equal within a document, or None (no document context)
    """

    sentences: Sequence[Sequence[str]]
    vocabularies: Vocabularies
    documents: Sequence[Hashable] | None = None

    @functools.cached_property
    def indexed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(words (B, T), chars (B, T, C), lengths (B,)) of :func:`index_arrays`, made once
        for the features that read them."""
        return index_arrays(self.sentences, self.vocabularies)


class Feature:
    """One input of a tagger. Subclasses set the class attributes and override what their
    stage needs; a method left as it is here raises (a bug, not a user's mistake)."""

    name: str  # the batch's field (``batch.words``)
    module_name: str | None = None  # the torch module's attribute and state-dict prefix
    key: str  # the config key that turns it on, as messages name it ("model.word_dim")
    stage: str = INPUT
    has_values: bool = True  # False: it reads other features' values (casing reads chars)
    per_sentence: bool = True  # False: made for a whole batch (document groups), not encoded
    onnx_refusal: str | None = None  # why the ONNX export cannot take it, if it cannot
    numpy_refusal: str | None = None  # why the NumPy export cannot take it, if it cannot
    in_every_batch: bool = False  # carried whatever the model (words, characters)
    vocabulary_key: str | None = None  # its own entry of the vocabularies' state, if it has one
    needs_bilstm: bool = False  # True: it works on the BiLSTM's inputs or states
    without_bilstm: bool = False  # True: a CRF may read its vectors alone (model.hidden_size 0)
    # False: ``train.init_from`` takes its config key and resource as the new config gives
    # them, not the base model's
    inherited: bool = True

    # -- which models have it ------------------------------------------------------------

    def active(self, model: Mapping[str, Any]) -> bool:
        """Whether a model with this config ``model`` section (a dict) has the feature: by
        default, whether its key (``key``, ``model.NAME``) holds anything but null, 0, false
        or an empty value."""
        return bool(model.get(self.key.split(".", 1)[1]))

    def encodes(self, vocabularies: Vocabularies) -> bool:
        """Whether batches for a model with these vocabularies carry the feature's values
        (what the batch builder knows of a model)."""
        return self.in_every_batch

    # -- encoding -------------------------------------------------------------------------

    def encode(self, text: TextBatch) -> Any:
        """The values of ``text``'s one sentence, as :class:`crftag.data.batching.Encoded`
        keeps them: by default the first row of the batch's tensors."""
        return self.tensors(self.arrays(text))[0]

    def collate(self, values: Sequence[Any], length: int) -> Any:
        """The values of a batch's sentences (``encode``'s), each padded with zeros to
        ``length`` tokens and to the widest in every other dimension: (B, length, ...)."""
        widths = [max(value.size(d) for value in values) for d in range(1, values[0].dim())]
        padded = values[0].new_zeros(len(values), length, *widths)
        for row, value in enumerate(values):
            padded[(row, *(slice(0, size) for size in value.shape))] = value
        return padded

    def arrays(self, text: TextBatch) -> Any:
        """A batch's values for the NumPy and ONNX runtimes: arrays, or None when the batch
        gives the feature nothing (document groups without documents)."""
        raise NotImplementedError

    def tensors(self, arrays: Any) -> Any:
        """``arrays`` as the torch tagger reads them."""
        import torch

        return None if arrays is None else torch.from_numpy(arrays)

    def to(self, value: Any, device: torch.device) -> Any:
        """A batch's value on ``device``."""
        return None if value is None else value.to(device, non_blocking=True)

    # -- its resource in the vocabularies -------------------------------------------------

    def resource(self, vocabularies: Vocabularies) -> Any:
        """What the feature keeps in ``vocabularies`` (under :attr:`vocabulary_key`), or None."""
        return vocabularies.resources.get(self.vocabulary_key) if self.vocabulary_key else None

    def read_resource(self, config: Any) -> Any:
        """The resource a new model with the ``Config`` keeps in its vocabularies, read from
        the files the config names (an object with ``to_state()``), or None."""
        return None

    def resource_from_state(self, state: Any) -> Any:
        """The resource of its entry of a vocabularies state (:meth:`read_resource`'s
        ``to_state()``), for a feature with a :attr:`vocabulary_key`."""
        raise NotImplementedError

    # -- checkpoint and export ------------------------------------------------------------

    def check_vocabularies(self, state: Mapping[str, Any], model: Mapping[str, Any]) -> None:
        """Check :attr:`vocabulary_key`'s entry of a model file's vocabularies state for the
        config ``model`` section: ValueError saying what is wrong (bounded, plain values)."""

    def shapes(self, model: Mapping[str, Any], vocabularies: Mapping[str, Any]) -> Shapes:
        """name -> (shape, kind) of the feature's arrays in a checkpoint's state dict and in
        an export, for the config ``model`` section and the vocabularies' state
        (:meth:`crftag.data.vocab.Vocabularies.to_state`); {} for none."""
        return {}

    def width(self, model: Mapping[str, Any], vocabularies: Mapping[str, Any]) -> int:
        """D: the columns it adds to the BiLSTM's input (``INPUT``) or beside its states, as a
        multiple of the states' width (``STATES``)."""
        return 0

    # -- torch ----------------------------------------------------------------------------

    def torch_module(self, config: Any, vocabularies: Vocabularies) -> torch.nn.Module | None:
        """The module holding its weights (registered on the tagger under
        :attr:`module_name`), built from the ``ModelConfig`` and the vocabularies; None where
        the vocabularies cannot size it yet (the network is then built without the feature)."""
        return None

    def torch_forward(self, module: Any, batch: Any) -> torch.Tensor:
        """``INPUT``: the (B, T, D) vectors of a :class:`crftag.data.batching.Batch`, from
        the feature's module (None for a feature without weights)."""
        raise NotImplementedError

    def torch_states(self, states: torch.Tensor, batch: Any) -> torch.Tensor:
        """``STATES``: the BiLSTM's states (B, T, H) -> the (B, T, D * H) columns that go
        beside them into the tag projection."""
        raise NotImplementedError

    # -- training -------------------------------------------------------------------------

    def input_files(self, config: Any) -> list[tuple[str, str]]:
        """(config key, path) of each file the ``Config`` has it read, checked to be a file
        before a run starts."""
        return []

    def load_pretrained(self, module: Any, config: Any, *, resumed: bool, base: Any) -> None:
        """Put pretrained weights into the feature's ``module`` of a new network (not for a
        ``resumed`` run, whose weights are its own; ``base`` is ``train.init_from``'s model
        or None)."""

    def prepare(self, module: Any, sentences: Sequence[Sequence[str]], *, show_progress: bool):
        """Work done once for the training ``sentences`` before the first epoch."""

    def parameter_groups(self, module: Any, config: Any) -> list[tuple[list, float]]:
        """(parameters, lr_scale) of each of the module's optimizer groups with a learning
        rate of its own; [] for none."""
        return []

    # -- NumPy ----------------------------------------------------------------------------

    def numpy_forward(self, weights: Mapping[str, np.ndarray], model: Mapping, vocabularies):
        """A function ``(inputs, packing, threads) -> (N, D)`` float32, the feature's vectors
        of the packed real tokens, ``inputs`` a batch's :meth:`arrays` by feature name; built
        once from the export's arrays (as the torch state dict names them). A feature the
        NumPy export cannot take says why in :attr:`numpy_refusal` instead."""
        raise NotImplementedError

    def numpy_states(self, states: np.ndarray, block: np.ndarray, inputs: Mapping, packing):
        """``STATES``: what its columns add to the first layer after the BiLSTM, (N, K'):
        ``columns(states) @ block.T`` for the packed states (N, H) and the weights of its
        columns (K', D * H). Zero states must add zero (the padding's scores are the zero
        states' own)."""
        raise NotImplementedError

    # -- ONNX -----------------------------------------------------------------------------

    def onnx_inputs(self) -> list[tuple[str, list[str]]]:
        """(name, dimension names) of each int64 graph input it reads: its :meth:`arrays`."""
        return []

    def onnx_encoding(self, model: Mapping, vocabularies, properties: Mapping[str, str], source):
        """A function from the feature's :meth:`arrays` of a batch to its graph inputs by name
        (a tokenizer's windows for an encoder), built once for the ONNX model ``source`` from
        its graph's metadata ``properties``; None where the arrays are the inputs. One with a
        ``sizes(sentences)`` method (each sentence's size in its inputs) has the ONNX tagger
        batch sentences of similar sizes."""
        return None

    def onnx_forward(self, graph: Any, weights: Mapping[str, np.ndarray], model, vocabularies):
        """``INPUT``: the name of the graph's (B, T, D) output of the feature's vectors."""
        raise NotImplementedError

    def onnx_states(self, graph: Any, states: str, block: np.ndarray) -> str:
        """``STATES``: :meth:`numpy_states` in the graph, on states (B, T, H): (B, T, K')."""
        raise NotImplementedError
