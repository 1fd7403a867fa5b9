"""The ``crftag`` command: thin Typer commands over the library's functions.

Nothing here imports torch at module level, so ``crftag --help`` starts fast; each command imports
what it needs when it runs. stdout carries data only; messages and progress go to stderr. A user
mistake is one line ``crftag: error: ...`` and exit status 2.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

try:  # recent Typer ships its own copy of click; its exceptions are the ones raised
    from typer._click import exceptions as click_exceptions
except ImportError:  # older Typer runs on click itself
    from click import exceptions as click_exceptions

from crftag import __version__
from crftag.cli.files import convert, export
from crftag.cli.options import Probabilities
from crftag.cli.plotting import plot
from crftag.cli.scoring import evaluate
from crftag.cli.selecting import select
from crftag.cli.serving import serve
from crftag.cli.streams import (
    OUTPUT_ERRNOS,
    prepare_streams,
    quiet_on_closed_pipe,
    silence_stdout,
)
from crftag.cli.tagging import merge, predict
from crftag.cli.training import train
from crftag.cli.tuning import tune
from crftag.errors import CrftagError, TrainingInterrupted

app = typer.Typer(
    name="crftag",
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


for name, command in (
    ("train", train),
    ("eval", evaluate),
    ("predict", predict),
    ("merge", merge),
    ("export", export),
    ("convert", convert),
    ("serve", serve),
    ("plot", plot),
    ("tune", tune),
    ("select", select),
):
    app.command(name)(quiet_on_closed_pipe(command))


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
    "seqeval": "scoring needs seqeval, which is not installed: pip install seqeval",
}


def _optional_values(args: list[str]) -> list[str]:
    """Let ``--probs`` stand alone as well as take a value: alone it means ``--probs tag``.
    After ``--`` every argument is a file name, ``--probs`` too."""
    expanded = []
    for position, arg in enumerate(args):
        if arg == "--":
            return expanded + args[position:]
        expanded.append(arg)
        following = args[position + 1] if position + 1 < len(args) else None
        if arg == "--probs" and following not in [choice.value for choice in Probabilities]:
            expanded.append(Probabilities.tag.value)
    return expanded


def main() -> None:
    sys.exit(run())
