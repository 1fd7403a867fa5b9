"""stderr that cannot take what is written to it: a file, closed (`2>&-`), full (`2>/dev/full`),
a pipe whose reader has left. stderr carries only messages and progress, so train, pretrain and
select do their work all the same: the model, the language models and the selection are written
whole and the exit status is the one the work earns (0 here), with no traceback anywhere."""

import errno
import io
import subprocess
import sys

import pytest

from crftag.modelfiles.checkpoint import load_model

TEXT = "data/sentences.txt"
PRETRAIN_TINY = ["--hidden", "8", "--char-dim", "4", "--epochs", "1", "--device", "cpu"]


class BrokenStderr(io.TextIOBase):
    """A stderr whose every write fails as ``error``; it counts the writes tried."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        raise self.error

    def flush(self) -> None:
        raise self.error


FAILURES = {
    "full": OSError(errno.ENOSPC, "No space left on device"),
    "reader left": BrokenPipeError(errno.EPIPE, "Broken pipe"),
    "closed under it": ValueError("I/O operation on closed file."),
}


def command_line(command, tmp_path, tiny_args, sample_model) -> list[str]:
    """The arguments of ``command`` on the tiny model's settings, progress shown."""
    if command == "train":
        options = [a for a in tiny_args(train__epochs=1) if a != "--quiet"]
        return ["train", "configs/sample.yaml", "-o", str(tmp_path / "out"), *options]
    if command == "pretrain":
        return ["pretrain", TEXT, "-o", str(tmp_path / "out"), *PRETRAIN_TINY]
    return ["select", TEXT, "-n", "3", "-o", str(tmp_path / "out"), "-m", str(sample_model)]


def assert_work_done(command, tmp_path) -> None:
    """What ``command`` writes is there, whole."""
    out = tmp_path / "out"
    if command == "train":
        assert sorted(p.name for p in out.iterdir()) == ["metrics.json", "model.pt"]
        assert load_model(str(out)).config.train.epochs == 1
    elif command == "pretrain":
        assert sorted(p.name for p in out.iterdir()) == ["char_lm.pt", "perplexity.json"]
    else:
        assert len(out.read_text(encoding="utf-8").splitlines()) == 3


COMMANDS = ["train", "pretrain", "select"]


@pytest.mark.parametrize("failure", FAILURES)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_failing_stderr_drops_the_messages_not_the_work(
    invoke, monkeypatch, tmp_path, tiny_args, sample_model, command, failure
):
    stderr = BrokenStderr(FAILURES[failure])
    monkeypatch.setattr(sys, "stderr", stderr)
    result = invoke(command_line(command, tmp_path, tiny_args, sample_model))
    assert (result.status, result.stdout) == (0, "")
    assert stderr.writes == 1  # the first failure ends the writing: nothing more is tried
    assert_work_done(command, tmp_path)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_log_file_as_stderr_gets_every_message(
    invoke, monkeypatch, tmp_path, tiny_args, sample_model, command
):
    with open(tmp_path / "log", "w", encoding="utf-8") as log:
        monkeypatch.setattr(sys, "stderr", log)
        result = invoke(command_line(command, tmp_path, tiny_args, sample_model))
    assert (result.status, result.stdout) == (0, "")
    last = (tmp_path / "log").read_text(encoding="utf-8").splitlines()[-1]
    assert last.startswith(
        {"train": "saved ", "pretrain": "held-out", "select": "crftag: sel"}[command]
    )
    assert_work_done(command, tmp_path)


# The real descriptors, in a process of its own.


def crftag_shell(args: list[str], redirect: str) -> subprocess.CompletedProcess:
    """``crftag ARGS REDIRECT`` run by the shell, its stdout kept."""
    line = " ".join([sys.executable, "-m", "crftag", *args, redirect])
    return subprocess.run(line, shell=True, stdout=subprocess.PIPE, text=True, timeout=300)


def test_train_with_stderr_closed_trains_and_saves_in_silence(tmp_path, tiny_args, sample_model):
    done = crftag_shell(command_line("train", tmp_path, tiny_args, sample_model), "2>&-")
    assert (done.returncode, done.stdout) == (0, "")
    assert_work_done("train", tmp_path)


def test_select_with_stderr_full_writes_its_selection(tmp_path, tiny_args, sample_model):
    done = crftag_shell(command_line("select", tmp_path, tiny_args, sample_model), "2>/dev/full")
    assert (done.returncode, done.stdout) == (0, "")
    assert_work_done("select", tmp_path)


def test_pretrain_whose_stderr_reader_left_finishes(tmp_path, tiny_args, sample_model):
    args = command_line("pretrain", tmp_path, tiny_args, sample_model)
    process = subprocess.Popen(
        [sys.executable, "-m", "crftag", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    process.stderr.close()  # the reader leaves before the first line: every write is EPIPE
    assert process.wait(timeout=300) == 0
    assert process.stdout.read() == ""
    assert_work_done("pretrain", tmp_path)
