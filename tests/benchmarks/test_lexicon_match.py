"""benchmarks/lexicon_match.py: dictionary matches as spans, the first type keeping overlaps,
scored against a labelled file."""

import json
import subprocess
import sys
from types import SimpleNamespace

from crftag.data.lexicons import Lexicons
from crftag.data.schemes import Span


def test_matches_become_spans_and_the_first_type_keeps_an_overlap(load_benchmark):
    bench = load_benchmark("lexicon_match")
    lexicons = Lexicons({"Chemical": [("lithium",)], "Disease": [("lithium", "toxicity")]})
    tokens = ["Lithium", "toxicity", "and", "lithium", "."]
    assert bench.matched_spans(tokens, lexicons) == [
        Span(0, 1, "Chemical"),
        Span(3, 4, "Chemical"),
    ]
    swapped = Lexicons({"Disease": [("lithium", "toxicity")], "Chemical": [("lithium",)]})
    assert bench.matched_spans(tokens, swapped) == [Span(0, 2, "Disease"), Span(3, 4, "Chemical")]


def test_the_command_scores_the_matches(tmp_path):
    test = tmp_path / "test.conll"
    test.write_text("Lithium B-Chemical\ntoxicity O\nin O\nrats O\n", encoding="utf-8")
    chemicals = tmp_path / "chemicals.txt"
    chemicals.write_text("lithium\nrats\n", encoding="utf-8")
    command = [sys.executable, "benchmarks/lexicon_match.py", str(test), f"Chemical={chemicals}"]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    micro = json.loads(done.stdout)["micro"]
    assert (micro["precision"], micro["recall"]) == (0.5, 1.0)


def _sentence(tagged: str) -> SimpleNamespace:
    """A labelled sentence from ``word/TAG`` pairs."""
    tokens, tags = zip(*(pair.rsplit("/", 1) for pair in tagged.split()), strict=True)
    return SimpleNamespace(tokens=tokens, tags=tags)


def test_seen_counts_the_test_entities_the_dictionary_and_the_training_set_hold(load_benchmark):
    bench = load_benchmark("lexicon_match")
    test = [
        _sentence("Lithium/B-Chemical toxicity/O in/O Aspirin/B-Chemical users/O"),
        _sentence("Renal/B-Disease failure/I-Disease"),
    ]
    # renal failure is labelled there, but as another type
    train = [_sentence("lithium/B-Chemical and/O renal/B-Chemical failure/I-Chemical")]
    lexicons = Lexicons(
        {"Chemical": [("lithium",), ("aspirin",)], "Disease": [("renal", "failure")]}
    )
    assert bench.seen_in_training(test, train, lexicons) == {
        "test_entities": 3,
        "labelled_in_training": 1,
        "held_by_dictionaries": 3,
        "held_and_labelled_in_training": 1,
    }
