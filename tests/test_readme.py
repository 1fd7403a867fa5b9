"""README.md's quick start works from a clone: it names only files the repository holds, and its
commands run, as written, in a copy of the repository's data and configs with nothing beside it
(the benchmark corpora in ../shared/ are not part of a clone). The docs index lists every page."""

import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(name: str) -> str:
    with open(os.path.join(ROOT, name), encoding="utf-8") as handle:
        return handle.read()


def quick_start() -> list[str]:
    """The commands of README.md's quick start, comments removed, one a line."""
    section = read("README.md").split("## Quick start\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("  #", 1)[0].strip() for line in block.splitlines()]
    return [command for command in commands if command]


def named_paths(command: str) -> list[str]:
    """The words of a command that name a file or folder by a relative path."""
    words = [word for word in shlex.split(command) if word not in {"|", "<", ">"}]
    return [word for word in words if "/" in word and not word.startswith("-")]


def test_the_quick_start_names_only_files_in_the_repository():
    commands = quick_start()
    assert len(commands) >= 4
    for command in commands:
        assert "../" not in command, command
        for path in named_paths(command):
            if path.startswith("runs/"):  # written by the quick start's own train command
                continue
            assert os.path.exists(os.path.join(ROOT, path)), f"{command}: {path} is not shipped"


@pytest.fixture
def clone(tmp_path):
    """The repository's data/ and configs/ in a folder with no ../shared beside it."""
    checkout = tmp_path / "crftag"
    for folder in ("data", "configs"):
        shutil.copytree(os.path.join(ROOT, folder), checkout / folder)
    assert not (tmp_path / "shared").exists()
    return checkout


def test_the_quick_start_runs_in_a_clone(clone):
    """Each command, one epoch of training instead of the sample's eight: every one exits 0 and
    writes data to stdout."""
    bin_dir = os.path.dirname(sys.executable)
    environment = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
    for command in quick_start():
        if re.match(r"crftag train ", command):
            command += " --set train.epochs=1 -q"
        done = subprocess.run(
            command, shell=True, cwd=clone, env=environment, capture_output=True, text=True
        )
        assert done.returncode == 0, f"{command}: {done.stderr}"
        if "crftag train" not in command:
            assert done.stdout.strip(), command
    assert (clone / "runs" / "sample" / "model.pt").exists()


def test_the_docs_index_starts_here_and_lists_every_page():
    index = read("docs/README.md")
    assert index.split("\n## ", 1)[1].startswith("Start here\n")
    pages = sorted(name for name in os.listdir(os.path.join(ROOT, "docs")) if name.endswith(".md"))
    listed = set(re.findall(r"\]\(([\w.-]+\.md)\)", index))
    assert [page for page in pages if page != "README.md" and page not in listed] == []
    assert [page for page in listed if page not in pages] == []


def test_the_readme_and_contributing_do_not_send_a_reader_outside_the_clone_for_style():
    for name in ("README.md", "CONTRIBUTING.md"):
        assert "STYLE.md" not in read(name), name
    assert "[CONTRIBUTING.md](CONTRIBUTING.md)" in read("README.md")
