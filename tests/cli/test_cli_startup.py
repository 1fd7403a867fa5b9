"""What ``crftag`` loads before it does anything (crftag/cli/__init__.py): ``crftag --help``
reads none of the commands' modules, a command loads its own alone, and the summaries the help
lists are the commands' own."""

import importlib
import inspect
import json
import subprocess
import sys

import pytest

from crftag import cli

# Loaded by a command's options or its work, never needed to list the commands.
HEAVY = ("crftag.config", "crftag.data.align", "numpy", "torch", "pydantic", "yaml")


def modules_after(args: list[str]) -> set[str]:
    """The modules a fresh Python process has loaded after ``crftag ARGS``."""
    program = (
        "import json, sys\n"
        "from crftag.cli import run\n"
        f"status = run({args!r})\n"
        "sys.stdout.flush()\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    finished = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120
    )
    return set(json.loads(finished.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [["--help"], [], ["--version"]])
def test_listing_the_commands_loads_none_of_them(args):
    loaded = modules_after(args)
    assert not [name for name in HEAVY if name in loaded]
    assert not {module for module, _, _ in cli.COMMANDS.values()} & loaded


def test_a_command_loads_its_own_module_alone():
    loaded = modules_after(["merge", "--help"])
    assert "crftag.cli.tagging" in loaded
    others = {module for module, _, _ in cli.COMMANDS.values()} - {"crftag.cli.tagging"}
    assert not others & loaded


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_each_summary_is_the_first_paragraph_of_its_commands_docstring(name):
    module, function, summary = cli.COMMANDS[name]
    docstring = inspect.getdoc(getattr(importlib.import_module(module), function))
    assert " ".join(docstring.split("\n\n")[0].split()) == summary


def test_the_help_lists_every_command_with_its_summary(invoke):
    result = invoke(["--help"])
    listed = " ".join(result.stdout.split())
    assert result.status == 0
    for name, (_, _, summary) in cli.COMMANDS.items():
        assert name in listed
        assert " ".join(summary.split()[:4]) in listed


@pytest.mark.parametrize("name", ["train", "pretrain"])
def test_a_commands_help_paragraphs_wrap_at_the_terminals_width(name):
    # The docstrings' own line breaks once stayed in the help, ragged at 80 columns.
    environment = {"COLUMNS": "80", "PATH": "", "TERM": "dumb"}
    shown = subprocess.run(
        [sys.executable, "-m", "crftag", name, "--help"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    ).stdout
    module, function, _ = cli.COMMANDS[name]
    docstring = inspect.getdoc(getattr(importlib.import_module(module), function))
    description = shown[: shown.index("╭")].splitlines()[3:]
    text_lines = [line.strip() for line in description if line.strip()]
    assert " ".join(text_lines) == " ".join(docstring.split())
    # Each line of a paragraph but its last is filled to near the width.
    ragged = [
        line
        for line, after in zip(description, description[1:], strict=False)
        if line.strip() and after.strip() and len(line.rstrip()) < 60
    ]
    assert not ragged


def test_an_unknown_command_is_a_one_line_error(invoke):
    result = invoke(["trian"])
    assert result.status == 2
    assert (
        result.stderr.strip()
        == "crftag: error: No such command 'trian'. Did you mean 'train', 'pretrain'?"
    )


def test_loading_a_checkpoint_leaves_torchs_compiler_unloaded(tmp_path):
    # Building a network on the meta device imported torch._dynamo: 1.7 s of a cold start.
    checkpoint = tmp_path / "en-ner.pt"
    assert cli.run(["export", "en-ner", str(checkpoint)]) == 0  # the load alone in a fresh process
    program = (
        "import sys\n"
        "from crftag.modelfiles.checkpoint import load_model\n"
        "load_model(sys.argv[1])\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    finished = subprocess.run(
        [sys.executable, "-c", program, str(checkpoint)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert finished.stdout.split() == ["False"], finished.stderr
