"""atomic_output: the one way crftag writes a file in place: whole or not at all, with the mode a
plain open() gives."""

import os
import stat
import subprocess
import sys

import pytest

from crftag.data.atomic import PARTIAL_PREFIX, atomic_folder, atomic_output, plain_file_mode
from crftag.errors import CrftagError


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_the_file_gets_the_mode_a_plain_open_gives(tmp_path, umask):
    previous = os.umask(umask)
    try:
        with open(tmp_path / "plain", "w") as stream:
            stream.write("x")
        with atomic_output(str(tmp_path / "atomic")) as stream:
            stream.write("x")
        assert mode_of(tmp_path / "atomic") == mode_of(tmp_path / "plain") == 0o666 & ~umask
        assert plain_file_mode() == 0o666 & ~umask
        assert os.umask(umask) == umask  # reading the mode put the umask back
    finally:
        os.umask(previous)


def test_text_is_utf8_with_line_ends_as_written(tmp_path):
    path = tmp_path / "out.txt"
    with atomic_output(str(path)) as stream:
        stream.write("é\r\nb\n")
    assert path.read_bytes() == "é\r\nb\n".encode()


def test_binary_output(tmp_path):
    path = tmp_path / "out.bin"
    with atomic_output(str(path), binary=True) as stream:
        stream.write(b"\x00\xff")
    assert path.read_bytes() == b"\x00\xff"


def test_an_error_before_the_rename_keeps_the_old_file_and_no_temporary(tmp_path, umask_022):
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_output(str(path)) as stream:
        stream.write("half of the new")
        raise RuntimeError("crash")
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["out.txt"]


def _killed_in(block: str, target) -> None:
    """Run ``block`` (a ``with`` line and its body) in a new process that is killed, with no
    clean-up, at the end of the body; ``sys.argv[1]`` is ``target``."""
    script = f"import os, sys\nfrom crftag.data.atomic import *\n{block}    os._exit(9)\n"
    done = subprocess.run([sys.executable, "-c", script, str(target)], check=False)
    assert done.returncode == 9


def test_a_process_killed_before_the_rename_leaves_the_old_file(tmp_path):
    """A kill runs no clean-up: the old file stays whole and only a .partial- file is left."""
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    _killed_in(
        "with atomic_output(sys.argv[1]) as stream:\n"
        "    stream.write('half of the new')\n"
        "    stream.flush()\n",
        path,
    )
    assert path.read_text() == "old\n"
    left = sorted(os.listdir(tmp_path))
    assert left[1:] == ["out.txt"] and left[0].startswith(PARTIAL_PREFIX)


def test_a_missing_directory_is_one_error_naming_the_file_and_writes_nothing(tmp_path):
    target = tmp_path / "no" / "out.txt"
    message = rf"^{target}: cannot write the file here \(No such file or directory\)$"
    with pytest.raises(CrftagError, match=message), atomic_output(str(target)):
        pass
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_a_folders_files_get_the_mode_a_plain_open_gives(tmp_path, umask):
    previous = os.umask(umask)
    try:
        with atomic_folder(str(tmp_path / "out")) as partial:
            # Made private, as tempfile makes its files: the move gives the plain mode.
            os.close(os.open(os.path.join(partial, "a.txt"), os.O_CREAT | os.O_WRONLY, 0o600))
            with open(os.path.join(partial, "b.txt"), "w") as stream:
                stream.write("b")
        assert sorted(os.listdir(tmp_path / "out")) == ["a.txt", "b.txt"]
        for name in ("a.txt", "b.txt"):
            assert mode_of(tmp_path / "out" / name) == 0o666 & ~umask
    finally:
        os.umask(previous)


def test_an_error_in_a_folder_moves_nothing_and_removes_a_folder_it_made(tmp_path):
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "a.txt").write_text("old\n")
    for folder in ("kept", "new"):
        with pytest.raises(RuntimeError), atomic_folder(str(tmp_path / folder)) as partial:
            with open(os.path.join(partial, "a.txt"), "w") as stream:
                stream.write("new\n")
            raise RuntimeError("crash")
    assert os.listdir(tmp_path) == ["kept"]
    assert os.listdir(tmp_path / "kept") == ["a.txt"]
    assert (tmp_path / "kept" / "a.txt").read_text() == "old\n"


def test_a_process_killed_while_writing_a_folder_leaves_its_files_as_they_were(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "a.txt").write_text("old\n")
    _killed_in(
        "with atomic_folder(sys.argv[1]) as partial:\n"
        "    for name in ('a.txt', 'b.txt'):\n"
        "        with open(os.path.join(partial, name), 'w') as stream:\n"
        "            stream.write('new')\n",
        folder,
    )
    assert (folder / "a.txt").read_text() == "old\n"
    left = sorted(os.listdir(folder))
    assert left[1:] == ["a.txt"] and left[0].startswith(PARTIAL_PREFIX)
