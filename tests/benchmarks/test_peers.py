"""benchmarks/peers.py's own pieces, without the peers: CoNLL-2003's IOB1 tags as the IOB2
spaCy takes, the cut corpus of --sentences, and the ratios against the targets."""

import pytest


@pytest.fixture
def peers(load_benchmark):
    return load_benchmark("peers")


def test_iob1_becomes_iob2_entity_for_entity(peers):
    tags = ["I-ORG", "O", "I-MISC", "I-MISC", "B-MISC", "I-PER", "I-LOC", "I-LOC", "O"]
    assert peers.iob2(tags) == [
        "B-ORG", "O", "B-MISC", "I-MISC", "B-MISC", "B-PER", "B-LOC", "I-LOC", "O"
    ]  # fmt: skip


def test_a_cut_corpus_keeps_its_first_sentences_and_document_starts(peers, tmp_path):
    source = tmp_path / "eng.train"
    source.write_text(
        "-DOCSTART- -X- O O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP O\n\n"
        "Peter NNP I-NP I-PER\n\n-DOCSTART- -X- O O\n\nBonn NNP I-NP I-LOC\n",
        encoding="utf-8",
    )
    target = tmp_path / "cut"
    assert peers.write_subset(str(source), str(target), 2) == [["EU", "rejects"], ["Peter"]]
    assert peers.sentence_blocks(str(target)) == [
        ["-DOCSTART- -X- O O"],
        ["EU NNP I-NP I-ORG", "rejects VBZ I-VP O"],
        ["Peter NNP I-NP I-PER"],
    ]
    whole = peers.write_subset(str(source), str(tmp_path / "whole"), None)
    assert whole == [["EU", "rejects"], ["Peter"], ["Bonn"]]


def test_ratios_are_crftag_against_each_peer_from_the_medians(peers):
    files = {"eng.train.tokens": 1000, "eng.testb.tokens": 600}

    def runs(training, tagging):
        return {
            "training_s": training,
            "tagging": [{"command_s": 2 * t, "load_s": 1.0, "tag_s": t} for t in tagging],
        }

    measured = {
        "crftag": runs([1.0, 3.0], [0.1, 0.3]),
        "flair": runs([20.0, 40.0], [1.0, 1.0]),
        "spacy": runs([2.0, 10.0], [0.4, 0.4]),
    }
    found = peers.summary(measured, files)
    assert found["tools"]["crftag"]["training_tokens_per_s"] == 500
    assert found["ratios"]["training_flair"] == pytest.approx(15.0)
    assert found["ratios"]["training_spacy"] == pytest.approx(3.0)
    assert found["ratios"]["tagging_flair"] == pytest.approx(5.0)
    assert found["ratios"]["tagging_spacy"] == pytest.approx(2.0)
    assert found["targets_met"] == {
        "training_flair": True,
        "training_spacy": True,
        "tagging_flair": True,
        "tagging_spacy": False,
    }
