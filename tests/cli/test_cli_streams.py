"""The reader of a command's output going away: every command that writes to stdout stops
quietly with status 0 (`crftag eval --json A B | head -c 5`), as predict always has."""

import subprocess
import sys

import pytest

DEV, TEST = "data/ner_sample.dev.conll", "data/ner_sample.test.conll"


def with_the_reader_gone(args):
    """``crftag ARGS`` whose stdout is a pipe closed before it writes anything."""
    process = subprocess.Popen(
        [sys.executable, "-m", "crftag", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()
    stderr = process.stderr.read().decode()
    return process.wait(timeout=180), stderr


@pytest.mark.parametrize(
    "command",
    [
        ["eval", "--json", DEV, TEST],
        ["eval", DEV],
        ["predict", DEV, "--input-format", "tokens"],
        ["convert", DEV, "-", "--to", "jsonl"],
    ],
    ids=["eval-json", "eval-table", "predict", "convert"],
)
def test_every_command_ends_quietly_when_its_reader_goes_away(sample_model, command):
    args = [*command, "-m", str(sample_model)] if command[0] != "convert" else command
    status, stderr = with_the_reader_gone(args)
    assert (status, stderr) == (0, "")
