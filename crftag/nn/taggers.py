"""The taggers: emission scores from an encoder, and a CRF on top.

:class:`BiLSTMCRF` encodes words with embeddings, a character encoder and a BiLSTM;
:class:`FeatureCRF` is the classic linear-chain CRF whose emissions are sums of weights of sparse
hashed token features (:mod:`crftag.data.features`). Both share loss and decoding
(:class:`CRFTagger`).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

from crftag.config.sections import Config, ModelConfig
from crftag.crf.crf import CRF
from crftag.data.batching import Batch
from crftag.data.char_codes import CharCodes
from crftag.data.lexicons import FEATURE_SIZE
from crftag.data.schemes import allowed_transitions
from crftag.data.vocab import Vocabularies
from crftag.nn.char_lm import CharLanguageModels
from crftag.nn.encoders import (
    CasingEmbedding,
    CharCNN,
    CharLSTM,
    Dropout,
    LockedDropout,
    WordBiLSTM,
    WordEmbedding,
)
from crftag.nn.lexicons import LexiconEmbedding

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
        # Row 0 is the padding feature. Padded positions' emissions never reach the CRF's scores,
        # so it gets no gradient and stays zero without embedding_bag's (20x slower) padding_idx.
        self.weights = nn.Parameter(torch.zeros(buckets + 1, num_tags))
        self.crf = _crf(num_tags, constraints)

    def emissions(self, batch: Batch) -> torch.Tensor:
        batch_size, length, width = batch.features.shape  # (B, T, F)
        summed = _SparseRowSum.apply(batch.features.view(-1, width), self.weights)  # (B*T, K)
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


class BiLSTMCRF(CRFTagger):
    """BiLSTM-CRF sequence labeller (Lample et al. 2016; Ma & Hovy 2016).

    ``constraints`` is (allowed (K, K), allowed_start (K,), allowed_end (K,)) booleans for the CRF,
    or None for none.
    """

    def __init__(
        self,
        config: ModelConfig,
        *,
        num_words: int,
        num_chars: int,
        num_tags: int,
        constraints: tuple | None = None,
        char_symbols: list[str] | None = None,
        char_lm: CharCodes | None = None,
    ) -> None:
        super().__init__()
        self.word_embedding = WordEmbedding(num_words, config.word_dim)
        # Ma & Hovy's initialisation: uniform in +-sqrt(3 / dim), a unit-variance start.
        bound = (3.0 / config.word_dim) ** 0.5
        nn.init.uniform_(self.word_embedding.weight, -bound, bound)
        with torch.no_grad():
            self.word_embedding.weight[0].zero_()
        if config.char_encoder == "cnn":
            self.char_encoder = CharCNN(
                num_chars, config.char_dim, config.char_size, config.char_kernel
            )
        elif config.char_encoder == "lstm":
            self.char_encoder = CharLSTM(num_chars, config.char_dim, config.char_size)
        else:
            self.char_encoder = None
        char_size = self.char_encoder.output_size if self.char_encoder is not None else 0
        self.casing = None
        if config.casing_dim:
            if char_symbols is None:
                raise ValueError("expected the character vocabulary's symbols for casing_dim > 0")
            self.casing = CasingEmbedding(char_symbols, config.casing_dim)
        self.lexicon = None
        lexicon_size = FEATURE_SIZE * len(config.lexicons or ())
        if config.lexicons:
            self.lexicon = LexiconEmbedding(len(config.lexicons), FEATURE_SIZE)
        self.char_lm, char_lm_size = self._char_lm(config, char_lm)
        self.dropout = (
            LockedDropout(config.dropout) if config.locked_dropout else Dropout(config.dropout)
        )
        self.encoder = WordBiLSTM(
            config.word_dim + char_size + config.casing_dim + lexicon_size + char_lm_size,
            config.hidden_size,
            config.num_layers,
            config.dropout,
        )
        self.document_context = config.document_context
        projected = self.encoder.output_size * (2 if self.document_context else 1)
        # Lample et al.'s tanh layer: the states, and the document means beside them, meet in a
        # nonlinearity before the tag scores rather than adding up linearly.
        self.hidden = None
        if config.hidden_layer:
            self.hidden = nn.Sequential(nn.Linear(projected, config.hidden_layer), nn.Tanh())
            projected = config.hidden_layer
        self.projection = nn.Linear(projected, num_tags)
        self.crf = _crf(num_tags, constraints)

    def emissions(self, batch: Batch) -> torch.Tensor:
        """Emission scores (B, T, K) for a batch; with document context, ``batch.groups``."""
        features = self.word_embedding(batch.words)  # (B, T, Dw)
        if self.char_encoder is not None:
            features = torch.cat([features, self.char_encoder(batch.chars)], dim=2)
        if self.casing is not None:
            features = torch.cat([features, self.casing(batch.chars)], dim=2)
        if self.lexicon is not None:
            if batch.lexicon is None:
                raise ValueError("a model with lexicons needs batch.lexicon")
            features = torch.cat([features, self.lexicon(batch.lexicon)], dim=2)
        if self.char_lm is not None:
            if batch.char_lm is None:
                raise ValueError("a model with char_lm needs batch.char_lm")
            features = torch.cat([features, self._char_lm_states(batch)], dim=2)
        encoded = self.encoder(self.dropout(features), batch.lengths)  # (B, T, 2H)
        if self.document_context:
            if batch.groups is None:
                raise ValueError("a model with document_context needs batch.groups")
            encoded = torch.cat([encoded, _group_means(encoded, batch.groups)], dim=2)
        encoded = self.dropout(encoded)  # (B, T, 2H), or (B, T, 4H) with document context
        if self.hidden is not None:
            encoded = self.hidden(encoded)  # (B, T, hidden_layer)
        return self.projection(encoded)

    def _char_lm(
        self, config: ModelConfig, codes: CharCodes | None
    ) -> tuple[CharLanguageModels | None, int]:
        """The character language models of ``model.char_lm`` (their weights are the
        pretrained ones, copied in by training or loaded with the checkpoint), and the size of
        the word features they give; frozen unless ``model.char_lm_finetune``."""
        if codes is None:
            return None, 0
        models = CharLanguageModels(len(codes), codes.sizes["char_dim"], codes.sizes["hidden_size"])
        self.char_lm_finetune = config.char_lm_finetune
        models.requires_grad_(config.char_lm_finetune)
        return models, 2 * codes.sizes["hidden_size"]

    def _char_lm_states(self, batch: Batch) -> torch.Tensor:
        """(B, T, 2H') each word's states of the character models; frozen models run without
        gradients (torch's own LSTM forward, the faster one without them)."""
        if self.char_lm_finetune:
            return self.char_lm.word_states(batch.char_lm)
        with torch.no_grad():
            return self.char_lm.word_states(batch.char_lm)


def _group_means(states: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
    """states (B, T, D), groups (B, T) ids -> (B, T, D): each position the mean of the states of
    every position with its id. A word's other occurrences in the document carry what their
    contexts say about it (a team name in a results table, a person named in full earlier)."""
    width = states.size(2)
    flat_ids = groups.reshape(-1)
    flat = states.reshape(-1, width)
    count = int(flat_ids.max()) + 1
    sums = flat.new_zeros(count, width).index_add_(0, flat_ids, flat)
    sizes = torch.bincount(flat_ids, minlength=count).clamp_(min=1).to(flat.dtype)
    return (sums / sizes.unsqueeze(1))[flat_ids].view_as(states)


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
        config.model,
        num_words=len(vocabularies.words),
        num_chars=len(vocabularies.chars),
        num_tags=len(vocabularies.tags),
        constraints=constraints,
        char_symbols=vocabularies.chars.symbols,
        char_lm=vocabularies.char_lm,
    )
