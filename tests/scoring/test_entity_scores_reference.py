"""crftag's entity scores against seqeval's, the reference they are defined by: the per-type,
micro, macro and support-weighted figures of `score` equal seqeval's
`classification_report(..., output_dict=True, zero_division=0)` on the same IOB2 tags, on hand
cases and on random tags; and scoring, `crftag eval` included, does not import scikit-learn or
SciPy (which importing seqeval.metrics does)."""

import math
import subprocess
import sys
import warnings

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from seqeval.metrics import classification_report
from seqeval.metrics.sequence_labeling import get_entities

from crftag.data.schemes import convert, to_spans
from crftag.scoring.evaluate import score

AVERAGES = {"micro avg": "micro", "macro avg": "macro", "weighted avg": "weighted"}


def seqeval_entities(gold, predicted) -> dict:
    """seqeval's report on IOB2 tags, under crftag's keys (NaN as None). seqeval refuses no
    sentences at all (a TypeError), which crftag scores as it scores one empty sentence."""
    if not gold and not predicted:
        gold, predicted = [[]], [[]]
    with warnings.catch_warnings():  # seqeval's macro average of no types: NaN, and a warning
        warnings.simplefilter("ignore", RuntimeWarning)
        report = classification_report(gold, predicted, output_dict=True, zero_division=0)
    entities = {}
    for label, values in report.items():
        if label in AVERAGES:
            key = AVERAGES[label]
        else:
            key = f"type:{label}" if label in AVERAGES.values() else label
        entities[key] = {
            "precision": values["precision"],
            "recall": values["recall"],
            "f1": values["f1-score"],
            "support": values["support"],
        }
    return entities


def assert_same_scores(ours: dict, reference: dict) -> None:
    """The same keys in the same order, supports equal, scores within 1e-12, None for NaN."""
    assert list(ours) == list(reference)
    for key, row in reference.items():
        assert ours[key]["support"] == int(row["support"]), key
        assert isinstance(ours[key]["support"], int)
        for name in ("precision", "recall", "f1"):
            expected, got = float(row[name]), ours[key][name]
            if math.isnan(expected):
                assert got is None, (key, name)
            else:
                assert isinstance(got, float)
                assert got == pytest.approx(expected, abs=1e-12, rel=0), (key, name)
        assert set(ours[key]) == {"precision", "recall", "f1", "support"}


def check(gold, predicted) -> dict:
    """``score``'s entities of raw tags, checked against seqeval on their IOB2 form."""
    entities = score(gold, predicted, tags_are_spans=True)["entities"]
    gold_iob2 = [convert(tags, "iob2") for tags in gold]
    predicted_iob2 = [convert(tags, "iob2") for tags in predicted]
    assert_same_scores(entities, seqeval_entities(gold_iob2, predicted_iob2))
    return entities


@pytest.mark.parametrize(
    ("gold", "predicted"),
    [
        ([], []),
        ([[]], [[]]),
        ([["O", "O"], []], [["O", "O"], []]),
    ],
    ids=["no sentences", "an empty sentence", "only O"],
)
def test_no_entities_at_all(gold, predicted):
    entities = check(gold, predicted)
    assert entities["micro"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert entities["macro"] == {"precision": None, "recall": None, "f1": None, "support": 0}
    assert entities["weighted"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}


def test_seqeval_refuses_no_sentences_which_score_as_no_entities():
    with pytest.raises(TypeError):
        classification_report([], [], output_dict=True, zero_division=0)
    assert (
        score([], [], tags_are_spans=True)["entities"]
        == score([[]], [[]], tags_are_spans=True)["entities"]
    )


def test_gold_without_entities_and_predictions_with_some():
    entities = check([["O", "O", "O"]], [["B-PER", "O", "B-LOC"]])
    assert entities["PER"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert entities["weighted"]["support"] == 0


def test_gold_with_entities_and_no_predictions():
    entities = check([["B-PER", "I-PER", "B-LOC"]], [["O", "O", "O"]])
    assert entities["micro"]["support"] == 2 and entities["micro"]["recall"] == 0.0


def test_a_type_only_in_gold_and_one_only_predicted():
    gold = [["B-PER", "O", "B-LOC", "I-LOC"], ["B-PER"]]
    predicted = [["B-PER", "O", "B-ORG", "I-ORG"], ["B-PER"]]
    entities = check(gold, predicted)
    assert entities["LOC"]["support"] == 1 and entities["LOC"]["recall"] == 0.0
    assert entities["ORG"]["support"] == 0 and entities["ORG"]["precision"] == 0.0
    assert entities["micro"]["f1"] == pytest.approx(2 / 3)


def test_types_named_like_averages_are_kept():
    gold = [["B-micro", "O", "B-macro", "B-weighted", "I-weighted"]]
    predicted = [["B-micro", "O", "B-weighted", "B-weighted", "I-weighted"]]
    entities = check(gold, predicted)
    assert entities["type:micro"]["f1"] == 1.0
    assert entities["type:macro"]["support"] == 1 and entities["type:macro"]["recall"] == 0.0
    assert entities["type:weighted"]["precision"] == 0.5
    assert entities["micro"]["support"] == 3


def test_adjacent_entities_of_one_type_are_two():
    gold = [["B-PER", "B-PER", "I-PER", "O"]]
    predicted = [["B-PER", "I-PER", "I-PER", "O"]]
    entities = check(gold, predicted)
    assert entities["PER"]["support"] == 2 and entities["PER"]["precision"] == 0.0


def test_iob1_input_is_scored_as_its_iob2_form():
    # IOB1: a chunk opens with I-X; B-X only splits two adjacent chunks of X.
    gold = [["I-PER", "I-PER", "B-PER", "O", "I-LOC"], ["I-ORG", "I-LOC"]]
    predicted = [["I-PER", "I-PER", "I-PER", "O", "I-LOC"], ["I-ORG", "I-LOC"]]
    entities = check(gold, predicted)
    assert entities["PER"]["support"] == 2 and entities["PER"]["precision"] == 0.0
    assert entities["micro"]["support"] == 5
    assert entities["micro"]["precision"] == pytest.approx(3 / 4)


TYPES = st.lists(st.sampled_from(["PER", "LOC", "ORG"]), min_size=2, max_size=3, unique=True)


@st.composite
def tag_pairs(draw):
    """Aligned gold and predicted tag lists of 2-3 types, empty sentences and invalid sequences
    (an I-X after O or after another type) included."""
    tags = ["O"] + [f"{prefix}-{name}" for name in draw(TYPES) for prefix in ("B", "I")]
    lengths = draw(st.lists(st.integers(0, 8), max_size=6))
    gold = [draw(st.lists(st.sampled_from(tags), min_size=n, max_size=n)) for n in lengths]
    predicted = [draw(st.lists(st.sampled_from(tags), min_size=n, max_size=n)) for n in lengths]
    return gold, predicted


@given(tag_pairs())
@example(([["I-PER", "B-LOC", "I-PER"], []], [["B-PER", "I-LOC", "I-LOC"], []]))
def test_random_tags_score_as_seqeval(pair):
    gold, predicted = pair
    check(gold, predicted)
    # The chunks counted are seqeval's: to_spans of each IOB2 sentence gives get_entities's
    # chunks of that sentence (seqeval's end is inclusive).
    for tags in gold + predicted:
        iob2 = convert(tags, "iob2")
        ours = [(span.label, span.start, span.end - 1) for span in to_spans(iob2)]
        assert ours == get_entities(iob2)


# Runs `crftag eval` in a fresh interpreter and lists, at exit, which of the modules it loaded.
EVAL_IMPORTS = """
import atexit, sys
atexit.register(lambda: print(sorted({m.split(".")[0] for m in sys.modules} & {
    "sklearn", "scipy", "seqeval"})))
from crftag.cli import main
sys.argv = ["crftag", "eval", "-m", "en-ner", "--json", "data/ner_sample.test.conll"]
main()
"""


def test_crftag_eval_does_not_import_sklearn_or_scipy():
    result = subprocess.run(
        [sys.executable, "-c", EVAL_IMPORTS],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert '"micro"' in result.stdout  # it scored
    assert result.stdout.strip().splitlines()[-1] == "[]"
