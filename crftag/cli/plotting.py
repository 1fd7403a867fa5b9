"""``crftag plot``: the learning curves of training runs, as a PNG file or text."""

from __future__ import annotations

import json
import os
from typing import Annotated

import typer

from crftag.cli.outputs import refuse_input_as_output
from crftag.errors import CrftagError

__all__ = ["plot"]


def plot(
    runs: Annotated[
        list[str],
        typer.Argument(
            help="Run directories (or their metrics.json), one line each.",
            metavar="RUN",
            show_default=False,
        ),
    ],
    output: Annotated[
        str | None,
        typer.Option(
            "-o",
            "--output",
            metavar="FILE.png",
            help="PNG file to write (needs matplotlib, the plot extra of crftag).",
        ),
    ] = None,
    text: Annotated[
        bool, typer.Option("--text", help="Print the curves as text on the terminal (stdout).")
    ] = False,
) -> None:
    """Draw the dev score and the training loss per epoch of one or several runs, or the
    optimisation history of a crftag tune study directory."""
    from crftag.scoring.plots import learning_curves, read_history, run_names, text_curves

    if output is None and not text:
        raise CrftagError("nowhere to draw: give -o FILE.png, or --text for the terminal")
    refuse_input_as_output([output], runs)
    if len(runs) == 1 and os.path.isfile(os.path.join(runs[0], "trials.json")):
        _plot_study(runs[0], output)
        return
    named = list(zip(run_names(runs), [read_history(run) for run in runs], strict=True))
    if text:
        typer.echo(text_curves(named))
    if output is not None:
        learning_curves(named, output)
        typer.echo(f"wrote {output} ({len(named)} run{'s' if len(named) > 1 else ''})", err=True)


def _plot_study(study_dir: str, output: str | None) -> None:
    from crftag.scoring.plots import optimisation_history

    if output is None:
        raise CrftagError(f"{study_dir}: a study is drawn to a PNG file: give -o FILE.png")
    with open(os.path.join(study_dir, "trials.json"), encoding="utf-8") as handle:
        trials = json.load(handle)
    optimisation_history(trials, output)
    typer.echo(f"wrote {output} ({len(trials)} trials)", err=True)
