"""metrics.json keeps the per-epoch history of a run, as the training log printed it."""

import dataclasses
import json

import pytest

from crftag.training.loop import EpochResult


@pytest.fixture(scope="module")
def metrics(sample_model):
    return json.loads((sample_model / "metrics.json").read_text(encoding="utf-8"))


def test_the_history_has_one_entry_per_epoch_with_every_epoch_field(metrics):
    fields = [field.name for field in dataclasses.fields(EpochResult)]
    assert [row["epoch"] for row in metrics["history"]] == list(range(1, metrics["epochs"] + 1))
    for row in metrics["history"]:
        assert sorted(row) == sorted(fields)
        assert EpochResult(**row).loss == row["loss"]
        assert row["seconds"] > 0 and row["tokens_per_second"] > 0 and row["learning_rate"] > 0


def test_the_history_agrees_with_the_summary(metrics):
    history = metrics["history"]
    assert max(row["dev_score"] for row in history) == metrics["dev"]
    assert [row["epoch"] for row in history if row["best"]][-1] == metrics["best_epoch"]
    assert sum(row["seconds"] for row in history) == pytest.approx(metrics["train_seconds"])
    mean_rate = sum(row["tokens_per_second"] for row in history) / len(history)
    assert mean_rate == pytest.approx(metrics["tokens_per_second"])


def test_every_earlier_key_is_kept(metrics):
    earlier = {"epochs", "best_epoch", "dev", "train_seconds", "tokens_per_second", "device"}
    assert earlier | {"processes", "history"} <= set(metrics)
