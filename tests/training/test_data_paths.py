"""Training data that is not a regular file or a brat folder is refused before anything is
read, and the data's fingerprint opens only the files the reader reads: nothing hangs on a
FIFO, a socket or a device, in a data folder or as a data path."""

import os

import pytest

from crftag.training.state import data_fingerprint

TEXT = "Ada Lovelace wrote ."
ANN = "T1\tPER 0 12\tAda Lovelace\n"


def _brat(folder):
    folder.mkdir()
    (folder / "a.txt").write_text(TEXT)
    (folder / "a.ann").write_text(ANN)
    return folder


def _make(kind, path, tmp_path):
    """``path`` made a FIFO, a dangling link or a folder; or /dev/zero for a device."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dangling":
        os.symlink(tmp_path / "gone", path)
    elif kind == "folder":
        path.mkdir()
    else:
        return "/dev/zero"
    return path


def _train(invoke, tiny_args, tmp_path, path):
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *tiny_args()]
    sets = ["--set", f"data.train={path}", "--set", "data.dev=null", "--set", "data.test=null"]
    return invoke([*args, *sets])


def test_a_fifo_beside_the_brat_files_is_passed_over(invoke, tiny_args, tmp_path, no_hang):
    folder = _brat(tmp_path / "brat")
    os.mkfifo(folder / "pipe")  # the case: this hung train
    os.symlink(tmp_path / "gone", folder / "dangling")
    result = _train(invoke, tiny_args, tmp_path, folder)
    assert result.status == 0, result.stderr
    assert (tmp_path / "run" / "model.pt").exists()


@pytest.mark.parametrize("kind", ["fifo", "dangling", "folder"])
def test_a_brat_file_that_is_not_regular_is_refused(invoke, tiny_args, tmp_path, no_hang, kind):
    folder = _brat(tmp_path / "brat")
    target = _make(kind, folder / "b.txt", tmp_path)
    (folder / "b.ann").write_text("")
    result = _train(invoke, tiny_args, tmp_path, folder)
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: data.train: {target}: ")
    assert "expected a regular file" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_a_folder_without_brat_files_is_refused(invoke, tiny_args, tmp_path, no_hang):
    folder = tmp_path / "tmp"
    folder.mkdir()
    os.mkfifo(folder / "pipe")
    (folder / "notes.txt").write_text("x")
    result = _train(invoke, tiny_args, tmp_path, folder)
    assert result.status == 2
    assert result.stderr == (
        f"crftag: error: data.train: {folder}: is a directory, and holds no brat .ann files\n"
    )


def test_training_on_slash_tmp_does_not_hang(invoke, tiny_args, tmp_path, no_hang):
    result = _train(invoke, tiny_args, tmp_path, "/tmp")
    assert result.status == 2 and "data.train: /tmp" in result.stderr


@pytest.mark.parametrize("kind", ["fifo", "dangling", "device"])
def test_a_data_path_that_is_not_a_regular_file_is_refused(
    invoke, tiny_args, tmp_path, no_hang, kind
):
    path = _make(kind, tmp_path / "train.conll", tmp_path)
    result = _train(invoke, tiny_args, tmp_path, path)
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: data.train: {path}: ")
    assert "expected a regular file" in result.stderr


def test_the_fingerprint_reads_only_the_brat_files(tiny_config, tmp_path, no_hang):
    folder = _brat(tmp_path / "brat")
    before = data_fingerprint(tiny_config(data__train=str(folder)))
    os.mkfifo(folder / "pipe")
    (folder / "annotation.conf").write_text("[entities]\nPER\n")
    assert data_fingerprint(tiny_config(data__train=str(folder))) == before
    (folder / "a.ann").write_text(ANN.replace("PER", "ORG"))
    assert data_fingerprint(tiny_config(data__train=str(folder))) != before


@pytest.mark.parametrize(
    "setting", ["train.rehearsal", "model.embeddings", "data.dev", "model.lexicons.LOC"]
)
def test_other_data_paths_that_are_fifos_are_refused(invoke, tiny_args, tmp_path, no_hang, setting):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    args = ["train", "configs/sample.yaml", "-o", str(tmp_path / "run"), *tiny_args()]
    value = f"{{LOC: {fifo}}}" if setting == "model.lexicons.LOC" else fifo
    key = setting.removesuffix(".LOC")
    result = invoke([*args, "--set", f"{key}={value}", "--set", "data.test=null"])
    assert result.status == 2
    assert result.stderr.startswith(f"crftag: error: {setting}: {fifo}: a FIFO (named pipe)")
