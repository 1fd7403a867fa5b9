"""What every tagger does around its network, whatever computes the scores.

A tagger cuts long sentences into pieces, batches them in one order
(:func:`crftag.data.indices.batch_rows`), asks its backend for each batch's scores, and turns
those into tags and :class:`Prediction` records. :class:`TaggerBase` does all of that once; the
torch tagger (:class:`crftag.inference.tagger.Tagger`) and the NumPy one
(:class:`crftag.inference.array_tagger.ArrayTagger`) only say how a batch is built and scored,
so both give the same records by construction. Nothing here imports torch.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from crftag.data.indices import pieces
from crftag.data.schemes import Span, iob2_tag, to_iob2, to_spans
from crftag.data.tokenize import tokenize
from crftag.errors import CrftagError
from crftag.inference.records import Prediction, drop_unlikely_spans, join_pieces, locate_spans

__all__ = ["BatchScores", "TaggerBase", "existing_paths"]


@dataclass
class BatchScores:
    """A batch's answers as plain lists, row by row (B rows, each of its own length).

    tags         best tag ids, trimmed to each row's length
    scores       the best sequence's score
    log_z        the log partition function
    confidences  each span's probability, in the order of :meth:`TaggerBase.spans_of`
    marginals    with probs: each token's distribution over the output tags (T_b, K')
    nbest        with nbest > 1: (tag ids trimmed to the row, score) for each allowed path
    """

    tags: list[list[int]]
    scores: list[float]
    log_z: list[float]
    confidences: list[list[float]]
    marginals: list[list[list[float]]] | None = None
    nbest: list[list[tuple[list[int], float]]] | None = None


class TaggerBase:
    """Pieces, batches, tags and records for a backend that scores batches: what
    ``crftag.load`` returns, whatever the backend.

    Its interface: :meth:`tag` (tags only), :meth:`predict` (records with span confidences,
    sequence probabilities and on request marginals and n-best lists, which every backend
    gives), and what describes the model: ``labels`` and ``output_tags``, ``tags_are_spans``,
    ``train_scheme`` and ``data_scheme`` (the training files' scheme), ``document_context``,
    ``config`` (the resolved config it was trained with), ``metrics`` (the scores stored with
    it), ``vocabularies``, ``backend`` and ``source``.

    A subclass sets ``vocabularies``, ``config``, ``train_scheme``, ``data_scheme``,
    ``metrics``, ``document_context`` and ``_well_formed`` (whether the CRF forbids malformed
    span sequences), calls :meth:`_init_tags`, and gives :meth:`_batches`, :meth:`_decode` and
    :meth:`_score`.
    """

    max_length = 1000
    backend = ""  # what computes the scores: "torch", "numpy" or "onnx"
    source = "the model"  # its file, where it was loaded from one: named in errors

    def _init_tags(self) -> None:
        """Output tags (IOB2 for spans) and the output column of each internal tag: in IOB2,
        B-X covers BIOES's B-X and S-X, and I-X covers I-X and E-X."""
        self._warned_long = False
        names = [iob2_tag(tag) if self.tags_are_spans else tag for tag in self.tag_symbols]
        self._output_names = names  # of each tag id: its output tag where it stands alone
        self.output_tags = sorted(set(names))
        self._output_columns = [self.output_tags.index(name) for name in names]
        self._tag_index = {tag: i for i, tag in enumerate(self.tag_symbols)}

    @property
    def tag_symbols(self) -> list[str]:
        """The network's tags, in the train scheme: tag id ``i`` is ``tag_symbols[i]``."""
        return self.vocabularies.tags.symbols

    @property
    def tags_are_spans(self) -> bool:
        """Whether the tags are entity spans (NER) rather than one label per token (POS)."""
        return self.train_scheme != "none"

    @property
    def labels(self) -> list[str]:
        """What the model labels: the entity types (``PER``, ``LOC``, ...) for span tags, the
        tags themselves (``NOUN``, ``VERB``, ...) otherwise; sorted."""
        if not self.tags_are_spans:
            return list(self.output_tags)
        return sorted({tag[2:] for tag in self.output_tags if tag[:2] in ("B-", "I-")})

    def _batches(
        self,
        sentences: Sequence[Sequence[str]],
        batch_size: int,
        documents: Sequence[Hashable] | None,
    ) -> Iterator[tuple[list[int], object]]:
        """(indices into sentences, the backend's batch) for the non-empty sentences."""
        raise NotImplementedError

    def _decode(self, batch) -> list[list[int]]:
        """Best tag ids of each row of ``batch``, trimmed to its length."""
        raise NotImplementedError

    def _score(self, batch, probs: str | None, nbest: int) -> BatchScores:
        """Everything :meth:`predict` reports about ``batch``."""
        raise NotImplementedError

    def _running(self) -> AbstractContextManager[object]:
        """Entered around the batches of one call: what a backend sets up for all of them."""
        return nullcontext()

    def _output_tags(self, row: list[int]) -> list[str]:
        """One decoded row's tag ids as output tags (IOB2 for spans). A well-formed sequence,
        all a constrained CRF decodes, gives each tag's IOB2 tag from itself alone
        (:func:`to_iob2`), so those are looked up by id."""
        if not self.tags_are_spans or self._well_formed:
            return [self._output_names[t] for t in row]
        return to_iob2([self.tag_symbols[t] for t in row], well_formed=False)

    def spans_of(self, tags: list[int]) -> list[Span]:
        """The spans of one row's tag ids (none for tags that are not spans)."""
        return to_spans([self.tag_symbols[t] for t in tags]) if self.tags_are_spans else []

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
        cut, owners = self._pieces(sentences)
        cut_documents = None if documents is None else [documents[o] for o in owners]
        tagged: list[list[str]] = [[] for _ in cut]
        with self._running():
            for indices, batch in self._batches(cut, batch_size, cut_documents):
                for index, row in zip(indices, self._decode(batch), strict=True):
                    tagged[index] = self._output_tags(row)
        results: list[list[str]] = [[] for _ in sentences]
        for owner, tags in zip(owners, tagged, strict=True):
            results[owner].extend(tags)
        return results

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
        token_lists = [
            tokenize(sentence) if isinstance(sentence, str) else list(sentence)
            for sentence in sentences
        ]
        results = [_empty_prediction(tokens, probs, nbest) for tokens in token_lists]
        cut, owners = self._pieces(token_lists)
        cut_documents = None if documents is None else [documents[o] for o in owners]
        cut_predictions: list[Prediction | None] = [None] * len(cut)
        with self._running():
            for indices, batch in self._batches(cut, batch_size, cut_documents):
                scored = self._score(batch, probs, nbest)
                _check_scored(scored, self.source)
                for row, index in enumerate(indices):
                    prediction = self._prediction(scored, row, probs)
                    prediction.tokens = list(cut[index])
                    drop_unlikely_spans(prediction, min_confidence)
                    cut_predictions[index] = prediction
        parts: list[list[Prediction]] = [[] for _ in token_lists]
        for owner, prediction in zip(owners, cut_predictions, strict=True):
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

    def _prediction(self, scored: BatchScores, row: int, probs: str | None) -> Prediction:
        """Row ``row`` of a scored batch as a record (tokens filled in by the caller)."""
        tags = scored.tags[row]
        output = self._output_tags(tags)
        spans = self.spans_of(tags)
        log_z = scored.log_z[row]
        prediction = Prediction(
            tokens=[],
            tags=output,
            spans=[
                {"start": s.start, "end": s.end, "label": s.label, "confidence": c}
                for s, c in zip(spans, scored.confidences[row], strict=True)
            ],
            score=scored.scores[row],
            probability=_probability(scored.scores[row], log_z),
        )
        if scored.marginals is not None:
            distributions = scored.marginals[row]
            columns = [self.output_tags.index(tag) for tag in output]
            prediction.token_probs = [d[c] for d, c in zip(distributions, columns, strict=True)]
            if probs == "all":
                prediction.marginals = [
                    dict(zip(self.output_tags, d, strict=True)) for d in distributions
                ]
        if scored.nbest is not None:
            prediction.nbest = [
                {
                    "tags": self._output_tags(path),
                    "score": score,
                    "probability": _probability(score, log_z),
                }
                for path, score in scored.nbest[row]
            ]
        return prediction


def existing_paths(
    paths: list[list[list[int]]],
    scores: list[list[float]],
    lengths: list[int],
    exact_scores: list[list[float]],
) -> list[list[tuple[list[int], float]]]:
    """The n-best lists of a batch, paths (B, n, T) and the decoder's scores (B, n) as lists, as
    :attr:`BatchScores.nbest` holds them: each path trimmed to its row's length with its score
    summed in float64 (``exact_scores``), and the missing ones (decoder score -inf: a row with
    fewer than n allowed paths) left out."""
    return [
        [
            (path[:n], exact)
            for path, score, exact in zip(row_paths, row_scores, row_exact, strict=True)
            if score != float("-inf")
        ]
        for row_paths, row_scores, n, row_exact in zip(
            paths, scores, lengths, exact_scores, strict=True
        )
    ]


def _check_scored(scored: BatchScores, source: str) -> None:
    """The CRF's quantities are numbers, and no path scores above log Z (beyond rounding):
    anything else would be printed as NaN or capped into a probability of 1."""
    values = [*scored.scores, *scored.log_z, *(c for row in scored.confidences for c in row)]
    if scored.marginals is not None:
        values += [p for row in scored.marginals for token in row for p in token]
    over = any(
        score - log_z > 1e-6 * max(1.0, abs(log_z))
        for score, log_z in zip(scored.scores, scored.log_z, strict=True)
    )
    if over or not all(math.isfinite(value) for value in values):
        raise CrftagError(
            f"{source}: the CRF's scores on this input overflow or lose their precision (log Z "
            f"{max(scored.log_z, key=abs):.6g}, best path {max(scored.scores, key=abs):.6g}), "
            "so it gives no probabilities; the model's weights are not a trained model's"
        )


def _probability(score: float, log_z: float) -> float:
    """exp(score - log Z), capped at 1 against rounding."""
    return math.exp(min(0.0, score - log_z))


def _empty_prediction(tokens: list[str], probs: str | None, nbest: int) -> Prediction:
    """The record of a sentence before tagging; an empty sentence keeps it: its one (empty) tag
    sequence has probability 1."""
    return Prediction(
        tokens=tokens,
        tags=[],
        token_probs=[] if probs else None,
        marginals=[] if probs == "all" else None,
        nbest=[{"tags": [], "score": 0.0, "probability": 1.0}] if nbest > 1 else None,
    )
