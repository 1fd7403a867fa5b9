"""Tagging with an exported model, without torch: the network in NumPy
(:mod:`crftag.runtime.network`) and the CRF on arrays (:mod:`crftag.crf.arrays`,
:mod:`crftag.crf.posteriors`, the compiled kernels where they were built), around the same loop
as the torch tagger (:class:`crftag.inference.base.TaggerBase`), so the records are the torch
path's: identical tags, and probabilities equal up to float rounding.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from crftag.crf.arrays import viterbi_arrays
from crftag.crf.posteriors import (
    log_partition_arrays,
    marginals_arrays,
    nbest_arrays,
    path_scores_arrays,
)
from crftag.data.indices import batch_rows
from crftag.features.base import TextBatch
from crftag.features.registry import carried_features, vocabularies_from_state
from crftag.inference.array_confidence import span_confidences_arrays
from crftag.inference.base import BatchScores, TaggerBase, existing_paths
from crftag.modelfiles.checkpoint_schema import check_export
from crftag.runtime.archive import read_archive_digest
from crftag.runtime.network import Network
from crftag.runtime.threads import loop_threads

__all__ = ["ArrayTagger"]


@dataclass
class ArrayBatch:
    """A batch as arrays: each feature's :meth:`~crftag.features.base.Feature.arrays` by name
    (``words`` (B, T), ``chars`` (B, T, C), ...; :mod:`crftag.features`) and lengths (B,)."""

    inputs: dict[str, Any]
    lengths: np.ndarray


class ArrayTagger(TaggerBase):
    """A BiLSTM-CRF exported by ``crftag export --format numpy``, ready to tag: the same calls
    and records as :class:`crftag.inference.tagger.Tagger`, on the CPU, without torch."""

    backend = "numpy"

    def __init__(
        self,
        metadata: dict,
        weights: dict[str, np.ndarray],
        source: str,
        *,
        digest: str | None = None,
    ) -> None:
        weights = dict(weights)
        self.config = check_export(metadata, weights, source, digest=digest)
        self._init_description(metadata, source)
        self.network = Network(weights, self.model_config, self.vocabularies)
        minus_inf = np.float32(-np.inf)
        self._init_crf(
            np.where(weights["crf.allowed"], weights["crf.transitions"], minus_inf),
            np.where(weights["crf.allowed_start"], weights["crf.start_transitions"], minus_inf),
            np.where(weights["crf.allowed_end"], weights["crf.end_transitions"], minus_inf),
        )

    def _init_description(self, metadata: dict, source: str) -> None:
        """What the model's metadata says: vocabularies, schemes, its config's model section."""
        self.source = source
        self.metadata = metadata
        self.vocabularies = vocabularies_from_state(metadata["vocabularies"])
        self.model_config = metadata["config"]["model"]
        self.train_scheme = metadata["train_scheme"]
        self.data_scheme = metadata["data_scheme"]
        self.metrics = metadata.get("metrics", {})

    def _init_crf(self, transitions: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
        """The CRF's potentials (K, K), (K,), (K,), -inf where a move is forbidden, and the
        output tags."""
        self.transitions, self.start, self.end = transitions, start, end
        constrained = any(np.isneginf(scores).any() for scores in (transitions, start, end))
        self._init_tags()
        self._well_formed = self.tags_are_spans and constrained
        self._to_output = np.zeros((len(self.tag_symbols), len(self.output_tags)))
        self._to_output[np.arange(len(self.tag_symbols)), self._output_columns] = 1.0
        self._loop_threads = 1  # two within _running, where they pay

    @classmethod
    def load(cls, path: str) -> ArrayTagger:
        """Read an exported model file; a file that is not one is a one-line error."""
        metadata, weights, digest = read_archive_digest(path)
        return cls(metadata, weights, source=path, digest=digest)

    @property
    def document_context(self) -> bool:
        """Whether the model pools over documents (``model.document_context``)."""
        return bool(self.model_config.get("document_context"))

    def _batches(
        self,
        sentences: Sequence[Sequence[str]],
        batch_size: int,
        documents: Sequence[Hashable] | None,
    ) -> Iterator[tuple[list[int], ArrayBatch]]:
        """(indices into sentences, index arrays) in the torch tagger's batch order."""
        model = self.model_config
        for indices, keys in self._batch_rows(sentences, batch_size, documents):
            text = TextBatch([sentences[i] for i in indices], self.vocabularies, keys)
            inputs = {feature.name: feature.arrays(text) for feature in carried_features(model)}
            yield indices, ArrayBatch(inputs, text.indexed[2])

    def _batch_rows(self, sentences, batch_size: int, documents) -> Iterable[tuple[list, Any]]:
        """(indices into sentences, document keys or None) of each batch, as
        :func:`crftag.data.indices.batch_rows` gives them."""
        return batch_rows(sentences, batch_size, documents, self.document_context)

    @contextmanager
    def _running(self) -> Iterator[None]:
        """The compiled loops on two threads, where NumPy's BLAS can be held to one meanwhile."""
        with loop_threads() as threads:
            self._loop_threads = threads
            try:
                yield
            finally:
                self._loop_threads = 1

    def _emissions(self, batch: ArrayBatch) -> np.ndarray:
        """(B, T, K) float32 emission scores."""
        return self.network.emissions(batch.inputs, batch.lengths, self._loop_threads)

    def _potentials(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.transitions, self.start, self.end

    def _decode(self, batch: ArrayBatch) -> list[list[int]]:
        paths, _ = viterbi_arrays(self._emissions(batch), batch.lengths, *self._potentials())
        lengths = batch.lengths.tolist()
        return [row[:n] for row, n in zip(paths.tolist(), lengths, strict=True)]

    def _score(self, batch: ArrayBatch, probs: str | None, nbest: int) -> BatchScores:
        emissions = self._emissions(batch)
        lengths = batch.lengths
        paths, _ = viterbi_arrays(emissions, lengths, *self._potentials())
        # Scores and log Z in float64: a sequence's probability exp(score - log Z) of a long
        # sentence needs more than float32's 7 digits (and then equals the torch path's).
        scores = path_scores_arrays(emissions, lengths, *self._potentials(), paths[:, None])[:, 0]
        log_z = log_partition_arrays(emissions, lengths, *self._potentials())
        sizes = lengths.tolist()
        rows = [row[:n] for row, n in zip(paths.tolist(), sizes, strict=True)]
        confidences = span_confidences_arrays(
            emissions,
            lengths,
            *self._potentials(),
            [self.spans_of(row) for row in rows],
            self.train_scheme,
            self._tag_index,
        )
        scored = BatchScores(rows, scores.tolist(), log_z.tolist(), confidences)
        if probs is not None:
            marginals = marginals_arrays(emissions, lengths, *self._potentials())  # (B, T, K)
            mapped = (marginals @ self._to_output).tolist()  # (B, T, K')
            scored.marginals = [m[:n] for m, n in zip(mapped, sizes, strict=True)]
        if nbest > 1:
            top_paths, top_scores = nbest_arrays(emissions, lengths, *self._potentials(), nbest)
            exact = path_scores_arrays(emissions, lengths, *self._potentials(), top_paths)
            scored.nbest = existing_paths(
                top_paths.tolist(), top_scores.tolist(), sizes, exact.tolist()
            )
        return scored
