"""benchmarks/unseen_entities.py: which gold entities training never saw, and scores per group."""

import json
import os
import sys

import pytest


@pytest.fixture(scope="module")
def unseen(load_benchmark):
    return load_benchmark("unseen_entities")


def test_entities_follow_conlleval_spans_and_keep_their_words(unseen):
    tokens = ["John", "Smith", "met", "Acme", "Corp", "."]
    # IOB1: the I- run opens a chunk; a new type splits it
    tags = ["I-PER", "I-PER", "O", "I-ORG", "B-ORG", "O"]
    assert unseen.entities([(tokens, tags)]) == {
        (0, 0, 2, "PER", ("John", "Smith")),
        (0, 3, 4, "ORG", ("Acme",)),
        (0, 4, 5, "ORG", ("Corp",)),
    }


def test_prf_counts_exact_matches(unseen):
    gold = {(0, 0, 1, "PER", ("A",)), (0, 2, 3, "LOC", ("B",))}
    predicted = {(0, 0, 1, "PER", ("A",)), (0, 2, 3, "ORG", ("B",)), (1, 0, 1, "PER", ("C",))}
    result = unseen.prf(gold, predicted)
    assert (result["gold"], result["predicted"]) == (2, 3)
    assert result["precision"] == pytest.approx(1 / 3)
    assert result["recall"] == pytest.approx(1 / 2)
    assert result["f1"] == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))
    assert unseen.prf(set(), set())["f1"] == 0.0


def test_unseen_means_no_training_entity_with_the_same_label_and_words(
    unseen, tmp_path, monkeypatch, capsys
):
    train = tmp_path / "train.conll"
    train.write_text("John B-PER\nlives O\nin O\nParis B-LOC\n\nWashington B-PER\n")
    evaluated = tmp_path / "eval.conll"
    # John (seen as PER), Paris (seen as LOC), Washington as LOC (seen only as PER), Mary (new)
    evaluated.write_text("John B-PER\nand O\nMary B-PER\n\nParis B-LOC\nWashington B-LOC\n")
    monkeypatch.setattr(
        sys, "argv", ["unseen_entities.py", "--train", str(train), "--eval", str(evaluated)]
    )
    unseen.main()
    report = json.loads(capsys.readouterr().out)
    result = report["files"][os.path.normpath(str(evaluated))]
    assert (result["entities"], result["unseen"]) == (4, 2)
    assert result["unseen_share"] == 0.5
