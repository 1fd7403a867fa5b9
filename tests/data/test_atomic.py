"""atomic_output: the one way crftag writes a file in place: whole or not at all, with the mode a
plain open() gives."""

import os
import stat
import subprocess
import sys

import pytest

from crftag.data.atomic import PARTIAL_PREFIX, atomic_output, plain_file_mode


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


def test_a_process_killed_before_the_rename_leaves_the_old_file(tmp_path):
    """A kill runs no clean-up: the old file stays whole and only a .partial- file is left."""
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    script = (
        "import os, sys\n"
        "from crftag.data.atomic import atomic_output\n"
        "with atomic_output(sys.argv[1]) as stream:\n"
        "    stream.write('half of the new')\n"
        "    stream.flush()\n"
        "    os._exit(9)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(path)], check=False)
    assert done.returncode == 9
    assert path.read_text() == "old\n"
    left = sorted(os.listdir(tmp_path))
    assert left[1:] == ["out.txt"] and left[0].startswith(PARTIAL_PREFIX)


def test_a_missing_directory_is_an_os_error_and_writes_nothing(tmp_path):
    with pytest.raises(FileNotFoundError), atomic_output(str(tmp_path / "no" / "out.txt")):
        pass
    assert os.listdir(tmp_path) == []
