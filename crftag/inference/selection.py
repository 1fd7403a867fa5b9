"""Choosing what to annotate next: the sentences (or documents) a model is least sure of.

Every strategy scores a unit (a sentence, or a document of sentences) from what the tagger
already computes exactly (:meth:`TaggerBase.predict`): the best path's probability, the n best
paths, the token marginals and the spans' confidences. A higher score means more worth
annotating. A document's sentences are independent chains of the CRF, so a document's
quantities are those of its sentences combined: probabilities multiply, log-probabilities,
entropies and lengths add up.

least-confidence  1 - P(y* | x); normalised by length, -log P(y* | x) / n: the maximum
                  normalised log-probability (MNLP) of Shen et al. (2017)
margin            1 - (P(y*) - P(y2)), y2 the second-best path (Scheffer et al. 2001)
entropy           the token marginals' entropy, summed over tokens; normalised, its mean (the
                  token entropy of Settles & Craven 2008)
span              1 - the lowest confidence of a predicted span; 0 for a unit without spans
random            a uniform draw fixed by the unit's content and the seed: the baseline

The N best of a stream are kept in a heap of N (:class:`Selection`), so memory does not grow
with the input.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from crftag.inference.records import Prediction

__all__ = [
    "DIVERSE_POOL",
    "MAX_MENTION_REPEATS",
    "STRATEGIES",
    "Candidate",
    "Selection",
    "prediction_options",
    "unit_key",
    "unit_score",
]

STRATEGIES = ("least-confidence", "margin", "entropy", "span", "random")
DIVERSE_POOL = 5  # with diversity, this many candidates per place are kept to choose from
MAX_MENTION_REPEATS = 2  # with diversity, units that may share one predicted entity mention


def prediction_options(strategy: str) -> dict:
    """What :meth:`TaggerBase.predict` must compute for ``strategy``: marginals for entropy,
    the two best paths for margin, nothing more for the others."""
    if strategy not in STRATEGIES:
        raise ValueError(f"expected strategy in {STRATEGIES}, got {strategy!r}")
    return {
        "probs": "all" if strategy == "entropy" else None,
        "nbest": 2 if strategy == "margin" else 1,
    }


def unit_key(tokens: Sequence[str]) -> str:
    """A unit's stable id: a hash of its tokens alone, so the same sentence has the same id in
    any file, format or position (and a text line and its CoNLL rendering agree)."""
    digest = hashlib.sha1("\n".join(tokens).encode("utf-8"), usedforsecurity=False)
    return digest.hexdigest()[:16]


def unit_score(
    strategy: str, parts: Sequence[Prediction], *, normalize: bool, key: str, seed: int
) -> float:
    """The score of a unit whose sentences were predicted as ``parts`` (one for a sentence);
    higher is more worth annotating. ``normalize`` divides by the number of tokens where the
    literature does (least-confidence, entropy); ``key`` and ``seed`` fix the random draw."""
    length = sum(len(part.tokens) for part in parts)
    if strategy == "random":
        digest = hashlib.sha1(f"{seed}\n{key}".encode(), usedforsecurity=False).digest()
        return int.from_bytes(digest[:8], "big") / 2**64
    if strategy == "least-confidence":
        log_best = sum(_log(part.probability) for part in parts)
        return -log_best / length if normalize else -math.expm1(log_best)
    if strategy == "margin":
        return 1.0 - _margin(parts)
    if strategy == "entropy":
        total = sum(_entropy(marginal) for part in parts for marginal in part.marginals)
        return total / length if normalize else total
    if strategy == "span":
        confidences = [span["confidence"] for part in parts for span in part.spans]
        return 1.0 - min(confidences, default=1.0)
    raise ValueError(f"expected strategy in {STRATEGIES}, got {strategy!r}")


def _log(probability: float) -> float:
    """log p; a probability that underflowed to 0 is -inf (ranked least confident of all)."""
    return math.log(probability) if probability > 0 else -math.inf


def _margin(parts: Sequence[Prediction]) -> float:
    """P(y*) - P(y2) of a unit of independent sentences: its second-best path is its best
    with the one sentence swapped for that sentence's second best whose ratio P2/P1 is
    largest. A sentence with a single allowed path has no second best (ratio 0)."""
    best = math.exp(sum(_log(part.probability) for part in parts))
    ratio = 0.0
    for part in parts:
        paths = part.nbest or []
        if len(paths) > 1 and paths[0]["probability"] > 0:
            ratio = max(ratio, paths[1]["probability"] / paths[0]["probability"])
    return best * (1.0 - ratio)


def _entropy(distribution: dict[str, float]) -> float:
    """-sum p log p of one token's marginal distribution over the output tags."""
    return -sum(p * math.log(p) for p in distribution.values() if p > 0)


@dataclass
class Candidate:
    """A unit worth considering, with what its record needs.

    score     the strategy's score (higher: more worth annotating)
    order     its position in the input (the earlier wins a tie)
    id        :func:`unit_key` of its tokens
    text      the text annotated: the input line, the tokens joined by spaces, or a document
    tokens    its tokens (all the sentences' tokens of a document)
    spans     the predicted spans: ``start_char``, ``end_char``, ``label``, ``text``,
              ``confidence``
    probability  P(y* | x) of the whole unit
    source    ``file:line`` where the unit is
    whole_document  a document (its tokens are not written with the record: reading it back
              splits its text into sentences and tokens again)
    """

    score: float
    order: int
    id: str
    text: str
    tokens: list[str]
    spans: list[dict]
    probability: float
    source: str
    whole_document: bool = False

    def ranking(self) -> tuple[float, int]:
        """Sort key: the higher score first, then the earlier unit."""
        return (-self.score, self.order)


class Selection:
    """The ``count`` best candidates of a stream, in a heap of ``count`` (``DIVERSE_POOL``
    times that with ``diverse``), each id at most once.

    With ``diverse``, :meth:`chosen` takes candidates best first but passes over one whose
    tokens, lowercased and with digits as 0, repeat a chosen one's (a near-identical
    sentence), and defers one that shares a predicted entity mention (lowercased) with
    ``MAX_MENTION_REPEATS`` chosen units; deferred candidates fill the places left.
    """

    def __init__(self, count: int, diverse: bool = False) -> None:
        if count < 1:
            raise ValueError(f"expected count >= 1, got {count}")
        self.count = count
        self.diverse = diverse
        self.capacity = count * (DIVERSE_POOL if diverse else 1)
        self._heap: list[tuple[float, int, Candidate]] = []
        self._ids: set[str] = set()

    def offer(self, candidate: Candidate) -> None:
        """Keep ``candidate`` if it is among the best seen so far."""
        if candidate.id in self._ids:
            return
        # A min-heap on (score, -order): its root is the weakest kept, the later on a tie.
        entry = (candidate.score, -candidate.order, candidate)
        if len(self._heap) < self.capacity:
            heapq.heappush(self._heap, entry)
        elif entry[:2] > self._heap[0][:2]:
            dropped = heapq.heapreplace(self._heap, entry)[2]
            self._ids.discard(dropped.id)
        else:
            return
        self._ids.add(candidate.id)

    def chosen(self) -> list[Candidate]:
        """The chosen candidates, best first."""
        ranked = sorted((entry[2] for entry in self._heap), key=Candidate.ranking)
        if not self.diverse:
            return ranked[: self.count]
        return _diverse(ranked, self.count)


def _diverse(ranked: list[Candidate], count: int) -> list[Candidate]:
    chosen: list[Candidate] = []
    deferred: list[Candidate] = []
    shapes: set[tuple[str, ...]] = set()
    mentions: Counter[str] = Counter()
    for candidate in ranked:
        if len(chosen) == count:
            break
        shape = _shape(candidate.tokens)
        if shape in shapes:
            continue
        own = {span["text"].lower() for span in candidate.spans}
        if any(mentions[mention] >= MAX_MENTION_REPEATS for mention in own):
            deferred.append(candidate)
            continue
        chosen.append(candidate)
        shapes.add(shape)
        mentions.update(own)
    chosen.extend(deferred[: count - len(chosen)])
    return sorted(chosen, key=Candidate.ranking)


def _shape(tokens: Sequence[str]) -> tuple[str, ...]:
    """Tokens lowercased, digits as 0: near-identical sentences (scores, dates) share it."""
    return tuple("".join("0" if c.isdigit() else c for c in token.lower()) for token in tokens)
