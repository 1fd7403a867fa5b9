"""Tagging with an exported model, without torch: the network in NumPy
(:mod:`crftag.runtime.network`) and Viterbi decoding on arrays (:mod:`crftag.crf.arrays`, the
compiled kernel where it was built), batched as :class:`crftag.inference.tagger.Tagger` batches,
so the tags are the torch path's.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from crftag.crf.arrays import viterbi_arrays
from crftag.data.indices import batch_rows, group_ids, index_arrays, pieces
from crftag.data.schemes import to_iob2
from crftag.data.vocab import Vocabularies
from crftag.runtime.archive import read_archive
from crftag.runtime.network import Network

__all__ = ["ArrayTagger"]


class ArrayTagger:
    """A BiLSTM-CRF exported by ``crftag export --format numpy``, ready to tag."""

    max_length = 1000

    def __init__(self, metadata: dict, weights: dict[str, np.ndarray]) -> None:
        self.metadata = metadata
        self.weights = weights
        self.vocabularies = Vocabularies.from_state(metadata["vocabularies"])
        self.model_config = metadata["config"]["model"]
        self.train_scheme = metadata["train_scheme"]
        self.data_scheme = metadata["data_scheme"]
        self.tag_symbols = self.vocabularies.tags.symbols
        self.network = Network(weights, self.model_config, self.vocabularies.chars.symbols)
        minus_inf = np.float32(-np.inf)
        self.transitions = np.where(weights["crf.allowed"], weights["crf.transitions"], minus_inf)
        self.start = np.where(
            weights["crf.allowed_start"], weights["crf.start_transitions"], minus_inf
        )
        self.end = np.where(weights["crf.allowed_end"], weights["crf.end_transitions"], minus_inf)
        constrained = not (
            weights["crf.allowed"].all()
            and weights["crf.allowed_start"].all()
            and weights["crf.allowed_end"].all()
        )
        self._well_formed = self.tags_are_spans and constrained

    @classmethod
    def load(cls, path: str) -> ArrayTagger:
        return cls(*read_archive(path))

    @property
    def tags_are_spans(self) -> bool:
        return self.train_scheme != "none"

    @property
    def document_context(self) -> bool:
        return bool(self.model_config.get("document_context"))

    def _output_tags(self, internal: list[str]) -> list[str]:
        return to_iob2(internal, self._well_formed) if self.tags_are_spans else internal

    def _batches(self, sentences, batch_size, documents):
        """(indices, words, chars, lengths, groups) per batch, in the torch tagger's order."""
        for indices, keys in batch_rows(sentences, batch_size, documents, self.document_context):
            batch = [sentences[i] for i in indices]
            words, chars, lengths = index_arrays(batch, self.vocabularies)
            groups = None if keys is None else group_ids(batch, keys, self.vocabularies)
            yield indices, words, chars, lengths, groups

    def tag(
        self,
        sentences: Sequence[Sequence[str]],
        batch_size: int = 64,
        documents: Sequence[Hashable] | None = None,
    ) -> list[list[str]]:
        """Viterbi tags for each token list, in input order; an empty sentence gets no tags."""
        cut, owners = pieces(sentences, self.max_length)
        cut_documents = None if documents is None else [documents[o] for o in owners]
        tagged: list[list[str]] = [[] for _ in cut]
        for indices, words, chars, lengths, groups in self._batches(cut, batch_size, cut_documents):
            scores = self.network.emissions(words, chars, lengths, groups)
            paths, _ = viterbi_arrays(scores, lengths, self.transitions, self.start, self.end)
            for index, row in zip(indices, paths.tolist(), strict=True):
                tagged[index] = self._output_tags(
                    [self.tag_symbols[t] for t in row[: len(cut[index])]]
                )
        results: list[list[str]] = [[] for _ in sentences]
        for owner, tags in zip(owners, tagged, strict=True):
            results[owner].extend(tags)
        return results
