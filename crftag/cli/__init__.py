"""The ``crftag`` command: thin Typer commands over the library's functions.

Each command's module (``crftag/cli/training.py``, ...) is imported only when that command runs
or its help is asked for, so ``crftag --help`` reads none of them and ``crftag predict`` only
its own; nothing here imports torch, and each command imports what it needs when it runs. The
command sets how the process shares the cores (:func:`main`). stdout carries data only;
messages and progress go to stderr. A user mistake is one line ``crftag: error: ...`` and exit
status 2.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from typing import Annotated

import typer
from typer.core import TyperCommand, TyperGroup

try:  # recent Typer ships its own copy of click; its exceptions are the ones raised
    from typer._click import exceptions as click_exceptions
except ImportError:  # older Typer runs on click itself
    from click import exceptions as click_exceptions

from crftag import __version__
from crftag.cli.streams import (
    OUTPUT_ERRNOS,
    prepare_streams,
    quiet_on_closed_pipe,
    silence_stdout,
)
from crftag.errors import CrftagError, TrainingInterrupted
from crftag.runtime.cores import share_cores

# Each command: its module, its function, and its one-line summary for ``crftag --help`` (the
# first paragraph of the function's docstring; tests/test_cli_startup.py holds them equal).
COMMANDS = {
    "train": (
        "crftag.cli.training",
        "train",
        "Train a BiLSTM-CRF from CONFIG and save it in the run directory.",
    ),
    "distill": (
        "crftag.cli.distilling",
        "distill",
        "Train a student from CONFIG on its labelled data and on TEACHER's labels of unlabelled "
        "text.",
    ),
    "eval": (
        "crftag.cli.scoring",
        "evaluate",
        "Score a model on labelled files: entity P/R/F1 (seqeval) and token accuracy.",
    ),
    "predict": (
        "crftag.cli.tagging",
        "predict",
        "Tag sentences from files or stdin; one record per input sentence, in order, on stdout.",
    ),
    "merge": (
        "crftag.cli.tagging",
        "merge",
        "Merge the outputs of `crftag predict --shard I/N` back into input order.",
    ),
    "export": (
        "crftag.cli.files",
        "export",
        "Copy a trained model into one file: a checkpoint, an array archive for the NumPy "
        "runtime, or an ONNX model.",
    ),
    "convert": (
        "crftag.cli.files",
        "convert",
        "Convert labelled data between CoNLL (IOB1, IOB2, BIOES), CoNLL-U, span JSONL and brat.",
    ),
    "serve": (
        "crftag.cli.serving",
        "serve",
        "Serve models over HTTP: POST /predict, GET /health, /models, /metrics (docs/serve.md).",
    ),
    "plot": (
        "crftag.cli.plotting",
        "plot",
        "Draw the dev score and the training loss per epoch of one or several runs, or the "
        "optimisation history of a crftag tune study directory.",
    ),
    "tune": (
        "crftag.cli.tuning",
        "tune",
        "Search the hyper-parameters of CONFIG on its dev set with Optuna.",
    ),
    "pretrain": (
        "crftag.cli.pretraining",
        "pretrain",
        "Train a forward and a backward character language model on unlabelled text.",
    ),
    "select": (
        "crftag.cli.selecting",
        "select",
        "Select the N sentences the model is least sure of, pre-annotated with its spans.",
    ),
}


def load_command(name: str) -> TyperCommand:
    """The click command of ``crftag NAME``, its module imported and its options built."""
    module, function, _ = COMMANDS[name]
    single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    callback = getattr(importlib.import_module(module), function)
    single.command(name, help=unwrapped(callback.__doc__))(quiet_on_closed_pipe(callback))
    return typer.main.get_command(single)


def unwrapped(docstring: str | None) -> str:
    """A command's docstring as its help: each paragraph on one line, for the terminal to wrap
    at its own width (Typer keeps a docstring's line breaks, which ragged an 80-column help)."""
    paragraphs = inspect.cleandoc(docstring or "").split("\n\n")
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in paragraphs)


class LazyCommands(TyperGroup):
    """The commands, each built on first use: a command about to run (or show its help) is
    loaded in full; until then it stands as its name and summary, which is all the list in
    ``crftag --help`` (and a typo's suggestion) needs."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for name, (_, _, summary) in COMMANDS.items():
            self.commands[name] = TyperCommand(name, help=summary)
        self.loaded: set[str] = set()

    def resolve_command(self, ctx, args):
        if args and args[0] in COMMANDS and args[0] not in self.loaded:
            self.commands[args[0]] = load_command(args[0])
            self.loaded.add(args[0])
        return super().resolve_command(ctx, args)


app = typer.Typer(
    name="crftag",
    cls=LazyCommands,
    help="Sequence labelling (NER, POS) with a BiLSTM-CRF: train, eval, predict.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"crftag {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show version.")
    ] = False,
) -> None:
    """Sequence labelling (NER, POS) with a BiLSTM-CRF: train, eval, predict."""


def run(args: list[str] | None = None) -> int:
    """Run the CLI and return its exit status, turning user mistakes into one-line errors."""
    command = typer.main.get_command(app)
    args = _optional_values(list(sys.argv[1:] if args is None else args))
    prepare_streams()
    try:
        status = command.main(args=args, prog_name="crftag", standalone_mode=False)
    except TrainingInterrupted as interruption:
        print(f"crftag: {interruption}", file=sys.stderr)
        return interruption.exit_code
    except CrftagError as error:
        sys.stdout.flush()
        for line in str(error).splitlines():  # several mistakes (a config's): one line each
            print(f"crftag: error: {line}", file=sys.stderr)
        return error.exit_code
    except click_exceptions.NoArgsIsHelpError:
        return 2  # the help text is already printed
    except click_exceptions.UsageError as error:
        print(f"crftag: error: {error.format_message()}", file=sys.stderr)
        return 2
    except (typer.Abort, KeyboardInterrupt):
        print("crftag: interrupted", file=sys.stderr)
        return 130
    except OSError as error:
        if error.errno not in OUTPUT_ERRNOS:
            raise
        silence_stdout()
        print(f"crftag: error: writing the output: {error.strerror}", file=sys.stderr)
        return 1
    except ModuleNotFoundError as error:
        if error.name not in MISSING_PACKAGE_HINTS:
            raise
        sys.stdout.flush()
        print(f"crftag: error: {MISSING_PACKAGE_HINTS[error.name]}", file=sys.stderr)
        return 1
    # click hands back the status of `typer.Exit` (and None for a normal return).
    return status if isinstance(status, int) else 0


# A torch-free install (the NumPy runtime alone, docs/runtime.md) has what predict needs on an
# exported model; a command that needs more says what to install instead of a traceback.
MISSING_PACKAGE_HINTS = {
    "torch": "this needs PyTorch, which is not installed: pip install torch (only an exported "
    "model, crftag export MODEL OUT.npz --format numpy, runs without it, on the CPU)",
}


def _optional_values(args: list[str]) -> list[str]:
    """Let ``--probs`` stand alone as well as take a value: alone it means ``--probs tag``.
    After ``--`` every argument is a file name, ``--probs`` too."""
    expanded = []
    for position, arg in enumerate(args):
        if arg == "--":
            return expanded + args[position:]
        expanded.append(arg)
        if arg != "--probs":
            continue
        from crftag.cli.options import Probabilities  # the predict command's, loaded with it

        following = args[position + 1] if position + 1 < len(args) else None
        if following not in [choice.value for choice in Probabilities]:
            expanded.append(Probabilities.tag.value)
    return expanded


def main() -> None:
    """The ``crftag`` command (and ``python -m crftag``): share the cores fairly, then run."""
    share_cores()
    sys.exit(run())
