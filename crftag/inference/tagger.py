"""Tagging with a trained model, and everything the CRF can say about its answer.

:meth:`Tagger.tag` is the fast path (Viterbi tags only, used by training and eval).
:meth:`Tagger.predict` adds, exactly, what a CRF knows: each span's confidence (constrained
forward-backward, Culotta & McCallum 2004), the probability of the whole tag sequence, token
marginals, and the n best sequences. Tags are written in IOB2 (or as they are, for tags that are
not spans), whatever scheme the model was trained in.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import torch

from crftag.checkpoint import LoadedModel, load_model
from crftag.data.batching import Batch, build_batch
from crftag.data.indices import batch_rows, pieces
from crftag.data.schemes import iob2_tag, to_iob2, to_spans
from crftag.data.tokenize import tokenize
from crftag.inference.confidence import span_confidences
from crftag.inference.records import Prediction, drop_unlikely_spans, join_pieces, locate_spans

if TYPE_CHECKING:
    from crftag.config import Config
    from crftag.data.vocab import Vocabularies

__all__ = ["Tagger"]


class Tagger:
    """A loaded model ready to tag; ``Tagger.load(path)`` reads a checkpoint or run directory.

    Sentences longer than ``max_length`` tokens are tagged in consecutive pieces of at most that
    many tokens (said once on stderr): the pieces are independent sentences to the CRF, so an
    entity is never joined across a cut, and scores add up and probabilities multiply.

    What callers need of the model is public here (``vocabularies``, ``config``, ``tag_symbols``,
    the schemes, ``metrics``); ``loaded`` is the :class:`LoadedModel` tagged with, to save it.
    """

    max_length = 1000

    def __init__(self, loaded: LoadedModel, device: torch.device | str = "cpu") -> None:
        self.loaded = loaded
        self._warned_long = False
        self.device = torch.device(device)
        self.model = loaded.model.to(self.device)
        internal = loaded.vocabularies.tags.symbols
        # Output tags and the (K internal, K output) 0/1 map that sums internal marginals into
        # output ones: in IOB2, B-X covers BIOES's B-X and S-X, and I-X covers I-X and E-X.
        names = [self._output_tag(tag) for tag in internal]
        self.output_tags = sorted(set(names))
        columns = [self.output_tags.index(name) for name in names]
        self._to_output = torch.zeros(len(internal), len(self.output_tags), device=self.device)
        self._to_output[torch.arange(len(internal)), torch.tensor(columns)] = 1.0
        self._tag_index = {tag: i for i, tag in enumerate(internal)}
        crf = self.model.crf
        self._well_formed = self.tags_are_spans and not bool(
            crf.allowed.all() and crf.allowed_start.all() and crf.allowed_end.all()
        )

    @classmethod
    def load(cls, path: str, device: torch.device | str = "cpu") -> Tagger:
        """Load a checkpoint file or run directory; never runs code stored in the file."""
        return cls(load_model(path, device), device)

    @property
    def vocabularies(self) -> Vocabularies:
        """The words, characters and tags the model was trained with."""
        return self.loaded.vocabularies

    @property
    def config(self) -> Config:
        """The resolved config the model was trained with."""
        return self.loaded.config

    @property
    def data_scheme(self) -> str:
        """The scheme of the training files' tags (``none`` for one label per token)."""
        return self.loaded.data_scheme

    @property
    def train_scheme(self) -> str:
        """The scheme the network predicts in (``none`` for one label per token)."""
        return self.loaded.train_scheme

    @property
    def metrics(self) -> dict:
        """The scores stored with the model (best epoch and dev score)."""
        return self.loaded.metrics

    @property
    def tag_symbols(self) -> list[str]:
        """The network's tags, in the train scheme: tag id ``i`` is ``tag_symbols[i]``."""
        return self.loaded.vocabularies.tags.symbols

    @property
    def tags_are_spans(self) -> bool:
        """Whether the tags are entity spans (NER) rather than one label per token (POS)."""
        return self.train_scheme != "none"

    def _output_tag(self, tag: str) -> str:
        return iob2_tag(tag) if self.tags_are_spans else tag

    def _to_output_tags(self, internal: list[str]) -> list[str]:
        return to_iob2(internal, self._well_formed) if self.tags_are_spans else internal

    @property
    def document_context(self) -> bool:
        """Whether the model pools over documents (``model.document_context``)."""
        return bool(getattr(self.model, "document_context", False))

    def _batches(
        self,
        sentences: Sequence[Sequence[str]],
        batch_size: int,
        documents: Sequence[Hashable] | None = None,
    ):
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
        """Viterbi tags for each token list, in input order; an empty sentence gets no tags.

        ``documents``: one entry per sentence, equal for the consecutive sentences of one
        document (such as :attr:`Sentence.document`); used by models with document context.
        """
        self.model.eval()
        symbols = self.tag_symbols
        pieces, owners = self._pieces(sentences)
        piece_documents = None if documents is None else [documents[o] for o in owners]
        tagged: list[list[str]] = [[] for _ in pieces]
        for indices, batch in self._batches(pieces, batch_size, piece_documents):
            tags, _ = self.model.decode(batch)
            for index, row in zip(indices, tags.tolist(), strict=True):  # one host copy a batch
                tagged[index] = self._to_output_tags(
                    [symbols[t] for t in row[: len(pieces[index])]]
                )
        results: list[list[str]] = [[] for _ in sentences]
        for owner, tags in zip(owners, tagged, strict=True):
            results[owner].extend(tags)
        return results

    def _pieces(self, sentences: Sequence[Sequence[str]]) -> tuple[list[Sequence[str]], list[int]]:
        """Sentences cut into pieces of at most ``max_length`` tokens, and each piece's sentence."""
        longest = max((len(tokens) for tokens in sentences), default=0)
        if longest > self.max_length and not self._warned_long:
            self._warned_long = True
            print(
                f"crftag: note: a sentence of {longest} tokens is tagged in pieces of at "
                f"most {self.max_length} tokens",
                file=sys.stderr,
            )
        return pieces(sentences, self.max_length)

    @torch.inference_mode()
    def predict(
        self,
        sentences: Sequence[str | Sequence[str]],
        *,
        probs: str | None = None,
        nbest: int = 1,
        min_confidence: float = 0.0,
        batch_size: int = 64,
        documents: Sequence[Hashable] | None = None,
        texts: Sequence[str | None] | None = None,
        token_offsets: bool = False,
    ) -> list[Prediction]:
        """Tag sentences, each a string (split by the built-in tokenizer) or a list of tokens.

        probs: None, ``"tag"`` (each token's probability of its tag) or ``"all"`` (every tag's).
        nbest: also list the ``nbest`` best tag sequences with their probabilities.
        min_confidence: drop spans less likely than this (their tokens become ``O``).
        documents: as in :meth:`tag`.
        texts: for token lists, the text each was cut from (None where there is none), so
            spans get character offsets into it; a string sentence is its own text, and a token
            list without one is placed in its tokens joined by single spaces.
        token_offsets: also each token's character offsets.
        """
        if probs not in (None, "tag", "all"):
            raise ValueError(f"expected probs None|'tag'|'all', got {probs!r}")
        self.model.eval()
        token_lists = [
            tokenize(sentence) if isinstance(sentence, str) else list(sentence)
            for sentence in sentences
        ]
        # An empty sentence has one (empty) tag sequence, with probability 1.
        results = [
            Prediction(
                tokens=tokens,
                tags=[],
                token_probs=[] if probs else None,
                marginals=[] if probs == "all" else None,
                nbest=[{"tags": [], "score": 0.0, "probability": 1.0}] if nbest > 1 else None,
            )
            for tokens in token_lists
        ]
        pieces, owners = self._pieces(token_lists)
        piece_documents = None if documents is None else [documents[o] for o in owners]
        parts: list[list[Prediction]] = [[] for _ in token_lists]
        piece_predictions: list[Prediction | None] = [None] * len(pieces)
        for indices, batch in self._batches(pieces, batch_size, piece_documents):
            for index, prediction in zip(
                indices, self._predict_batch(batch, probs, nbest), strict=True
            ):
                prediction.tokens = list(pieces[index])
                drop_unlikely_spans(prediction, min_confidence)
                piece_predictions[index] = prediction
        for owner, prediction in zip(owners, piece_predictions, strict=True):
            if prediction is not None:  # None: an empty sentence, already in results
                parts[owner].append(prediction)
        for index, sentence_parts in enumerate(parts):
            if len(sentence_parts) == 1:
                results[index] = sentence_parts[0]
            elif sentence_parts:
                results[index] = join_pieces(sentence_parts)
        for index, (sentence, result) in enumerate(zip(sentences, results, strict=True)):
            text = sentence if isinstance(sentence, str) else texts[index] if texts else None
            locate_spans(result, text, token_offsets)
        return results

    def _predict_batch(self, batch: Batch, probs: str | None, nbest: int) -> list[Prediction]:
        crf = self.model.crf
        emissions = self.model.emissions(batch)  # (B, T, K)
        mask = batch.mask
        tags, scores = crf.decode(emissions, mask)
        log_z = crf.log_partition(emissions, mask)  # (B,)
        symbols = self.tag_symbols
        lengths = batch.lengths.tolist()
        internal = [
            [symbols[t] for t in row[:n]] for row, n in zip(tags.tolist(), lengths, strict=True)
        ]
        spans = [to_spans(row) if self.tags_are_spans else [] for row in internal]
        confidences = span_confidences(
            crf, emissions, mask, spans, self.train_scheme, self._tag_index
        )

        marginals = None
        if probs is not None:
            marginals = (crf.marginals(emissions, mask) @ self._to_output).tolist()  # (B, T, K')
        top = None
        if nbest > 1:
            top_tags, top_scores = crf.decode_nbest(emissions, mask, nbest)
            top = (top_tags.tolist(), top_scores.tolist())

        predictions = []
        for row, tags_row in enumerate(internal):
            output = self._to_output_tags(tags_row)
            prediction = Prediction(
                tokens=[],
                tags=output,
                spans=[
                    {"start": s.start, "end": s.end, "label": s.label, "confidence": c}
                    for s, c in zip(spans[row], confidences[row], strict=True)
                ],
                score=float(scores[row]),
                probability=math.exp(min(0.0, float(scores[row] - log_z[row]))),
            )
            if marginals is not None:
                distributions = marginals[row][: lengths[row]]
                columns = [self.output_tags.index(tag) for tag in output]
                prediction.token_probs = [d[c] for d, c in zip(distributions, columns, strict=True)]
                if probs == "all":
                    prediction.marginals = [
                        dict(zip(self.output_tags, d, strict=True)) for d in distributions
                    ]
            if top is not None:
                prediction.nbest = [
                    {
                        "tags": self._to_output_tags([symbols[t] for t in path[: lengths[row]]]),
                        "score": score,
                        "probability": math.exp(min(0.0, score - float(log_z[row]))),
                    }
                    for path, score in zip(top[0][row], top[1][row], strict=True)
                    if score != float("-inf")
                ]
            predictions.append(prediction)
        return predictions
