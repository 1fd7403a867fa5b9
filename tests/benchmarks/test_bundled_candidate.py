"""benchmarks/bundled_candidate.py: a candidate file against today's bundled one, its size and
speeds taken in alternating pairs, each held to the 5% margin."""

import json
import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def bundled_candidate(load_benchmark):
    return load_benchmark("bundled_candidate")


def test_a_copy_of_todays_file_is_measured_against_it(bundled_candidate, monkeypatch, tmp_path):
    blocks = Path("data/ewt_sample.dev.conllu").read_text(encoding="utf-8").split("\n\n")
    test = tmp_path / "test.conllu"
    test.write_text("\n\n".join(blocks[:40]) + "\n", encoding="utf-8")
    corpus = bundled_candidate.CORPORA["pos"]
    monkeypatch.setitem(
        bundled_candidate.CORPORA, "pos", corpus._replace(files={"test": str(test)})
    )
    candidate = tmp_path / "en-pos.npz"
    shutil.copyfile(Path(bundled_candidate.MODELS_DIR) / "en-pos.npz", candidate)
    results = tmp_path / "results.json"
    status = bundled_candidate.main(
        ["en-pos", str(candidate), "--rounds", "1", "--starts", "1", "--json", str(results)]
    )
    entry = json.loads(results.read_text(encoding="utf-8"))["en-pos"]
    assert entry["bytes"]["candidate"] == entry["bytes"]["today"] == candidate.stat().st_size
    assert entry["bytes"]["ratio"] == 1.0
    words = sum(
        1
        for block in blocks[:40]
        for line in block.splitlines()
        if line and not line.startswith("#") and line.split("\t")[0].isdigit()
    )
    assert entry["tagging"]["tokens"] == words
    assert entry["tagging"]["ratio"] > 0 and entry["one_sentence"]["ratio"] > 0
    assert status == (1 if entry["misses"] else 0)
    assert entry["misses"] == bundled_candidate.misses(entry)


@pytest.mark.parametrize(
    ("size", "tagging", "start", "missed"),
    [
        (1.05, 0.95, 1.05, []),
        (1.06, 1.0, 1.0, ["size"]),
        (1.0, 0.94, 1.0, ["tagging"]),
        (1.0, 1.0, 1.06, ["one sentence"]),
        (0.5, 2.0, 0.5, []),
    ],
)
def test_each_figure_is_held_to_five_per_cent(bundled_candidate, size, tagging, start, missed):
    entry = {
        "bytes": {"ratio": size},
        "tagging": {"ratio": tagging},
        "one_sentence": {"ratio": start},
    }
    found = bundled_candidate.misses(entry)
    assert [miss.split(":")[0] for miss in found] == missed


def test_the_pairs_alternate_which_file_goes_first(bundled_candidate):
    calls = []
    found = bundled_candidate.alternating(lambda name: calls.append(name) or len(calls), 3)
    assert calls == ["today", "candidate", "candidate", "today", "today", "candidate"]
    assert found == {"today": [1, 4, 5], "candidate": [2, 3, 6]}
    assert bundled_candidate.median_ratio(found) == round(sorted([2, 3 / 4, 6 / 5])[1], 3)
