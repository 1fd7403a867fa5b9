"""Interruption and resume: a stopped run continues to the model an uninterrupted one gives."""

import json
import signal
import subprocess
import sys
import time

import pytest
import torch

from crftag import cli
from crftag.modelfiles.checkpoint import load_model

# Small batches: many steps an epoch (125), so a signal sent after epoch 1 lands inside epoch 2,
# seconds before its end even on a fast machine.
SMALL_BATCHES = {"train__batch_size": 8, "train__seed": 3}
TIMINGS = ("seconds", "tokens_per_second")  # an epoch's entries in metrics.json that vary


def train_in_process(*args):
    """`crftag train ARGS` in this process, which has paid for its imports already: for the runs
    whose process is not the point (the uninterrupted one, the resume). Only the broken run
    needs a process of its own, to take the signal; that its resume in this process gives the
    uninterrupted model to the bit also shows that nothing a run depends on is left behind in
    the process it stopped in."""
    status = cli.run(["train", *args])
    assert status == 0


def crftag(*args, **kwargs):
    return subprocess.Popen(
        [sys.executable, "-m", "crftag", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def wait_for_line(process, prefix, timeout=120):
    deadline = time.time() + timeout
    lines = []
    while time.time() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith(prefix):
            return lines
    raise AssertionError(f"no line starting {prefix!r} in {lines}")


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory, tiny_args):
    """A function that returns the run directory of an uninterrupted `crftag train` with these
    settings, trained once in the module for each distinct settings (SIGINT and SIGTERM are
    compared with one run)."""
    runs = {}

    def get(settings):
        key = repr(sorted(settings.items()))
        if key not in runs:
            straight = tmp_path_factory.mktemp("straight") / "run"
            options = tiny_args(**SMALL_BATCHES, **settings)
            train_in_process("configs/sample.yaml", "-o", str(straight), *options)
            runs[key] = straight
        return runs[key]

    return get


@pytest.mark.parametrize(
    ("signal_number", "settings"),
    [
        (signal.SIGINT, {}),
        (signal.SIGTERM, {}),
        # The weight average holds epoch 1 when the signal lands and must survive the resume.
        (signal.SIGINT, {"train__average_from": 1}),
        # Augmentation redraws each epoch's text from the seed and the epoch number.
        (
            signal.SIGINT,
            {"augment__lower": 0.3, "augment__upper": 0.2, "augment__typos": 0.5},
        ),
    ],
)
def test_interrupted_and_resumed_run_equals_uninterrupted_run(
    tmp_path, tiny_args, straight_run, signal_number, settings
):
    options = tiny_args(**SMALL_BATCHES, **settings)
    straight = straight_run(settings)

    broken = tmp_path / "broken"
    process = crftag("train", "configs/sample.yaml", "-o", str(broken), *options)
    wait_for_line(process, "epoch   1")
    process.send_signal(signal_number)  # lands somewhere in epoch 2
    assert process.wait(timeout=120) == 128 + signal_number
    message = process.stderr.read()
    assert "Traceback" not in message
    assert f"crftag train --resume {broken}" in message
    assert (broken / "resume.pt").exists()

    train_in_process("--resume", str(broken), "--device", "cpu", "--quiet")
    assert not (broken / "resume.pt").exists()
    expected = json.loads((straight / "metrics.json").read_text())
    got = json.loads((broken / "metrics.json").read_text())
    assert got["dev"] == expected["dev"] and got["test"] == expected["test"]
    assert got["epochs"] == expected["epochs"] == 3
    # Every epoch alike, the resumed rest of epoch 2 and epoch 3 after it too, whichever is best.
    assert [_trained(epoch) for epoch in got["history"]] == [
        _trained(epoch) for epoch in expected["history"]
    ]
    a = torch.load(straight / "model.pt", weights_only=True)["state_dict"]
    b = torch.load(broken / "model.pt", weights_only=True)["state_dict"]
    assert all(torch.equal(a[name], b[name]) for name in a)


def _trained(epoch: dict) -> dict:
    """An epoch's entry in metrics.json without its timings."""
    return {key: value for key, value in epoch.items() if key not in TIMINGS}


def test_kill_9_at_any_moment_leaves_a_loadable_checkpoint(tmp_path, tiny_args):
    run = tmp_path / "run"
    # Epochs of a second or two: the checkpoints are rewritten while they are read and killed.
    options = tiny_args(train__batch_size=16, train__epochs=20, train__patience=0)
    process = crftag("train", "configs/sample.yaml", "-o", str(run), *options)
    deadline = time.time() + 120
    while not (run / "model.pt").exists() and time.time() < deadline:
        time.sleep(0.05)
    for delay in (0.0, 0.37, 0.71, 1.3):  # kill at unrelated moments, some mid-write
        time.sleep(delay)
        assert load_model(str(run)).metrics["epoch"] >= 1
    process.kill()
    process.wait()
    assert load_model(str(run)).metrics["epoch"] >= 1
    assert torch.load(run / "resume.pt", weights_only=True)["format"] == "crftag-resume"


def test_resume_without_a_resume_file_is_a_clear_error(tmp_path, invoke):
    result = invoke(["train", "--resume", str(tmp_path)])
    assert result.status == 2 and "nothing to resume" in result.stderr
