"""Dictionaries as token features: the longest entry at each token, BIOES positions, one type
independent of another, entries compared NFKC and case-folded; files read with located errors;
the entries kept in the vocabularies' state, which without dictionaries is as before."""

import pytest

from crftag.data.lexicons import Lexicons, lexicon_arrays, read_lexicons
from crftag.data.vocab import Vocabularies, Vocabulary
from crftag.errors import CrftagError

OUT, BEGIN, INSIDE, END, SINGLE = range(5)


def _lexicons(**entries):
    return Lexicons(
        {name: [tuple(entry.split()) for entry in found] for name, found in entries.items()}
    )


def _positions(letters: str) -> list[int]:
    return ["OBIES".index(letter) for letter in letters]


def test_the_longest_entry_wins_and_matching_resumes_after_it():
    lexicons = _lexicons(LOC=["new york", "new york city", "york"], ORG=["new york times"])
    tokens = ["The", "New", "York", "City", "marathon", "in", "York", "and", "New", "York", "Times"]
    features = lexicons.features(tokens)
    assert [row[0] for row in features] == _positions("OBIEOOSOBEO")
    # the other type is matched on its own: its entry overlaps the first type's
    assert [row[1] for row in features] == [OUT] * 8 + [BEGIN, INSIDE, END]


def test_a_prefix_that_is_no_entry_matches_nothing_and_matching_moves_one_token_on():
    lexicons = _lexicons(ORG=["bank of america", "america"])
    assert [row[0] for row in lexicons.features(["bank", "of", "America"])] == [BEGIN, INSIDE, END]
    found = lexicons.features(["bank", "of", "England", "America"])
    assert [row[0] for row in found] == _positions("OOOS")


def test_entries_and_tokens_are_compared_nfkc_and_case_folded():
    lexicons = _lexicons(CHEM=["Aspirin", "ﬂuoride"])  # a ligature "fl"
    tokens = ["ASPIRIN", "aspirin", "Fluoride", "STRASSE"]
    assert [row[0] for row in lexicons.features(tokens)] == [SINGLE, SINGLE, SINGLE, OUT]


def test_arrays_pad_with_outside_and_hold_every_type():
    lexicons = _lexicons(A=["x"], B=["x y"])
    arrays = lexicon_arrays([["x", "y"], ["x"], []], lexicons)
    assert arrays.shape == (3, 2, 2)
    assert arrays.tolist() == [
        [[SINGLE, BEGIN], [OUT, END]],
        [[SINGLE, OUT], [OUT, OUT]],
        [[OUT, OUT], [OUT, OUT]],
    ]


def test_files_are_read_one_entry_a_line_with_located_errors(tmp_path):
    good = tmp_path / "drugs.txt"
    good.write_text("aspirin\n\n  5-fluorouracil  \nvitamin  C\n", encoding="utf-8")
    lexicons = read_lexicons({"Chemical": str(good)})
    assert lexicons.types == ["Chemical"]
    assert lexicons.lexicons[0].entries == {("aspirin",), ("5-fluorouracil",), ("vitamin", "c")}
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"aspirin\n\xff\xfe\n")
    with pytest.raises(CrftagError, match=r"bad.txt:2: not valid UTF-8"):
        read_lexicons({"Chemical": str(bad)})
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n", encoding="utf-8")
    with pytest.raises(CrftagError, match=r"model.lexicons.Disease: .*empty.txt: no entries"):
        read_lexicons({"Disease": str(empty)})
    with pytest.raises(CrftagError, match=r"model.lexicons.Disease: .*nothing.txt: no such file"):
        read_lexicons({"Disease": str(tmp_path / "nothing.txt")})


def test_the_vocabularies_state_keeps_the_entries_and_is_unchanged_without_them():
    plain = Vocabularies(Vocabulary(["a"]), Vocabulary(["a"]), Vocabulary(["O"], has_unknown=False))
    assert "lexicons" not in plain.to_state()
    decoders = {"lexicons": Lexicons.from_state}
    assert Vocabularies.from_state(plain.to_state(), decoders).resources == {}
    plain.resources["lexicons"] = _lexicons(LOC=["new york", "berlin"], ORG=["acme"])
    again = Vocabularies.from_state(plain.to_state(), decoders).resources["lexicons"]
    assert again.types == ["LOC", "ORG"]
    tokens = ["acme", "in", "New", "York"]
    assert again.features(tokens) == plain.resources["lexicons"].features(tokens)
