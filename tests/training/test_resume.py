"""Interruption and resume, atomic checkpoints, hostile model files, unseen labels."""

import json
import os
import pickle
import signal
import subprocess
import sys
import time

import pytest
import torch

from crftag.checkpoint import load_model, write_atomically
from crftag.errors import CrftagError

# Small batches: many steps an epoch, so a signal sent after epoch 1 lands inside epoch 2.
SMALL_BATCHES = {"train__batch_size": 4, "train__seed": 3}


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


@pytest.mark.parametrize(
    ("signal_number", "settings"),
    [
        (signal.SIGINT, {}),
        (signal.SIGTERM, {}),
        # The weight average holds epoch 1 when the signal lands and must survive the resume.
        (signal.SIGINT, {"train__average_from": 1}),
    ],
)
def test_interrupted_and_resumed_run_equals_uninterrupted_run(
    tmp_path, tiny_args, signal_number, settings
):
    options = tiny_args(**SMALL_BATCHES, **settings)
    straight = tmp_path / "straight"
    done = crftag("train", "configs/sample.yaml", "-o", str(straight), *options)
    assert done.wait(timeout=300) == 0, done.stderr.read()

    broken = tmp_path / "broken"
    process = crftag("train", "configs/sample.yaml", "-o", str(broken), *options)
    wait_for_line(process, "epoch   1")
    process.send_signal(signal_number)  # lands somewhere in epoch 2
    assert process.wait(timeout=120) == 128 + signal_number
    message = process.stderr.read()
    assert "Traceback" not in message
    assert f"crftag train --resume {broken}" in message
    assert (broken / "resume.pt").exists()

    resumed = crftag("train", "--resume", str(broken), "--device", "cpu", "--quiet")
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read()
    assert not (broken / "resume.pt").exists()
    expected = json.loads((straight / "metrics.json").read_text())
    got = json.loads((broken / "metrics.json").read_text())
    assert got["dev"] == expected["dev"] and got["test"] == expected["test"]
    assert got["epochs"] == expected["epochs"] == 3
    a = torch.load(straight / "model.pt", weights_only=True)["state_dict"]
    b = torch.load(broken / "model.pt", weights_only=True)["state_dict"]
    assert all(torch.equal(a[name], b[name]) for name in a)


def test_kill_9_at_any_moment_leaves_a_loadable_checkpoint(tmp_path, tiny_args):
    run = tmp_path / "run"
    options = tiny_args(train__batch_size=4, train__epochs=20, train__patience=0)
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


def test_atomic_write_keeps_the_old_file_when_a_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "model.pt"
    write_atomically(str(path), {"format": "old"})

    def failing_save(payload, stream):
        stream.write(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", failing_save)
    with pytest.raises(OSError):
        write_atomically(str(path), {"format": "new"})
    monkeypatch.undo()
    assert torch.load(path, weights_only=True) == {"format": "old"}
    assert os.listdir(tmp_path) == ["model.pt"]  # no temporary file left behind


class Payload:
    """Unpickling this runs a shell command, as a malicious model file would."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_model_file_that_runs_code_when_unpickled_is_refused(tmp_path, invoke):
    marker = tmp_path / "pwned"
    hostile = tmp_path / "model.pt"
    torch.save({"format": "crftag", "payload": Payload(str(marker))}, hostile)
    with pytest.raises(CrftagError, match="refused"):
        load_model(str(hostile))
    result = invoke(["predict", "-m", str(hostile)], stdin="a b\n")
    assert result.status == 2 and "refused" in result.stderr
    assert not marker.exists()
    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle.dumps(Payload(str(marker))))
    assert invoke(["eval", "data/ner_sample.dev.conll", "-m", str(plain)]).status == 2
    assert not marker.exists()


def test_truncated_random_and_newer_checkpoints_give_clear_errors(tmp_path, sample_model, invoke):
    data = (sample_model / "model.pt").read_bytes()
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(data[: len(data) // 2])
    noise = tmp_path / "noise.pt"
    noise.write_bytes(os.urandom(4096))
    newer = tmp_path / "newer.pt"
    state = torch.load(sample_model / "model.pt", weights_only=True)
    state["format_version"] = 99
    torch.save(state, newer)
    for path, message in (
        (truncated, "not a loadable"),
        (noise, "not a loadable"),
        (newer, "checkpoint format 99 is newer"),
    ):
        result = invoke(["predict", "-m", str(path)], stdin="a\n")
        assert result.status == 2, result.stderr
        assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_labels_unseen_in_training_are_errors_not_crashes(tmp_path, sample_model, invoke):
    gold = tmp_path / "gold.conll"
    gold.write_text("Anna B-PER\nsings O\nin O\nBaku B-GPE\n\nBob B-PER\n")
    result = invoke(["eval", str(gold), "-m", str(sample_model), "--json"])
    assert result.status == 0
    assert result.stderr.count("labels never seen in training") == 1
    assert "GPE" in result.stderr
    scores = json.loads(result.stdout)
    assert scores["entities"]["GPE"]["recall"] == 0.0


def test_resume_without_a_resume_file_is_a_clear_error(tmp_path, invoke):
    result = invoke(["train", "--resume", str(tmp_path)])
    assert result.status == 2 and "nothing to resume" in result.stderr


PEAK_RSS = (
    "import resource, sys\n"
    "from crftag import cli\n"
    "status = cli.run(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(status)\n"
)


def peak_rss_kb(model, lines, tmp_path, output_format="conll"):
    source = tmp_path / f"in{lines}.txt"
    with open(source, "w", encoding="utf-8") as handle:
        for i in range(lines):
            handle.write(f"Anna Smith {i} lives in Berlin and works for Siemens .\n")
    with open(source, "rb") as stdin:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                PEAK_RSS,
                "predict",
                "-m",
                str(model),
                "--format",
                output_format,
            ],
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=True,
        )
    return int(done.stderr.strip().splitlines()[-1])


def test_predict_streams_in_bounded_memory(sample_model, tmp_path):
    small = peak_rss_kb(sample_model, 1_000, tmp_path, "jsonl")
    large = peak_rss_kb(sample_model, 20_000, tmp_path, "jsonl")
    assert large <= 1.2 * small, (small, large)


@pytest.mark.slow
def test_a_million_sentences_in_bounded_memory(sample_model, tmp_path):
    small = peak_rss_kb(sample_model, 10_000, tmp_path)
    large = peak_rss_kb(sample_model, 1_000_000, tmp_path)
    assert large <= 1.2 * small, (small, large)
