"""Selection scores against brute force: every tag path of short sentences enumerated in float64
under the tiny model's own emissions and transitions, and the scores and orders the strategies
give compared with those computed from the enumeration."""

import itertools
import math

import numpy as np
import pytest
import torch

from crftag.data.batching import build_batch
from crftag.data.schemes import Span, to_spans
from crftag.inference.loading import load
from crftag.inference.records import Prediction
from crftag.inference.selection import (
    MAX_MENTION_REPEATS,
    STRATEGIES,
    Candidate,
    Selection,
    prediction_options,
    unit_key,
    unit_score,
)

SENTENCES = [
    ["John", "Smith"],
    ["Paris", "is", "big"],
    ["He", "went", "to", "London"],
    ["The", "Acme", "Corp"],
    ["Germany"],
    ["Yesterday", "Maria", "left"],
    ["Siemens", "rose", "in", "Tokyo"],
    ["zzq", "qqx"],
]


@pytest.fixture(scope="module")
def tagger(sample_model):
    return load(str(sample_model), "cpu")


def enumerate_paths(tagger, tokens):
    """(paths (P, T), their probabilities (P,)) of every tag path of ``tokens``, float64."""
    model = tagger.model.eval()
    crf = model.crf
    minus_inf = torch.tensor(-math.inf, dtype=torch.float64)
    with torch.no_grad():
        emissions = model.emissions(build_batch([tokens], tagger.vocabularies))[0].double()
        transitions = torch.where(crf.allowed, crf.transitions.double(), minus_inf).numpy()
        start = torch.where(crf.allowed_start, crf.start_transitions.double(), minus_inf).numpy()
        end = torch.where(crf.allowed_end, crf.end_transitions.double(), minus_inf).numpy()
    emissions = emissions.numpy()
    count, length = emissions.shape[1], len(tokens)
    paths = np.array(list(itertools.product(range(count), repeat=length)))
    scores = start[paths[:, 0]] + end[paths[:, -1]]
    for position in range(length):
        scores = scores + emissions[position, paths[:, position]]
        if position:
            scores = scores + transitions[paths[:, position - 1], paths[:, position]]
    finite = np.isfinite(scores)
    paths, scores = paths[finite], scores[finite]
    probabilities = np.exp(scores - np.logaddexp.reduce(scores))
    return paths, probabilities


def predicted(tagger, strategy):
    return tagger.predict(SENTENCES, **prediction_options(strategy))


def scores_of(tagger, strategy, normalize=True):
    return [
        unit_score(strategy, [p], normalize=normalize, key=unit_key(p.tokens), seed=0)
        for p in predicted(tagger, strategy)
    ]


def order(values):
    return sorted(range(len(values)), key=lambda i: (-values[i], i))


@pytest.mark.parametrize("normalize", [True, False])
def test_least_confidence_matches_enumerated_paths(tagger, normalize):
    expected = []
    for tokens in SENTENCES:
        _, probabilities = enumerate_paths(tagger, tokens)
        best = probabilities.max()
        expected.append(-math.log(best) / len(tokens) if normalize else 1.0 - best)
    found = scores_of(tagger, "least-confidence", normalize)
    assert found == pytest.approx(expected, rel=1e-6, abs=1e-9)
    assert order(found) == order(expected)
    assert len(set(np.round(expected, 6))) == len(expected)  # no near ties: the order says much


def test_margin_matches_enumerated_paths(tagger):
    expected = []
    for tokens in SENTENCES:
        _, probabilities = enumerate_paths(tagger, tokens)
        first, second = np.sort(probabilities)[::-1][:2]
        expected.append(1.0 - (first - second))
    found = scores_of(tagger, "margin")
    assert found == pytest.approx(expected, rel=1e-6, abs=1e-9)
    assert order(found) == order(expected)


@pytest.mark.parametrize("normalize", [True, False])
def test_entropy_matches_marginals_of_enumerated_paths(tagger, normalize):
    expected = []
    for tokens in SENTENCES:
        paths, probabilities = enumerate_paths(tagger, tokens)
        columns = np.array(tagger._output_columns)[paths]  # each path's output tag ids
        total = 0.0
        for position in range(len(tokens)):
            marginal = np.bincount(
                columns[:, position], probabilities, minlength=len(tagger.output_tags)
            )
            total -= sum(p * math.log(p) for p in marginal if p > 0)
        expected.append(total / len(tokens) if normalize else total)
    found = scores_of(tagger, "entropy", normalize)
    assert found == pytest.approx(expected, rel=1e-5, abs=1e-9)
    assert order(found) == order(expected)


def test_span_score_is_the_least_confident_span_by_enumeration(tagger):
    found = scores_of(tagger, "span")
    for tokens, prediction, score in zip(SENTENCES, predicted(tagger, "span"), found, strict=True):
        paths, probabilities = enumerate_paths(tagger, tokens)
        symbols = tagger.tag_symbols
        spans_of_paths = [set(to_spans([symbols[t] for t in path])) for path in paths]
        confidences = [
            sum(
                p
                for p, spans in zip(probabilities, spans_of_paths, strict=True)
                if Span(s["start"], s["end"], s["label"]) in spans
            )
            for s in prediction.spans
        ]
        assert score == pytest.approx(1.0 - min(confidences, default=1.0), abs=1e-6)


def test_a_document_combines_its_sentences_as_independent_chains(tagger):
    """A document's best and second-best paths are those of the product distribution of its
    sentences, enumerated as pairs."""
    first, second = SENTENCES[2], SENTENCES[6]
    _, p_first = enumerate_paths(tagger, first)
    _, p_second = enumerate_paths(tagger, second)
    joint = np.sort(np.outer(p_first, p_second).ravel())[::-1]
    parts = tagger.predict([first, second], nbest=2)
    score = unit_score("margin", parts, normalize=True, key="k", seed=0)
    assert score == pytest.approx(1.0 - (joint[0] - joint[1]), rel=1e-6)
    least = unit_score("least-confidence", parts, normalize=True, key="k", seed=0)
    assert least == pytest.approx(-math.log(joint[0]) / (len(first) + len(second)), rel=1e-6)


def test_prediction_options_ask_only_for_what_the_strategy_needs():
    assert prediction_options("entropy") == {"probs": "all", "nbest": 1}
    assert prediction_options("margin") == {"probs": None, "nbest": 2}
    assert prediction_options("random") == {"probs": None, "nbest": 1}
    with pytest.raises(ValueError, match="expected strategy"):
        prediction_options("loudest")


def test_random_draws_are_fixed_by_content_and_seed():
    empty = [Prediction(tokens=["a"], tags=["O"])]
    draws = [unit_score("random", empty, normalize=True, key=str(i), seed=0) for i in range(200)]
    assert all(0.0 <= draw < 1.0 for draw in draws)
    assert 0.4 < sum(draws) / len(draws) < 0.6
    again = [unit_score("random", empty, normalize=True, key=str(i), seed=0) for i in range(200)]
    other = [unit_score("random", empty, normalize=True, key=str(i), seed=1) for i in range(200)]
    assert draws == again and draws != other


def test_unit_key_depends_on_the_tokens_alone():
    assert unit_key(["New", "York"]) == unit_key(("New", "York"))
    assert unit_key(["New", "York"]) != unit_key(["New York"])


def candidate(score, order, tokens, mentions=()):
    spans = [{"text": m, "label": "X", "confidence": 0.5} for m in mentions]
    return Candidate(score, order, unit_key(tokens), " ".join(tokens), tokens, spans, 0.5, "f:1")


def test_the_heap_keeps_the_best_of_a_stream_each_id_once():
    rng = np.random.default_rng(0)
    scores = rng.random(500)
    selection = Selection(7)
    for i, score in enumerate(scores):
        selection.offer(candidate(float(score), i, [f"w{i}"]))
    best = order(list(scores))[0]
    selection.offer(candidate(2.0, 500, [f"w{best}"]))  # a repeat of a kept unit's tokens
    chosen = selection.chosen()
    assert [c.order for c in chosen] == order(list(scores))[:7]
    assert len(selection._heap) == 7


def test_ties_go_to_the_earlier_unit():
    selection = Selection(2)
    for i in range(5):
        selection.offer(candidate(1.0, i, [f"w{i}"]))
    assert [c.order for c in selection.chosen()] == [0, 1]


def test_diverse_passes_over_near_duplicates_and_holds_back_repeated_mentions():
    selection = Selection(4, diverse=True)
    stream = [
        candidate(0.9, 0, ["Won", "3-1", "on", "Sunday"]),
        candidate(0.89, 1, ["won", "2-0", "on", "Sunday"]),  # the same shape: passed over
        candidate(0.8, 2, ["Jordan", "a"], ["Jordan"]),
        candidate(0.79, 3, ["Jordan", "b"], ["Jordan"]),
        candidate(0.78, 4, ["Jordan", "c"], ["jordan"]),  # a third Jordan: held back
        candidate(0.5, 5, ["Other", "news"]),
    ]
    for item in stream:
        selection.offer(item)
    assert MAX_MENTION_REPEATS == 2
    assert [c.order for c in selection.chosen()] == [0, 2, 3, 5]
    short = Selection(5, diverse=True)
    for item in stream:
        short.offer(item)
    assert [c.order for c in short.chosen()] == [0, 2, 3, 4, 5]  # held back, then filling


def test_every_strategy_scores_an_empty_spanless_sentence(tagger):
    for strategy in STRATEGIES:
        parts = tagger.predict([["the"]], **prediction_options(strategy))
        assert math.isfinite(unit_score(strategy, parts, normalize=True, key="k", seed=0))
