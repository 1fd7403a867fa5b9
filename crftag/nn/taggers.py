"""The taggers: emission scores from an encoder, and a CRF on top.

:class:`BiLSTMCRF` encodes words with embeddings, a character encoder and a BiLSTM;
:class:`FeatureCRF` is the classic linear-chain CRF whose emissions are sums of weights of sparse
hashed token features (:mod:`crftag.data.features`). Both share loss and decoding
(:class:`CRFTagger`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import torch
from torch import nn
from torch.nn import functional

from crftag.config.sections import Config, ModelConfig
from crftag.crf.crf import CRF
from crftag.data.batching import Batch
from crftag.data.schemes import allowed_transitions
from crftag.data.vocab import Vocabularies
from crftag.features.base import INPUT, SPARSE, STATES
from crftag.features.registry import FEATURES, active_features
from crftag.nn.encoders import Dropout, LockedDropout, WordBiLSTM

__all__ = ["BiLSTMCRF", "CRFTagger", "FeatureCRF", "build_model"]


def _crf(num_tags: int, constraints: tuple | None) -> CRF:
    allowed = dict(
        zip(("allowed", "allowed_start", "allowed_end"), constraints or (), strict=False)
    )
    return CRF(num_tags, **{k: torch.tensor(v) for k, v in allowed.items()})


class CRFTagger(nn.Module):
    """A CRF over emission scores; subclasses say where the emissions come from."""

    crf: CRF

    def emissions(self, batch: Batch) -> torch.Tensor:
        """Emission scores (B, T, K) for a batch."""
        raise NotImplementedError

    def loss(self, batch: Batch, reduction: str = "sum", amp: bool = False) -> torch.Tensor:
        """CRF negative log-likelihood of the batch's gold tags (of every tag sequence consistent
        with them, when some tags are unknown: :meth:`CRF.partial_nll`).

        With ``amp`` the encoder runs under bfloat16 autocast while the CRF's sums of many
        exponentials stay in float32.
        """
        with torch.autocast(batch.words.device.type, dtype=torch.bfloat16, enabled=amp):
            emissions = self.emissions(batch)
        if batch.allowed_tags is not None:  # some sentence has unknown tags
            return self.crf.partial_nll(
                emissions.float(), batch.tags, batch.mask, batch.allowed_tags, reduction=reduction
            )
        return self.crf.nll(emissions.float(), batch.tags, batch.mask, reduction=reduction)

    def forward(self, batch: Batch, reduction: str = "sum", amp: bool = False) -> torch.Tensor:
        """The training loss: DistributedDataParallel hooks ``forward``, so the loss is it."""
        return self.loss(batch, reduction, amp)

    def decode(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Viterbi tags (B, T) and their scores (B,)."""
        return self.crf.decode(self.emissions(batch), batch.mask)


class FeatureCRF(CRFTagger):
    """Linear-chain CRF on hashed sparse features (Collins' notes; Lafferty et al. 2001).

    The emission of tag k at a token is the sum over its F active features f of weight[f, k]; the
    transitions are the CRF's. Weights start at zero, so training starts from the uniform model.
    """

    def __init__(self, *, buckets: int, num_tags: int, constraints: tuple | None = None) -> None:
        super().__init__()
        # The batch's field of the sparse feature the CRF reads (hashed token features).
        (self.field,) = [feature.name for feature in FEATURES if feature.stage == SPARSE]
        # Row 0 is the padding feature. Padded positions' emissions never reach the CRF's scores,
        # so it gets no gradient and stays zero without embedding_bag's (20x slower) padding_idx.
        self.weights = nn.Parameter(torch.zeros(buckets + 1, num_tags))
        self.crf = _crf(num_tags, constraints)

    def emissions(self, batch: Batch) -> torch.Tensor:
        rows = batch.inputs[self.field]  # (B, T, F)
        batch_size, length, width = rows.shape
        summed = _SparseRowSum.apply(rows.view(-1, width), self.weights)  # (B*T, K)
        return summed.view(batch_size, length, -1)


class _SparseRowSum(torch.autograd.Function):
    """rows (N, F) long, weights (V, K) -> (N, K): each output row the sum of F weight rows.

    The gradient of the weights is returned sparse (only the rows used), so neither the backward
    pass nor the update touches the whole (V, K) matrix; see
    :class:`crftag.training.optimizers.SparseSGD`.
    """

    @staticmethod
    def forward(ctx, rows: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(rows)
        ctx.shape = weights.shape
        return functional.embedding_bag(rows, weights, mode="sum")

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        (rows,) = ctx.saved_tensors
        width = rows.size(1)
        values = grad_output.repeat_interleave(width, dim=0)  # (N*F, K), row i*F+j for rows[i, j]
        grad = torch.sparse_coo_tensor(
            rows.reshape(1, -1), values, ctx.shape, check_invariants=False
        )
        return None, grad


class _VocabularyStates(Mapping):
    """Vocabularies read as their state (:meth:`Vocabularies.to_state`), one entry at a time:
    what a feature's width needs, without copying every vocabulary."""

    def __init__(self, vocabularies: Vocabularies) -> None:
        self.vocabularies = vocabularies

    def __getitem__(self, key: str):
        value = self.vocabularies.resources.get(key, getattr(self.vocabularies, key, None))
        if value is None:
            raise KeyError(key)
        return value.to_state() if hasattr(value, "to_state") else value

    def __iter__(self):
        return iter(self.vocabularies.to_state())

    def __len__(self) -> int:
        return len(self.vocabularies.to_state())


class BiLSTMCRF(CRFTagger):
    """BiLSTM-CRF sequence labeller (Lample et al. 2016; Ma & Hovy 2016).

    Its inputs are the registered features the config turns on (:mod:`crftag.features`), each
    module an attribute named by the feature (``word_embedding``, ``char_encoder``, ...), built
    in the registry's order (which the random initialisation follows). ``constraints`` is
    (allowed (K, K), allowed_start (K,), allowed_end (K,)) booleans for the CRF, or None.
    """

    def __init__(
        self,
        config: ModelConfig,
        vocabularies: Vocabularies,
        *,
        num_tags: int,
        constraints: tuple | None = None,
    ) -> None:
        super().__init__()
        model, states = dataclasses.asdict(config), _VocabularyStates(vocabularies)
        self.input_features = []
        for feature in active_features(model, INPUT):
            module = feature.torch_module(config, vocabularies)
            if module is not None:  # None: not sizeable from these vocabularies (a skeleton's)
                setattr(self, feature.module_name, module)
                self.input_features.append(feature)
        self.states_features = active_features(model, STATES)
        self.dropout = (
            LockedDropout(config.dropout) if config.locked_dropout else Dropout(config.dropout)
        )
        width = sum(feature.width(model, states) for feature in self.input_features)
        self.encoder = None  # hidden_size 0: the tag scores straight from the word features
        if config.hidden_size:
            self.encoder = WordBiLSTM(width, config.hidden_size, config.num_layers, config.dropout)
            width = self.encoder.output_size
        # Read by the inference tagger: batches must hold whole documents for a feature made
        # over a whole batch (document context).
        self.document_context = any(not f.per_sentence for f in self.states_features)
        beside = sum(feature.width(model, states) for feature in self.states_features)
        projected = width * (1 + beside)
        # Lample et al.'s tanh layer: the states, and the columns beside them, meet in a
        # nonlinearity before the tag scores rather than adding up linearly.
        self.hidden = None
        if config.hidden_layer:
            self.hidden = nn.Sequential(nn.Linear(projected, config.hidden_layer), nn.Tanh())
            projected = config.hidden_layer
        self.projection = nn.Linear(projected, num_tags)
        self.crf = _crf(num_tags, constraints)

    def emissions(self, batch: Batch) -> torch.Tensor:
        """Emission scores (B, T, K) for a batch holding each of the model's features."""
        vectors = []
        for feature in self.input_features:
            _check_carried(feature, batch)
            vectors.append(feature.torch_forward(getattr(self, feature.module_name), batch))
        features = torch.cat(vectors, dim=2) if len(vectors) > 1 else vectors[0]  # (B, T, D)
        encoded = features  # (B, T, D) with hidden_size 0, else the BiLSTM's (B, T, 2H)
        if self.encoder is not None:
            encoded = self.encoder(self.dropout(features), batch.lengths)
        beside = []
        for feature in self.states_features:
            _check_carried(feature, batch)
            beside.append(feature.torch_states(encoded, batch))
        if beside:
            encoded = torch.cat([encoded, *beside], dim=2)  # (B, T, 2H * (1 + beside))
        encoded = self.dropout(encoded)
        if self.hidden is not None:
            encoded = self.hidden(encoded)  # (B, T, hidden_layer)
        return self.projection(encoded)


def _check_carried(feature, batch: Batch) -> None:
    """A batch made without a feature the model reads is a bug of the caller."""
    if feature.has_values and batch.inputs.get(feature.name) is None:
        raise ValueError(f"a model with {feature.key} needs batch.{feature.name}")


def build_model(config: Config, vocabularies: Vocabularies, train_scheme: str) -> CRFTagger:
    """A fresh network sized by ``config`` and the vocabularies, constrained by the scheme."""
    constraints = None
    if config.model.constrained and train_scheme != "none":
        constraints = allowed_transitions(train_scheme, vocabularies.tags.symbols)
    if config.model.encoder == "features":
        return FeatureCRF(
            buckets=vocabularies.feature_buckets,
            num_tags=len(vocabularies.tags),
            constraints=constraints,
        )
    return BiLSTMCRF(
        config.model, vocabularies, num_tags=len(vocabularies.tags), constraints=constraints
    )
