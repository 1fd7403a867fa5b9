"""benchmarks/contention.py's verdicts: which targets a report misses, and how the quiet epochs
read in benchmarks/RESULTS.md."""

import pytest


@pytest.fixture(scope="module")
def contention(load_benchmark):
    return load_benchmark("contention")


def report(train_busy=1.1, pair=1.2, epoch_ratio=0.97, other=1.4):
    return {
        "commands": {
            "train": {
                "alone_s": 7.0,
                "beside busy loop": train_busy,
                "beside crftag training": 1.0,
            },
            "eval": {"alone_s": 4.9, "beside busy loop": other, "beside crftag training": 1.3},
        },
        "two_trainings_at_once": {"walls_s": [[8.0, 8.3]], "slower_of_the_two": pair},
        "quiet_epoch": {
            "tokens_per_s": {
                "no setting": [25000, 25500],
                "OpenMP's pool, GOMP_SPINCOUNT=300000": [26000, 26100],
            },
            "ratio": epoch_ratio,
            "target_ratio": 0.95,
        },
    }


def test_a_report_within_every_target_misses_none(contention):
    assert contention.missed_targets(report()) == []


@pytest.mark.parametrize(
    ("settings", "missed"),
    [
        ({"train_busy": 2.1}, "train beside a busy loop: 2.1x > 2.0x"),
        ({"pair": 1.6}, "two trainings at once: 1.6x > 1.5x"),
        ({"epoch_ratio": 0.9}, "quiet epoch: 0.9x < 0.95x"),
        ({"other": 2.6}, "eval beside busy loop: 2.6x > 2.5x"),
    ],
)
def test_each_missed_target_is_named(contention, settings, missed):
    assert contention.missed_targets(report(**settings)) == [missed]


def test_the_quiet_epochs_read_as_one_sentence(contention):
    line = contention.epoch_line(report())
    assert (
        "no setting: 25,000 / 25,500; OpenMP's pool, GOMP_SPINCOUNT=300000: 26,000 / 26,100" in line
    )
    assert "0.97x" in line and ">= 0.95x" in line
    assert contention.epoch_line({**report(), "quiet_epoch": None}) == ""
