"""benchmarks/lexicon_match.py: dictionary matches as spans, the first type keeping overlaps,
scored against a labelled file."""

import json
import subprocess
import sys

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
