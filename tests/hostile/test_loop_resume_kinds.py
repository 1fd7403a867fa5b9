"""The resume files of the shared training loop given to the other command, or found with their
data changed: a `crftag train` run's resume.pt to `pretrain --resume` and a pretraining's to
`train --resume`; a pretraining resumed after its text changed, went, or became a FIFO; resume
files of an older crftag. Each is one line naming the file with exit status 2, and the run
directory is left as it was, so the right command still continues it; or, where the text is the
same lines (compressed since), the run continues."""

import gzip
import os
import shutil
import signal

import pytest
import torch
from hostile_files import assert_refused, snapshot, stopped_pretraining

from crftag import cli
from crftag.modelfiles.checkpoint import write_checkpoint
from crftag.training import run as training_run

LINES = "".join(f"Line {i} of a text about Berlin and Paris .\n" for i in range(40)).encode()
RESUME = ["--device", "cpu", "--quiet"]


@pytest.fixture(scope="module")
def stopped_training(tmp_path_factory, tiny_args):
    """A `crftag train` run stopped by SIGTERM after its first batch: model-less, resume.pt."""
    directory = tmp_path_factory.mktemp("train") / "run"

    class StopAtOnce(training_run.StopSignals):
        def __call__(self):
            return signal.SIGTERM if self._deferred else None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(training_run, "StopSignals", StopAtOnce)
        args = ["train", "configs/sample.yaml", "-o", str(directory), *tiny_args()]
        assert cli.run(args) == 128 + signal.SIGTERM
    assert (directory / "resume.pt").exists()
    return directory


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """A pretraining stopped after its first batch: (its text, its folder with resume.pt)."""
    return stopped_pretraining(tmp_path_factory.mktemp("pretrain"), LINES)


@pytest.fixture
def pretraining(stopped, tmp_path):
    """A copy of the stopped pretraining, its text at the same place (which resume.pt names)."""
    text, folder = stopped
    copy = tmp_path / "lm"
    shutil.copytree(folder, copy)
    text.write_bytes(LINES)
    yield text, copy
    if os.path.lexists(text):
        text.unlink()
    text.write_bytes(LINES)


def test_a_training_s_resume_file_to_pretrain_names_the_command_that_continues_it(
    invoke, stopped_training
):
    before = snapshot(stopped_training)
    result = invoke(["pretrain", "--resume", str(stopped_training), *RESUME])
    assert_refused(
        result,
        stopped_training / "resume.pt",
        f"the state of a crftag train run; continue it with crftag train --resume "
        f"{stopped_training}",
    )
    assert result.status == 2 and snapshot(stopped_training) == before


def test_a_pretraining_s_resume_file_to_train_names_the_command_that_continues_it(
    invoke, pretraining
):
    _, folder = pretraining
    before = snapshot(folder)
    result = invoke(["train", "--resume", str(folder), *RESUME])
    assert_refused(
        result,
        folder / "resume.pt",
        f"the state of a crftag pretrain run; continue it with crftag pretrain --resume {folder}",
    )
    assert result.status == 2 and snapshot(folder) == before
    continued = invoke(["pretrain", "--resume", str(folder), *RESUME])
    assert continued.status == 0, continued.stderr
    assert (folder / "char_lm.pt").exists() and not (folder / "resume.pt").exists()


# The text of a stopped pretraining, changed before `pretrain --resume`.
CHANGED = {
    "a line changed": lambda text: text.write_bytes(LINES.replace(b"Line 7 ", b"Line 7b ")),
    "a line added": lambda text: text.write_bytes(LINES + b"One more line .\n"),
    "lines reordered": lambda text: text.write_bytes(b"".join(reversed(LINES.splitlines(True)))),
    "a blank line dropped, one changed": lambda text: text.write_bytes(LINES[:-1] + b"!\n"),
}


@pytest.mark.parametrize("change", CHANGED)
def test_a_pretraining_resumed_on_changed_text_is_one_line(invoke, pretraining, change):
    text, folder = pretraining
    CHANGED[change](text)
    before = snapshot(folder, text)
    result = invoke(["pretrain", "--resume", str(folder), *RESUME])
    assert_refused(result, text, f"the text changed since the pretraining in {folder} began")
    assert result.status == 2 and snapshot(folder, text) == before


def test_a_pretraining_resumed_without_its_text_is_one_line(invoke, pretraining):
    text, folder = pretraining
    text.unlink()
    before = snapshot(folder)
    result = invoke(["pretrain", "--resume", str(folder), *RESUME])
    assert_refused(result, text, "no such text file")
    assert result.status == 2 and snapshot(folder) == before


def test_a_pretraining_whose_text_became_a_fifo_is_refused_not_waited_on(
    invoke, pretraining, no_hang
):
    text, folder = pretraining
    text.unlink()
    os.mkfifo(text)
    try:
        result = invoke(["pretrain", "--resume", str(folder), *RESUME])
    finally:
        text.unlink()
    assert_refused(result, text, "a FIFO (named pipe), expected a regular file")


def test_the_same_lines_compressed_since_are_the_same_text(invoke, pretraining):
    """The digest is of the lines read, not of the file's bytes: gzip'ed, CRLF line ends or a
    BOM added, it is the text the run began with, and the run continues."""
    text, folder = pretraining
    text.write_bytes(gzip.compress(b"\xef\xbb\xbf" + LINES.replace(b"\n", b"\r\n")))
    result = invoke(["pretrain", "--resume", str(folder), *RESUME])
    assert result.status == 0, result.stderr
    assert (folder / "char_lm.pt").exists() and not (folder / "resume.pt").exists()


# Resume files of an older crftag.


def older_pretraining_state(text) -> dict:
    """A resume.pt as crftag pretrain wrote it before it ran in the shared loop (f000b11^)."""
    return {
        "format": "crftag-pretrain-resume",
        "paths": [str(text)],
        "settings": {"hidden_size": 8, "char_dim": 4, "batch_size": 4, "epochs": 2},
        "minutes": None,
        "symbols": ["a", "b"],
        "state_dict": {"forward.embedding.weight": torch.zeros(2, 4)},
        "optimizer": {"state": {}, "param_groups": []},
        "progress": {"epoch": 1, "step": 3, "seconds": 1.5},
        "text_digest": "0" * 64,
    }


OLDER_MESSAGE = (
    "written by an older crftag pretrain, which this one cannot continue; start the "
    "pretraining again in another directory"
)


@pytest.mark.parametrize("command", ["pretrain", "train"])
def test_the_older_pretraining_format_is_one_line_to_either_command(invoke, tmp_path, command):
    folder = tmp_path / "lm"
    folder.mkdir()
    write_checkpoint(str(folder / "resume.pt"), older_pretraining_state(tmp_path / "text.txt"))
    before = snapshot(folder)
    result = invoke([command, "--resume", str(folder), *RESUME])
    assert_refused(result, folder / "resume.pt", OLDER_MESSAGE)
    assert result.status == 2 and snapshot(folder) == before


def test_a_training_s_resume_file_without_a_task_is_a_training_s(
    invoke, stopped_training, tmp_path
):
    """A resume file from before pretraining shared the loop has no ``task``: a tagger's."""
    folder = tmp_path / "run"
    shutil.copytree(stopped_training, folder)
    state = torch.load(folder / "resume.pt", weights_only=True)
    del state["task"]
    torch.save(state, folder / "resume.pt")
    result = invoke(["pretrain", "--resume", str(folder), *RESUME])
    assert_refused(result, folder / "resume.pt", "continue it with crftag train --resume")
    assert result.status == 2
