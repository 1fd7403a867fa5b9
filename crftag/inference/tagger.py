"""Tagging with a trained model in torch, and everything the CRF can say about its answer.

:meth:`Tagger.tag` is the fast path (Viterbi tags only, used by training and eval).
:meth:`Tagger.predict` adds, exactly, what a CRF knows: each span's confidence (constrained
forward-backward, Culotta & McCallum 2004), the probability of the whole tag sequence, token
marginals, and the n best sequences. Tags are written in IOB2 (or as they are, for tags that are
not spans), whatever scheme the model was trained in. The loop around the network (pieces,
batches, records) is :class:`crftag.inference.base.TaggerBase`'s, shared with the NumPy tagger.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from typing import TYPE_CHECKING

import torch

from crftag.data.batching import Batch, build_batch
from crftag.data.indices import batch_rows
from crftag.inference.base import BatchScores, TaggerBase, existing_paths
from crftag.inference.confidence import span_confidences
from crftag.modelfiles.checkpoint import LoadedModel

if TYPE_CHECKING:
    from crftag.config.sections import Config
    from crftag.crf.crf import CRF
    from crftag.data.vocab import Vocabularies
    from crftag.nn.taggers import CRFTagger

__all__ = ["Tagger"]


class Tagger(TaggerBase):
    """A network ready to tag, with its vocabularies and how to read its tags, on torch:
    ``crftag.load(path)`` (:func:`crftag.inference.loading.load`) gives one for a checkpoint or
    run directory, :meth:`from_loaded` takes a loaded model (a bundled one's export rebuilt by
    :func:`crftag.modelfiles.checkpoint.load_model`, say), and the constructor a network in
    memory (one in training tags with its weights as they stand).

    Sentences longer than ``max_length`` tokens are tagged in consecutive pieces of at most that
    many tokens (said once on stderr): the pieces are independent sentences to the CRF, so an
    entity is never joined across a cut, and scores add up and probabilities multiply.

    What callers need of the model is public here: ``vocabularies``, ``config`` (the resolved
    config it was trained with), ``data_scheme`` (the training files' scheme, ``none`` for one
    label per token), ``train_scheme`` (the scheme the network predicts in), ``metrics`` (the
    scores stored with it); ``loaded`` describes it as a checkpoint does, to save it.
    """

    backend = "torch"

    def __init__(
        self,
        model: CRFTagger,
        vocabularies: Vocabularies,
        *,
        config: Config,
        data_scheme: str,
        train_scheme: str,
        metrics: dict | None = None,
        device: torch.device | str = "cpu",
    ) -> None:
        self.vocabularies = vocabularies
        self.config = config
        self.data_scheme = data_scheme
        self.train_scheme = train_scheme
        self.metrics = {} if metrics is None else metrics
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self._init_tags()
        # The (K internal, K output) 0/1 map that sums internal marginals into output ones.
        internal = len(self.tag_symbols)
        self._to_output = torch.zeros(internal, len(self.output_tags), device=self.device)
        self._to_output[torch.arange(internal), torch.tensor(self._output_columns)] = 1.0
        crf = self.model.crf
        self._well_formed = self.tags_are_spans and not bool(
            crf.allowed.all() and crf.allowed_start.all() and crf.allowed_end.all()
        )

    @classmethod
    def from_loaded(cls, loaded: LoadedModel, device: torch.device | str = "cpu") -> Tagger:
        """A tagger of a loaded model, with the scores stored with it."""
        return cls(
            loaded.model,
            loaded.vocabularies,
            config=loaded.config,
            data_scheme=loaded.data_scheme,
            train_scheme=loaded.train_scheme,
            metrics=loaded.metrics,
            device=device,
        )

    @property
    def loaded(self) -> LoadedModel:
        """The model as a checkpoint describes it, to save or export it."""
        return LoadedModel(
            self.model,
            self.vocabularies,
            self.config,
            self.data_scheme,
            self.train_scheme,
            self.metrics,
        )

    @property
    def document_context(self) -> bool:
        """Whether the model pools over documents (``model.document_context``)."""
        return bool(getattr(self.model, "document_context", False))

    def _batches(
        self,
        sentences: Sequence[Sequence[str]],
        batch_size: int,
        documents: Sequence[Hashable] | None = None,
    ) -> Iterator[tuple[list[int], Batch]]:
        """(indices into sentences, padded batch) for the non-empty sentences, in the order of
        :func:`crftag.data.indices.batch_rows`."""
        for indices, groups in batch_rows(sentences, batch_size, documents, self.document_context):
            batch = build_batch(
                [sentences[i] for i in indices], self.vocabularies, documents=groups
            )
            yield indices, batch.to(self.device)

    @torch.inference_mode()
    def tag(
        self,
        sentences: Sequence[Sequence[str]],
        batch_size: int = 64,
        documents: Sequence[Hashable] | None = None,
    ) -> list[list[str]]:
        self.model.eval()
        return super().tag(sentences, batch_size, documents)

    @torch.inference_mode()
    def predict(self, sentences, **options):
        self.model.eval()
        return super().predict(sentences, **options)

    predict.__doc__ = TaggerBase.predict.__doc__
    tag.__doc__ = TaggerBase.tag.__doc__

    def _decode(self, batch: Batch) -> list[list[int]]:
        tags, _ = self.model.decode(batch)
        lengths = batch.lengths.tolist()
        return [row[:n] for row, n in zip(tags.tolist(), lengths, strict=True)]

    def _score(self, batch: Batch, probs: str | None, nbest: int) -> BatchScores:
        crf = self.model.crf
        emissions = self.model.emissions(batch)  # (B, T, K)
        mask = batch.mask
        tags, _ = crf.decode(emissions, mask)
        # Scores and log Z in float64: a sequence's probability exp(score - log Z) of a long
        # sentence needs more than float32's 7 digits.
        exact = emissions.double()
        scores = crf.score(exact, tags, mask)  # (B,)
        log_z, marginals = _log_partition_and_marginals(crf, exact, mask, probs is not None)
        lengths = batch.lengths.tolist()
        rows = [row[:n] for row, n in zip(tags.tolist(), lengths, strict=True)]
        confidences = span_confidences(
            crf,
            emissions,
            mask,
            [self.spans_of(row) for row in rows],
            self.train_scheme,
            self._tag_index,
        )
        scored = BatchScores(rows, scores.tolist(), log_z.tolist(), confidences)
        if marginals is not None:
            mapped = (marginals @ self._to_output.double()).tolist()  # (B, T, K')
            scored.marginals = [m[:n] for m, n in zip(mapped, lengths, strict=True)]
        if nbest > 1:
            top_tags, top_scores = crf.decode_nbest(emissions, mask, nbest)
            scored.nbest = existing_paths(
                top_tags.tolist(),
                top_scores.tolist(),
                lengths,
                self._path_scores(exact, top_tags, mask).tolist(),
            )
        return scored

    def _path_scores(
        self, emissions: torch.Tensor, paths: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """Scores (B, n) of paths (B, n, T) under emissions (B, T, K), in their dtype."""
        batch_size, count, length = paths.shape
        repeated = emissions.repeat_interleave(count, dim=0)  # (B * n, T, K)
        flat_mask = mask.repeat_interleave(count, dim=0)
        scores = self.model.crf.score(repeated, paths.reshape(-1, length), flat_mask)
        return scores.view(batch_size, count)


def _log_partition_and_marginals(
    crf: CRF, emissions: torch.Tensor, mask: torch.Tensor, with_marginals: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """log Z (B,) and, if asked, the marginals (B, T, K) of float64 emissions: by the scaled
    recursions, and, for the rows where they underflow (a step whose scores spread beyond exp's
    range), in log space, as :func:`crftag.crf.posteriors.marginals_arrays` does."""
    log_z = crf.log_partition(emissions, mask)
    marginals = crf.marginals(emissions, mask) if with_marginals else None
    broken = ~torch.isfinite(log_z)
    if marginals is not None:
        broken |= ~torch.isfinite(marginals).flatten(1).all(dim=1)
    if bool(broken.any()):
        rows = broken.nonzero().squeeze(1)
        alphas = crf.log_alphas(emissions[rows], mask[rows])  # carried past each end
        _, _, end = crf.potentials()
        log_z[rows] = torch.logsumexp(alphas[:, -1] + end.double(), dim=1)
        if marginals is not None:
            betas = crf.log_betas(emissions[rows], mask[rows])
            fixed = torch.exp(alphas + betas - log_z[rows, None, None])
            marginals[rows] = torch.where(mask[rows].unsqueeze(2), fixed, torch.zeros_like(fixed))
    return log_z, marginals
